"""The threads view as a picture: every thread a full-height track whose busy
time is drawn, at 20k grains (sort) and at 10^6 (a synthetic trace), read off
the screenshot's pixels in headless Chromium; and the split of each thread's
time into work / runtime / idle (no instant in two states)."""
from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest

from conftest import grainlab
from test_serve import Server, _browser, shot, wait_for

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def browser():
    yield from _browser()


def _states(tl, row):
    """(start, end, state) of one thread row, sorted."""
    parts = [(tl.w_start[tl.w_row == row], tl.w_end[tl.w_row == row], 2),
             (tl.rt_start[tl.rt_row == row], tl.rt_end[tl.rt_row == row], 1),
             (tl.idle_start[tl.idle_row == row], tl.idle_end[tl.idle_row == row], 0)]
    s = np.concatenate([p[0] for p in parts])
    e = np.concatenate([p[1] for p in parts])
    o = np.argsort(s, kind="stable")
    return s[o], e[o]


def test_timeline_states_partition_each_thread():
    from grainlab.app.threads_figure import ThreadTimeline
    # thread 0: a grain inside a taskwait (runtime) and one after; thread 1: nothing
    work = pd.DataFrame({"row": [0, 0], "start": [20, 60], "end": [30, 70], "owner": [0, 1]})
    runtime = pd.DataFrame({"row": [0], "start": [10], "end": [50]})
    tl = ThreadTimeline(work, runtime, 2, 0, 100)
    assert list(zip(tl.rt_start, tl.rt_end)) == [(10, 20), (30, 50)]
    assert sorted(zip(tl.idle_row, tl.idle_start, tl.idle_end)) == \
        [(0, 0, 10), (0, 50, 60), (0, 70, 100), (1, 0, 100)]
    for row in (0, 1):
        s, e = _states(tl, row)
        assert s[0] == 0 and e[-1] == 100 and (s[1:] == e[:-1]).all()   # tiles, no overlap


def _check_tracks(d, url, tl, name):
    """Every thread's track >= 20 px tall and >= 90% of its busy time on
    pixels drawn in a work colour (the screenshot, read with PIL)."""
    from PIL import Image
    from grainlab.app.threads_figure import CRIT_CODE, WORK_BASE, code_colors
    d.get(url + "?view=threads")
    def geometry():
        return d.execute_script("""
            const gd = document.querySelector('#threads-fig .js-plotly-plot');
            if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis || !gd.data
                || !gd.data.length || gd.data[0].type !== 'heatmap') return null;
            const L = gd._fullLayout, r = gd.getBoundingClientRect();
            return {left: r.left + L.xaxis._offset, width: L.xaxis._length, x0: L.xaxis.range[0],
                    x1: L.xaxis.range[1], top: r.top + L.yaxis._offset, height: L.yaxis._length,
                    y0: L.yaxis.range[0], y1: L.yaxis.range[1], dpr: window.devicePixelRatio,
                    z: gd.data[0].z ? gd.data[0].z.length : 0, n: gd.data.length};
            """)
    # the figure as it stays: a first draw may be redrawn (a resize, the
    # page's first state), so wait for the same geometry and data twice
    previous = {}

    def settled():
        now = geometry()
        same = now is not None and now == previous.get("geo")
        previous["geo"] = now
        if not same:
            time.sleep(0.5)
        return now if same else None
    geo = wait_for(settled, what="the threads figure, drawn and settled")
    d.execute_script("document.activeElement && document.activeElement.blur();")
    shot(d, name)
    img = np.asarray(Image.open(io.BytesIO(d.get_screenshot_as_png())).convert("RGB"),
                     np.int64)
    dpr = geo["dpr"]
    rows = tl.n_rows + 1
    track = geo["height"] / rows
    assert track >= 20, f"tracks {track:.1f} px tall"
    colors = code_colors()
    work = np.array([[int(colors[k][i:i + 2], 16) for i in (1, 3, 5)]
                     for k in colors if WORK_BASE - 1 <= k < CRIT_CODE], np.int64)
    px = int(geo["width"])
    edges = geo["x0"] + (geo["x1"] - geo["x0"]) * np.arange(px + 1) / px   # ms
    for row in range(tl.n_rows):
        # the row's centre line, in the screenshot's pixels
        y = geo["top"] + (row + 0.5) * track       # y axis reversed: row 0 on top
        line = img[int(y * dpr), [int((geo["left"] + i + 0.5) * dpr) for i in range(px)]]
        drawn = (np.abs(line[:, None, :] - work[None, :, :]).sum(axis=2) <= 12).any(axis=1)
        m = tl.w_row == row
        s, e = tl.w_start[m] / 1e6, tl.w_end[m] / 1e6
        # busy time per pixel column: each fragment spread over the columns it covers
        busy = np.zeros(px)
        a, b = s, e
        lo = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, px - 1)
        hi = np.clip(np.searchsorted(edges, b, side="left") - 1, 0, px - 1)
        one = lo == hi
        np.add.at(busy, lo[one], (b - a)[one])
        for i in np.flatnonzero(~one):   # few: fragments longer than a pixel
            busy[lo[i]] += edges[lo[i] + 1] - a[i]
            busy[hi[i]] += b[i] - edges[hi[i]]
            busy[lo[i] + 1:hi[i]] += edges[1] - edges[0]
        total = busy.sum()
        assert total > 0
        covered = busy[drawn].sum() / total
        assert covered >= 0.9, f"thread row {row}: {covered:.1%} of its busy time drawn"


