"""The details panel beside every view: the selected grain, its metrics,
source lines, parent, children and fragments."""
from __future__ import annotations

import html as _html
import math

import numpy as np
from dash import Input, Output, dcc, html

from ... import problems as P
from ...units import fmt_ns
from ...metrics import registry
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


# columns holding nanoseconds: durations, and times since the run's start
DURATIONS = ("work", "creation_cost", "bookkeeping_cost", "sync_cost", "cpu_ns", "off_cpu_ns",
             "remote_bytes_ns")
TIMES = ("start", "end")            # absolute in the trace: shown since the run's start
LOOP_FIELDS = ("loop", "loop_thread", "first_iteration", "iterations")
SHOWN_ELSEWHERE = {"location", "kind", "identity", "parent", "on_critical_path"}


def _details(data: AppData, gid):
    d = data.grain_details(gid)
    if d is None:
        return html.P("Click a grain (on the graph or the threads view) to see its details.")
    row, frag = d["row"], d["fragments"]
    crit = bool(row.get("on_critical_path", False))
    parts = [html.H4(f"Grain #{gid}: {row['kind']} {row['identity']}", id="details-title"),
             html.P(["source: ", html.Code(d["location"], id="details-location"),
                     html.B(" · on the critical path", style={"color": "#e31a1c"})
                     if crit else ""])]
    parts.append(_problems(data, row))
    parts += _source(data, d["location"])
    parent = int(row["parent"])
    parts.append(html.P(f"parent: {'#' + str(parent) if parent < data.n_grains else 'serial/team code'}"
                        f" · children: {len(d['children'])}"
                        + (" (" + ", ".join(f"#{c}" for c in d["children"][:12])
                           + (" ..." if len(d["children"]) > 12 else "") + ")"
                           if len(d["children"]) else "")))
    parts.append(html.Table(className="kv", id="details-fields",
                            children=[html.Tr([html.Td(k), html.Td(v)])
                                      for k, v in _fields(data, row)]))
    parts.append(html.H5(f"{len(frag)} fragment(s)"))
    parts.append(html.Table(className="kv", children=[
        html.Tr([html.Th(c) for c in ("type", "thread", "cpu", "start", "duration")])] + [
        html.Tr([html.Td(str(r.type)), html.Td(int(r.thread)), html.Td(int(r.cpu)),
                 html.Td(fmt_ns(r.start - data.origin)), html.Td(fmt_ns(r.duration))])
        for r in frag.head(50).itertuples()]))
    return parts


def _problems(data: AppData, row) -> html.Table:
    """The grain's value of each problem's metric against its threshold:
    the problems it has first (marked), then the ones it passes."""
    out = []
    for name in data.problems:
        v = row.get(name)
        th = data.thresholds.get(name)
        if v is None or th is None:
            continue
        v = float(v)
        if not math.isfinite(v):
            continue
        bad = bool(P.crossing([v], name, th)[0])
        floor = P.floor_mask(data.grains.loc[[row.name]], name, data.thresholds) \
            if row.name in data.grains.index else None
        if floor is not None:
            bad = bad and bool(floor[0])
        op = "<" if P.RULES[name].below else ">"
        out.append((not bad, html.Tr(className="fail" if bad else "pass", children=[
            html.Td("✗ problem" if bad else "✓ ok"), html.Td(registry.label(name)),
            html.Td(_fmt(v)), html.Td(f"problem if {op} {_fmt(th)}")])))
    out.sort(key=lambda t: t[0])
    return html.Table(className="kv problems", id="details-problems",
                      children=[html.Tr([html.Th(""), html.Th("problem"), html.Th("value"),
                                         html.Th("threshold")])] + [r for _, r in out])


def _fields(data: AppData, row) -> list:
    """(label, text) of the grain's other columns, with units: times since the
    run's start, durations as `analyze` prints them, the code address in hex;
    a task's loop fields (none) left out."""
    out = []
    is_chunk = str(row.get("kind")) == "chunk"
    for k, v in row.items():
        if k in SHOWN_ELSEWHERE or k in data.problems:
            continue
        if k in LOOP_FIELDS and not is_chunk:
            continue
        # a metric's own column by its registry label; other columns (a
        # metric's second column among them) by their name
        label = registry.label(k) if k in registry.BY_NAME else k.replace("_", " ")
        if k in TIMES:
            text = fmt_ns(int(v) - data.origin) + " since the start"
        elif k == "earliest_start":
            text = fmt_ns(v) + " (DAG time)"
        elif k in DURATIONS:
            text = "—" if v is None or not math.isfinite(float(v)) else fmt_ns(v)
        elif k == "codeptr":
            text = f"0x{int(v):x}"
        else:
            text = _fmt(v)
        out.append((label, text))
    return out


def _source(data: AppData, location: str) -> list:
    """The lines around the grain's source line, when its file is readable."""
    src = data.analysis.source_lines(location)
    if src is None:
        return [html.Small("(source file not readable here)", id="details-source")]
    path, first, lines, hit = src
    return [html.Pre(id="details-source", style={"whiteSpace": "pre-wrap",
                                                  "overflowWrap": "anywhere"}, children=[
        html.Span(f"{first + i:5d}  {text}\n", className="hit" if first + i == hit else None)
        for i, text in enumerate(lines)]),
        html.Small(path)]


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "—" if not math.isfinite(v) else f"{v:.4g}"
    return _html.unescape(str(v))
