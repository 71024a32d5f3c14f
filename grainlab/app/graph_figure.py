"""The thesis's grain graph (grainlab.export.drawing) as a Plotly figure: the
same layout as `grainlab export --svg`, drawn with WebGL traces.

Every trace's `meta` names the kind of element it holds (fragment, chunk,
summary, fork, join, bookkeeping; edges creation, synchronization,
continuation, dependence; critical), and every drawn element is one
customdata entry: the grain (or context) id for rectangles and shapes, the
expand token ("c<id>", "m<id>") for a summary. Tests count elements by it.
"""
from __future__ import annotations

import numpy as np

from ..export.drawing import Drawing, from_start, item_fill, time_ticks
from ..export.palette import (CONTEXT_COLOR, CRITICAL, DIMMED, EDGE_COLORS, KIND_COLORS,
                              SEVERITY_COLORS, SUMMARY_BORDER, severity_names)
from .hover import hover_text

MS = 1e6
LABEL_LIMIT = 400        # chunk and summary labels drawn up to this many
SVG_LIMIT = 8_000        # elements + edges drawn as SVG rather than WebGL traces
SUMMARY_LABELS = 40      # summaries labelled only when this few (hover says the rest)
LABEL_ROWS = 45          # labels of one column at least 1/45 of the shown time apart (~12 px)
SHAPES = {"fork": "triangle-down", "join": "circle", "bookkeeping": "square"}
KIND_NAMES = {"fragment": "fragment", "chunk": "chunk", "summary": "collapsed subtree (click)"}


def _segments(x, y0, y1, cd):
    k = len(x)
    px, py = np.empty(3 * k), np.empty(3 * k)
    px[0::3], px[1::3], px[2::3] = x, x, np.nan
    py[0::3], py[1::3], py[2::3] = y0, y1, np.nan
    return px, py, np.repeat(np.asarray(cd, dtype=object), 3).tolist()


def dag_figure(d: Drawing, hover=None, title="", by_value=False) -> dict:
    """The figure as a plain dict (Plotly's own objects would validate every
    array again: half the time of a 10^6-grain view). `hover`: label per
    grain/context id (rectangles' hover text). Time reads from the
    drawing's first instant (the region's start), not the trace's clock."""
    axis, breaks, notes = _time_axis(d)
    d = _from_start(d)
    it = d.items
    lo, hi = d.window
    min_len = (hi - lo) * 0.003          # a zero-length rectangle stays visible
    x = it["x"].to_numpy(np.float64)
    y0 = it["y0"].to_numpy(np.float64)
    y1 = np.maximum(it["y1"].to_numpy(np.float64), y0 + min_len)
    kind = it["kind"].to_numpy().astype(str)
    crit = it["critical"].to_numpy(bool)
    bar = float(np.clip(900 / max(d.n_columns, 1) * 0.55, 2, 14))
    fig = []
    _add_edges(fig, d, x, y0, y1)
    rect = np.isin(kind, ["fragment", "chunk", "summary"])
    m = rect & crit
    if m.any():
        px, py, cd = _segments(x[m], y0[m] / MS, y1[m] / MS, it["grain"].to_numpy()[m])
        fig.append(dict(type="scattergl", x=px, y=py, mode="lines", name="critical path",
                                   meta="critical", hoverinfo="skip", customdata=cd,
                                   line=dict(color=CRITICAL, width=bar + 4)))
    m = (kind == "chunk") & ~crit
    if m.any():          # a chunk: a green border around its fill (thesis Fig. 5.3g)
        px, py, _ = _segments(x[m], y0[m] / MS, y1[m] / MS, np.zeros(m.sum()))
        fig.append(dict(type="scattergl", x=px, y=py, mode="lines", hoverinfo="skip",
                        name="chunk border", meta="chunk-border", showlegend=False,
                        line=dict(color=KIND_COLORS["chunk"], width=bar + 4)))
    m = kind == "summary"
    if m.any():          # a collapsed subtree: a purple border around its fill
        px, py, _ = _segments(x[m], y0[m] / MS, y1[m] / MS, np.zeros(m.sum()))
        fig.append(dict(type="scattergl", x=px, y=py, mode="lines", hoverinfo="skip",
                                   name="collapsed subtree", meta="summary-border",
                                   showlegend=False,
                                   line=dict(color=SUMMARY_BORDER, width=bar + 8)))
    _add_rects(fig, d, rect, x, y0, y1, bar, hover, by_value)
    if m.any():          # and a handle in its middle to click (hover picks points)
        tok = it["token"].to_numpy(dtype=object)[m]
        fig.append(dict(type="scattergl",
            x=x[m], y=(y0[m] + y1[m]) / 2 / MS, mode="markers", meta="summary-handle",
            customdata=tok.tolist(), name="collapsed subtree: click to expand",
            text=_hover(it, m, "summary", None)[0::3], hovertemplate="%{text}<extra></extra>",
            marker=dict(symbol="square", size=float(np.clip(bar + 4, 8, 16)),
                        color="white", line=dict(color=SUMMARY_BORDER, width=2))))
    _add_shapes(fig, it, kind, crit, x, y0, y1, bar)
    _add_labels(fig, it, kind, x, y0, y1, max(hi - lo, 1.0) / LABEL_ROWS)
    what = "DAG time: each node starts where its predecessors end" if d.mode == "dag" \
        else "wall-clock time"
    layout = dict(
        title=dict(text=title or f"Grain graph ({what})", font=dict(size=14)),
        margin=dict(l=60, r=10, t=40, b=10), uirevision=f"dag-{d.mode}",
        # the legend beneath the drawing, not beside it: the columns get the width
        legend=dict(font=dict(size=10), orientation="h", x=0, y=-0.01, yanchor="top",
                    entrywidth=0.25, entrywidthmode="fraction"),
        plot_bgcolor="white", clickmode="event",
        dragmode="zoom", hovermode="closest",
        xaxis=dict(showgrid=False, zeroline=False, showticklabels=False,
                   range=[-1, max(d.n_columns, 1)]),
        shapes=breaks, annotations=notes,
        yaxis=dict(title=dict(text=f"{'DAG' if d.mode == 'dag' else 'wall-clock'} time "
                                   "from the start (ms)"),
                   gridcolor="#eee", range=[hi / MS, lo / MS], autorange=False, **axis))
    if len(it) + len(d.edges) <= SVG_LIMIT:
        # SVG traces: faster than WebGL to start for a few thousand elements
        # (no GL context per trace; headless browsers have no GPU)
        for tr in fig:
            if tr["type"] == "scattergl":
                tr["type"] = "scatter"
    return {"data": fig, "layout": layout}


