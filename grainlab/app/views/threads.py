"""The threads: every grain where and when it ran, one row per thread,
coloured as on the graph."""
from __future__ import annotations

from dash import Input, Output, dcc, no_update

from ..data import AppData
from ..state import parse_state
from .graph import GRAPH_CONFIG


def pane(data: AppData):
    return dcc.Graph(id="threads-fig", config=GRAPH_CONFIG, style={"minHeight": "300px"})


def register(app, data: AppData, figures):
    @app.callback(Output("threads-fig", "figure"), Input("state", "data"))
    def draw_threads(state):
        state = state or parse_state("", data)
        if state["view"] != "threads":
            return no_update
        fig, _, _ = figures.get(state, "threads")
        return fig
