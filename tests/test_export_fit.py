"""`grainlab export --svg/--png` as pictures: sized to a page or a slide
(`--fit`), a legend that names every mark drawn, no two text labels
overlapping (their bounding boxes as headless Chromium lays them out), the
critical path one connected chain of drawn elements, `depend` graphs and
wide fans packed by time (dependence edges short and downward, a thread's
chunks one column), the time axis from the region's start, and no stretch
of one element alone leaving the canvas empty. Geometry is read back from
the SVG; the answers it is checked against come from the graph's tables."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import grainlab as gl
from conftest import grainlab
from test_serve import _browser

SVG = "{http://www.w3.org/2000/svg}"
pytestmark = pytest.mark.timeout(900)

PROGRAMS = {"fib": ("fib", 25, 8), "sparselu_for": ("sparselu", "for", 20, 64),
            "sparselu_depend": ("sparselu_depend", 12),
            # examples/README: chunks = N = 200 of dynamic,1
            "loop_dynamic": ("loop_dynamic", 200, 97, 200),
            "stencil_depend": ("stencil_depend", 8, 32, 4)}


@pytest.fixture(scope="module")
def browser():
    yield from _browser()


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def exported(request, record, tmp_path_factory):
    """(name, trace path, {variant: svg path}): the default size and a slide."""
    name = request.param
    t = record(*PROGRAMS[name], threads=2)
    out = tmp_path_factory.mktemp("svg")
    svgs = {}
    for variant, extra in (("default", ()), ("slide", ("--fit", "1600x900")),
                           ("page", ("--fit", "1100x850"))):
        path = out / f"{name}-{variant}.svg"
        r = grainlab("export", t.path, "--svg", path, *extra, "-q")
        assert r.returncode == 0, r.stderr
        svgs[variant] = path
    return name, t.path, svgs


def _boxes(d, path):
    d.get(path.as_uri())
    return d.execute_script("""
        return Array.from(document.querySelectorAll('text')).map(t => {
            const b = t.getBBox();
            return [t.textContent, b.x, b.y, b.width, b.height];
        });""")


def test_no_two_labels_overlap(browser, exported):
    name, _, svgs = exported
    for variant, path in svgs.items():
        boxes = sorted(_boxes(browser, path), key=lambda b: b[1])
        assert len(boxes) > 10
        bad = []
        for i, (ta, xa, ya, wa, ha) in enumerate(boxes):
            for tb, xb, yb, wb, hb in boxes[i + 1:]:
                if xb >= xa + wa - 0.5:
                    break          # sorted by x: nothing further right overlaps
                if xa < xb + wb - 0.5 and ya < yb + hb - 0.5 and yb < ya + ha - 0.5:
                    bad.append((ta, tb))
        assert not bad, f"{name} {variant}: {len(bad)} overlapping labels, e.g. {bad[:5]}"


def test_fit_sizes_the_picture(exported):
    _, _, svgs = exported
    for variant, (w, h) in (("slide", (1600, 900)), ("page", (1100, 850))):
        root = ET.parse(svgs[variant]).getroot()
        assert (float(root.get("width")), float(root.get("height"))) == (w, h)
    root = ET.parse(svgs["default"]).getroot()
    assert float(root.get("width")) <= 2400          # a sane default, not 13,000 px


def test_legend_names_every_mark(exported):
    name, _, svgs = exported
    root = ET.parse(svgs["slide"]).getroot()
    classes = set()
    for el in root.iter():
        classes |= set((el.get("class") or "").split())
    legend = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") == "legend":
            mark = next(iter(g))
            legend[g.find(SVG + "text").text] = mark.tag.replace(SVG, "")
    text = " ".join(legend)
    # forks as triangles and joins as circles, as they are drawn
    if "fork" in classes:
        assert legend["fork (task creation)"] == "polygon"
    if "join" in classes:
        assert legend["join (taskwait, barrier)"] == "circle"
    for cls, words in (("bookkeeping", "book-keeping"), ("chunk", "loop chunk"),
                       ("summary", "collapsed subtree"), ("creation", "creation edge"),
                       ("synchronization", "synchronization edge"),
                       ("continuation", "continuation edge"), ("dependence", "dependence edge"),
                       ("critical", "critical path")):
        if cls in classes:
            assert words in text, (name, cls, text)
    # the fills drawn: every rectangle's fill has a legend swatch
    swatches = {next(iter(g)).get("fill") for g in root.iter(SVG + "g")
                if g.get("class") == "legend"}
    fills = {el.get("fill") for el in root.iter(SVG + "rect")
             if set((el.get("class") or "").split()) & {"fragment", "chunk", "summary"}}
    assert fills <= swatches, (name, fills - swatches)
    assert "problem: < 20% past threshold" in text and "> 80% past" in text


def test_critical_path_is_one_connected_chain(exported):
    name, _, svgs = exported
    for variant, path in svgs.items():
        root = ET.parse(path).getroot()
        items = {}
        for el in root.iter():
            cls = (el.get("class") or "").split()
            if "critical" in cls and el.get("data-item") is not None:
                items.setdefault(int(el.get("data-item")), []).append(el)
        edges = [el for el in root.iter(SVG + "line")
                 if "critical" in (el.get("class") or "").split()]
        assert items and edges
        parent = {i: i for i in items}

        find = _finder(parent)
        for e in edges:
            s, t = int(e.get("data-src")), int(e.get("data-dst"))
            # an edge of the path joins two elements of the path, drawn where they are
            assert s in items and t in items, (name, variant, s, t)
            for i, x, y in ((s, e.get("x1"), e.get("y1")), (t, e.get("x2"), e.get("y2"))):
                assert any(_touches(el, float(x), float(y)) for el in items[i]), \
                    (name, variant, i, x, y)
            parent[find(s)] = find(t)
        roots = {find(i) for i in items}
        assert len(roots) == 1, f"{name} {variant}: the critical path in {len(roots)} pieces"


def _finder(parent):
    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    return find


def _touches(el, x, y, tol=3.0) -> bool:
    tag = el.tag.replace(SVG, "")
    if tag == "rect":
        x0, y0 = float(el.get("x")), float(el.get("y"))
        w, h = float(el.get("width")), float(el.get("height"))
        return x0 - tol <= x <= x0 + w + tol and y0 - tol <= y <= y0 + h + tol
    if tag == "circle":
        cx, cy, r = (float(el.get(k)) for k in ("cx", "cy", "r"))
        return abs(cx - x) <= r + tol and abs(cy - y) <= r + tol
    pts = [tuple(map(float, p.split(","))) for p in el.get("points").split()]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return min(xs) - tol <= x <= max(xs) + tol and min(ys) - tol <= y <= max(ys) + tol


def _marks(root, classes):
    """(class set, x, y, width, height) of every rect with one of `classes`."""
    out = []
    for el in root.iter(SVG + "rect"):
        cls = set((el.get("class") or "").split())
        if cls & classes:
            out.append((cls, el, *(float(el.get(k)) for k in ("x", "y", "width", "height"))))
    return out


def _edges_of(root, kind):
    return [el for el in root.iter(SVG + "line")
            if kind in (el.get("class") or "").split()]


def _overlap_free_columns(rects):
    """True when no two rectangles of one column (same x) overlap in y by
    more than the shortest drawn length."""
    by_x = {}
    for _, _, x, y, _w, h in rects:
        by_x.setdefault(round(x, 1), []).append((y, y + h))
    for iv in by_x.values():
        iv.sort()
        # (a rectangle is drawn 2 px long at the least: MIN_LEN in export/svg.py)
        if any(b[0] < a[1] - 2.1 for a, b in zip(iv, iv[1:])):
            return False
    return True


def _max_concurrent_tasks(g) -> int:
    """Most grains running at once in DAG time, from the node table: each
    grain from its first node's DAG start to its last node's DAG end."""
    n = g.nodes
    own = n["grain"].to_numpy(np.int64)
    ef = n["earliest_finish"].to_numpy(np.float64)
    st = ef - n["duration"].to_numpy(np.float64)
    m = (own >= 0) & (own < len(g.grains))
    a = np.full(len(g.grains), np.inf)
    b = np.full(len(g.grains), -np.inf)
    np.minimum.at(a, own[m], st[m])
    np.maximum.at(b, own[m], ef[m])
    t = np.r_[a, b]
    step = np.r_[np.ones(len(a)), -np.ones(len(b))]
    order = np.lexsort((step, t))             # an end before a start at the same instant
    return int(np.cumsum(step[order]).max())


@pytest.mark.parametrize("name", ["sparselu_depend", "stencil_depend"])
def test_depend_tasks_laid_out_by_their_dependences(record, tmp_path, name):
    """A single producer's `depend` tasks: packed into lanes by DAG time, so
    the drawing is about as wide as the graph's parallelism (not one column
    per task), no two tasks of a lane overlap, dependence edges go down and
    stay short, and the producer's creation and synchronization edges are
    bundled per fan with counts that add up to the graph's."""
    t = record(*PROGRAMS[name], threads=2)
    g = gl.analyze(t.path).graph
    out = tmp_path / "d.svg"
    assert grainlab("export", t.path, "--svg", out, "--fit", "1600x900", "-q").returncode == 0
    root = ET.parse(out).getroot()
    G = len(g.grains)
    tasks = [m for m in _marks(root, {"fragment"}) if int(m[1].get("data-grain")) < G]
    assert {int(m[1].get("data-grain")) for m in tasks} == set(range(G))
    assert _overlap_free_columns(tasks)
    xs = np.unique([round(m[2], 1) for m in tasks])
    most = 2 * _max_concurrent_tasks(g) + 2
    assert len(xs) <= most, (len(xs), _max_concurrent_tasks(g))
    assert len(xs) <= G / 4, (len(xs), G)
    pitch = np.diff(xs).min()
    dep = _edges_of(root, "dependence")
    assert len(dep) == (g.edges["type"] == "dependence").sum()
    for e in dep:
        x1, y1, x2, y2 = (float(e.get(k)) for k in ("x1", "y1", "x2", "y2"))
        assert y2 >= y1 - 0.5                      # a dependent task starts after
        # no wedge across the width: at most as many columns as the
        # graph's parallelism allows (before: across all 230 tasks' columns)
        assert abs(x2 - x1) <= most * pitch + 0.5, (x1, x2, pitch)
    for kind in ("creation", "synchronization"):
        drawn = _edges_of(root, kind)
        n = sum(int(e.get("data-count") or 1) for e in drawn)
        # every graph edge of the kind is drawn or counted in a bundle; one
        # bundle for the fan (per join), plus the critical path's own edges
        assert n == (g.edges["type"] == kind).sum(), (kind, n)
        bundles = [e for e in drawn if "bundled" in e.get("class").split()]
        assert 1 <= len(bundles) <= 3, (kind, len(bundles))
        assert len(drawn) < G / 4, (kind, len(drawn), G)