def _from_start(d: Drawing) -> Drawing:
    """The drawing with its times from the window's start (0 at the top),
    through the time axis's breaks (drawing.time_map: a long stretch of
    runtime alone cut short), as the SVG export draws it."""
    from dataclasses import replace
    it = d.items.copy()
    it["y0"] = from_start(d, it["y0"].to_numpy(np.float64))
    it["y1"] = from_start(d, it["y1"].to_numpy(np.float64))
    e = d.edges.copy()
    for c in ("ys", "yd"):
        if c in e:
            e[c] = from_start(d, e[c].to_numpy(np.float64))
    return replace(d, items=it, edges=e, window=(0.0, float(from_start(d, d.window[1]))),
                   extra={**d.extra, "breaks": np.zeros((0, 2))})


def _time_axis(d: Drawing) -> tuple[dict, list, list]:
    """The y axis's ticks (drawn positions, labelled with real ms from the
    start) and each break as a grey band with its cut length."""
    ticks, at, breaks = time_ticks(d)
    # a break's end next to a round tick: one of them (about 12 px apart)
    keep = _apart(np.zeros(len(at)), at, np.ones(len(at), bool),
                  max(float(from_start(d, d.window[1])), 1.0) / LABEL_ROWS)
    ticks, at = ticks[keep], at[keep]
    axis = dict(tickmode="array", tickvals=(at / MS).tolist(),
                ticktext=[f"{t / MS:.4g}" for t in ticks])
    shapes = [dict(type="rect", xref="paper", x0=0, x1=1, y0=b0 / MS, y1=b1 / MS,
                   fillcolor="#ececec", opacity=0.6, line=dict(width=0), layer="below")
              for b0, b1, _ in breaks]
    notes = [dict(xref="paper", x=0, y=(b0 + b1) / 2 / MS, xanchor="left", showarrow=False,
                  text=f"<i>({cut / MS:.3g} ms cut)</i>", font=dict(size=10, color="#333"),
                  bgcolor="rgba(255,255,255,0.7)")
             for b0, b1, cut in breaks]
    return axis, shapes, notes


