"""The threads view: one full-height track per thread, as Perfetto and VTune
draw them, and a critical-path track beneath.

Every moment of a thread is in exactly one state, so nothing is drawn twice:

- **work**: a grain's fragment or chunk (coloured as on the graph: by severity
  of the chosen problem, dimmed, or grey for serial / team code);
- **runtime**: the runtime's own time where no grain ran inside it (creating
  tasks, book-keeping, sitting in a taskwait / taskgroup with nothing to run);
- **idle**: neither (a thread of the team waiting for work, before its first
  and after its last grain included: the run's extent is every thread's).

`ThreadTimeline` splits each thread's time into these states once per trace
(a sweep over the sorted interval ends). A figure is then an image binned over
the visible time window (`bins` columns: about one per pixel), each cell the
highest-priority state in it (work over runtime over idle, the most severe
grain among work), so every busy instant is drawn however small its grain;
its hover gives the cell's share of each state. When the window holds at
most `DETAIL_LIMIT` fragments, each is also drawn as a bar with exact ends,
hover and click. Zooming (time only: every thread stays shown) redraws the
image over the new window, so detail returns as one zooms in.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..export.palette import (CLASS_COLORS, CLASS_NAMES, CRITICAL, IDLE, RUNTIME, WORK,
                              severity_names)
from .hover import hover_text

MS = 1e6
DETAIL_LIMIT = 8_000
BINS = 1000

# state codes of the image, in priority order (a cell shows its highest)
IDLE_CODE, RUNTIME_CODE = 0, 1
WORK_BASE = 3               # work of drawing class k (-1..5) is WORK_BASE + k
CRIT_CODE = WORK_BASE + max(CLASS_COLORS) + 1
STATE_NAMES = {IDLE_CODE: "idle (thread waiting, nothing to run)",
               RUNTIME_CODE: "runtime (creating, book-keeping, taskwait with nothing to run)",
               CRIT_CODE: "critical path (its grains, when they ran)"}
ROW_PX = (28, 110)          # a track's height in pixels: at least, at most
PLOT_PX = 520               # the tracks' total height aimed at


def code_colors() -> dict:
    out = {IDLE_CODE: IDLE, RUNTIME_CODE: RUNTIME, CRIT_CODE: CRITICAL}
    out.update({WORK_BASE + k: c for k, c in CLASS_COLORS.items()})
    out[WORK_BASE] = WORK    # busy without the problem: plainly busy, unlike idle
    return out


class ThreadTimeline:
    """Each thread's time split into work, runtime and idle, once per trace.

    work: (row, start, end, owner) of the grains' and contexts' fragments;
    runtime: (row, start, end) of the runtime's own time (may contain work:
    only what no work covers is kept); t0, t1: the run's extent (ns)."""

    def __init__(self, work: pd.DataFrame, runtime: pd.DataFrame, n_rows: int,
                 t0: int, t1: int):
        self.n_rows, self.t0, self.t1 = int(n_rows), int(t0), int(t1)
        # the columns once each, in start order (no filtered copy of the
        # frames first: fresh memory is what costs here, ~2 s/GiB)
        row, start = work["row"].to_numpy(np.int64), work["start"].to_numpy(np.int64)
        o = np.flatnonzero(row >= 0)
        o = o[np.argsort(start[o], kind="stable")]
        self.w_row, self.w_start = row[o], start[o]
        self.w_end = work["end"].to_numpy(np.int64)[o]
        self.w_owner = work["owner"].to_numpy(np.int64)[o]
        del o
        r_row = runtime["row"].to_numpy(np.int64)
        r = r_row >= 0
        rt_only, idle = _split(self.n_rows, self.t0, self.t1, self.w_row, self.w_start,
                               self.w_end, r_row[r], runtime["start"].to_numpy(np.int64)[r],
                               runtime["end"].to_numpy(np.int64)[r])
        self.rt_row, self.rt_start, self.rt_end = rt_only
        self.idle_row, self.idle_start, self.idle_end = idle

    def busy_ns(self) -> np.ndarray:
        """Work time per thread row (what a test checks is drawn)."""
        return np.bincount(self.w_row, self.w_end - self.w_start, minlength=self.n_rows)

    def in_window(self, a_ns: float, b_ns: float) -> np.ndarray:
        """Indices of the work fragments overlapping [a, b]."""
        hi = np.searchsorted(self.w_start, b_ns, side="right")
        idx = np.arange(hi)
        return idx[self.w_end[:hi] >= a_ns]


