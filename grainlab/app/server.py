"""The Dash app: layout, URL state and callbacks. Views: grain graph (one
colouring per problem), source locations, parallelism over time, threads,
compare (with a reference run). A grain clicked anywhere is selected
everywhere and described in the details panel."""
from __future__ import annotations

import html as _html
import math
from collections import OrderedDict
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import numpy as np
from dash import Dash, Input, Output, State, ctx, dash_table, dcc, html, no_update
from dash.exceptions import PreventUpdate

from .. import problems as P
from ..analysis import SPAN_IN_GRAINS_NOTED, span_in_grains
from .data import LOCATION_VIEW, NO_PROBLEM, AppData
from .figures import parallelism_figure, classes, segment_figure
from .source import lines_around

VIEWS = [("graph", "Grain graph"), ("locations", "Source locations"),
         ("parallelism", "Parallelism"), ("threads", "Threads")]
PROBLEM_LABELS = {"parallel_benefit": "Parallel benefit", "load_balance": "Load balance",
                  "work_deviation": "Work deviation", "instantaneous_parallelism":
                  "Instantaneous parallelism", "scatter": "Scatter",
                  "memory_hierarchy_utilization": "Memory-hierarchy utilization",
                  "preempted": "Preempted (wall / CPU time)",
                  LOCATION_VIEW: "By source location", NO_PROBLEM: "No problem (structure only)"}
DEFAULT = {"view": "graph", "problem": "parallel_benefit", "threshold": None, "grain": None,
           "location": None, "zoom": None, "tzoom": None}
ASSETS = Path(__file__).parent / "assets"
GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


# ---------------------------------------------------------------------------
# URL state

def parse_state(search: str | None, data: AppData) -> dict:
    """View state from a URL query string; anything unknown or malformed falls
    back to the default (a link never breaks the page)."""
    q = {k: v[-1] for k, v in parse_qs((search or "").lstrip("?")).items()}
    s = dict(DEFAULT)
    views = {v for v, _ in VIEWS} | ({"compare"} if data.comparison is not None else set())
    if q.get("view") in views:
        s["view"] = q["view"]
    choices = problem_choices(data)
    s["problem"] = q.get("problem") if q.get("problem") in choices else default_problem(data)
    s["threshold"] = _number(q.get("threshold"))
    g = _number(q.get("grain"))
    s["grain"] = int(g) if g is not None and 0 <= g < data.n_grains else None
    s["location"] = q.get("location") or None
    for key in ("zoom", "tzoom"):
        parts = [_number(p) for p in (q.get(key) or "").split(",")]
        s[key] = parts if len(parts) == 4 and None not in parts else None
    return s


def format_state(s: dict) -> str:
    q = {}
    for k, v in s.items():
        if v is None or v == DEFAULT.get(k):
            continue
        q[k] = ",".join(f"{p:.6g}" for p in v) if isinstance(v, list) else v
    return "?" + urlencode(q) if q else ""


def _number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def problem_choices(data: AppData) -> list:
    return [*data.problems, LOCATION_VIEW, NO_PROBLEM]


def default_problem(data: AppData) -> str:
    return "parallel_benefit" if "parallel_benefit" in data.problems else NO_PROBLEM


# ---------------------------------------------------------------------------