def _add_edges(fig, d: Drawing, x, y0, y1):
    e = d.edges
    if not len(e):
        return
    s, t = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
    typ = e["type"].to_numpy().astype(str)
    crit = e["critical"].to_numpy(bool)
    bundled = e["bundled"].to_numpy(bool) if "bundled" in e else np.zeros(len(e), bool)
    ya, yb = _edge_ends(d, y0, y1)
    # a bundle (a fan's creation or synchronization edges, a grouped pair's)
    # thicker, as the export draws it
    for name, bund in [("continuation", False), ("creation", False), ("synchronization", False),
                       ("dependence", False), ("creation", True), ("synchronization", True),
                       ("continuation", True), ("dependence", True), ("critical", False)]:
        m = crit if name == "critical" else (typ == name) & ~crit & (bundled == bund)
        if not m.any():
            continue
        k = int(m.sum())
        px, py = np.empty(3 * k), np.empty(3 * k)
        px[0::3], px[1::3], px[2::3] = x[s[m]], x[t[m]], np.nan
        py[0::3], py[1::3], py[2::3] = ya[m] / MS, yb[m] / MS, np.nan
        color = CRITICAL if name == "critical" else EDGE_COLORS[name]
        fig.append(dict(type="scattergl",
            x=px, y=py, mode="lines", hoverinfo="skip",
            meta=f"edge {name}" + (" bundled" if bund else ""),
            name=(f"{name} edges" if name != "critical" else "critical edges")
            + (" (bundled, thicker)" if bund else ""),
            line=dict(color=color, width=2 if name == "critical" else 3 if bund else 1),
            opacity=0.9 if name in ("critical", "continuation") else 0.7))


def _edge_ends(d: Drawing, y0, y1) -> tuple:
    """Where each edge leaves its source and meets its destination (ns): at
    its end nodes' times, on the items as drawn (a shape without its bar at
    its marker), as the SVG export draws them (svg.edge_ends)."""
    from ..export.svg import edge_ends
    it = d.items
    span = max(float(it["y1"].max() - it["y0"].min()), 1.0) if len(it) else 1.0
    # the app draws a shape's bar beyond 0.4% of the time span (_add_shapes);
    # edge_ends leaves out bars of 4 units or less: scale so those agree
    scale = 4.0 / (span * 0.004)
    ya, yb = edge_ends(d, y0 * scale, y1 * scale, lambda v: v * scale)
    return ya / scale, yb / scale


def _add_rects(fig, d: Drawing, rect, x, y0, y1, bar, hover, by_value=False):
    it = d.items
    fill = item_fill(it, d.n_grains)
    kind = it["kind"].to_numpy().astype(str)
    grain = it["grain"].to_numpy(np.int64)
    token = it["token"].to_numpy(dtype=object) if "token" in it else np.full(len(it), None)
    for k in ["fragment", "chunk", "summary"]:
        for color in sorted(set(fill[rect & (kind == k)])):
            m = rect & (kind == k) & (fill == color)
            cd = token[m] if k == "summary" else grain[m]
            px, py, cdl = _segments(x[m], y0[m] / MS, y1[m] / MS, cd)
            fig.append(dict(type="scattergl",
                x=px, y=py, mode="lines", customdata=cdl, meta=k,
                name=_legend_name(k, color, by_value), text=_hover(it, m, k, hover),
                hovertemplate="%{text}<extra></extra>",
                line=dict(color=color, width=bar + (4 if k == "summary" else 0))))


def _legend_name(kind, color, by_value=False) -> str:
    if color in SEVERITY_COLORS:
        step = SEVERITY_COLORS.index(color)
        if by_value:
            return f"{KIND_NAMES[kind]}: {severity_names(by_value)[step]}"
        return f"{KIND_NAMES[kind]}: {20 * step}-{20 * step + 20}% past threshold"
    if color == DIMMED:
        return f"{KIND_NAMES[kind]}: no problem (dimmed)"
    if color == CONTEXT_COLOR:
        return "serial / team code"
    return KIND_NAMES[kind]


def _hover(it, m, kind, hover) -> list:
    w = (it["weight"].to_numpy(np.float64)[m] / 1e3).round(2).astype(str)
    if kind == "summary":
        t = ("collapsed subtree: " + it["n_grains"].to_numpy()[m].astype(np.int64).astype(str)
             + " grains<br>work " + w + " us, span "
             + (it["span"].to_numpy(np.float64)[m] / 1e3).round(1).astype(str)
             + " us<br>click to expand")
    else:
        g = it["grain"].to_numpy(np.int64)[m]
        base = hover_text(hover, g) if hover is not None else g.astype(str)
        n = it["n_members"].to_numpy(np.int64)[m]
        t = (base.astype(str) + "<br>" + kind + ": " + w + " us"
             + np.where(n > 1, " (" + n.astype(str) + " grouped)", ""))
    out = np.empty(3 * len(t), dtype=object)
    out[0::3], out[1::3], out[2::3] = t, t, ""
    return out.tolist()


