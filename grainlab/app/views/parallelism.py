"""Parallelism over time: exposed (grains at their earliest start) and
achieved (grains running), against the cores used."""
from __future__ import annotations

from dash import dcc

from ..data import AppData
from ..figures import parallelism_figure
from .graph import GRAPH_CONFIG


def pane(data: AppData):
    return dcc.Graph(id="parallelism-fig", config=GRAPH_CONFIG, style={"height": "70vh"},
                     figure=parallelism_figure(data.ideal, data.achieved, data.cores))


def register(app, data: AppData, figures):
    """Nothing to do: the figure is drawn once, with the page."""