def create_app(analysis=None, comparison=None, data: AppData | None = None,
               progress=None) -> Dash:
    data = data or AppData(analysis, comparison, progress=progress)
    s = data.summary
    app = Dash(__name__, title=f"grainlab: {Path(s['trace']).name}",
               assets_folder=str(ASSETS), serve_locally=True,
               suppress_callback_exceptions=False)
    app.server.route("/_grainlab/alive")(lambda: "ok")
    views = VIEWS + ([("compare", "Compare")] if data.comparison is not None else [])
    cache: OrderedDict = OrderedDict()

    header = html.Div(className="header", children=[
        html.Div([html.B("grainlab"), " · ", html.Span(s["program"], id="program")]),
        html.Div(id="run-summary", children=(
            f"{s['grains']} grains ({s['tasks']} tasks, {s['chunks']} chunks) on "
            f"{s['cores_used']} core(s) · span {s['span_ns'] / 1e6:.3g} ms · "
            f"exposed parallelism {s['parallelism']:.3g} · "
            f"critical path {len(s['critical_path'])} grains"
            + ("" if span_in_grains(s) >= SPAN_IN_GRAINS_NOTED else
               f" ({100 * span_in_grains(s):.0f}% of the span in grains)")
            + ("" if s["complete"] else " · INCOMPLETE trace"))),
        html.Div(id="conn-banner", className="banner", style={"display": "none"}),
    ])
    controls = html.Div(className="controls", children=[
        dcc.Tabs(id="view", value="graph", children=[dcc.Tab(label=lab, value=v)
                                                      for v, lab in views]),
        html.Div(className="row", children=[
            html.Label("Problem "),
            dcc.Dropdown(id="problem", clearable=False, style={"width": "320px"},
                         options=[{"label": PROBLEM_LABELS.get(p, p), "value": p}
                                  for p in problem_choices(data)],
                         value=default_problem(data)),
            html.Label(" threshold "),
            dcc.Input(id="threshold", type="number", debounce=True, style={"width": "90px"}),
            html.Span(id="problem-count", className="count"),
            html.Span(id="lod", className="lod"),
            html.Label(" export as "),
            dcc.RadioItems(id="export-format", value="png", inline=True,
                           options=[{"label": "PNG", "value": "png"},
                                    {"label": "SVG", "value": "svg"}]),
        ]),
    ])
    loc_table = dash_table.DataTable(
        id="loc-table", sort_action="native", row_selectable="single", page_size=20,
        columns=_loc_columns(data), data=_loc_rows(data),
        style_cell={"fontFamily": "monospace", "fontSize": 13, "textAlign": "left"},
        style_table={"overflowX": "auto"})
    body = html.Div(className="body", children=[
        html.Div(className="main", children=[
            html.Div(id="pane-graph", children=[
                dcc.Graph(id="graph-fig", config=GRAPH_CONFIG, style={"height": "78vh"})]),
            html.Div(id="pane-locations", children=[
                html.P("Each task or loop construct of the program: its grains, share of "
                       "the work and the % of its grains with each problem (thesis Fig. 5.8). "
                       "Select a row to highlight its grains on the graph."),
                loc_table]),
            html.Div(id="pane-parallelism", children=[
                dcc.Graph(id="parallelism-fig", config=GRAPH_CONFIG, style={"height": "70vh"},
                          figure=parallelism_figure(data.ideal, data.achieved, data.cores))]),
            html.Div(id="pane-threads", children=[
                dcc.Graph(id="threads-fig", config=GRAPH_CONFIG, style={"height": "70vh"})]),
            html.Div(id="pane-compare", children=_compare_pane(data)),
        ]),
        html.Div(id="details", className="details",
                 children=html.P("Click a grain to see its details.")),
    ])
    app.layout = html.Div([dcc.Location(id="url", refresh=False), dcc.Store(id="state"),
                           dcc.Interval(id="heartbeat", interval=3000),
                           header, controls, body])

    def current(state, search) -> dict:
        """A copy of the view state to change; an action made before the
        page's first state came back applies to the URL's."""
        return dict(state) if state is not None else parse_state(search, data)

    # -- one callback owns the view state: URL in, controls in, URL out ----------
    @app.callback(
        Output("state", "data"), Output("url", "search"), Output("view", "value"),
        Output("problem", "value"), Output("threshold", "value"),
        Input("url", "search"), Input("view", "value"), Input("problem", "value"),
        Input("threshold", "value"),
        Input("graph-fig", "clickData"), Input("threads-fig", "clickData"),
        Input("graph-fig", "relayoutData"), Input("threads-fig", "relayoutData"),
        State("state", "data"))
    def sync(search, view, problem, threshold, gclick, tclick, grelayout, trelayout, state):
        trig = ctx.triggered_id
        if trig in (None, "url"):
            st = parse_state(search, data)
            th = st["threshold"] if st["threshold"] is not None else \
                data.default_threshold(st["problem"])
            return st, no_update, st["view"], st["problem"], th
        st = current(state, search)
        th_out = no_update
        if trig == "view":
            st["view"] = view
        elif trig == "problem":
            st["problem"], st["threshold"] = problem, None
            th_out = data.default_threshold(problem)
        elif trig == "threshold":
            default = data.default_threshold(st["problem"])
            st["threshold"] = None if threshold is None or threshold == default else threshold
        else:
            fired = set(ctx.triggered_prop_ids)
            for fig, click, relayout, key in (("graph-fig", gclick, grelayout, "zoom"),
                                              ("threads-fig", tclick, trelayout, "tzoom")):
                if f"{fig}.clickData" in fired and click:
                    gid = _clicked_grain(click, data)
                    if gid is not None:
                        st["grain"] = gid
                    else:   # a cell of the binned overview: expand it
                        st[key] = _expand(click, st.get(key), data, vertical=(key == "zoom"))
                if f"{fig}.relayoutData" in fired and relayout:
                    st[key] = _zoom(relayout, st.get(key), vertical=(key == "zoom"))
        if st == state and th_out is no_update:
            # Nothing changed (the figures' first autosize, a click on empty
            # space): write nothing, so that a stale copy of the state (each
            # call reads it as it was when the call was sent) cannot
            # overwrite a newer change made meanwhile.
            raise PreventUpdate
        return st, format_state(st), no_update, no_update, th_out

    # A location picked in the table: its own callback, not an input of
    # `sync`. Dash drops the answer of a call that a newer call of the same
    # callback overtook, and the figures' first autosize calls `sync` just
    # after they are drawn: a row picked then was lost (2 of 8 page loads in
    # tests/test_serve.py).
    @app.callback(
        Output("state", "data", allow_duplicate=True),
        Output("url", "search", allow_duplicate=True),
        Output("view", "value", allow_duplicate=True),
        Output("problem", "value", allow_duplicate=True),
        Output("threshold", "value", allow_duplicate=True),
        Input("loc-table", "selected_row_ids"), State("url", "search"), State("state", "data"),
        prevent_initial_call=True)
    def pick_location(loc_rows, search, state):
        if not loc_rows:
            raise PreventUpdate
        st = current(state, search)
        st.update(problem=LOCATION_VIEW, location=loc_rows[0], threshold=None, view="graph")
        return st, format_state(st), st["view"], st["problem"], no_update

    @app.callback(*[Output(f"pane-{v}", "style") for v, _ in VIEWS + [("compare", "")]],
                  Input("state", "data"))
    def show_view(state):
        view = (state or DEFAULT)["view"]
        return [{"display": "block" if v == view else "none"} for v, _ in VIEWS + [("compare", "")]]

    @app.callback(Output("graph-fig", "figure"), Output("problem-count", "children"),
                  Output("lod", "children"), Input("state", "data"))
    def draw_graph(state):
        state = state or parse_state("", data)
        fig, level, count = _segments(data, state, cache, "graph")
        return fig, _count_text(data, state, count), f" · {level} view"

    @app.callback(Output("threads-fig", "figure"), Input("state", "data"))
    def draw_threads(state):
        state = state or parse_state("", data)
        if state["view"] != "threads":
            return no_update
        fig, _, _ = _segments(data, state, cache, "threads")
        return fig

    @app.callback(Output("details", "children"), Input("state", "data"))
    def details(state):
        return _details(data, (state or {}).get("grain"))

    @app.callback(Output("graph-fig", "config"), Output("parallelism-fig", "config"),
                  Output("threads-fig", "config"), Input("export-format", "value"))
    def export_format(fmt):
        cfg = {**GRAPH_CONFIG, "toImageButtonOptions": {"format": fmt or "png", "scale": 2,
                                                        "filename": "grainlab"}}
        return cfg, cfg, cfg

    # A lost server connection shows a message in the page.
    app.clientside_callback(
        """
        async function(n) {
            try {
                const r = await fetch('/_grainlab/alive', {cache: 'no-store'});
                if (r.ok) { return [{display: 'none'}, '']; }
            } catch (e) {}
            return [{display: 'block'},
                    'Lost the connection to the grainlab server: start `grainlab serve` ' +
                    'again and reload this page.'];
        }
        """,
        Output("conn-banner", "style"), Output("conn-banner", "children"),
        Input("heartbeat", "n_intervals"))
    return app


