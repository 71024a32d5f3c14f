"""The grain graph: every grain a segment from its start to its end, time
flowing down, a task's children beside it, coloured by the chosen problem;
the critical path in red. Also the count of problem grains in the controls."""
from __future__ import annotations

from dash import Input, Output, dcc, no_update

from ... import problems as P
from ..data import LOCATION_VIEW, NO_PROBLEM, AppData
from ..state import parse_state

GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def pane(data: AppData):
    return dcc.Graph(id="graph-fig", config=GRAPH_CONFIG, style={"height": "78vh"})


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
        return fig, count_text(data, state, count), f" · {level} view"


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
    return (f" {count} of {data.n_grains} grains ({pct:.1f}%) with "
            f"{problem} {'<' if rule.below else '>'} {th:.3g}")
