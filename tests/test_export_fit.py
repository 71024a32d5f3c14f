"""`grainlab export --svg/--png` as pictures: sized to a page or a slide
(`--fit`), a legend that names every mark drawn, no two text labels
overlapping (their bounding boxes as headless Chromium lays them out), and
the critical path one connected chain of drawn elements."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conftest import grainlab
from test_serve import _browser

SVG = "{http://www.w3.org/2000/svg}"
pytestmark = pytest.mark.timeout(900)

PROGRAMS = {"fib": ("fib", 25, 8), "sparselu_for": ("sparselu", "for", 20, 64),
            "sparselu_depend": ("sparselu_depend", 12)}


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
