"""Plotly figures of the web app. Each reads what the analysis computed
(grains, metric columns, thresholds, profiles) and only decides how to draw it.

Levels of detail: a view that would draw more than `DETAIL_LIMIT` segments is
drawn as a server-side binned image (a heatmap of the most severe grain per
bin, a few hundred by a few hundred cells) instead; zooming in redraws the
visible part, and once it holds few enough segments every grain is drawn
(WebGL lines, hover and click). The browser never holds one element per grain.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..export.palette import CLASS_COLORS, CLASS_NAMES, CRITICAL, EDGE, severity_class
from .hover import hover_text

DETAIL_LIMIT = 8_000        # segments drawn one by one at most ("a few thousand grains")
EDGE_LIMIT = 3_000          # grains below which creation/sync edges are drawn
BINS = (480, 360)           # heatmap cells along position and time
MS = 1e6

# Colours and drawing classes: grainlab.export.palette (one place for every view).


def classes(n_grains: int, n_total: int, severity: np.ndarray, show_all: bool) -> np.ndarray:
    """Drawing class per grain/context id: -1 contexts, 0 dimmed, 1..5 severity.
    `show_all`: no problem selected, every grain drawn in the strongest grey."""
    cls = np.full(n_total, -1, np.int8)
    if show_all:
        cls[:n_grains] = 0
        return cls
    cls[:n_grains] = np.maximum(severity_class(np.asarray(severity, np.float64)[:n_grains]), 0)
    return cls


def _lines(pos, t0, t1, owner, vertical: bool):
    """x, y, customdata of line segments separated by gaps (NaN)."""
    k = len(pos)
    p = np.empty(3 * k)
    t = np.empty(3 * k)
    p[0::3] = pos
    p[1::3] = pos
    p[2::3] = np.nan
    t[0::3] = t0 / MS
    t[1::3] = t1 / MS
    t[2::3] = np.nan
    # A plain list: dcc.Graph leaves binary-encoded customdata out of clickData.
    cd = np.repeat(owner, 3).tolist()
    return (p, t, cd) if vertical else (t, p, cd)


def segment_figure(seg: pd.DataFrame, pos_col: str, cls: np.ndarray, critical: np.ndarray,
                   vertical: bool, window=None, edges=None, title="",
                   pos_title="", hover_labels=None, width: float = 6,
                   under=()) -> tuple[go.Figure, str]:
    """Grains as segments (pos, start..end), coloured by class, critical path in
    red beside them. `window` = (p0, p1, t0_ms, t1_ms) restricts what is drawn
    (zoom); returns the figure and the level of detail used ("detail"/"overview").
    `width`: of a segment (px); `under`: traces drawn beneath the grains at
    the detail level (the threads view's idle tracks and runtime time)."""
    pos = seg[pos_col].to_numpy(np.float64)
    t0 = seg["start"].to_numpy(np.float64)
    t1 = seg["end"].to_numpy(np.float64)
    owner = seg["owner"].to_numpy(np.int64)
    keep = np.ones(len(seg), bool)
    if window is not None:
        p0, p1, a, b = window
        keep = (pos >= p0 - 1) & (pos <= p1 + 1) & (t1 >= a * MS) & (t0 <= b * MS)
    pos, t0, t1, owner = pos[keep], t0[keep], t1[keep], owner[keep]
    c = cls[owner] if len(owner) else np.zeros(0, np.int8)
    fig = go.Figure()
    level = "detail" if len(pos) <= DETAIL_LIMIT else "overview"
    if level == "detail":
        for tr in under:
            fig.add_trace(tr)
        if edges is not None and len(edges):
            ex = np.empty(3 * len(edges))
            ey = np.empty(3 * len(edges))
            ex[0::3], ex[1::3], ex[2::3] = edges["p0"], edges["p1"], np.nan
            ey[0::3], ey[1::3], ey[2::3] = edges["t0"] / MS, edges["t1"] / MS, np.nan
            x, y = (ex, ey) if vertical else (ey, ex)
            fig.add_trace(go.Scattergl(x=x, y=y, mode="lines", hoverinfo="skip",
                                       line=dict(color=EDGE, width=1), name="edges"))
        for k in sorted(CLASS_COLORS):
            m = c == k
            if not m.any():
                continue
            x, y, cd = _lines(pos[m], t0[m], t1[m], owner[m], vertical)
            text = None
            if hover_labels is not None:
                text = hover_text(hover_labels, cd)
            fig.add_trace(go.Scattergl(
                x=x, y=y, customdata=cd, mode="lines+markers" if m.sum() < 4000 else "lines",
                line=dict(color=CLASS_COLORS[k], width=width), marker=dict(size=4),
                name=CLASS_NAMES[k], legendgroup=str(k), showlegend=True,
                text=text, hovertemplate="%{text}<extra></extra>" if text is not None else None,
                hoverinfo=None if text is not None else "skip"))
        cm = critical[owner] if len(owner) else np.zeros(0, bool)
        if cm.any():
            x, y, cd = _lines(pos[cm] + 0.3, t0[cm], t1[cm], owner[cm], vertical)
            fig.add_trace(go.Scattergl(x=x, y=y, customdata=cd, mode="lines",
                                       line=dict(color=CRITICAL, width=3),
                                       name="critical path", hoverinfo="skip"))
    else:
        fig.add_trace(_overview(pos, t0, t1, c, vertical))
    fig.update_layout(
        title=title, margin=dict(l=60, r=10, t=40, b=40), uirevision="keep",
        legend=dict(orientation="h", y=-0.08), plot_bgcolor="white",
        clickmode="event", dragmode="zoom")
    time_axis = dict(title="time since start (ms)", gridcolor="#eee")
    pos_axis = dict(title=pos_title, gridcolor="#f5f5f5", zeroline=False)
    if vertical:
        fig.update_xaxes(**pos_axis)
        fig.update_yaxes(**time_axis, autorange="reversed")
    else:
        fig.update_xaxes(**time_axis)
        fig.update_yaxes(**pos_axis, autorange="reversed")
    if window is not None:
        p0, p1, a, b = window
        if vertical:
            fig.update_xaxes(range=[p0, p1])
            fig.update_yaxes(range=[b, a], autorange=False)
        else:
            fig.update_xaxes(range=[a, b])
            fig.update_yaxes(range=[p1, p0], autorange=False)
    return fig, level


def _overview(pos, t0, t1, c, vertical):
    """Binned image: the most severe class among the segments in each cell
    (a segment counts in the cell of its midpoint)."""
    nb_p, nb_t = BINS
    if len(pos) == 0:
        return go.Heatmap(z=[[None]])
    mid = (t0 + t1) / 2 / MS
    pe = np.linspace(pos.min(), pos.max() + 1, nb_p + 1)
    te = np.linspace(mid.min(), mid.max() + 1e-9, nb_t + 1)
    pi = np.clip(np.searchsorted(pe, pos, side="right") - 1, 0, nb_p - 1)
    ti = np.clip(np.searchsorted(te, mid, side="right") - 1, 0, nb_t - 1)
    z = np.full(nb_p * nb_t, -2, np.int16)
    np.maximum.at(z, pi * nb_t + ti, c.astype(np.int16))
    z = z.reshape(nb_p, nb_t).astype(np.float64)
    z[z == -2] = np.nan
    keys = sorted(CLASS_COLORS)
    lo, hi = keys[0], keys[-1]
    scale = []
    for k in keys:
        a = (k - lo - 0.5) / (hi - lo) if k > lo else 0.0
        b = (k - lo + 0.5) / (hi - lo) if k < hi else 1.0
        scale += [[max(a, 0.0), CLASS_COLORS[k]], [min(b, 1.0), CLASS_COLORS[k]]]
    pc = (pe[:-1] + pe[1:]) / 2
    tc = (te[:-1] + te[1:]) / 2
    if vertical:
        return go.Heatmap(x=pc, y=tc, z=z.T, zmin=lo, zmax=hi, colorscale=scale,
                          showscale=False, name="overview",
                          hovertemplate="click to expand<extra></extra>")
    return go.Heatmap(x=tc, y=pc, z=z, zmin=lo, zmax=hi, colorscale=scale,
                      showscale=False, name="overview",
                      hovertemplate="click to expand<extra></extra>")


def parallelism_figure(ideal: pd.DataFrame, achieved: pd.DataFrame, cores: int,
                       log: bool = False) -> go.Figure:
    """Two panels, each on its own time axis: exposed parallelism in DAG time
    (grains placed at their earliest start: what the program offers) and
    achieved parallelism in wall-clock time (grains running: what the run
    got) against the cores used, on a scale where both show; `log`: log y."""
    from plotly.subplots import make_subplots
    # side by side, not stacked: their time axes differ (DAG time is far
    # shorter than the run), so one above the other would read as aligned
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=(
        "Exposed: in DAG time (grains at their earliest start)",
        "Achieved: in wall-clock time (grains running) vs cores"))
    (t, dag_unit), (tw, wall_unit) = _panel_times(ideal, "start"), _panel_times(achieved, "time")
    if len(ideal):
        fig.add_trace(go.Scatter(x=t, y=ideal["optimistic"], mode="lines", line_shape="hv",
                                 name="exposed (optimistic)", line=dict(color="#3182bd")),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=t, y=ideal["conservative"], mode="lines", line_shape="hv",
                                 name="exposed (conservative)",
                                 line=dict(color="#9ecae1", dash="dot")), row=1, col=1)
    top = float(cores)
    if len(achieved):
        t = tw
        run = achieved["running"].to_numpy(np.float64)
        top = max(top, float(run.max()) if len(run) else top)
        fig.add_trace(go.Scatter(x=t, y=run, mode="lines", line_shape="hv", fill="tozeroy",
                                 name="achieved (running grains)", line=dict(color="#31a354")),
                      row=1, col=2)
        fig.add_trace(go.Scatter(x=[t[0], t[-1]], y=[cores, cores], mode="lines",
                                 name=f"cores used: {cores}",
                                 line=dict(color=CRITICAL, dash="dash", width=2)), row=1, col=2)
    kind = "log" if log else "linear"
    # zoom in time only: the panels' zoom is kept in the URL as time ranges
    # (grainlab.app.state, pzoom), so what a link restores is what was seen
    fig.update_yaxes(title_text="grains", type=kind, row=1, col=1, gridcolor="#eee",
                     fixedrange=True)
    fig.update_yaxes(title_text="grains running", type=kind, row=1, col=2, gridcolor="#eee",
                     fixedrange=True, **({} if log else {"range": [0, top * 1.15 + 0.5]}))
    fig.update_xaxes(title_text=f"DAG time since the first grain ({dag_unit[0]})", row=1, col=1)
    fig.update_xaxes(title_text=f"wall-clock time since the first grain ({wall_unit[0]})",
                     row=1, col=2)
    fig.update_layout(plot_bgcolor="white", margin=dict(l=60, r=10, t=40, b=40),
                      uirevision="keep", legend=dict(orientation="h", y=-0.12))
    return fig