def _split(n_rows, t0, t1, w_row, w_s, w_e, r_row, r_s, r_e):
    """(runtime not covered by work, idle: covered by neither within [t0, t1]),
    each as (row, start, end) arrays: one sweep over the interval ends sorted
    by (row, time). Rows are >= 0.

    At 10^7 grains this is ~2e7 points, and fresh memory is what costs (~2 s
    per GiB here): each point is one int64 key, (row, time, which end of
    which kind) packed, sorted in place; the sweep counts in int8/int32. A
    lexsort of (time, row), int64 counts and np.setdiff1d over every point
    took 5.8 s and +1.9 GiB at fib 30 (tests/test_threads_split.py checks
    the two equal)."""
    time, code = _sorted_points(w_row, w_s, w_e, r_row, r_s, r_e)
    # +1 where an interval of its kind opens, -1 where it closes
    dw = np.array([1, -1, 0, 0], np.int8)[code]
    dr = np.array([0, 0, 1, -1], np.int8)[code]
    del code
    # in (row, time) order each row's points are one run: no per-point row
    m = max(n_rows, int(w_row.max(initial=-1)) + 1, int(r_row.max(initial=-1)) + 1)
    per_row = 2 * (np.bincount(w_row, minlength=m) + np.bincount(r_row, minlength=m))
    present = np.flatnonzero(per_row)
    ends = np.cumsum(per_row[present])            # where each present row's run ends
    cw, cr = np.cumsum(dw, dtype=np.int32), np.cumsum(dr, dtype=np.int32)
    del dw, dr
    # segment i runs from point i to point i + 1, within one row
    long = time[1:] > time[:-1]
    long[ends[:-1] - 1] = False
    off = ~(cw[:-1] > 0)
    del cw
    r_on = cr[:-1] > 0
    del cr
    rt = np.flatnonzero(long & off & r_on)
    idle = np.flatnonzero(long & off & ~r_on)
    del long, off, r_on
    runtime = (present[np.searchsorted(ends, rt, side="right")], time[rt], time[rt + 1])
    # idle before each row's first and after its last event, and rows without any
    first_t, last_t = time[ends - per_row[present]], time[ends - 1]
    empty = np.flatnonzero(per_row[:n_rows] == 0)
    i_row = np.concatenate([present[np.searchsorted(ends, idle, side="right")], present,
                            present, empty])
    i_s = np.concatenate([time[idle], np.full(len(present), t0), last_t,
                          np.full(len(empty), t0)])
    i_e = np.concatenate([time[idle + 1], first_t, np.full(len(present), t1),
                          np.full(len(empty), t1)])
    keep = i_e > i_s
    return runtime, (i_row[keep], i_s[keep], i_e[keep])


def _sorted_points(w_row, w_s, w_e, r_row, r_s, r_e):
    """Every interval end in (row, time) order, ties in the order work
    starts, work ends, runtime starts, runtime ends: (times, codes 0-3)."""
    parts = ((w_row, w_s), (w_row, w_e), (r_row, r_s), (r_row, r_e))
    n = sum(len(r) for r, _ in parts)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int8)
    lo = min(int(t.min()) for _, t in parts if len(t))
    span = max(int(t.max()) for _, t in parts if len(t)) - lo + 1
    rows = max(int(r.max()) for r, _ in parts if len(r)) + 1
    if rows * span * 4 < 2 ** 62 and abs(lo) < 2 ** 61:
        key, at = np.empty(n, np.int64), 0
        for c, (r, t) in enumerate(parts):   # ((row * span + time - lo) << 2) | c, in place
            k = key[at:at + len(r)]
            np.multiply(r, span, out=k)
            k += t
            k -= lo
            k <<= 2
            k |= c
            at += len(r)
        key.sort()
        code = (key & 3).astype(np.int8)
        key >>= 2
        key %= span                         # time - lo: the row is in the sort order
        key += lo
        return key, code
    # too wide to pack: a stable lexsort keeps the ties in that order
    row = np.concatenate([w_row, w_row, r_row, r_row])
    time = np.concatenate([w_s, w_e, r_s, r_e])
    code = np.repeat(np.arange(4, dtype=np.int8), [len(w_row), len(w_row), len(r_row),
                                                   len(r_row)])
    o = np.lexsort((time, row))
    return time[o], code[o]


