"""Scaling (docs/predict.md, docs/metrics.md "Scaling"): how this run would
scale, and why the runs given with `serve --runs` did not.

- Predicted speed-up: the grain graph replayed on 1 to 64 simulated cores,
  between its bounds (`grainlab predict`); drawn when first shown (the
  replay takes seconds at 10^6 grains).
- With `--runs` (the same program at other thread counts): seed 000's
  breakdown of all threads' time (sequential-equivalent work, inflation,
  overhead, idle) and the speed-up with OVR and WTI (`grainlab scaling`).
"""
from __future__ import annotations

from dash import Input, Output, dcc, html, no_update

from ..data import AppData
from ..predict_figure import prediction_figure
from ..scaling_figures import breakdown_figure, speedup_figure
from ..state import parse_state
from .graph import GRAPH_CONFIG

CORES = (1, 2, 4, 8, 16, 32, 64)


def pane(data: AppData):
    parts = [dcc.Loading(dcc.Graph(id="predict-fig", config=GRAPH_CONFIG,
                                   style={"height": "60vh"}))]
    if data.scaling is None:
        parts.append(html.P(id="scaling-note", className="note", children=(
            "Measured scaling: serve this trace with --runs and traces of the same program "
            "at other thread counts (e.g. grainlab serve one.parquet --runs two.parquet "
            "four.parquet) to see where the lost speed-up went: overhead, idle or work "
            "time inflation.")))
    else:
        parts += [dcc.Graph(id="scaling-speedup-fig", config=GRAPH_CONFIG,
                            style={"height": "55vh"}, figure=speedup_figure(data.scaling)),
                  dcc.Graph(id="scaling-breakdown-fig", config=GRAPH_CONFIG,
                            style={"height": "55vh"}, figure=breakdown_figure(data.scaling))]
    return html.Div(parts)


def register(app, data: AppData, figures):
    drawn = {}

    @app.callback(Output("predict-fig", "figure"), Input("state", "data"))
    def draw(state):
        state = state or parse_state("", data)
        if state["view"] != "scaling":
            return no_update
        if "fig" not in drawn:
            drawn["fig"] = prediction_figure(data.analysis.predict(CORES))
        return drawn["fig"]
