"""The web app's figures as static matplotlib images, for notebooks and
reports: the very plotly figure the app draws (same layout, colours,
critical path, level of detail; grainlab.app.figure_cache) redrawn line by
line with matplotlib, so a notebook shows it as a PNG that GitHub, nbviewer
and HTML exports display without JavaScript (docs/notebooks.md).

    import grainlab as gl
    from grainlab.app import static
    fig = static.figure(gl.analyze("t.parquet"), "graph")   # or "threads"
"""
from __future__ import annotations

import numpy as np

from .data import NO_PROBLEM, AppData
from .figure_cache import FigureCache
from ..export.palette import CLASS_COLORS, CLASS_NAMES, CRITICAL
from .figures import MS, classes
from .state import DEFAULT, default_problem


def _problem(data: AppData, problem: str | None) -> str:
    if problem is not None:
        return problem
    return default_problem(data)


def app_figure(analysis, which: str = "graph", problem: str | None = None,
               data: AppData | None = None) -> dict:
    """The plotly figure (a dict) the web app shows for this view and problem
    (default: the app's default problem; "none" for structure only). The
    grain graph in its wall-clock placement (`layout=wall`): lines that
    matplotlib redraws one for one; the thesis drawing in DAG time is an SVG
    of its own (`grainlab export --svg`, grainlab.export.drawing)."""
    data = data or AppData(analysis)
    state = dict(DEFAULT)
    state["view"] = which
    state["layout"] = "wall"
    state["problem"] = _problem(data, problem)
    fig, _, _ = FigureCache(data).get(state, which)
    return fig


def _axis_title(axis: dict) -> str:
    t = axis.get("title")
    return (t.get("text") if isinstance(t, dict) else t) or ""


def _colour(c):
    """A plotly colour string as matplotlib takes it."""
    if isinstance(c, str) and c.startswith("rgb"):
        nums = [float(v) for v in c[c.index("(") + 1:c.index(")")].split(",")]
        rgb = [v / 255 for v in nums[:3]]
        return (*rgb, nums[3]) if len(nums) > 3 else tuple(rgb)
    return c


def _array(v) -> np.ndarray:
    """A plotly array: a list, or (plotly >= 6) {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict) and "bdata" in v:
        import base64
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if v.get("shape"):
            a = a.reshape([int(n) for n in str(v["shape"]).split(",")])
        return a.astype(np.float64)
    return np.asarray(v if v is not None else [], np.float64)


def _trace(ax, tr: dict):
    if tr.get("type") == "heatmap":
        z, x, y = _array(tr["z"]), _array(tr.get("x")), _array(tr.get("y"))
        scale = tr.get("colorscale") or []
        from matplotlib.colors import LinearSegmentedColormap
        cmap = LinearSegmentedColormap.from_list(
            "app", [(float(p), _colour(c)) for p, c in scale]) if scale else "viridis"
        ax.pcolormesh(x, y, z, cmap=cmap, shading="auto", vmin=tr.get("zmin"),
                      vmax=tr.get("zmax"))
        return
    if tr.get("type") == "bar":      # the threads view's exact bars: the image has them
        return
    x, y = _array(tr.get("x")), _array(tr.get("y"))
    line = tr.get("line") or {}
    mode = tr.get("mode", "lines")
    colour = _colour(line.get("color") or (tr.get("marker") or {}).get("color"))
    label = tr.get("name") if tr.get("showlegend", True) else None
    if "lines" in mode:
        ax.plot(x, y, color=colour, lw=max(0.6, float(line.get("width", 1)) * 0.6),
                solid_capstyle="butt", label=label,
                marker="o" if "markers" in mode else None, ms=2.5)
    elif "markers" in mode:
        square = (tr.get("marker") or {}).get("symbol") == "square"
        ax.plot(x, y, "s" if square else "*", color=colour, ms=7 if square else 10, label=label)


def to_matplotlib(fig: dict, ax=None, size=(9, 6)):
    """Redraw a plotly figure dict of scatter (lines/markers) and heatmap
    traces with matplotlib: titles, reversed axes and ranges kept."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    for tr in fig.get("data", []):
        _trace(ax, tr)
    return _layout(ax, fig)