def _cover(n_rows, bins, edges, row, s, e):
    """Per (row, bin): does an interval cover any of it (bool), and the time
    it covers (ns): intervals of one kind do not overlap."""
    nb = bins
    lo = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, nb - 1)
    hi = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, nb - 1)
    hi = np.maximum(hi, lo)
    n = n_rows * (nb + 1)
    diff = np.bincount(row * (nb + 1) + lo, minlength=n) - \
        np.bincount(row * (nb + 1) + hi + 1, minlength=n)
    hit = np.cumsum(diff.reshape(n_rows, nb + 1), axis=1)[:, :nb] > 0
    # covered time: first and last bin partly, the ones between fully
    width = edges[1] - edges[0]
    one = lo == hi
    t = np.zeros(n_rows * nb)
    t += np.bincount(row[one] * nb + lo[one], (np.minimum(e, edges[-1]) -
                                               np.maximum(s, edges[0]))[one], minlength=n_rows * nb)
    m = ~one
    t += np.bincount(row[m] * nb + lo[m], (edges[lo[m] + 1] - np.maximum(s[m], edges[0])),
                     minlength=n_rows * nb)
    t += np.bincount(row[m] * nb + hi[m], (np.minimum(e[m], edges[-1]) - edges[hi[m]]),
                     minlength=n_rows * nb)
    mid = np.bincount(row[m] * (nb + 1) + lo[m] + 1, minlength=n) - \
        np.bincount(row[m] * (nb + 1) + hi[m], minlength=n)
    full = np.cumsum(mid.reshape(n_rows, nb + 1), axis=1)[:, :nb]
    t = t.reshape(n_rows, nb) + np.maximum(full, 0) * width
    return hit, t


def _colorscale(colors: dict, lo: int, hi: int) -> list:
    """A stepped plotly colour scale: each state code its own flat colour."""
    scale = []
    for k in range(lo, hi + 1):
        c = colors.get(k, "#ffffff")
        scale += [[max((k - 0.5) / hi, 0.0), c], [min((k + 0.5) / hi, 1.0), c]]
    return scale


def _cell_text(shares: np.ndarray, cell_ns: float) -> np.ndarray:
    """Each cell's hover: its shares of work, runtime and idle time."""
    pct = np.round(100 * shares / max(cell_ns, 1e-9)).astype(np.int64)
    return np.char.add(np.char.add(np.char.add("work ", pct[2].astype(str)),
                                   np.char.add("%, runtime ", pct[1].astype(str))),
                       np.char.add("%, idle ", np.char.add(pct[0].astype(str), "%")))