def test_a_dynamic_loops_chunks_chain_down_their_threads(record, tmp_path):
    """200 chunks of schedule(dynamic): each thread's chunks one column (they
    chain through its book-keeping), not a row 200 wide; the critical path
    through them a chain of short edges, not a red triangle."""
    t = record(*PROGRAMS["loop_dynamic"], threads=2)
    g = gl.analyze(t.path).graph
    out = tmp_path / "l.svg"
    assert grainlab("export", t.path, "--svg", out, "-q").returncode == 0
    root = ET.parse(out).getroot()
    chunks = _marks(root, {"chunk"})
    assert len(chunks) == 200
    threads = g.grains.loc[g.grains["kind"].astype(str) == "chunk", "thread"].nunique()
    assert len({round(m[2], 1) for m in chunks}) == threads
    assert _overlap_free_columns(chunks)
    crit = _edges_of(root, "critical")
    assert crit
    height = float(root.get("height"))
    # each critical edge joins neighbours in time: none spans a tenth of the picture
    assert max(abs(float(e.get("y2")) - float(e.get("y1"))) for e in crit) < height / 10


def _ticks(root):
    """(value ms, y px) of the time axis's tick labels (text at x = 4)."""
    out = []
    for el in root.iter(SVG + "text"):
        if el.get("x") == "4" and el.text and el.text[0].isdigit():
            out.append((float(el.text), float(el.get("y"))))
    return sorted(out, key=lambda v: v[1])


