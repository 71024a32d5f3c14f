"""The summary to land on: `grainlab analyze`'s header, the problem table and
where the span goes, each linking into the view that shows it (links set the
URL, which holds the view state: grainlab.app.state)."""
from __future__ import annotations

from urllib.parse import urlencode

from dash import dcc, html

from ...analysis.report import WHAT, fmt_parallelism, fmt_share, span_parts
from ..data import LOCATION_VIEW, NO_PROBLEM, AppData
from ..state import PROBLEM_LABELS
from ...units import fmt_ns


# the span's parts (analysis.report.span_parts), as the table names them
SPAN_PARTS = {"serial start": "serial start (the initial task before the first parallel region)",
              "serial code in the parallel part": ("serial code in the parallel part (the initial task: starting and ending regions, "
                                        "its code between them)"),
              "serial end": "serial end (the initial task after the last region)",
              "team code": "team code (implicit tasks: creating tasks, waiting)",
              "grains": "grains (their code and the tasks they create)",
              "grains' join waits": "grains' join waits (taskwait / taskgroup ends)",
              "team barriers": "team barriers"}


def _link(text, cls=None, **q):
    return dcc.Link(text, href="?" + urlencode(q), className=cls)


def pane(data: AppData):
    r = data.report
    return html.Div(id="summary", className="summary", children=[
        html.H3("Summary"), _header(r, data),
        html.H4("Problems"), _problems(r, data),
        html.H4("Where the span goes"), _span(r, data)])


def register(app, data: AppData, figures):
    """Nothing to do: links change the URL, the state follows."""


def _header(r: dict, data: AppData):
    td = r.get("time_decomposition") or {}
    rows = [("grains", f"{r['grains']} ({r['tasks']} tasks, {r['chunks']} chunks) on "
                       f"{r['cores_used']} core(s)"),
            ("work", f"{fmt_ns(r['work_ns'])} (in grains {fmt_ns(r['grain_work_ns'])})"),
            ("span", f"{fmt_ns(r['span_ns'])}: critical path of {len(r['critical_path'])} grains "
                     "(what the span is made of: below)")]
    rows += [(name, f"{fmt_parallelism(v)} ({WHAT[name]})") for name, v in data.parallelism]
    if td.get("total"):
        pct = {k: 100.0 * td[k] / td["total"] for k in ("work", "overhead", "idle")}
        rows.append(("thread time", f"work {pct['work']:.1f}%, runtime overhead "
                                    f"{pct['overhead']:.1f}%, idle {pct['idle']:.1f}%"))
    body = [html.Tr([html.Td(k), html.Td(v)], className="parallelism" if k in WHAT else None)
            for k, v in rows]
    links = html.P(["See: ", _link("the grain graph", view="graph", problem=NO_PROBLEM), " · ",
                    _link("parallelism over time", view="parallelism"), " · ",
                    _link("threads (Gantt)", view="threads"), " · ",
                    _link("source locations", view="locations")])
    return html.Div([html.Table(className="kv summary-kv", children=body), links])


def _problems(r: dict, data: AppData):
    head = html.Tr([html.Th(c) for c in ("problem", "threshold", "grains", "%",
                                         "on critical path", "work", "worst location")])
    rows = [head]
    for name, p in r["problems"].items():
        label = PROBLEM_LABELS.get(name, name)
        th = f"{p['direction']} {p['threshold']:.3g}"
        if not p["available"]:
            rows.append(html.Tr([html.Td(label), html.Td(th), html.Td("unavailable",
                                                                     colSpan=5)]))
            continue
        locs = p.get("locations") or []
        where = _link(locs[0]["location"], view="graph", problem=LOCATION_VIEW,
                      location=locs[0]["location"]) if locs else ""
        rows.append(html.Tr(className="flagged" if p["grains"] else None, children=[
            html.Td(_link(label, cls="problem-link", view="graph", problem=name)),
            html.Td(th), html.Td(p["grains"]), html.Td(f"{p['percent']:.1f}%"),
            html.Td(p["on_critical_path"]), html.Td(fmt_ns(p["work_ns"])), html.Td(where)]))
    return html.Table(id="summary-problems", className="kv problems", children=rows)


def _span(r: dict, data: AppData):
    span = max(float(r["span_ns"]), 1.0)
    rows = [html.Tr([html.Td(SPAN_PARTS[k]), html.Td(fmt_ns(v)), html.Td(fmt_share(100 * v / span)),
                     html.Td(html.Div(className="bar", style={"width": f"{100 * v / span:.0f}%"}))])
            for k, v in span_parts(r) if v or k == "grains"]
    contexts = ", ".join(f"{c['kind']} task {c['identity']} {fmt_ns(c['ns'])}"
                         for c in r["critical_path_time"]["contexts"][:3])
    grains = [html.Li([_link(f"#{c['grain']}", view="graph", grain=c["grain"],
                             problem=NO_PROBLEM),
                       f" {c['kind']} {c['identity']} at {c['location']}: {fmt_ns(c['work_ns'])}"])
              for c in r["critical_path_grains"][:10]]
    return html.Div([html.Table(id="summary-span", className="kv span", children=rows),
                     html.P(f"Serial and team code on the path, by task: {contexts}.")
                     if contexts else None,
                     html.P(["The critical path is red on ",
                             _link("the grain graph", view="graph", problem=NO_PROBLEM),
                             "; its first grains:"]), html.Ul(grains)])
