"""Parallelism over time, two panels on their own time axes: exposed
parallelism in DAG time (grains at their earliest start) and achieved
parallelism in wall-clock time (grains running) against the cores used;
linear or log scale."""
from __future__ import annotations

from dash import Input, Output, dcc, html

from ..data import AppData
from ..figures import parallelism_figure
from .graph import GRAPH_CONFIG


def pane(data: AppData):
    return html.Div([
        html.Div(className="row graph-controls", children=[
            html.Label("scale "),
            dcc.RadioItems(id="parallelism-scale", value="linear", inline=True,
                           options=[{"label": "linear", "value": "linear"},
                                    {"label": "log", "value": "log"}])]),
        dcc.Graph(id="parallelism-fig", config=GRAPH_CONFIG, style={"height": "72vh"},
                  figure=parallelism_figure(data.ideal, data.achieved, data.cores))])


def register(app, data: AppData, figures):
    @app.callback(Output("parallelism-fig", "figure"), Input("parallelism-scale", "value"),
                  prevent_initial_call=True)
    def scale(value):
        return parallelism_figure(data.ideal, data.achieved, data.cores, log=value == "log")
