"""The details panel beside every view: the selected grain, its metrics,
source lines, parent, children and fragments."""
from __future__ import annotations

import html as _html
import math

import numpy as np
from dash import Input, Output, dcc, html

from ..data import AppData
from ..state import format_state


def pane(data: AppData):
    return html.Div(id="details", className="details",
                    children=html.P("Click a grain to see its details."))


def register(app, data: AppData, figures):
    @app.callback(Output("details", "children"), Input("state", "data"))
    def details(state):
        out = _details(data, (state or {}).get("grain"))
        zoom = _zoom_link(data, state)
        return [zoom, *out] if zoom is not None and isinstance(out, list) else out


def _zoom_link(data: AppData, state):
    """A link to the threads view zoomed to the selected grain (its rows and
    its time, with a margin), the rest of the view state kept."""
    gid = (state or {}).get("grain")
    seg = data.segments
    own = seg[(seg["owner"].to_numpy() == gid) & (seg["row"].to_numpy() >= 0)] \
        if gid is not None else seg.iloc[:0]
    if not len(own):
        return None
    t0, t1 = float(own["start"].min()) / 1e6, float(own["end"].max()) / 1e6
    pad = max((t1 - t0) * 0.25, 1e-3)
    r0, r1 = int(own["row"].min()), int(own["row"].max())
    st = {**state, "view": "threads", "tzoom": [r0 - 0.6, r1 + 0.6, max(t0 - pad, 0.0), t1 + pad]}
    return html.P(dcc.Link("zoom the threads view to this grain", id="details-zoom",
                           href=format_state(st)))


def _details(data: AppData, gid):
    d = data.grain_details(gid)
    if d is None:
        return html.P("Click a grain (on the graph or the threads view) to see its details.")
    row, frag = d["row"], d["fragments"]
    skip = {"location"}
    metric_rows = [html.Tr([html.Td(str(k)), html.Td(_fmt(v))])
                   for k, v in row.items() if k not in skip]
    parts = [html.H4(f"Grain #{gid}: {row['kind']} {row['identity']}", id="details-title"),
             html.P(["source: ", html.Code(d["location"], id="details-location")])]
    parts += _source(data, d["location"])
    parent = int(row["parent"])
    parts.append(html.P(f"parent: {'#' + str(parent) if parent < data.n_grains else 'serial/team code'}"
                        f" · children: {len(d['children'])}"
                        + (" (" + ", ".join(f"#{c}" for c in d["children"][:12])
                           + (" ..." if len(d["children"]) > 12 else "") + ")"
                           if len(d["children"]) else "")))
    parts.append(html.Table(className="kv", children=metric_rows))
    parts.append(html.H5(f"{len(frag)} fragment(s)"))
    parts.append(html.Table(className="kv", children=[
        html.Tr([html.Th(c) for c in ("type", "thread", "cpu", "start (us)", "duration (us)")])] + [
        html.Tr([html.Td(str(r.type)), html.Td(int(r.thread)), html.Td(int(r.cpu)),
                 html.Td(f"{(r.start - data.origin) / 1e3:.1f}"),
                 html.Td(f"{r.duration / 1e3:.1f}")])
        for r in frag.head(50).itertuples()]))
    return parts


def _source(data: AppData, location: str) -> list:
    """The lines around the grain's source line, when its file is readable."""
    src = data.analysis.source_lines(location)
    if src is None:
        return [html.Small("(source file not readable here)", id="details-source")]
    path, first, lines, hit = src
    return [html.Pre(id="details-source", children=[
        html.Span(f"{first + i:5d}  {text}\n", className="hit" if first + i == hit else None)
        for i, text in enumerate(lines)]),
        html.Small(path)]


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "—" if not math.isfinite(v) else f"{v:.4g}"
    return _html.unescape(str(v))