# ---------------------------------------------------------------------------
# callback helpers

def _clicked_grain(click, data: AppData):
    try:
        cd = click["points"][0].get("customdata")
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(cd, list):
        cd = cd[0] if cd else None
    try:
        gid = int(cd)
    except (TypeError, ValueError):
        return None
    return gid if 0 <= gid < data.n_grains else None


def _expand(click, old, data: AppData, vertical: bool):
    """Zoom on an overview cell that was clicked: an eighth of the current
    window (or of the whole graph) around it, so repeated clicks reach the
    level where every grain is drawn."""
    try:
        pt = click["points"][0]
        x, y = float(pt["x"]), float(pt["y"])
    except (KeyError, IndexError, TypeError, ValueError):
        return old
    p, t = (x, y) if vertical else (y, x)
    seg = data.segments
    if old:
        pw, tw = (old[1] - old[0]) / 8, (old[3] - old[2]) / 8
    else:
        col = "x" if vertical else "row"
        pw = (float(seg[col].max()) - float(seg[col].min()) + 1) / 8 if len(seg) else 1.0
        tw = (float(seg["end"].max()) / 1e6) / 8 if len(seg) else 1.0
    pw, tw = max(pw, 2.0), max(tw, 1e-4)
    return [p - pw, p + pw, max(t - tw, 0.0), t + tw]