def _apart(x, y, m, gap) -> np.ndarray:
    """Of the labels `m`, those at least `gap` apart in their column (`x`: a
    column or a cell of columns): a lane's chunks stack, and their labels
    would overlap. The first label of each
    `gap`-high cell of a column, less any closer than `gap` to the one
    before it (kept or not: at worst a label more is left out)."""
    idx = np.flatnonzero(m)
    if not len(idx):
        return m
    cell = np.floor(y[idx] / gap)
    order = idx[np.lexsort((y[idx], cell, x[idx]))]
    c = np.floor(y[order] / gap)
    first = np.r_[True, (x[order][1:] != x[order][:-1]) | (c[1:] != c[:-1])]
    order = order[first]
    keep = np.r_[True, (x[order][1:] != x[order][:-1]) | (np.diff(y[order]) >= gap)]
    out = np.zeros(len(m), bool)
    out[order[keep]] = True
    return out


def _add_shapes(fig, it, kind, crit, x, y0, y1, bar):
    size = float(np.clip(bar + 2, 6, 13))
    y0r, y1r = it["y0"].to_numpy(np.float64), it["y1"].to_numpy(np.float64)
    for k, symbol in SHAPES.items():
        m = kind == k
        if not m.any():
            continue
        # a fork, join or book-keeping node that took time: a thin bar as
        # long as its weight behind its shape (a slow join shows its length)
        long = m & (y1r - y0r > (y1r.max() - y0r.min()) * 0.004)
        if long.any():
            px, py, _ = _segments(x[long], y0r[long] / MS, y1r[long] / MS, np.zeros(long.sum()))
            fig.append(dict(type="scattergl", x=px, y=py, mode="lines", hoverinfo="skip",
                            meta=f"{k}-extent", showlegend=False,
                            line=dict(color=KIND_COLORS[k], width=max(bar / 3, 2))))
        n = it["n_members"].to_numpy(np.int64)[m]
        w = (it["weight"].to_numpy(np.float64)[m] / 1e3).round(2).astype(str)
        text = (k + " of #" + it["grain"].to_numpy(np.int64)[m].astype(str) + ": " + w + " us"
                + np.where(n > 1, " (" + n.astype(str) + " grouped)", ""))
        fig.append(dict(type="scattergl",
            x=x[m], y=(y0[m] + y1[m]) / 2 / MS, mode="markers", meta=k, name=k,
            customdata=it["grain"].to_numpy(np.int64)[m].tolist(), text=text.tolist(),
            hovertemplate="%{text}<extra></extra>",
            marker=dict(symbol=symbol, size=size, color=KIND_COLORS[k],
                        line=dict(color=np.where(crit[m], CRITICAL, "white").tolist(),
                                  width=np.where(crit[m], 2, 0.5).tolist()))))


def _add_labels(fig, it, kind, x, y0, y1, gap):
    lab = it["label"].to_numpy(dtype=object)
    m = np.isin(kind, ["chunk", "summary"]) & (lab != "") & ~np.equal(lab, None)
    if (kind[m] == "summary").sum() > SUMMARY_LABELS:      # they would overlap
        m &= kind != "summary"
    # a label is ~7 px a character, a column 900 px / columns wide: labels
    # of neighbouring columns at one height share a cell of as many columns
    # as a label spans
    width = 7 * max((len(str(v)) for v in lab[m]), default=1)
    span = max(int(np.ceil(width / (900 / max(x.max() + 1 if len(x) else 1, 1)))), 1)
    m &= _apart(np.floor(x / span), (y0 + y1) / 2, m, gap)
    if not m.any() or m.sum() > LABEL_LIMIT:
        return
    fig.append(dict(type="scatter", x=x[m] + 0.35, y=(y0[m] + y1[m]) / 2 / MS, mode="text",
                             text=lab[m].tolist(), textposition="middle right",
                             textfont=dict(size=10, color="#333"), meta="labels",
                             name="labels", hoverinfo="skip", showlegend=False))
