"""The notebooks (issue 9) run headlessly on small inputs recorded here, in a
real Jupyter kernel of this Python, and save their figures; `grainlab suite`
and `grainlab characterize` feed them."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO, grainlab

pytestmark = pytest.mark.native  # the whole module runs native code

KERNEL = "grainlab-test"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A kernelspec for this interpreter, found through JUPYTER_PATH."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "grainlab tests", "language": "python"}))
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(root)
    yield KERNEL
    if old is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = old


def execute(name, env, tmp_path):
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, kernel_name=KERNEL, timeout=600,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def outputs(nb) -> str:
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", "") or json.dumps(out.get("data", {}).get("text/plain", "")))
    return "\n".join(text)


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite")
    r = grainlab("suite", "--only", "fib,health,uts,alignment,loop_static,sparselu_depend",
                 "-o", out, "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_suite_records_and_characterizes_every_selected_run(small_suite):
    traces = sorted(p.stem for p in small_suite.glob("*.parquet"))
    assert traces == ["alignment-small", "fib-small", "health-small", "loop_static-small",
                      "sparselu_depend-small", "uts-deep-small", "uts-geo-small"]
    import pandas as pd
    df = pd.read_csv(small_suite / "characterize.csv")
    assert sorted(Path(t).stem for t in df["trace"]) == traces


def test_suite_similarity_runs_and_saves_its_figures(kernel, small_suite, tmp_path):
    figures = tmp_path / "figures"
    nb = execute("suite_similarity", {"GRAINLAB_NOTEBOOK_TRACES": str(small_suite),
                                      "GRAINLAB_NOTEBOOK_FIGURES": str(figures)}, tmp_path)
    text = outputs(nb)
    assert "components explain" in text
    for f in ("pc1_pc2.png", "dendrogram.png", "clusters.json"):
        assert (figures / f).stat().st_size > 0, f
    clusters = json.loads((figures / "clusters.json").read_text())
    members = sorted(m for ms in clusters.values() for m in ms)
    assert members == sorted(p.stem for p in small_suite.glob("*.parquet"))


def test_cutoff_tuning_recommends_one_of_its_cutoffs(kernel, example, tmp_path):
    folder = tmp_path / "cutoffs"
    folder.mkdir()
    cutoffs = [2, 4, 6, 8, 10]
    for c in cutoffs:
        r = grainlab("record", "-q", "-o", folder / f"fib-{c}.parquet", "--", example("fib"), 18, c,
                     env={"OMP_NUM_THREADS": "2"})
        assert r.returncode == 0, r.stderr
    figures = tmp_path / "figures"
    execute("cutoff_tuning", {"GRAINLAB_NOTEBOOK_TRACES": str(folder),
                              "GRAINLAB_NOTEBOOK_FIGURES": str(figures),
                              "GRAINLAB_NOTEBOOK_CUTOFF_ARG": "-1"}, tmp_path)
    for f in ("cutoff_parallelism.png", "cutoff_time_split.png"):
        assert (figures / f).stat().st_size > 0
    rec = json.loads((figures / "recommendation.json").read_text())
    assert rec["cutoff"] in cutoffs and rec["reason"]
    # the rule, checked independently: enough parallelism first, then least overhead
    import grainlab as gl
    df = gl.characterize([folder])
    df["cutoff"] = [int(Path(t).stem.split("-")[1]) for t in df["trace"]]
    enough = df[df["parallelism"] >= 2.0 * df["cores"].max()]
    want = enough.loc[enough["overhead_fraction"].idxmin(), "cutoff"] if len(enough) else \
        df.loc[df["parallelism"].idxmax(), "cutoff"]
    assert rec["cutoff"] == want


def test_grain_graph_tour_runs_on_one_trace(kernel, record, tmp_path):
    t = record("fib", 15, 5)
    figures = tmp_path / "figures"
    nb = execute("grain_graph_tour", {"GRAINLAB_NOTEBOOK_TRACE": str(t.path),
                                      "GRAINLAB_NOTEBOOK_FIGURES": str(figures)}, tmp_path)
    assert "parallelism" in outputs(nb)
    for f in ("grain_work.html", "locations.html"):
        assert (figures / f).stat().st_size > 0