def _zoom(relayout: dict, old, vertical: bool):
    if relayout.get("xaxis.autorange") or relayout.get("autosize"):
        return None if relayout.get("xaxis.autorange") else old
    try:
        x0, x1 = float(relayout["xaxis.range[0]"]), float(relayout["xaxis.range[1]"])
        y0, y1 = float(relayout["yaxis.range[0]"]), float(relayout["yaxis.range[1]"])
    except (KeyError, TypeError, ValueError):
        return old
    lo_y, hi_y = sorted((y0, y1))
    lo_x, hi_x = sorted((x0, x1))
    # stored as (position range, time range in ms)
    return [lo_x, hi_x, lo_y, hi_y] if vertical else [lo_y, hi_y, lo_x, hi_x]


def _segments(data: AppData, state: dict, cache: OrderedDict, which: str):
    problem, threshold = state["problem"], state["threshold"]
    zoom = state["zoom"] if which == "graph" else state["tzoom"]
    key = (which, problem, threshold, state.get("location") if problem == LOCATION_VIEW else None,
           tuple(zoom) if zoom else None)
    if key not in cache:
        sev, count = data.severity(problem, threshold, state.get("location"))
        cls = classes(data.n_grains, data.n_total, sev, show_all=(problem == NO_PROBLEM))
        if which == "graph":
            fig, level = segment_figure(
                data.segments, "x", cls, data.critical, vertical=True, window=zoom,
                edges=data.edges, hover_labels=data.hover,
                title="Grain graph: time flows down, children beside their parent",
                pos_title="task tree (pre-order: a task's children to its right)")
        else:
            seg = data.segments[data.segments["row"] >= 0]
            fig, level = segment_figure(
                seg, "row", cls, data.critical, vertical=False, window=zoom,
                hover_labels=data.hover, title="Threads: grains as they ran",
                pos_title="thread")
            fig.update_yaxes(tickvals=list(data.thread_rows.values()),
                             ticktext=[f"thread {t}" for t in data.thread_rows])
        cache[key] = (fig.to_dict(), level, count)
        while len(cache) > 32:
            cache.popitem(last=False)
    fig, level, count = cache[key]
    gid = state.get("grain")
    if gid is not None and which == "graph":
        fig = _with_selection(fig, data, gid)
    return fig, level, count


def _with_selection(fig: dict, data: AppData, gid: int) -> dict:
    seg = data.segments
    own = seg[seg["owner"].to_numpy() == gid]
    if not len(own):
        return fig
    y = float(own["start"].min()) / 1e6
    marker = {"type": "scattergl", "x": [float(data.x[gid])], "y": [y], "mode": "markers",
              "marker": {"symbol": "star", "size": 16, "color": "#08519c",
                         "line": {"color": "white", "width": 1}},
              "name": f"selected #{gid}", "hoverinfo": "skip", "customdata": [gid]}
    return {**fig, "data": [*fig["data"], marker]}


def _count_text(data: AppData, state: dict, count: int) -> str:
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