def threads_figure(tl: ThreadTimeline, cls: np.ndarray, critical: np.ndarray,
                   thread_names, window=None, hover_labels=None, title="",
                   bins: int = BINS, by_value=False) -> tuple[go.Figure, str]:
    """The figure and its level of detail ("detail": every fragment also a bar;
    "overview": the image alone). `cls`: drawing class per owner (figures.classes),
    `critical`: per owner; `window`: (p0, p1, t0_ms, t1_ms), only time is used."""
    n = tl.n_rows
    a, b = float(tl.t0), float(max(tl.t1, tl.t0 + 1))
    if window is not None:
        a, b = max(window[2] * MS, a - (b - a)), min(window[3] * MS, b + (b - a))
        if b <= a:
            a, b = float(tl.t0), float(max(tl.t1, tl.t0 + 1))
    edges = np.linspace(a, b, bins + 1)
    rows = n + 1                                   # + the critical-path track
    z = np.full((rows, bins), np.nan)
    shares = np.zeros((3, rows, bins))
    sel = [(IDLE_CODE, tl.idle_row, tl.idle_start, tl.idle_end, None),
           (RUNTIME_CODE, tl.rt_row, tl.rt_start, tl.rt_end, None)]
    wi = tl.in_window(a, b)
    wcls = cls[tl.w_owner[wi]].astype(np.int64) if len(wi) else np.zeros(0, np.int64)
    for k in sorted(CLASS_COLORS):
        m = wcls == k
        if m.any():
            sel.append((WORK_BASE + k, tl.w_row[wi][m], tl.w_start[wi][m], tl.w_end[wi][m], None))
    for code, r, s, e, _ in sel:
        keep = (e >= a) & (s <= b)
        if not keep.any():
            continue
        hit, t = _cover(n, bins, edges, r[keep], s[keep].astype(np.float64),
                        e[keep].astype(np.float64))
        z[:n][hit] = code                           # in priority order: later wins
        shares[min(code, 2), :n] += t
    crit = critical[tl.w_owner[wi]] if len(wi) else np.zeros(0, bool)
    if crit.any():
        s, e = tl.w_start[wi][crit].astype(np.float64), tl.w_end[wi][crit].astype(np.float64)
        hit, t = _cover(1, bins, edges, np.zeros(len(s), np.int64), s, e)
        z[n][hit[0]] = CRIT_CODE
        shares[2, n] = t[0]
    colors = code_colors()
    lo, hi = 0, CRIT_CODE
    scale = _colorscale(colors, lo, hi)
    centres = (edges[:-1] + edges[1:]) / 2 / MS
    text = _cell_text(shares, (b - a) / bins)
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        x=centres, y=np.arange(rows), z=z, zmin=lo, zmax=hi, colorscale=scale,
        showscale=False, name="threads", text=text, zsmooth=False, xgap=0, ygap=0,
        hovertemplate="%{x:.4f} ms: %{text}<extra></extra>"))
    level = "overview"
    if len(wi) <= DETAIL_LIMIT:
        level = "detail"
        _bars(fig, tl, wi, wcls, crit, n, colors, hover_labels)
    # the legend: one entry per state drawn
    shown = sorted({int(c) for c in np.unique(z[~np.isnan(z)])} | {IDLE_CODE, RUNTIME_CODE})
    names = {**STATE_NAMES, **{WORK_BASE + k: "work: " + v for k, v in CLASS_NAMES.items()}}
    names.update({WORK_BASE + k + 1: "work: " + v
                  for k, v in enumerate(severity_names(by_value))})
    for code in shown:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=names[code],
                                 marker=dict(symbol="square", size=12, color=colors[code],
                                             line=dict(color="#888", width=1)),
                                 hoverinfo="skip", showlegend=True))
    track_px = int(np.clip(PLOT_PX / rows, *ROW_PX))
    fig.update_layout(
        title=dict(text=title, y=1, yanchor="top", yref="container", pad=dict(t=8)),
        margin=dict(l=110, r=10, t=40, b=50 + 22 * 4), uirevision="keep",
        height=track_px * rows + 40 + 50 + 22 * 4, plot_bgcolor="white",
        legend=dict(orientation="h", y=0, yanchor="bottom", x=0, yref="container"), clickmode="event",
        dragmode="zoom", barmode="overlay", hovermode="closest", meta={"track_px": track_px})
    fig.update_xaxes(title="time since start (ms)", gridcolor="#eee", range=[a / MS, b / MS])
    fig.update_yaxes(tickvals=list(range(rows)),
                     ticktext=[*[f"thread {t}" for t in thread_names], "critical path"],
                     range=[rows - 0.5, -0.5], autorange=False, fixedrange=True,
                     showgrid=False, zeroline=False)
    return fig, level


def _bars(fig, tl, wi, wcls, crit, n, colors, hover_labels):
    """Each fragment in the window as a bar (exact ends, hover, click)."""
    if not len(wi):
        return
    s = tl.w_start[wi] / MS
    d = (tl.w_end[wi] - tl.w_start[wi]) / MS
    own = tl.w_owner[wi]
    text = None
    if hover_labels is not None:
        text = hover_text(hover_labels, own)
    col = np.array([colors[WORK_BASE + int(k)] for k in wcls], dtype=object) \
        if len(wcls) else []
    fig.add_trace(go.Bar(
        orientation="h", base=s, x=d, y=tl.w_row[wi], width=1.0, customdata=own.tolist(),
        marker=dict(color=col, line=dict(width=0)), name="grains", showlegend=False,
        hovertext=text, hovertemplate="%{hovertext}<extra></extra>" if text is not None
        else None, hoverinfo=None if text is not None else "skip"))
    if crit.any():
        fig.add_trace(go.Bar(
            orientation="h", base=s[crit], x=d[crit], y=np.full(int(crit.sum()), n),
            width=1.0, customdata=own[crit].tolist(), marker=dict(color=CRITICAL,
                                                                  line=dict(width=0)),
            name="critical path grains", showlegend=False,
            hovertext=None if text is None else text[crit],
            hovertemplate="%{hovertext}<extra></extra>" if text is not None else None))


def selection_shapes(tl: ThreadTimeline, gid: int, critical_row: int | None) -> list:
    """Outlines of a grain's fragments on their threads (and on the
    critical-path track when it is there)."""
    m = tl.w_owner == gid
    out = []
    for r, s, e in zip(tl.w_row[m], tl.w_start[m], tl.w_end[m]):
        rows = [int(r)] + ([critical_row] if critical_row is not None else [])
        for rr in rows:
            out.append(dict(type="rect", xref="x", yref="y", x0=s / MS, x1=e / MS,
                            y0=rr - 0.5, y1=rr + 0.5, line=dict(color="#000000", width=3),
                            fillcolor="rgba(0,0,0,0)", layer="above",
                            name=f"selected #{gid}"))
    return out