def _timeline(path):
    import grainlab as gl
    from grainlab.app.data import AppData
    return AppData(gl.analyze(str(path))).timeline


def test_threads_tracks_sort_20k(browser, record):
    t = record("sort", 1048576, threads=2)
    s = Server(t.path)
    try:
        _check_tracks(browser, s.url, _timeline(t.path), "threads-sort")
    finally:
        s.stop()


def test_threads_tracks_1e6_grains(browser, tmp_path):
    trace = tmp_path / "fj1m.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", 1_000_000, "--threads", 4,
                 "--jitter", 0.5, "-o", trace, "-q")
    assert r.returncode == 0, r.stderr
    s = Server(trace)
    try:
        _check_tracks(browser, s.url, _timeline(trace), "threads-1e6")
    finally:
        s.stop()


# -- the details panel ----------------------------------------------------------------

def _texts(component) -> list:
    """Every string inside a Dash component tree."""
    out = []
    def walk(c):
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, (list, tuple)):
            for x in c:
                walk(x)
        elif c is not None and hasattr(c, "children"):
            walk(c.children)
    walk(component)
    return out


def test_details_units_hex_problems_first(record):
    import grainlab as gl
    from grainlab.app.data import AppData
    from grainlab.app.views.details import _details
    t = record("fib", 16, 5, threads=2)
    data = AppData(gl.analyze(t.path))
    pb = data.grains["parallel_benefit"].to_numpy()
    gid = int(np.flatnonzero(pb < data.thresholds["parallel_benefit"])[0])   # has a problem
    parts = _details(data, gid)
    ids = [getattr(p, "id", None) for p in parts]
    problems = parts[ids.index("details-problems")]
    # the problems come before the source and the other fields
    assert ids.index("details-problems") < ids.index("details-fields")
    rows = problems.children[1:]
    marks = [r.children[0].children for r in rows]
    assert marks[0].startswith("✗") and "Parallel benefit" in _texts(rows[0])
    assert sorted(marks, key=lambda m: not m.startswith("✗")) == marks   # fails first
    assert all("problem if" in _texts(r)[-1] for r in rows)
    fields = {r.children[0].children: r.children[1].children
              for r in parts[ids.index("details-fields")].children}
    assert fields["codeptr"].startswith("0x")
    assert fields["Work"].endswith(("ns", "us", "ms", " s"))
    assert fields["start"].endswith("since the start")
    # a task has no loop fields (they would all be -1)
    assert not {"loop", "first iteration", "iterations", "loop thread"} & set(fields)
    assert "-1" not in fields.values()
    frag_rows = parts[-1].children[1:]
    assert all(r.children[4].children.endswith(("ns", "us", "ms", " s")) for r in frag_rows)


