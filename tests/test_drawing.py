"""The grain graph drawn as the thesis draws it (grainlab.export.drawing), the
layout the web app and `grainlab export --svg/--png` share: its elements
against the graph's tables and the example programs' known shapes, the
reductions' member counts and weights, collapse and expand, the critical
path against `analyze`'s, and the SVG parsed back by class."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import grainlab as gl
from conftest import assert_one_line_error
from grainlab.export.drawing import GrainLayout, problem_severity

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def fib(record):
    return gl.analyze(record("fib", 10, 3, threads=2).path)


@pytest.fixture(scope="module")
def loop(record):
    return gl.analyze(record("loops", "dynamic,7", 40, threads=2).path)


@pytest.fixture(scope="module")
def foo(record):
    # thesis Fig. 5.3a: one task-creating function, two children, a taskwait
    return gl.analyze(record("twotasks", 1, threads=2).path)


def node_counts(g) -> dict:
    return g.nodes["type"].astype(str).value_counts().to_dict()


def test_unreduced_drawing_has_one_element_per_node(fib, loop, foo):
    for a in (fib, loop, foo):
        g = a.graph_with_metrics
        d = GrainLayout(g).draw(depth=None)
        c = d.counts()
        for kind, n in node_counts(g).items():
            assert c.get(kind, 0) == n, (kind, c, n)
        assert "summary" not in c
        # every graph edge between different elements is drawn, merged by type
        assert d.edges["count"].sum() == len(g.edges)


def test_fib_with_cutoff_has_the_known_forks_and_joins(fib):
    # examples/README: fib N CUTOFF <= N/2 creates 2^(CUTOFF+1) - 2 tasks,
    # one taskwait per creating call (tasks / 2)
    tasks = 2 ** (3 + 1) - 2
    d = GrainLayout(fib.graph_with_metrics).draw(depth=None)
    it = d.items
    G = len(fib.graph.grains)
    assert G == tasks
    forks_in_tasks = ((it["kind"] == "fork") & (it["grain"] < G)).sum()
    joins_in_tasks = ((it["kind"] == "join") & (it["grain"] < G)).sum()
    # the root call runs in the implicit task: its 2 forks are the context's
    assert forks_in_tasks == tasks - 2
    assert joins_in_tasks == tasks // 2 - 1
    frag = it[(it["kind"] == "fragment") & (it["grain"] < G)]
    assert set(frag["grain"]) == set(range(G))


def test_thesis_fig_5_3a_foo(foo):
    """foo creates bar and baz, computes in between, waits: its context has
    fork, fragment, fork, fragment, join, fragment in DAG order; the two
    children are one fragment each, right of their parent."""
    g = foo.graph_with_metrics
    d = GrainLayout(g).draw(depth=None)
    it = d.items
    G = len(g.grains)
    assert G == 2
    creator = int(g.grains["parent"].iloc[0])
    chain = it[it["grain"] == creator].sort_values(["y0", "y1"])
    kinds = chain["kind"].tolist()
    i = kinds.index("fork")
    assert kinds[i:i + 5] == ["fork", "fragment", "fork", "fragment", "join"]
    kids = it[(it["grain"] < G) & (it["kind"] == "fragment")]
    assert len(kids) == 2 and (kids["x"] > chain["x"].iloc[0]).all()
    # each child starts where its fork ends (DAG time), and ends before the join
    forks = chain[chain["kind"] == "fork"]
    join_y = chain[chain["kind"] == "join"]["y0"].iloc[0]
    assert sorted(kids["y0"]) == sorted(forks["y1"])
    assert (kids["y1"] <= join_y).all()


def test_loop_chunks_in_a_lane_per_thread_with_their_iteration_ranges(loop):
    # loops dynamic,7 40: ceil(40/7) = 6 chunks of 7 iterations, the last 5
    d = GrainLayout(loop.graph_with_metrics).draw(depth=None)
    ch = d.items[d.items["kind"] == "chunk"]
    assert len(ch) == 6
    assert sorted(ch["label"], key=lambda s: int(s.split("-")[0])) == \
        ["0-6", "7-13", "14-20", "21-27", "28-34", "35-39"]
    # a thread's chunks chain through its book-keeping (graph-model.md):
    # one lane per thread, right of the implicit task that ran them (its
    # book-keeping's column), none overlapping another in time
    parent = loop.graph.grains["parent"].to_numpy()[ch["grain"].to_numpy()]
    assert ch["x"].nunique() == len(set(parent))
    assert (ch.groupby("x")["grain"].apply(
        lambda s: len(set(loop.graph.grains["parent"].to_numpy()[s.to_numpy()]))) == 1).all()
    bk = d.items[d.items["kind"] == "bookkeeping"].groupby("grain")["x"].first()
    assert (ch["x"].to_numpy() > bk.loc[parent].to_numpy()).all()
    for _, lane in ch.sort_values("y0").groupby("x"):
        assert (lane["y0"].to_numpy()[1:] >= lane["y1"].to_numpy()[:-1]).all()


def test_reductions_keep_member_counts_and_weights(fib, loop):
    for a in (fib, loop):
        g = a.graph_with_metrics
        L = GrainLayout(g)
        nodes = g.nodes
        typ = nodes["type"].astype(str).to_numpy()
        d = L.draw(depth=None, fragments=True, forks=True, bookkeeping=True)
        it = d.items
        for kind in ("fragment", "fork", "bookkeeping", "chunk", "join"):
            m = it["kind"] == kind
            assert it.loc[m, "n_members"].sum() == (typ == kind).sum(), kind
            assert it.loc[m, "weight"].sum() == nodes["duration"].to_numpy()[typ == kind].sum()
        # fragments: one element per owner that has any
        frag_owners = np.unique(nodes["owner"].to_numpy()[typ == "fragment"])
        assert (it["kind"] == "fragment").sum() == len(frag_owners)


def test_fork_reduction_groups_the_forks_before_each_join(fib):
    g = fib.graph_with_metrics
    G = len(g.grains)
    d = GrainLayout(g).draw(depth=None, forks=True)
    f = d.items[(d.items["kind"] == "fork") & (d.items["grain"] < G)]
    # every creating fib task makes exactly 2 forks then 1 taskwait
    assert (f["n_members"] == 2).all() and len(f) == (G - 2) // 2


def test_bookkeeping_grouped_per_thread(loop):
    g = loop.graph_with_metrics
    d = GrainLayout(g).draw(depth=None, bookkeeping=True)
    bk = d.items[d.items["kind"] == "bookkeeping"]
    typ = g.nodes["type"].astype(str).to_numpy()
    threads = np.unique(g.nodes["owner"].to_numpy()[typ == "bookkeeping"])
    assert len(bk) == len(threads) and bk["grain"].nunique() == len(threads)


def test_collapse_keeps_every_grain_and_expand_round_trips(fib):
    g = fib.graph_with_metrics
    L = GrainLayout(g)
    G = len(g.grains)
    d = L.draw(depth=2)
    it = d.items
    s = it[it["kind"] == "summary"]
    assert len(s)
    shown = set(it.loc[it["kind"] == "fragment", "grain"]) - set(range(G, G + 99))
    # every grain is drawn as itself or inside exactly one summary
    assert len(shown & set(range(G))) + s["n_grains"].sum() == G
    assert s["work"].sum() + g.contexts["work"].sum() + \
        g.grains.loc[sorted(shown & set(range(G))), "work"].sum() == \
        g.grains["work"].sum() + g.contexts["work"].sum()
    tok = s["token"].iloc[0]
    e = L.draw(depth=2, expand=[tok])
    assert len(e.items) > len(d.items)
    assert (e.items["kind"] == "summary").sum() >= len(s) - 1
    back = L.draw(depth=2, expand=[])
    assert back.items.equals(d.items) and back.edges.equals(d.edges)


def test_critical_elements_are_analyzes_path(fib, loop):
    for a in (fib, loop):
        g = a.graph_with_metrics
        d = GrainLayout(g).draw(depth=None)
        it = d.items
        G = len(g.grains)
        crit = it[it["critical"] & it["kind"].isin(["fragment", "chunk"]) & (it["grain"] < G)]
        assert set(crit["grain"]) == set(a.critical_path.tolist())
        assert d.edges["critical"].sum() == g.edges["on_critical_path"].sum()


def test_severity_fills_the_problem_grains(fib):
    sev = problem_severity(fib, "parallel_benefit")
    d = GrainLayout(fib.graph_with_metrics).draw(depth=None, severity=sev)
    it = d.items
    frag = it[(it["kind"] == "fragment") & (it["grain"] < len(sev))]
    hit = np.flatnonzero(np.asarray(sev) > 0)
    assert set(frag.loc[frag["sev"] > 0, "grain"]) == set(hit.tolist())


def svg_counts(path) -> tuple[dict, ET.Element]:
    root = ET.parse(path).getroot()
    counts: dict = {}
    for el in root.iter():
        for c in (el.get("class") or "").split():
            counts[c] = counts.get(c, 0) + 1
    return counts, root


def test_export_svg_elements_by_class(fib, tmp_path, cli):
    out = tmp_path / "fib.svg"
    r = cli("export", fib.summary["trace"], "--svg", out, "--depth", "99", "-q")
    assert r.returncode == 0, r.stderr
    c, root = svg_counts(out)
    g = fib.graph
    n = node_counts(g)
    for kind in ("fragment", "fork", "join"):
        assert c.get(kind, 0) == n[kind], (kind, c)
    assert c.get("bookkeeping", 0) == n.get("bookkeeping", 0)
    assert c["edge"] == sum(c.get(t, 0) for t in ("creation", "synchronization",
                                                    "continuation", "dependence"))
    assert c.get("creation", 0) == (g.edges["type"] == "creation").sum()
    frag = [el for el in root.iter(SVG + "rect") if "fragment" in (el.get("class") or "")]
    grains = {int(el.get("data-grain")) for el in frag}
    assert set(range(len(g.grains))) <= grains
    crit = {int(el.get("data-grain")) for el in frag if "critical" in el.get("class")
            and int(el.get("data-grain")) < len(g.grains)}
    assert crit == set(fib.critical_path.tolist())
    crit_edges = [el for el in root.iter(SVG + "line") if "critical" in (el.get("class") or "")]
    assert len(crit_edges) == g.edges["on_critical_path"].sum()


def test_export_svg_of_a_loop_and_a_depth_limit(loop, fib, tmp_path, cli):
    out = tmp_path / "loop.svg"
    assert cli("export", loop.summary["trace"], "--svg", out, "-q").returncode == 0
    c, root = svg_counts(out)
    assert c["chunk"] == 6 and c["bookkeeping"] == node_counts(loop.graph)["bookkeeping"]
    labels = {el.text for el in root.iter(SVG + "text") if el.get("class") == "label"}
    assert {"0-6", "35-39"} <= labels
    out2 = tmp_path / "fib1.svg"
    assert cli("export", fib.summary["trace"], "--svg", out2, "--depth", "1", "-q") \
        .returncode == 0
    c2, root2 = svg_counts(out2)
    assert c2.get("summary", 0) >= 1
    n = sum(int(el.get("data-grains")) for el in root2.iter(SVG + "rect")
            if "summary" in (el.get("class") or ""))
    shown = {int(el.get("data-grain")) for el in root2.iter(SVG + "rect")
             if "fragment" in (el.get("class") or "")
             and int(el.get("data-grain")) < len(fib.graph.grains)}
    assert n + len(shown) == len(fib.graph.grains)


def test_export_png_and_errors(fib, tmp_path, cli):
    out = tmp_path / "fib.png"
    r = cli("export", fib.summary["trace"], "--png", out, "--reduced", "-q")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_one_line_error(cli("export", fib.summary["trace"], "--svg", tmp_path / "x.svg",
                              "--problem", "nope", "-q"), "--problem")
    assert_one_line_error(cli("export", fib.summary["trace"], "--svg", tmp_path / "x.svg",
                              "--depth", "-1", "-q"), "--depth")


def test_a_wide_loop_shows_a_page_of_chunks_per_thread(tmp_path):
    """A loop of 3,000 chunks on 2 threads: its implicit tasks stay open with
    a page of chunks each (the rest one summary per thread, which pages on),
    and their book-keeping is grouped per thread."""
    from conftest import grainlab
    from grainlab.export import drawing
    trace = tmp_path / "loop.parquet"
    r = grainlab("synth", "--shape", "loop", "--grains", 3000, "-o", trace, "-q")
    assert r.returncode == 0, r.stderr
    g = gl.analyze(trace).graph
    chunks = g.grains["kind"].astype(str) == "chunk"
    threads = g.grains.loc[chunks, "parent"].nunique()
    L = GrainLayout(g)
    d = L.draw()
    it = d.items
    page = drawing.SIBLING_PAGE
    assert (it["kind"] == "chunk").sum() == threads * page
    more = it[it["kind"] == "summary"]
    assert len(more) == threads and more["token"].str.startswith("m").all()
    assert more["n_grains"].sum() + threads * page == chunks.sum()
    assert (it["kind"] == "bookkeeping").sum() == threads and d.extra["auto_reduced"]
    e = L.draw(expand=[more["token"].iloc[0]])
    assert (e.items["kind"] == "chunk").sum() == threads * page + page


def _drawing(rows, window):
    """A Drawing of hand-made items: (kind, grain, y0, y1) rows."""
    import pandas as pd
    from grainlab.export.drawing import Drawing
    items = pd.DataFrame(rows, columns=["kind", "grain", "y0", "y1"])
    return Drawing(items=items, edges=pd.DataFrame(), mode="dag", n_columns=1,
                   n_grains=10, collapsed_depth=None, window=window)


def test_time_breaks_cut_runtime_alone_but_never_a_grain():
    """Two grains side by side for 1 ms, then a join alone for 10 ms, then a
    grain alone for 10 ms: the join's stretch is cut (and drawn 4% of the
    rest), the grain's is kept whole; ticks read real ms and skip the cut."""
    from grainlab.export import drawing
    from grainlab.export.drawing import from_start, time_ticks
    ms = 1_000_000
    rows = [("fragment", 0, 0, 1 * ms), ("fragment", 1, 0, 1 * ms),
            ("join", 0, 1 * ms, 11 * ms), ("fragment", 2, 11 * ms, 21 * ms)]
    window = (0.0, 21.0 * ms)
    br = drawing._time_breaks(_drawing(rows, window).items, window, 10)
    assert br.tolist() == [[1 * ms, 11 * ms]]
    d = _drawing(rows, window)
    d.extra["breaks"] = br
    kept = 11 * ms                                   # the grains' 1 + 10 ms
    assert from_start(d, 11 * ms) == pytest.approx(1 * ms + drawing.BREAK_SHOW * kept)
    assert from_start(d, 21 * ms) - from_start(d, 11 * ms) == pytest.approx(10 * ms)
    ticks, at, breaks = time_ticks(d)
    assert ticks[0] == 0 and at[0] == 0
    assert not ((ticks > 1 * ms + 1) & (ticks < 11 * ms - 1)).any()
    assert 11 * ms in ticks and breaks[0, 2] == 10 * ms
    # a grain alone as long as the join: no break at all
    rows[2] = ("fragment", 3, 1 * ms, 11 * ms)
    assert len(drawing._time_breaks(_drawing(rows, window).items, window, 10)) == 0