def test_time_axis_reads_from_the_regions_start(exported):
    """The axis starts at 0 at the top of the drawing and ends within the
    grains' DAG-time extent (not at the trace clock's milliseconds after the
    serial code before the region); values grow downwards."""
    name, trace, svgs = exported
    g = gl.analyze(trace).graph
    n = g.nodes
    grain = (n["grain"].to_numpy() >= 0) & (n["grain"].to_numpy() < len(g.grains))
    ef = n["earliest_finish"].to_numpy(np.float64)
    st = ef - n["duration"].to_numpy(np.float64)
    extent_ms = (ef[grain].max() - st[grain].min()) / 1e6
    root = ET.parse(svgs["default"]).getroot()
    ticks = _ticks(root)
    assert ticks[0][0] == 0
    top = min(m[3] for m in _marks(root, {"fragment", "chunk", "summary"}))
    assert abs(ticks[0][1] - 3 - top) < 20, (ticks[0], top)     # 0 at the drawing's top
    values = [v for v, _ in ticks]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert values[-1] <= extent_ms * 1.2 + 1e-3, (name, values[-1], extent_ms)


def _runtime_alone_share(root, G) -> tuple[float, float]:
    """Shares of the drawing's height (first to last mark): the longest
    stretch outside the marked breaks in which nothing, or one mark alone
    that is no grain's own work (a join's or book-keeping's bar, a collapsed
    subtree, serial code), is drawn; and the breaks' grey bands."""
    iv, grain = [], []
    for cls, el, _x, y, _w, h in _marks(root, {"fragment", "chunk", "summary", "extent"}):
        iv.append((y, y + h))
        grain.append(bool(cls & {"fragment", "chunk"}) and int(el.get("data-grain")) < G)
    bands = [(float(r.get("y")), float(r.get("y")) + float(r.get("height")))
             for g in root.iter(SVG + "g") if g.get("class") == "break"
             for r in g.iter(SVG + "rect")]
    iv, grain = np.array(iv), np.array(grain, float)
    t = np.r_[iv[:, 0], iv[:, 1]]
    order = np.argsort(t, kind="stable")
    t = t[order]
    drawn = np.cumsum(np.r_[np.ones(len(iv)), -np.ones(len(iv))][order])[:-1]
    grains = np.cumsum(np.r_[grain, -grain][order])[:-1]
    mid = (t[1:] + t[:-1]) / 2
    in_band = np.zeros(len(mid), bool)
    for a, b in bands:
        in_band |= (mid > a) & (mid < b)
    length = np.diff(t)
    alone = ((drawn < 1.5) & (grains < 0.5) & ~in_band) | (length == 0)
    run = np.cumsum(np.r_[True, alone[1:] != alone[:-1]])   # consecutive stretches
    longest = np.bincount(run[alone], weights=length[alone]).max() if alone.any() else 0.0
    height = t[-1] - t[0]
    return float(longest / height), float(length[in_band].sum() / height)


@pytest.mark.parametrize("program", [("fib", 24, 10), ("sort", 1048576, 2048, 2048, 20)])
def test_no_single_stretch_leaves_the_canvas_empty(record, tmp_path, program):
    """fib with 2,046 tasks and sort: no unmarked stretch showing nothing
    but one piece of runtime, collapsed subtree or serial code takes more
    than a fifth of the drawing's height. Longer ones (sort's 12 ms taskwait
    on a loaded machine once left 96% of the height to one orange bar) are
    cut from the time axis and marked as breaks, with the time they cut;
    the breaks' bands take at most 15% of the height. (A grain running
    alone keeps its length.)"""
    t = record(*program, threads=2)
    G = len(gl.analyze(t.path).graph.grains)
    out = tmp_path / "c.svg"
    assert grainlab("export", t.path, "--svg", out, "--fit", "1600x900", "-q").returncode == 0
    root = ET.parse(out).getroot()
    alone, bands = _runtime_alone_share(root, G)
    assert alone <= 0.2 and bands <= 0.15, (alone, bands)
    for b in root.iter(SVG + "g"):
        if b.get("class") == "break":      # a cut says how long it was
            assert float(b.get("data-cut-ns")) > 0
