"""`grainlab serve` in a real browser: Debian's headless Chromium driven by
Selenium through chromedriver, against the real CLI serving real recorded
traces. Screenshots of every view are kept under out/screenshots/.

What the page shows is checked against independent answers: the count of
highlighted grains against `grainlab analyze --json` at the same threshold,
a source location's grains against the analysis's own table, the source
line against the example's file read here.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, assert_one_line_error, grainlab

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = REPO / "out" / "screenshots"

pytestmark = pytest.mark.timeout(600)


def _require_browser():
    missing = [p for p in (CHROMIUM, DRIVER) if not os.path.exists(p)]
    if missing:
        pytest.fail("browser tests need Debian's chromium and chromium-driver "
                    f"(make setup installs them): missing {', '.join(missing)}")


class Server:
    """`grainlab serve ... --port 0` in a child process; its URL from its stdout."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "grainlab.cli", "serve", "--port", "0", *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        self.url = None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"serving .* at (http://\S+/)", line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.stop()
            pytest.fail("grainlab serve did not print its URL: " + self.proc.stderr.read())
        self._wait_ready()

    def _wait_ready(self):
        import urllib.request
        for _ in range(100):
            try:
                with urllib.request.urlopen(self.url + "_grainlab/alive", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        pytest.fail("grainlab serve never answered")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def browser():
    yield from _browser()


@pytest.fixture
def fresh_browser():
    """A browser of its own, for a test that must start from a page no other
    test has used."""
    yield from _browser()


def _browser():
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1500,950"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.set_page_load_timeout(60)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def fib_trace(record):
    return record("fib", 16, 5, threads=2)


@pytest.fixture(scope="module")
def server(fib_trace):
    s = Server(fib_trace.path)
    yield s
    s.stop()


def click_plot_at(d, plot, x, y, w, h):
    """A real mouse click at (x, y) px from the plot's top left (w x h px).
    The plot's top is scrolled to the window's top first: Selenium scrolls
    only the element's centre into view, which can leave a point near the
    top of a tall plot outside the window (the click then hits nothing)."""
    from selenium.webdriver.common.action_chains import ActionChains
    d.execute_script("arguments[0].scrollIntoView({block: 'start'});", plot)
    ActionChains(d).move_to_element_with_offset(plot, int(x - w / 2), int(y - h / 2)).click() \
        .perform()


def wait_for(fn, timeout=120, what="condition"):   # a hang detector, not a speed bound
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < timeout:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # the page is still rendering
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def text(d, css):
    return d.find_element("css selector", css).text


def shown_text(d, css, what):
    """The text of the first element matching `css` that is shown and not
    empty, once there is one."""
    return wait_for(lambda: [e.text for e in d.find_elements("css selector", css)
                             if e.is_displayed() and e.text], what=what)[0]


def open_page(d, url):
    """The grain graph view of `url` (the page lands on the summary)."""
    if "view=" not in url:
        url += ("&" if "?" in url else "?") + "view=graph"
    d.get(url)
    wait_for(lambda: text(d, "#problem-count").strip(), what="the grain graph")
    wait_for(lambda: d.find_elements("css selector", "#graph-fig .main-svg"), what="plot")


def shot(d, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    time.sleep(0.5)
    d.save_screenshot(str(SHOTS / f"{name}.png"))


def count_shown(d) -> int:
    m = re.match(r"\s*(\d+)", text(d, "#problem-count"))
    assert m, text(d, "#problem-count")
    return int(m.group(1))


def analyze_json(path, *args):
    r = grainlab("analyze", "--json", *args, path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------

def test_every_view_renders(browser, server):
    d = browser
    open_page(d, server.url)
    shot(d, "graph")
    for view, css in (("summary", "#summary-problems"), ("locations", "#loc-table"),
                      ("parallelism", "#parallelism-fig .main-svg"),
                      ("threads", "#threads-fig .main-svg")):
        d.get(server.url + f"?view={view}")
        el = wait_for(lambda css=css: [e for e in d.find_elements("css selector", css)
                               if e.is_displayed()], what=view)
        assert el
        shot(d, view)
    assert not d.find_element("id", "pane-graph").is_displayed()


def test_threshold_change_matches_analyze(browser, server, fib_trace):
    d = browser
    open_page(d, server.url)
    default = analyze_json(fib_trace.path)["problems"]["parallel_benefit"]["grains"]
    wait_for(lambda: count_shown(d) == default, what=f"default count {default}")
    for th in ("0.05", "3"):
        box = d.find_element("id", "threshold")
        box.clear()
        box.send_keys(th + "\n")
        want = analyze_json(fib_trace.path, "--threshold", f"parallel_benefit={th}")[
            "problems"]["parallel_benefit"]["grains"]
        wait_for(lambda want=want: count_shown(d) == want, what=f"count {want} at threshold {th}")
        assert "threshold=" in d.current_url
    shot(d, "graph-threshold")


def test_click_a_grain_shows_its_source_line(browser, server, fib_trace):
    d = browser
    open_page(d, server.url)
    # A real mouse click at the pixel where grain #0 starts on the plot.
    pos = d.execute_script("""
        const gd = document.querySelector('#graph-fig .js-plotly-plot');
        for (const tr of gd._fullData) {  // typed arrays, decoded
            if (!tr.customdata || tr.name === 'critical path') continue;
            for (let i = 0; i < tr.customdata.length; i++) {
                if (tr.customdata[i] === 0 && tr.x[i] !== null && !isNaN(tr.x[i])) {
                    const L = gd._fullLayout;
                    return [L.xaxis.l2p(tr.x[i]) + L.margin.l, L.yaxis.l2p(tr.y[i]) + L.margin.t,
                            gd.clientWidth, gd.clientHeight];
                }
            }
        }
        return null;""")
    assert pos, "grain #0 is not drawn"
    x, y, w, h = pos
    plot = d.find_element("css selector", "#graph-fig .js-plotly-plot")
    click_plot_at(d, plot, x, y, w, h)
    title = wait_for(lambda: text(d, "#details-title"), what="details of the clicked grain")
    gid = int(re.search(r"#(\d+)", title).group(1))
    assert "grain=" in d.current_url
    loc = text(d, "#details-location")
    m = re.match(r"(\S+):(\d+)", loc)
    assert m and m.group(1).endswith("fib.c"), loc
    line = int(m.group(2))
    source = (REPO / "examples" / "fib.c").read_text().splitlines()[line - 1].strip()
    hit = text(d, "#details-source .hit")
    assert source and source in hit, (hit, source)
    # The details are the analysis's own values for that grain.
    import grainlab as gl
    row = gl.analyze(fib_trace.path).grains.loc[gid]
    assert row["identity"] in title
    shot(d, "details")


def test_selecting_a_location_highlights_its_grains(browser, server, fib_trace):
    d = browser
    d.get(server.url + "?view=locations")
    # the page's first state (from the URL) must be in before the click (the
    # count is hidden on this view: the problem controls show on graph and threads)
    wait_for(lambda: d.find_element("id", "problem-count").get_attribute("textContent").strip(),
             what="the first state")
    wait_for(lambda: d.find_elements("css selector", "#loc-table input[type=radio]"),
             what="location rows")
    first_loc = wait_for(lambda: d.find_element(
        "css selector", "#loc-table td[data-dash-column=location]").text, what="row text")

    # Clicked at once, while the figures are first drawn: their autosize
    # used to overtake the pick in the one callback both went through, and
    # the pick was lost in 2 of 8 page loads (the radio checked, nothing
    # selected). One click must do.
    d.find_elements("css selector", "#loc-table input[type=radio]")[0].click()
    want = {l["location"]: l["grains"] for l in analyze_json(fib_trace.path)["locations"]}
    wait_for(lambda: d.find_element("id", "pane-graph").is_displayed(), what="graph view")
    wait_for(lambda: count_shown(d) == want[first_loc], what=f"{want[first_loc]} grains")
    assert first_loc in text(d, "#problem-count")
    assert "problem=location" in d.current_url
    shot(d, "location-selected")


def test_url_reproduces_the_state(browser, server):
    d = browser
    d.get(server.url + "?view=threads&problem=load_balance&threshold=1.2&grain=3")
    wait_for(lambda: d.find_element("id", "pane-threads").is_displayed(), what="threads view")
    wait_for(lambda: "Grain #3" in text(d, "#details-title"), what="grain 3 selected")
    assert d.find_element("id", "threshold").get_attribute("value") == "1.2"
    assert "Load balance" in text(d, "#problem")
    # and a zoom (of the wall-clock placement)
    d.get(server.url + "?view=graph&layout=wall&zoom=0,20,0,0.5")
    wait_for(lambda: d.execute_script(
        "const L = document.querySelector('#graph-fig .js-plotly-plot')._fullLayout;"
        "return L.xaxis.range[1] <= 20.5 && L.xaxis.range[0] >= -0.5;"), what="zoomed axes")
    # A malformed link falls back to defaults instead of breaking the page.
    d.get(server.url + "?view=nope&grain=abc&threshold=zz&zoom=1,2")
    wait_for(lambda: d.find_element("id", "pane-summary").is_displayed(), what="the default view")
    assert d.find_element("id", "threshold").get_attribute("value") == "1"


def test_compare_view(browser, record, tmp_path):
    one = record("fib", 16, 5, threads=1)
    two = record("fib", 16, 5, threads=2)
    s = Server("--compare", one.path, two.path)
    try:
        d = browser
        d.get(s.url + "?view=compare&problem=work_deviation")
        rows = wait_for(lambda: d.find_elements("css selector", "#compare-table tbody tr"),
                        what="compare table")
        assert len(rows) >= 2            # header + at least one location
        # the count is in the page, hidden here (the problem controls show on
        # the views they colour: graph, threads)
        wait_for(lambda: "work_deviation" in d.find_element("id", "problem-count")
                 .get_attribute("textContent"), what="deviation count")
        shot(d, "compare")
    finally:
        s.stop()


def test_lost_connection_is_said_in_the_page(browser, fib_trace):
    s = Server(fib_trace.path)
    d = browser
    open_page(d, s.url)
    assert not d.find_element("id", "conn-banner").is_displayed()
    s.stop()
    wait_for(lambda: d.find_element("id", "conn-banner").is_displayed(), timeout=20,
             what="lost-connection message")
    assert "Lost the connection" in text(d, "#conn-banner")


# ---------------------------------------------------------------------------
# safety and errors, through the real server and CLI

def test_no_url_reads_other_files(server):
    import http.client
    from urllib.parse import urlparse
    u = urlparse(server.url)
    for path in ("/assets/../../../../etc/passwd", "/assets/..%2f..%2f..%2f..%2fetc%2fpasswd",
                 "/_dash-component-suites/dash/../../../../../../etc/passwd",
                 "/_dash-component-suites/../../../../etc/passwd", "/etc/passwd",
                 "/assets/../server.py", "/assets/%2e%2e/server.py"):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("GET", path)
        body = c.getresponse().read().decode(errors="replace")
        assert "root:" not in body and "def create_app" not in body, path


def test_binds_loopback_and_warns_otherwise(fib_trace):
    s = Server(fib_trace.path)
    try:
        assert s.url.startswith("http://127.0.0.1:")
    finally:
        s.stop()
    p = subprocess.Popen([sys.executable, "-m", "grainlab.cli", "serve", "--port", "0",
                          "--host", "0.0.0.0", fib_trace.path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stderr.readline()
        assert "warning: serving on 0.0.0.0" in first, first
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(20)


def test_bad_trace_is_the_analyze_error(tmp_path, cli):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not a trace")
    r_serve = cli("serve", "--port", "0", bad)
    r_analyze = cli("analyze", bad)
    assert_one_line_error(r_serve, "bad.parquet")
    assert r_serve.stderr == r_analyze.stderr
    assert_one_line_error(cli("serve", "--port", "70000", bad), "--port")


def test_taken_port_is_one_line(fib_trace, cli):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        assert_one_line_error(cli("serve", "--port", s.getsockname()[1], fib_trace.path),
                              "cannot serve")
    finally:
        s.close()


def test_overview_cell_expands_on_click(browser, tmp_path):
    """A graph too large to draw grain by grain shows the binned overview; a
    click on it expands that part until every grain there is drawn."""
    trace = tmp_path / "big.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", 5000, "-o", trace, "-q")
    assert r.returncode == 0, r.stderr
    s = Server(trace)
    try:
        d = browser
        open_page(d, s.url + "?layout=wall")
        assert "overview" in text(d, "#lod")
        from selenium.webdriver.common.action_chains import ActionChains
        plot = d.find_element("css selector", "#graph-fig .js-plotly-plot")
        ActionChains(d).move_to_element_with_offset(plot, -200, 0).click().perform()
        wait_for(lambda: "zoom=" in d.current_url, what="zoom in the URL")
        wait_for(lambda: "detail" in text(d, "#lod"), what="the detail level")
        shot(d, "overview-expanded")
    finally:
        s.stop()


# ---------------------------------------------------------------------------
# the grain graph as the thesis draws it: checked by its data (each trace's
# meta names the kind of element, each element is one customdata entry)

DRAWN = """
    const gd = document.querySelector('#graph-fig .js-plotly-plot');
    if (!gd || !gd.data) return null;
    const out = {};
    for (const tr of gd.data) {
        if (!tr.meta || !tr.customdata) continue;
        const cd = Array.from(tr.customdata);
        const rect = ['fragment', 'chunk', 'summary', 'critical'].includes(tr.meta);
        const items = rect ? cd.filter((_, i) => i % 3 == 0) : cd;
        out[tr.meta] = (out[tr.meta] || []).concat(items);
    }
    return out;"""


def drawn(d) -> dict:
    return wait_for(lambda: d.execute_script(DRAWN), what="the drawn grain graph")


def test_graph_elements_are_the_graphs_nodes(browser, server, fib_trace):
    d = browser
    open_page(d, server.url)
    a = __import__("grainlab").analyze(fib_trace.path)
    g = a.graph
    want = g.nodes["type"].astype(str).value_counts().to_dict()
    got = drawn(d)
    for kind in ("fragment", "fork", "join"):
        assert len(got.get(kind, [])) == want[kind], kind
    # rectangles carry their grain: every grain is drawn
    assert set(range(len(g.grains))) <= set(got["fragment"])
    # the red borders are the critical path's grains (and its contexts)
    crit = {c for c in got["critical"] if c < len(g.grains)}
    assert crit == set(analyze_json(fib_trace.path)["critical_path"])
    shot(d, "graph-dag")


def test_graph_reductions_in_the_page(browser, server, fib_trace):
    d = browser
    open_page(d, server.url + "?reduce=fragments,forks")
    g = __import__("grainlab").analyze(fib_trace.path).graph
    typ = g.nodes["type"].astype(str).to_numpy()
    owners = g.nodes["owner"].to_numpy()
    want = len(set(owners[typ == "fragment"].tolist()))
    wait_for(lambda: len(drawn(d).get("fragment", [])) == want, what=f"{want} fragments")
    assert "reduce=fragments%2Cforks" in d.current_url or "reduce=fragments,forks" in \
        d.current_url


def test_loop_chunks_in_the_page(browser, record):
    loop = record("loops", "dynamic,7", 40, threads=2)
    s = Server(loop.path)
    try:
        d = browser
        open_page(d, s.url)
        got = drawn(d)
        assert len(got.get("chunk", [])) == 6
        assert len(got.get("bookkeeping", [])) == \
            (loop.graph().nodes["type"].astype(str) == "bookkeeping").sum()
        labels = d.execute_script(
            "const gd = document.querySelector('#graph-fig .js-plotly-plot');"
            "return gd.data.filter(t => t.meta == 'labels').flatMap(t => Array.from(t.text));")
        assert {"0-6", "7-13", "35-39"} <= set(labels)
        shot(d, "graph-loop")
    finally:
        s.stop()


def test_collapse_and_expand_round_trip(browser, tmp_path):
    """A graph too large to show whole is drawn with subtrees collapsed into
    summary nodes; a real click on one expands it (more elements, its token
    in the URL), "collapse last expanded" brings the first view back."""
    trace = tmp_path / "big.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", 5000, "-o", trace, "-q")
    assert r.returncode == 0, r.stderr
    s = Server(trace)
    try:
        d = browser
        open_page(d, s.url)
        first = drawn(d)
        assert first.get("summary"), first.keys()
        n0 = {k: len(v) for k, v in first.items()}
        pos = d.execute_script("""
            const gd = document.querySelector('#graph-fig .js-plotly-plot');
            const L = gd._fullLayout;
            for (const tr of gd._fullData) {
                if (tr.meta !== 'summary-handle') continue;
                const k = Math.floor(tr.x.length / 2);
                return [L.xaxis.l2p(tr.x[k]) + L.margin.l, L.yaxis.l2p(tr.y[k]) + L.margin.t,
                        gd.clientWidth, gd.clientHeight, tr.customdata[k]];
            }
            return null;""")
        assert pos, "no summary drawn"
        x, y, w, h, token = pos
        plot = d.find_element("css selector", "#graph-fig .js-plotly-plot")
        click_plot_at(d, plot, x, y, w, h)
        wait_for(lambda: "expand=" in d.current_url, what="the expansion in the URL")
        assert token in d.current_url
        wait_for(lambda: len(drawn(d).get("fragment", [])) > n0.get("fragment", 0),
                 what="the expanded subtree")
        shot(d, "graph-expanded")
        d.find_element("id", "graph-collapse").click()
        wait_for(lambda: "expand=" not in d.current_url, what="the collapse in the URL")
        wait_for(lambda: {k: len(v) for k, v in drawn(d).items()} == n0,
                 what="the first view again")
    finally:
        s.stop()


def test_summary_lands_and_links_into_the_views(browser, server, fib_trace):
    d = browser
    d.get(server.url)
    wait_for(lambda: d.find_element("id", "pane-summary").is_displayed(), what="the summary")
    want = analyze_json(fib_trace.path)["problems"]
    rows = d.find_elements("css selector", "#summary-problems tr")
    shown = {}
    for r in rows[1:]:
        cells = [c.text for c in r.find_elements("css selector", "td")]
        if len(cells) >= 3 and cells[2].isdigit():
            shown[cells[0]] = int(cells[2])
    from grainlab.app.state import PROBLEM_LABELS
    for name, p in want.items():
        if p["available"]:
            assert shown[PROBLEM_LABELS.get(name, name)] == p["grains"], name
    shot(d, "summary")
    link = d.find_element("css selector", "#summary-problems a.problem-link")
    label = link.text
    link.click()
    wait_for(lambda: d.find_element("id", "pane-graph").is_displayed(), what="the graph view")
    wait_for(lambda: label in text(d, "#problem"), what="the problem picked")
    assert "view=graph" in d.current_url


def test_parallelism_panels_and_threads_gantt(browser, server, fib_trace):
    d = browser
    d.get(server.url + "?view=parallelism")
    wait_for(lambda: d.find_elements("css selector", "#parallelism-fig .main-svg"), what="plot")
    info = wait_for(lambda: d.execute_script("""
        const gd = document.querySelector('#parallelism-fig .js-plotly-plot');
        if (!gd || !gd._fullLayout.yaxis2) return null;
        return [gd.data.map(t => [t.name, t.xaxis || 'x', t.yaxis || 'y']),
                gd._fullLayout.yaxis.type, gd._fullLayout.yaxis2.range];"""), what="two panels")
    traces, ytype, range2 = info
    axes = {name.split(" ")[0]: (x, y) for name, x, y in traces}
    # exposed and achieved on their own time axes; the cores line beside achieved
    assert axes["exposed"] != axes["achieved"] and axes["cores"] == axes["achieved"]
    cores = analyze_json(fib_trace.path)["cores_used"]
    assert ytype == "linear" and range2[1] > cores
    d.find_element("css selector", "#parallelism-scale input[value=log]").click()
    wait_for(lambda: d.execute_script(
        "return document.querySelector('#parallelism-fig .js-plotly-plot')"
        "._fullLayout.yaxis.type") == "log", what="log scale")
    shot(d, "parallelism")
    d.get(server.url + "?view=threads")
    names = wait_for(lambda: d.execute_script(
        "const gd = document.querySelector('#threads-fig .js-plotly-plot');"
        "return gd && gd.data && gd.data.map(t => t.name);"), what="the Gantt chart")
    assert any(n.startswith("idle") for n in names) and any(n.startswith("runtime") for n in names)
    shot(d, "threads")


def test_threads_zoom_to_a_single_grain(fresh_browser, fib_trace):
    # Its own server and browser: after the other tests of this file, the
    # zoomed threads figure was at times never drawn (not reproduced alone
    # or after any few of them; open, docs/webapp.md "Not there yet").
    server = Server(fib_trace.path)
    try:
        _zoom_to_grain_3(fresh_browser, server, fib_trace)
    finally:
        server.stop()


def _zoom_to_grain_3(d, server, fib_trace):
    d.get(server.url + "?view=graph&grain=3")
    link = wait_for(lambda: d.find_element("id", "details-zoom"), what="the zoom link")
    link.click()
    wait_for(lambda: "view=threads" in d.current_url and "tzoom=" in d.current_url,
             what="the threads view, zoomed")
    g = __import__("grainlab").load(fib_trace.path).graph()
    nodes = g.nodes
    own = nodes[(nodes["grain"] == 3) & nodes["type"].astype(str).isin(["fragment"])]
    origin = int(nodes.loc[nodes["type"].astype(str).isin(["fragment", "chunk"]), "start"].min())
    t0, t1 = (own["start"].min() - origin) / 1e6, (own["end"].max() - origin) / 1e6
    def zoomed():
        # the page may still show the whole run's axis before the zoomed figure lands
        rng = d.execute_script(
            "const gd = document.querySelector('#threads-fig .js-plotly-plot');"
            "return gd && gd._fullLayout && gd._fullLayout.xaxis.range;")
        ok = rng and rng[0] <= t0 and rng[1] >= t1 and rng[1] - rng[0] <= 2 * (t1 - t0) + 2e-3 + 1e-9
        seen.append((rng, d.current_url))
        return rng if ok else None
    seen = []
    try:
        rng = wait_for(zoomed, what="the threads axis zoomed to grain 3")
    except AssertionError:
        raise AssertionError(f"grain 3 at {t0}..{t1} ms; last axis range and URL: "
                             f"{seen[-1] if seen else None}") from None
    assert rng[0] <= t0 and rng[1] >= t1
    shot(d, "threads-zoomed")


def test_thesis_fig_5_3a_program_in_the_page(browser, record):
    """twotasks 1: one function creates two tasks, computes between, waits
    (thesis Fig. 5.3a): the page draws exactly the graph's forks, joins and
    fragments, and the two children's rectangles."""
    foo = record("twotasks", 1, threads=2)
    s = Server(foo.path)
    try:
        d = browser
        open_page(d, s.url + "?problem=none")
        g = foo.graph()
        want = g.nodes["type"].astype(str).value_counts().to_dict()
        got = drawn(d)
        for kind in ("fork", "join", "fragment"):
            assert len(got.get(kind, [])) == want[kind], kind
        assert {0, 1} <= set(got["fragment"])
    finally:
        s.stop()