def test_default_problem_is_the_worst_the_trace_has(record):
    """imbalance plants a load-balance problem: the app opens on it, not on
    parallel benefit; fib's worst is parallel benefit."""
    import grainlab as gl
    from grainlab.app.data import AppData
    from grainlab.app.state import default_problem, format_state, parse_state
    fib = AppData(gl.analyze(record("fib", 16, 5, threads=2).path))
    assert default_problem(fib) == "parallel_benefit"
    imb = AppData(gl.analyze(record("imbalance", threads=2).path))
    assert default_problem(imb) == "load_balance"
    st = parse_state("", imb)
    assert st["problem"] == "load_balance"
    # a link names its problem, so another default cannot change what it shows
    assert "problem=load_balance" in format_state(st)
    st["problem"] = "parallel_benefit"
    assert parse_state(format_state(st), imb)["problem"] == "parallel_benefit"


def test_most_grains_flagged_colours_by_value(record):
    """fib's grains all fail parallel benefit at a high threshold: the
    steps are then the values in fifths, so grains still differ, worst darkest."""
    import grainlab as gl
    from grainlab.app.data import AppData
    from grainlab.export.palette import severity_class
    data = AppData(gl.analyze(record("fib", 16, 5, threads=2).path))
    v = data.grains["parallel_benefit"].to_numpy(np.float64)
    th = float(np.nanmax(v)) + 1.0             # every grain with a value flagged
    assert data.by_value("parallel_benefit", th)
    sev, count = data.severity("parallel_benefit", th)
    cls = severity_class(sev)[np.isfinite(v)]
    assert count == np.isfinite(v).sum()
    assert set(cls.tolist()) == {1, 2, 3, 4, 5}        # five steps used, not one
    # lower is worse: the lowest value is in the darkest step
    fin = np.flatnonzero(np.isfinite(v))
    assert severity_class(sev)[fin[np.argmin(v[fin])]] == 5
    assert severity_class(sev)[fin[np.argmax(v[fin])]] == 1
    # the legend names each step's value range: mildest (highest values)
    # first, the ranges ordered and covering the flagged values' extremes
    steps = data.value_steps("parallel_benefit", th)
    bounds = [tuple(float(x) for x in r.split("–")) for r in steps]
    assert len(bounds) == 5 and all(lo <= hi for lo, hi in bounds)
    assert all(bounds[k + 1][1] <= bounds[k][0] for k in range(4))
    assert f"{np.nanmax(v):.3g}" == steps[0].split("–")[1]
    assert f"{np.nanmin(v):.3g}" == steps[4].split("–")[0]
    from grainlab.export.palette import severity_names
    assert severity_names(steps)[4] == f"worst fifth ({steps[4]})"
    # at the median (about half flagged) the steps are the distance past the threshold
    assert not data.by_value("parallel_benefit", float(np.nanmedian(v)))
    assert data.value_steps("parallel_benefit", float(np.nanmedian(v))) is False


