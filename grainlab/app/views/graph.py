"""The grain graph, as the thesis draws it (grainlab.export.drawing): fork,
join and book-keeping shapes, fragments and chunks as rectangles as long as
their execution time in DAG time, coloured by the chosen problem, the
critical path in red, large subtrees collapsed into summary nodes that
expand on click; or (second mode) grains placed at their wall-clock times.
Also the count of problem grains in the controls."""
from __future__ import annotations

from dash import Input, Output, dcc, html, no_update

from ... import problems as P
from ..data import LOCATION_VIEW, NO_PROBLEM, AppData
from ..state import parse_state

GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def pane(data: AppData):
    controls = html.Div(className="row graph-controls", children=[
        html.Label("time "),
        dcc.RadioItems(id="graph-layout", value="dag", inline=True, options=[
            {"label": "DAG time",
             "value": "dag"},
            {"label": "wall clock", "value": "wall"}]),
        html.Label(" · reduce "),
        dcc.Checklist(id="graph-reduce", value=[], inline=True, options=[
            {"label": "fragments", "value": "fragments"}, {"label": "forks", "value": "forks"},
            {"label": "book-keeping", "value": "bookkeeping"}]),
        html.Button("collapse last expanded", id="graph-collapse", n_clicks=0),
        dcc.Input(id="graph-search", type="text", debounce=True, style={"width": "150px"},
                  placeholder="find: #id or location"),
    ])
    return html.Div([controls, dcc.Graph(id="graph-fig", config=GRAPH_CONFIG,
                                         style={"height": "74vh"})])


def register(app, data: AppData, figures):
    @app.callback(Output("graph-fig", "figure"), Output("problem-count", "children"),
                  Output("lod", "children"), Input("state", "data"))
    def draw_graph(state):
        state = state or parse_state("", data)
        if state["view"] != "graph":
            # hidden: counted, not drawn (drawn when it is shown again)
            _, count = data.severity(state["problem"], state["threshold"], state.get("location"))
            return no_update, count_text(data, state, count), no_update
        fig, level, count = figures.get(state, "graph")
        wall = state.get("layout", "dag") == "wall"
        return fig, count_text(data, state, count), f" · {level}{' view' if wall else ''}"


def count_text(data: AppData, state: dict, count: int) -> str:
    problem = state["problem"]
    if problem == NO_PROBLEM:
        return f" {data.n_grains} grains"
    if problem == LOCATION_VIEW:
        loc = state.get("location")
        return f" {count} grains at {loc}" if loc else " select a row in Source locations"
    th = state["threshold"] if state["threshold"] is not None else \
        data.default_threshold(problem)
    rule = P.RULES[problem]
    pct = 100.0 * count / data.n_grains if data.n_grains else 0.0
    text = (f" {count} of {data.n_grains} grains ({pct:.1f}%) with "
            f"{problem} {'<' if rule.below else '>'} {th:.3g}")
    if data.by_value(problem, state["threshold"]):
        text += " · most grains flagged: coloured by value, in fifths (darker: worse)"
    return text