def test_lanes_never_overlap_and_chains_share_one():
    """Random intervals in three runs: no two of one lane overlap and lanes
    never mix runs; a chain of touching intervals (a thread's chunks) is one
    lane; a fan of overlapping ones takes one lane each."""
    from grainlab.export.drawing import _lanes
    rng = np.random.default_rng(1)
    n = 600
    run = rng.integers(0, 3, n)
    y0 = rng.integers(0, 1000, n).astype(float)
    y1 = y0 + rng.integers(0, 80, n)
    lane = _lanes(run, y0, y1)
    assert (lane >= 0).all()
    for r in range(3):
        for k in np.unique(lane[run == r]):
            m = (run == r) & (lane == k)
            o = np.lexsort((y1[m], y0[m]))      # an empty interval before one it starts
            assert (y0[m][o][1:] >= y1[m][o][:-1]).all()
    # at least as many lanes as intervals overlap at once (a lower bound)
    chain = np.arange(50.0)
    assert (_lanes(np.zeros(50, int), chain, chain + 1) == 0).all()
    assert sorted(_lanes(np.zeros(50, int), np.zeros(50), np.ones(50))) == list(range(50))
    assert sorted(_lanes(np.zeros(100, int), np.zeros(100), np.ones(100)))[-1] == 99