def parallelism_extents(ideal: pd.DataFrame, achieved: pd.DataFrame) -> tuple[float, float]:
    """The time each panel of parallelism_figure spans, in the unit its axis
    shows: (exposed, in DAG time; achieved, in wall-clock time)."""
    (a, _), (b, _) = _panel_times(ideal, "start"), _panel_times(achieved, "time")
    return (float(a[-1]) if len(a) else 0.0), (float(b[-1]) if len(b) else 0.0)


def _panel_times(df: pd.DataFrame, col: str) -> tuple[np.ndarray, tuple]:
    """A panel's times from its first, in the unit its extent reads in, and
    that unit (time_unit): what its axis shows and its zoom is kept in."""
    if not len(df):
        return np.zeros(0), ("ms", MS)
    t = df[col].to_numpy(np.float64) - df[col].iloc[0]
    unit = time_unit(t[-1])
    return t / unit[1], unit


def time_unit(extent_ns: float) -> tuple:
    """(name, ns per unit) for an axis spanning `extent_ns`: ms from 1 ms,
    us below (a DAG-time axis of a few us reads 0.002 ms otherwise)."""
    return ("ms", MS) if extent_ns >= MS else ("us", 1e3)


def downsample_steps(df: pd.DataFrame, time_col: str, cols, limit: int = 5_000) -> pd.DataFrame:
    """A step profile with at most ~`limit` rows, keeping each bucket's maximum."""
    if len(df) <= limit:
        return df
    bucket = np.arange(len(df)) * limit // len(df)
    agg = {time_col: "first", **{c: "max" for c in cols}}
    return df.groupby(bucket).agg(agg).reset_index(drop=True)