def _loc_columns(data: AppData) -> list:
    cols = [{"name": "location", "id": "location"}, {"name": "grains", "id": "grains"},
            {"name": "work (ms)", "id": "work_ms"}, {"name": "work %", "id": "work_percent"}]
    cols += [{"name": f"% {PROBLEM_LABELS.get(m, m).lower()}", "id": f"{m}_percent"}
             for m in data.problems if f"{m}_percent" in data.by_location.columns]
    return cols


def _loc_rows(data: AppData) -> list:
    by = data.by_location
    rows = []
    pcols = [c for c in by.columns if c.endswith("_percent") and c != "work_percent"]
    for loc, r in by.iterrows():          # one row per source location (few)
        row = {"id": str(loc), "location": str(loc), "grains": int(r["grains"]),
               "work_ms": round(float(r["work_ns"]) / 1e6, 3),
               "work_percent": round(float(r["work_percent"]), 2)}
        row.update({c: round(float(r[c]), 1) for c in pcols})
        rows.append(row)
    return rows


def _compare_pane(data: AppData):
    c = data.comparison
    if c is None:
        return []
    rep = c.summary
    rows = [{"location": str(k), "grains": int(r.grains),
             "work_a_ms": round(r.work_a_ns / 1e6, 3), "work_b_ms": round(r.work_b_ns / 1e6, 3),
             "work_deviation": round(float(r.work_deviation), 3), "inflated": int(r.inflated)}
            for k, r in c.locations.iterrows()]
    td = rep["time_decomposition"]
    return [
        html.P(f"This run ({rep['b']}, {rep['threads_b']} threads) against the reference "
               f"{rep['a']} ({rep['threads_a']} threads): {rep['matched']} grains matched by "
               f"identity; work deviation {rep['work_deviation']:.3g}; "
               f"{rep['inflated']['grains']} grains inflated beyond {rep['threshold']:.3g}. "
               f"WTI {td['WTI']:.3g}, OVR {td['OVR']:.3g}. Choose the problem "
               "'Work deviation' to see it per grain on the graph."),
        dash_table.DataTable(id="compare-table", sort_action="native", page_size=20,
                             columns=[{"name": k, "id": k} for k in rows[0]] if rows else [],
                             data=rows,
                             style_cell={"fontFamily": "monospace", "fontSize": 13,
                                         "textAlign": "left"})]


def _details(data: AppData, gid):
    d = data.grain_details(gid)
    if d is None:
        return html.P("Click a grain (on the graph or the threads view) to see its details.")
    row, frag = d["row"], d["fragments"]
    skip = {"location"}
    metric_rows = [html.Tr([html.Td(str(k)), html.Td(_fmt(v))])
                   for k, v in row.items() if k not in skip]
    parts = [html.H4(f"Grain #{gid}: {row['kind']} {row['identity']}", id="details-title"),
             html.P(["source: ", html.Code(d["location"], id="details-location")])]
    src = lines_around(d["location"], data.analysis.graph.meta.get("loadmap"))
    if src is not None:
        path, first, lines, hit = src
        parts.append(html.Pre(id="details-source", children=[
            html.Span(f"{first + i:5d}  {text}\n",
                      className="hit" if first + i == hit else None)
            for i, text in enumerate(lines)]))
        parts.append(html.Small(path))
    else:
        parts.append(html.Small("(source file not readable here)", id="details-source"))
    parent = int(row["parent"])
    parts.append(html.P(f"parent: {'#' + str(parent) if parent < data.n_grains else 'serial/team code'}"
                        f" · children: {len(d['children'])}"
                        + (" (" + ", ".join(f"#{c}" for c in d["children"][:12])
                           + (" ..." if len(d["children"]) > 12 else "") + ")"
                           if len(d["children"]) else "")))
    parts.append(html.Table(className="kv", children=metric_rows))
    parts.append(html.H5(f"{len(frag)} fragment(s)"))
    parts.append(html.Table(className="kv", children=[
        html.Tr([html.Th(c) for c in ("type", "thread", "cpu", "start (us)", "duration (us)")])] + [
        html.Tr([html.Td(str(r.type)), html.Td(int(r.thread)), html.Td(int(r.cpu)),
                 html.Td(f"{(r.start - data.origin) / 1e3:.1f}"),
                 html.Td(f"{r.duration / 1e3:.1f}")])
        for r in frag.head(50).itertuples()]))
    return parts


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "—" if not math.isfinite(v) else f"{v:.4g}"
    return _html.unescape(str(v))
