"""grainlab.app.static (issue 25): the web app's grain graph and threads
figures redrawn with matplotlib for notebooks carry the same segments as the
plotly figure the app serves: every line trace becomes one line with the same
points and colour, the time axis runs down, threads are labelled."""
from __future__ import annotations

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.colors import to_hex  # noqa: E402

import grainlab as gl  # noqa: E402
from grainlab.app import static  # noqa: E402
from grainlab.app.data import AppData  # noqa: E402
from grainlab.app.figures import CRITICAL  # noqa: E402


@pytest.fixture(scope="module")
def analysis(record):
    return gl.analyze(record("fib", 12, 4).path)


def test_graph_lines_are_the_app_figure(analysis):
    data = AppData(analysis)
    fig = static.app_figure(analysis, "graph", data=data)
    drawn = static.to_matplotlib(fig)
    ax = drawn.axes[0]
    lines = [tr for tr in fig["data"] if "lines" in tr.get("mode", "")]
    assert len(ax.get_lines()) == len(lines)
    for tr, ln in zip(lines, ax.get_lines()):
        assert np.allclose(ln.get_xdata(), static._array(tr["x"]), equal_nan=True)
        assert np.allclose(ln.get_ydata(), static._array(tr["y"]), equal_nan=True)
        assert to_hex(ln.get_color()) == to_hex(tr["line"]["color"])
    crit = [ln for ln in ax.get_lines() if to_hex(ln.get_color()) == to_hex(CRITICAL)]
    # the critical path: one segment (3 points: start, end, gap) per critical grain
    assert len(crit) == 1
    assert len(crit[0].get_xdata()) == 3 * int(data.critical[data.segments["owner"]].sum())
    lo, hi = ax.get_ylim()
    assert lo > hi                      # time flows down
    assert ax.get_ylabel() == "time since start (ms)"


def test_threads_view_labels_each_thread(analysis):
    drawn = static.figure(analysis, "threads", "none")
    ax = drawn.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # threads that ran grains or serial/team code, as the app's rows, and
    # the critical path's track beneath
    seg = AppData(analysis).segments
    threads = sorted(set(seg["thread"].tolist()) - {-1})
    assert labels == [f"thread {t}" for t in threads] + ["critical path"]
    assert set(analysis.grains["thread"].tolist()) <= set(threads)


def test_binary_plotly_arrays_decode():
    import base64
    a = np.array([1.5, np.nan, 3.0])
    enc = {"dtype": "f8", "bdata": base64.b64encode(a.tobytes()).decode()}
    assert np.allclose(static._array(enc), a, equal_nan=True)
    assert static._array([1, 2]).tolist() == [1.0, 2.0]


def test_overview_becomes_every_segment_drawn(analysis, monkeypatch):
    """Where the app would bin (too many grains for a browser), the static
    figure draws every segment in its class colour, and the critical path."""
    from matplotlib.collections import LineCollection

    from grainlab.app import figures
    from grainlab.app.figures import CLASS_COLORS
    monkeypatch.setattr(figures, "DETAIL_LIMIT", 10)
    data = AppData(analysis)
    fig = static.app_figure(analysis, "graph", data=data)
    assert any(tr.get("type") == "heatmap" for tr in fig["data"])
    drawn = static.figure(analysis, "graph", data=data)
    cols = [c for c in drawn.axes[0].collections if isinstance(c, LineCollection)]
    by_colour = {to_hex(c.get_colors()[0]): len(c.get_segments()) for c in cols}
    crit = by_colour.pop(to_hex(CRITICAL))
    assert crit == int(data.critical[data.segments["owner"]].sum())
    assert sum(by_colour.values()) == len(data.segments)
    assert set(by_colour) <= {to_hex(c) for c in CLASS_COLORS.values()}
