"""The notebooks (issue 25), run as `make notebooks` runs them
(`python -m grainlab.suite.notebooks`, here with --quick: fewer programs,
smaller inputs), in a real Jupyter kernel of this Python. Checked: no error
output; every figure cell has an image output; and every computed claim
against an independent recomputation from the tables the notebooks wrote:
the retained PC count (sklearn), the clusters (scipy directly), the
recommended cutoff (the measured times, with pandas), the tour's sentences
(the analysis)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from cutoff_oracle import documented_rule

from conftest import REPO

pytestmark = pytest.mark.native  # records the suite with the collector

NOTEBOOKS = ("suite_similarity", "cutoff_tuning", "grain_graph_tour")


@pytest.fixture(scope="module")
def run(build, tmp_path_factory):
    """The whole pipeline once: record, execute, write .ipynb (+ .html)."""
    out = tmp_path_factory.mktemp("notebooks")
    r = subprocess.run([sys.executable, "-m", "grainlab.suite.notebooks", "--quick", "-o",
                        str(out)], capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def executed(run, name):
    return nbformat.read(run / f"{name}.ipynb", as_version=4)


def figures(run, name) -> Path:
    return run / "figures" / name


def markdown_outputs(nb) -> list[str]:
    return [o["data"]["text/markdown"] for c in nb.cells for o in c.get("outputs", [])
            if "text/markdown" in o.get("data", {})]


def figure_calls(source: str) -> int:
    """Calls of show() (or of study(), which shows one figure) outside
    function definitions: the images a cell must output."""
    n, in_def = 0, False
    for line in source.splitlines():
        if line.startswith("def "):
            in_def = True
        elif line and not line[0].isspace():
            in_def = False
        if not in_def and re.match(r"^\s*(?:[\w, ]+ = )?(?:show|study)\(", line):
            n += 1
    return n


# -- every notebook -----------------------------------------------------------------


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_errors_and_every_figure_cell_shows_an_image(run, name):
    nb = executed(run, name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "every cell ran"
    for c in code:
        kinds = [o["output_type"] for o in c.get("outputs", [])]
        assert "error" not in kinds, c.source[:200]
        pngs = [o for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
        shows = figure_calls(c.source)
        if "if sim.keep >= 4" in c.source:          # one of two planes, by the data
            shows -= 1
        assert len(pngs) == shows, c.source[:200]
        for o in pngs:   # a real PNG, not a blank placeholder
            assert len(o["data"]["image/png"]) > 5000
    assert sum("image/png" in o.get("data", {}) for c in code for o in c.get("outputs", [])) >= 2


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameter_cell_is_tagged_and_the_notebook_says_what_it_needs(name):
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and "os.environ.get" in params[0].source
    assert re.search(r"\*\*What (it|the folder|each folder) needs?\*\*", nb.cells[0].source)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_html_export(run, name):
    import nbconvert  # noqa: F401 - a dev dependency: missing is a failure, not a skip
    html = (run / f"{name}.html").read_text()
    assert "data:image/png;base64" in html


# -- suite_similarity ------------------------------------------------------------------


def test_suite_has_three_inputs_per_program(run):
    props = pd.read_csv(figures(run, "suite_similarity") / "properties.csv", index_col=0)
    programs = pd.Series([n.rpartition("-")[0] for n in props.index])
    assert (programs.value_counts() == 3).all()
    assert {n.rpartition("-")[2] for n in props.index} == {"small", "medium", "large"}


def test_retained_pcs_recomputed_with_sklearn(run):
    from sklearn.decomposition import PCA
    fig = figures(run, "suite_similarity")
    props = pd.read_csv(fig / "properties.csv", index_col=0)
    z = (props - props.mean()) / props.std(ddof=1)
    cum = np.cumsum(PCA().fit(z).explained_variance_ratio_)
    keep = max(2, int(np.argmax(cum >= 0.85)) + 1)
    loadings = pd.read_csv(fig / "loadings.csv", index_col=0)
    assert list(loadings.columns) == [f"PC{i + 1}" for i in range(keep)]
    assert cum[keep - 1] >= 0.85
    text = " ".join(markdown_outputs(executed(run, "suite_similarity")))
    assert f"first **{keep}** principal components explain **{100 * cum[keep - 1]:.1f}%**" in text


def test_clusters_recomputed_with_scipy_and_printed_as_drawn(run):
    from scipy.cluster.hierarchy import fcluster, linkage
    from sklearn.decomposition import PCA
    fig = figures(run, "suite_similarity")
    props = pd.read_csv(fig / "properties.csv", index_col=0)
    clusters = pd.read_csv(fig / "clusters.csv", index_col=0).loc[props.index]
    k = clusters["cluster"].nunique()
    z = (props - props.mean()) / props.std(ddof=1)
    keep = pd.read_csv(fig / "loadings.csv", index_col=0).shape[1]
    scores = PCA(n_components=keep).fit_transform(z)
    y = (scores - scores.mean(0)) / scores.std(0, ddof=1)
    links = linkage(y, "ward")
    ref = fcluster(links, t=k, criterion="maxclust")
    pairs = set(zip(clusters["cluster"], ref))
    assert len(pairs) == k == len(set(ref))
    # k is where the merge heights have their largest gap
    h = np.sort(links[:, 2])[::-1]
    gaps = [h[j - 2] - h[j - 1] for j in range(2, min(12, len(h)) + 1)]
    assert k == 2 + int(np.argmax(gaps))
    # colours drawn = clusters; the printed clusters and representatives = the table
    assert clusters.groupby("cluster")["colour"].nunique().eq(1).all()
    assert clusters["colour"].nunique() == k
    saved = json.loads((fig / "clusters.json").read_text())
    text = "\n".join(markdown_outputs(executed(run, "suite_similarity")))
    assert f"**{k} clusters**" in text
    for c, members in saved["clusters"].items():
        assert sorted(members) == sorted(clusters.index[clusters["cluster"] == int(c)])
        rep = saved["representatives"][c]
        assert f"- **cluster {c}** ({len(members)}): representative **{rep}**; members " \
               + ", ".join(members) in text
        assert clusters.loc[rep, "representative"]


# -- cutoff_tuning ---------------------------------------------------------------------


@pytest.mark.parametrize("case", ["fib", "sort"])
def test_recommended_cutoff_recomputed_from_the_measured_times(run, case):
    import csv
    fig = figures(run, "cutoff_tuning")
    with open(fig / f"{case}_runs.csv", newline="") as f:
        rows = [{**r, "cutoff": int(float(r["cutoff"]))} for r in csv.DictReader(f)]
    reps = {}
    for r in rows:
        reps[r["cutoff"]] = reps.get(r["cutoff"], 0) + 1
    assert min(reps.values()) >= 3                            # repetitions
    want = documented_rule(rows)["cutoff"]          # tests/cutoff_oracle.py
    rec = json.loads((fig / f"{case}_recommendation.json").read_text())
    assert rec["cutoff"] == want
    if want is not None:                       # never most of the thread time in overhead
        assert sum(float(r["overhead_fraction"]) for r in rows if r["cutoff"] == want) \
            <= 0.5 * reps[want]
    text = "\n".join(markdown_outputs(executed(run, "cutoff_tuning")))
    assert (f"**Recommended: cutoff {want}**" if want is not None else "No recommendation") in text


def test_cutoff_tables_have_spread_and_inflation(run):
    t = pd.read_csv(figures(run, "cutoff_tuning") / "fib_cutoffs.csv")
    for col in ("alone_s_sd", "collector_s_mean", "speedup_mean", "span_ms_sd", "inflation_mean",
                "overhead_fraction_mean", "parallel_benefit_median_mean"):
        assert col in t.columns
    raw = pd.read_csv(figures(run, "cutoff_tuning") / "fib_runs.csv")
    assert np.allclose(t["inflation_mean"],
                       (raw["collector_s"] / raw["alone_s"]).groupby(raw["cutoff"]).mean())


# -- grain_graph_tour --------------------------------------------------------------------


def test_tour_sentences_match_the_analysis(run):
    import grainlab as gl
    nb = executed(run, "grain_graph_tour")
    text = "\n".join(markdown_outputs(nb))
    trace = run / "data" / "suite" / "fib-medium.parquet"
    a = gl.analyze(trace)
    s, rep = a.summary, a.report()
    assert f"{len(a.grains)} grains ({s['tasks']} tasks" in text
    assert f"runs through {len(a.critical_path)} grains and is {s['span_ns'] / 1e6:.2f} ms" in text
    td = rep["time_decomposition"]
    assert f"{100 * td['work'] / td['total']:.0f}% work" in text
    w = a.grains["work"].to_numpy(float)
    assert f"Median grain work {np.median(w[w > 0]) / 1e3:.2f} µs" in text
    path = pd.read_csv(figures(run, "grain_graph_tour") / "critical_path.csv")
    assert list(path["grain"]) == [int(g) for g in a.critical_path]
    # the span said as what it is made of, and each parallelism by its name
    # (issue 32): no share of grains against a sum of their work
    assert f"The span is {s['span_ns'] / 1e6:.2f} ms: {a.span_text}." in text
    for name, value in a.parallelism_numbers:
        assert f"{name} {value:.3g}" in text
    assert "of it the grains' own work" not in text and "exposed parallelism" not in text


def test_suite_command_records_and_characterizes_every_selected_run(build, tmp_path):
    """`grainlab suite` (what a user runs to make a folder for the
    notebooks): every selected run recorded and characterized."""
    from conftest import grainlab
    out = tmp_path / "suite"
    r = grainlab("suite", "--only", "fib,uts,loop_static", "-o", out, "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    traces = sorted(p.stem for p in out.glob("*.parquet"))
    assert traces == ["fib-small", "loop_static-small", "uts-deep-small", "uts-geo-small"]
    df = pd.read_csv(out / "characterize.csv")
    assert sorted(Path(t).stem for t in df["trace"]) == traces


def test_tour_shows_the_thesis_drawing_inline(run):
    """The tour's DAG-time grain graph is an inline SVG (shown by GitHub and
    nbviewer) of the drawing `grainlab export --svg` makes: its elements by class."""
    nb = executed(run, "grain_graph_tour")
    svgs = [o["data"]["image/svg+xml"] for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) == 1
    svg = svgs[0] if isinstance(svgs[0], str) else "".join(svgs[0])
    for kind in ("fragment", "fork", "join", "critical"):
        assert f'class="{kind}' in svg or f" {kind}" in svg, kind
    assert (figures(run, "grain_graph_tour") / "grain_graph_thesis.svg").read_text() == svg
