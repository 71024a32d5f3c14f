"""Data locality (docs/locality.md): the KRD histogram (stacked close / near
/ far / INF per domain; with a reference run, both side by side) and the
remote-heavy grains (NUMA locality, recorded with GRAINLAB_PAGES=1). A run
without data accesses gets a line saying how to add them."""
from __future__ import annotations

from dash import dcc, html

from ..data import AppData
from ..figures import krd_figure, remote_figure
from .graph import GRAPH_CONFIG


def pane(data: AppData):
    if not data.krd_runs:
        return html.P(id="locality-note", className="note", children=data.krd_note)
    parts = [dcc.Graph(id="krd-fig", config=GRAPH_CONFIG, style={"height": "45vh"},
                       figure=krd_figure(data.krd_runs))]
    remote = remote_figure(data.grains, data.locations)
    parts.append(dcc.Graph(id="remote-fig", config=GRAPH_CONFIG, style={"height": "40vh"},
                           figure=remote) if remote is not None else
                 html.P(id="locality-note", className="note",
                        children="No page placement in this trace: record with GRAINLAB_PAGES=1 "
                                 "for each grain's NUMA locality."))
    return html.Div(parts)


def register(app, data: AppData, figures):
    """Nothing to do: the figures are drawn once, with the page."""