def segments_figure(data: AppData, which: str, problem: str, fig: dict, ax=None, size=(9, 6)):
    """Every grain drawn as the app draws it in its detail view (segments by
    class colour, the critical path in red beside them), whatever the number
    of grains: a static image has no level of detail to fall back on. `fig`
    (the app's figure) gives the titles and axes. A grain shorter than 0.2%
    of the time drawn is drawn that long (the app marks such grains with a
    dot), so that short grains stay visible."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    sev, _ = data.severity(problem, None, None)
    cls = classes(data.n_grains, data.n_total, sev, show_all=(problem == NO_PROBLEM))
    seg = data.segments if which == "graph" else data.segments[data.segments["row"] >= 0]
    pos = seg["x" if which == "graph" else "row"].to_numpy(np.float64)
    t0, t1 = seg["start"].to_numpy(np.float64) / MS, seg["end"].to_numpy(np.float64) / MS
    if len(t0):
        t1 = np.maximum(t1, t0 + 0.002 * (t1.max() - t0.min()))
    owner = seg["owner"].to_numpy(np.int64)
    vertical = which == "graph"

    def lines(m, shift=0.0):
        a = np.stack([pos[m] + shift, t0[m]], 1)
        b = np.stack([pos[m] + shift, t1[m]], 1)
        pts = np.stack([a, b], 1)
        return pts if vertical else pts[:, :, ::-1]
    c = cls[owner]
    for k in sorted(CLASS_COLORS):
        m = c == k
        if m.any():
            ax.add_collection(LineCollection(lines(m), colors=CLASS_COLORS[k],
                                             linewidths=3 if vertical else 10,
                                             label=CLASS_NAMES[k], capstyle="butt"))
    crit = data.critical[owner]
    if crit.any():
        ax.add_collection(LineCollection(lines(crit, 0.3), colors=CRITICAL, linewidths=1.5,
                                         label="critical path"))
    ax.autoscale()
    return _layout(ax, fig)


def _layout(ax, fig: dict):
    lay = fig.get("layout", {})
    xa, ya = lay.get("xaxis", {}), lay.get("yaxis", {})
    ax.set_xlabel(_axis_title(xa))
    ax.set_ylabel(_axis_title(ya))
    title = lay.get("title")
    ax.set_title((title.get("text") if isinstance(title, dict) else title) or "", fontsize=10)
    for axis, get, setter in ((xa, ax.get_xlim, ax.set_xlim), (ya, ax.get_ylim, ax.set_ylim)):
        if axis.get("range") is not None:
            lo, hi = axis["range"]
            setter(lo, hi)
        elif axis.get("autorange") == "reversed":
            lo, hi = get()
            setter(hi, lo)
    if ya.get("tickvals") is not None:
        ax.set_yticks(list(ya["tickvals"]), [str(t) for t in ya.get("ticktext") or ya["tickvals"]])
    handles, labels = ax.get_legend_handles_labels()
    if labels:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3,
                  frameon=False)
    ax.figure.tight_layout()
    return ax.figure


def figure(analysis, which: str = "graph", problem: str | None = None, ax=None,
           data: AppData | None = None):
    """The app's "graph" or "threads" view of an analysis, as a matplotlib
    figure: the app's own figure when it draws every grain; when it would
    show its binned overview (too many grains for a browser), every grain
    drawn as in its detail view, which a static image can afford."""
    data = data or AppData(analysis)
    fig = app_figure(analysis, which, problem, data)
    if which != "threads" and any(tr.get("type") == "heatmap" for tr in fig.get("data", [])):
        state_problem = _problem(data, problem)
        return segments_figure(data, which, state_problem, fig, ax=ax)
    return to_matplotlib(fig, ax=ax)