def test_dag_zoom_in_the_url_and_restored(browser, record):
    """A zoom of the DAG-time graph is written into the URL (dzoom) and a
    link with it opens the graph zoomed so; its time axis starts at 0."""
    t = record("fib", 16, 5, threads=2)
    s = Server(t.path)
    d = browser
    try:
        d.get(s.url + "?view=graph&problem=parallel_benefit")
        rng = wait_for(lambda: d.execute_script("""
            const gd = document.querySelector('#graph-fig .js-plotly-plot');
            return gd && gd._fullLayout && gd._fullLayout.yaxis && gd.data && gd.data.length
                && gd._fullLayout.yaxis.range;"""), what="the grain graph")
        assert min(rng) == pytest.approx(0.0, abs=1e-9)     # from the region's start
        # the page's first state in before the zoom (as a user's would be)
        wait_for(lambda: d.find_element("id", "problem-count").text.strip(), what="state")

        def zoom_written():
            # a zoom made while the page still settles may be dropped (Dash
            # keeps a callback's newest call): zoom again until it is in
            if "dzoom=" in d.current_url:
                return d.current_url
            d.execute_script("""
                const gd = document.querySelector('#graph-fig .js-plotly-plot');
                Plotly.relayout(gd, {'xaxis.range[0]': 2, 'xaxis.range[1]': 9,
                                     'yaxis.range[0]': 0.004, 'yaxis.range[1]': 0.001});""")
            return None
        url = wait_for(zoom_written, what="dzoom in the URL")
        d.get(url)
        def zoomed():
            r = d.execute_script("""
                const gd = document.querySelector('#graph-fig .js-plotly-plot');
                return gd && gd.data && gd.data.length && gd._fullLayout
                    && [gd._fullLayout.xaxis.range, gd._fullLayout.yaxis.range];""")
            ok = r and abs(r[0][0] - 2) < 1e-6 and abs(r[0][1] - 9) < 1e-6 \
                and abs(max(r[1]) - 0.004) < 1e-9 and abs(min(r[1]) - 0.001) < 1e-9
            return r if ok else None
        wait_for(zoomed, what="the graph zoomed as the link says")
        shot(d, "graph-dzoom")
    finally:
        s.stop()


def test_predicted_scaling_axis_fits_the_data(record):
    """The y axis spans the prediction (not the 64-core linear line), labels
    only 1-2-5 steps, and starts near 1."""
    import grainlab as gl
    from grainlab.app.predict_figure import prediction_figure
    a = gl.analyze(record("fib", 15, 3, threads=1).path)
    pred = a.predict([1, 2, 4, 8, 16, 32, 64])
    fig = prediction_figure(pred)
    y = fig.layout.yaxis
    lo, hi = 10 ** y.range[0], 10 ** y.range[1]
    top = max(max(pred["speedup"]), max(pred["speedup_upper"]))
    assert top <= hi <= 1.5 * top + 1e-9 and hi < 64
    assert 0.5 < lo <= 1.0
    # 1-2-5 per decade; within less than a decade also 1.5, 3, 4, 7
    # (predict_figure.log_ticks), so a speed-up from 1 to 4 has its ticks
    mantissa = {round(v / 10 ** np.floor(np.log10(v)), 6) for v in y.tickvals}
    steps = {1, 2, 5} if hi / lo >= 10 else {1, 1.5, 2, 3, 4, 5, 7}
    assert mantissa <= steps and len(y.tickvals) >= 2


def test_predicted_scaling_axis_of_a_run_that_does_not_scale(record):
    """A prediction of about 1 at every core count (a busy machine, a serial
    program) still gets an axis with at least two labelled ticks."""
    import grainlab as gl
    from grainlab.app.predict_figure import prediction_figure
    pred = gl.analyze(record("fib", 15, 3, threads=1).path).predict([1, 2, 4, 8])
    flat = [1.0] * len(pred["cores"])
    pred = dict(pred, speedup=flat, speedup_upper=flat, speedup_lower=flat)
    y = prediction_figure(pred).layout.yaxis
    lo, hi = 10 ** y.range[0], 10 ** y.range[1]
    assert 1.0 <= hi <= 1.5 + 1e-9 and 0.5 < lo <= 1.0
    assert len(y.tickvals) >= 2 and all(lo <= v <= hi + 1e-9 for v in y.tickvals)