# -- data locality (docs/locality.md) ---------------------------------------------------

KRD_COLORS = {"close": "#2b8cbe", "near": "#a6bddb", "far": "#f16913", "inf": "#525252"}


def krd_figure(runs: dict) -> go.Figure:
    """KRD histograms as stacked close/near/far/INF shares: one bar per domain
    (and one for all domains together), one bar set per run, side by side.
    runs: {label: Analysis.krd() result}, e.g. {"row": a.krd(), "z": b.krd()}."""
    xs = ([], [])
    cells = {c: [] for c in KRD_COLORS}
    for label, h in runs.items():
        parts = [("all", h)] + ([(f"{h['domain_kind']} {d['domain']}", d) for d in h["domains"]]
                                if len(h["domains"]) > 1 else [])
        for name, part in parts:
            xs[0].append(label)
            xs[1].append(name)
            n = max(part["accesses"], 1)
            for c in KRD_COLORS:
                cells[c].append((100.0 * part[c] / n, part[c]))
    fig = go.Figure()
    for c, color in KRD_COLORS.items():
        fig.add_bar(x=[xs[0], xs[1]], y=[v for v, _ in cells[c]], name=c, marker_color=color,
                    customdata=[k for _, k in cells[c]],
                    hovertemplate=f"{c}: %{{y:.1f}}%% (%{{customdata}} accesses)<extra></extra>")
    any_run = next(iter(runs.values()), None)
    note = "" if any_run is None else (
        f"close ≤ L2 {_size(any_run['l2_bytes'])}, near ≤ LLC {_size(any_run['llc_bytes'])}, "
        "far beyond, INF = first uses")
    fig.update_layout(barmode="stack", title=f"Kernel Reuse Distance ({note})",
                      yaxis_title="% of accesses", legend_title="reuse",
                      margin=dict(l=60, r=20, t=50, b=60))
    return fig