def test_app_figure_reads_time_from_the_start_as_the_export(fib):
    """The web app's DAG figure: 0 at the top, tick labels in real ms from
    the region's start (the export's `time_ticks`), within the grains'
    DAG-time extent."""
    from grainlab.app.graph_figure import dag_figure
    g = fib.graph_with_metrics
    d = GrainLayout(g).draw()
    y = dag_figure(d)["layout"]["yaxis"]
    assert y["range"][1] == 0 and y["range"][0] > 0
    values = [float(v) for v in y["ticktext"]]
    assert values[0] == 0 and y["tickvals"][0] == 0 and values == sorted(values)
    n = g.nodes
    grain = (n["grain"].to_numpy() >= 0) & (n["grain"].to_numpy() < len(g.grains))
    ef = n["earliest_finish"].to_numpy(np.float64)
    st = ef - n["duration"].to_numpy(np.float64)
    assert values[-1] <= (ef[grain].max() - st[grain].min()) / 1e6 * 1.2


def test_app_labels_of_a_lane_do_not_stack():
    """A lane of 100 chunks 1 unit apart, labels kept at least 10 apart (the
    app's chunk labels: a lane stacks them), and in another column too."""
    from grainlab.app.graph_figure import _apart
    x = np.r_[np.zeros(100), np.ones(100)]
    y = np.r_[np.arange(100.0), np.arange(100.0) + 0.5]
    keep = _apart(x, y, np.ones(200, bool), 10.0)
    for col in (0, 1):
        ys = np.sort(y[keep & (x == col)])
        assert len(ys) >= 5 and (np.diff(ys) >= 10).all()
    assert not _apart(x, y, np.zeros(200, bool), 10.0).any()
