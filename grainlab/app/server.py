"""The Dash app: the page (header, controls, one pane per view, the details
panel) and the callbacks that are no single view's: which pane shows, the
export format, the connection banner. Views: grain graph (one colouring per
problem), source locations, parallelism over time, threads, compare (with a
reference run), each in grainlab.app.views; the view state, in the URL, in
grainlab.app.state. A grain clicked anywhere is selected everywhere and
described in the details panel."""
from __future__ import annotations

from pathlib import Path

from dash import Dash, Input, Output, dcc, html

from ..analysis.report import fmt_parallelism
from ..units import fmt_ns
from .data import AppData
from .figure_cache import FigureCache
from .state import (DEFAULT, PROBLEM_LABELS, VIEWS, default_problem, parse_state,
                    problem_choices)
from .state import register as register_state
from .views import PANES, details
from .views.graph import GRAPH_CONFIG

ASSETS = Path(__file__).parent / "assets"
CONNECTION_CHECK = """
async function(n) {
    try {
        const r = await fetch('/_grainlab/alive', {cache: 'no-store'});
        if (r.ok) { return [{display: 'none'}, '']; }
    } catch (e) {}
    return [{display: 'block'},
            'Lost the connection to the grainlab server: start `grainlab serve` ' +
            'again and reload this page.'];
}
"""


def create_app(analysis=None, comparison=None, data: AppData | None = None,
               progress=None) -> Dash:
    data = data or AppData(analysis, comparison, progress=progress)
    app = Dash(__name__, title=f"grainlab: {Path(data.report['trace']).name}",
               assets_folder=str(ASSETS), serve_locally=True,
               suppress_callback_exceptions=False)
    app.server.route("/_grainlab/alive")(lambda: "ok")
    body = html.Div(className="body", children=[
        html.Div(className="main", children=[html.Div(id=f"pane-{name}", children=view.pane(data))
                                             for name, view in PANES.items()]),
        details.pane(data)])
    app.layout = html.Div([dcc.Location(id="url", refresh=False), dcc.Store(id="state"),
                           dcc.Interval(id="heartbeat", interval=3000),
                           _header(data), _controls(data), body])
    register_state(app, data)
    figures = FigureCache(data)
    # the grain graph's first view, laid out before the server answers
    figures.get(parse_state("?view=graph", data), "graph")
    for view in [*PANES.values(), details]:
        view.register(app, data, figures)
    _register_page(app)
    return app


def _header(data: AppData):
    s = data.report
    return html.Div(className="header", children=[
        html.Div([html.B("grainlab"), " · ", html.Span(s["program"], id="program")]),
        html.Div(id="run-summary", children=[
            f"{s['grains']} grains ({s['tasks']} tasks, {s['chunks']} chunks) on "
            f"{s['cores_used']} core(s) · ",
            *[x for name, v in data.parallelism
              for x in (html.Span(f"{name} {fmt_parallelism(v)}", className="parallelism"),
                        " · ")],
            f"critical path {len(s['critical_path'])} grains"
            + ("" if s["complete"] else " · INCOMPLETE trace")]),
        html.Div(id="span-parts", children=f"span {fmt_ns(s['span_ns'])}: {data.span_text}"),
        html.Div(id="conn-banner", className="banner", style={"display": "none"}),
    ])


def _controls(data: AppData):
    views = VIEWS + ([("compare", "Compare")] if data.comparison is not None else []) \
        + ([("ranks", "Ranks")] if data.ranks is not None else [])
    return html.Div(className="controls", children=[
        dcc.Tabs(id="view", value="summary", children=[dcc.Tab(label=lab, value=v)
                                                      for v, lab in views]),
        html.Div(className="row", children=[
            html.Span(id="problem-controls", className="row", children=[
                html.Label("Problem "),
                dcc.Dropdown(id="problem", clearable=False, style={"width": "320px"},
                             options=[{"label": PROBLEM_LABELS.get(p, p), "value": p}
                                      for p in problem_choices(data)],
                             value=default_problem(data)),
                html.Label(" threshold "),
                dcc.Input(id="threshold", type="number", debounce=True,
                          style={"width": "90px"}),
                html.Span(id="problem-count", className="count"),
                html.Span(id="lod", className="lod")]),
            html.Span(id="export-controls", className="row", children=[
                html.Label(" export as "),
                dcc.RadioItems(id="export-format", value="png", inline=True,
                               options=[{"label": "PNG", "value": "png"},
                                        {"label": "SVG", "value": "svg"}])]),
        ]),
    ])


PROBLEM_VIEWS = ("graph", "threads")
EXPORT_VIEWS = ("graph", "threads", "parallelism")


def _register_page(app):
    """Which pane shows, the figures' export format, the connection banner."""
    @app.callback(*[Output(f"pane-{v}", "style") for v in PANES], Input("state", "data"))
    def show_view(state):
        view = (state or DEFAULT)["view"]
        return [{"display": "block" if v == view else "none"} for v in PANES]

    # the problem and threshold colour the graph and the threads; the export
    # format is the one of those figures and the parallelism panels
    @app.callback(Output("problem-controls", "style"), Output("export-controls", "style"),
                  Input("state", "data"))
    def show_controls(state):
        view = (state or DEFAULT)["view"]
        shown = {"display": "contents"}   # its children in the row, as before
        hidden = {"display": "none"}
        return (shown if view in PROBLEM_VIEWS else hidden,
                shown if view in EXPORT_VIEWS else hidden)

    @app.callback(Output("graph-fig", "config"), Output("parallelism-fig", "config"),
                  Output("threads-fig", "config"), Input("export-format", "value"))
    def export_format(fmt):
        cfg = {**GRAPH_CONFIG, "toImageButtonOptions": {"format": fmt or "png", "scale": 2,
                                                        "filename": "grainlab"}}
        return cfg, cfg, cfg

    # A lost server connection shows a message in the page.
    app.clientside_callback(CONNECTION_CHECK, Output("conn-banner", "style"),
                            Output("conn-banner", "children"), Input("heartbeat", "n_intervals"))