def _size(b: int) -> str:
    return f"{b / (1 << 20):g} MiB" if b >= 1 << 20 else f"{b / 1024:g} KiB"


def remote_figure(grains: pd.DataFrame, locations=None, top: int = 30) -> go.Figure | None:
    """The grains with the most data on another NUMA node than their CPU's
    (`remote_bytes`, coloured by `numa_locality`), or None when the run has no
    page placement (record with GRAINLAB_PAGES=1)."""
    if "remote_bytes" not in grains:
        return None
    rb = grains["remote_bytes"].to_numpy(np.int64)
    pick = np.argsort(-rb, kind="stable")[:top]
    pick = pick[rb[pick] > 0]
    ids = grains.index.to_numpy()[pick]
    loc = np.asarray(locations)[pick] if locations is not None else np.full(len(pick), "")
    fig = go.Figure(go.Bar(
        y=[f"grain {i}" for i in ids], x=rb[pick] / 1024, orientation="h",
        marker=dict(color=grains["numa_locality"].to_numpy(np.float64)[pick], cmin=0, cmax=1,
                    colorscale="RdYlGn", colorbar=dict(title="local share")),
        customdata=np.stack([ids, loc], axis=1).tolist() if len(pick) else [],
        hovertemplate="grain %{customdata[0]} %{customdata[1]}<br>remote %{x:.1f} KiB"
                      "<extra></extra>"))
    fig.update_layout(title=f"Remote-heavy grains (top {len(pick)} by remote bytes)",
                      xaxis_title="KiB on another NUMA node", yaxis=dict(autorange="reversed"),
                      margin=dict(l=90, r=20, t=50, b=50))
    return fig
