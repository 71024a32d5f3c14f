"""Parallelism over time, two panels on their own time axes: exposed
parallelism in DAG time (grains at their earliest start) and achieved
parallelism in wall-clock time (grains running) against the cores used;
linear or log scale. Drawn when first shown (not with the page: its
profiles are the page's largest figure)."""
from __future__ import annotations

from dash import Input, Output, dcc, html, no_update

from ..data import AppData
from ..figures import parallelism_figure
from ..state import parse_state
from .graph import GRAPH_CONFIG


def pane(data: AppData):
    return html.Div([
        html.Div(className="row graph-controls", children=[
            html.Label("scale "),
            dcc.RadioItems(id="parallelism-scale", value="linear", inline=True,
                           options=[{"label": "linear", "value": "linear"},
                                    {"label": "log", "value": "log"}])]),
        dcc.Graph(id="parallelism-fig", config=GRAPH_CONFIG, style={"height": "72vh"})])


def register(app, data: AppData, figures):
    drawn = {}

    @app.callback(Output("parallelism-fig", "figure"), Input("state", "data"),
                  Input("parallelism-scale", "value"))
    def draw(state, scale):
        state = state or parse_state("", data)
        if state["view"] != "parallelism":
            return no_update
        log = scale == "log"
        if log not in drawn:       # two figures at most, kept
            drawn[log] = parallelism_figure(data.ideal, data.achieved, data.cores,
                                            log=log).to_dict()
        return with_time_zoom(drawn[log], state.get("pzoom"))


def with_time_zoom(fig: dict, zoom) -> dict:
    """The two panels zoomed in time as the URL says ([a0, a1, b0, b1])."""
    if not zoom:
        return fig
    lay = dict(fig["layout"])
    for k, axis in enumerate(("xaxis", "xaxis2")):
        lay[axis] = {**lay.get(axis, {}), "range": list(zoom[2 * k:2 * k + 2]),
                     "autorange": False}
    return {**fig, "layout": lay}