def test_search_box_finds_a_grain_or_all_grains_of_a_location(browser, record):
    import grainlab as gl
    from grainlab.app.data import AppData
    from grainlab.app.state import find
    t = record("fib", 16, 5, threads=2)
    data = AppData(gl.analyze(t.path))
    assert find(data, "#7") == ("grain", 7) and find(data, "7") == ("grain", 7)
    loc = str(data.locations[3])
    assert find(data, loc) == ("location", loc)
    assert find(data, "FIB.C:")[0] == "location"          # any case, a part of it
    assert find(data, "no such place") is None
    s = Server(t.path)
    d = browser
    try:
        d.get(s.url + "?view=graph")
        box = wait_for(lambda: d.find_element("id", "graph-search"), what="the search box")
        wait_for(lambda: d.find_element("id", "problem-count").text.strip(), what="state")
        want = int(data.locations.where(loc).sum())
        tries = []

        def searched():
            # a search sent while the page still settles may be dropped (Dash
            # keeps a callback's newest call): send it again, changed by a
            # trailing space the search ignores, until the URL has it
            if "problem=location" in d.current_url:
                return True
            box.clear()
            box.send_keys(loc.split(" ")[0] + " " * (len(tries) % 2) + "\n")
            tries.append(1)
            return False
        wait_for(searched, what="the location view")
        wait_for(lambda: d.find_element("id", "problem-count").text.strip()
                 .startswith(f"{want} grains at"), what=f"{want} grains highlighted")
        shot(d, "graph-search")
    finally:
        s.stop()


def test_parallelism_zoom_in_the_url_and_restored(browser, record):
    """A time zoom of either parallelism panel is written into the URL
    (pzoom: each panel's range in its axis's unit) and a link with it opens
    the panels zoomed so; a double-click (autorange) takes it back out."""
    from grainlab.app.data import AppData
    from grainlab.app.figures import parallelism_extents
    from grainlab.app.state import _panels_zoom
    import grainlab as gl
    t = record("fib", 16, 5, threads=2)
    data = AppData(gl.analyze(t.path))
    full_a, full_b = parallelism_extents(data.ideal, data.achieved)
    assert full_a > 0 and full_b > 0
    b0, b1 = 0.25 * full_b, 0.5 * full_b
    # the state's rule, without a browser
    z = _panels_zoom({"xaxis2.range[0]": b1, "xaxis2.range[1]": b0}, None, data)
    assert z == [0.0, full_a, b0, b1]
    assert _panels_zoom({"xaxis2.autorange": True}, z, data) is None
    assert _panels_zoom({"autosize": True}, z, data) == z
    s = Server(t.path)
    d = browser
    try:
        d.get(s.url + "?view=parallelism")
        wait_for(lambda: d.execute_script("""
            const gd = document.querySelector('#parallelism-fig .js-plotly-plot');
            return !!(gd && gd.data && gd.data.length && gd._fullLayout.xaxis2);"""),
            what="the parallelism panels")
        wait_for(lambda: d.find_element("id", "problem-count").text.strip() or True, what="state")

        def zoom_written():
            if "pzoom=" in d.current_url:
                return d.current_url
            d.execute_script(f"""
                const gd = document.querySelector('#parallelism-fig .js-plotly-plot');
                Plotly.relayout(gd, {{'xaxis2.range[0]': {b0}, 'xaxis2.range[1]': {b1}}});""")
            return None
        url = wait_for(zoom_written, what="pzoom in the URL")
        d.get("about:blank")
        d.get(url)

        def zoomed():
            r = d.execute_script("""
                const gd = document.querySelector('#parallelism-fig .js-plotly-plot');
                return gd && gd.data && gd.data.length && gd._fullLayout.xaxis2
                    && [gd._fullLayout.xaxis.range, gd._fullLayout.xaxis2.range];""")
            ok = r and abs(r[1][0] - b0) < 1e-6 * full_b and abs(r[1][1] - b1) < 1e-6 * full_b \
                and abs(r[0][0]) < 1e-6 * full_a and abs(r[0][1] - full_a) < 1e-6 * full_a
            return r if ok else None
        wait_for(zoomed, what="the achieved panel zoomed as the link says")
        shot(d, "parallelism-pzoom")
    finally:
        s.stop()
