"""The view state, and the URL that holds it: which view, which problem at
which threshold, the selected grain and location, the zoom of the graph and
threads views. One callback owns it (`register`): the URL and the controls
in, the URL out, so a link shows what its sender saw."""
from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, urlencode

import numpy as np

from dash import Input, Output, State, ctx, no_update
from dash.exceptions import PreventUpdate

from ..metrics import registry
from .data import LOCATION_VIEW, NO_PROBLEM, AppData
from .figures import parallelism_extents

VIEWS = [("summary", "Summary"), ("graph", "Grain graph"), ("locations", "Source locations"),
         ("parallelism", "Parallelism"), ("threads", "Threads"), ("locality", "Data locality"),
         ("scaling", "Scaling")]
# Every problem metric's label is the registry's (grainlab.metrics.registry).
PROBLEM_LABELS = {**{name: registry.label(name) for name in registry.PROBLEM_ORDER},
                  LOCATION_VIEW: "By source location", NO_PROBLEM: "No problem (structure only)"}
# "problem": None, the trace's worst (default_problem), so a URL always names its problem
DEFAULT = {"view": "summary", "problem": None, "threshold": None, "grain": None,
           "location": None, "zoom": None, "tzoom": None, "dzoom": None, "pzoom": None,
           "layout": "dag", "expand": None, "reduce": None}
LAYOUTS = ("dag", "wall")          # grain graph: DAG time (thesis) or wall-clock placement
REDUCTIONS = ("fragments", "forks", "bookkeeping")
TOKEN = re.compile(r"^[cm]\d+$")


def parse_state(search: str | None, data: AppData) -> dict:
    """View state from a URL query string; anything unknown or malformed falls
    back to the default (a link never breaks the page)."""
    q = {k: v[-1] for k, v in parse_qs((search or "").lstrip("?")).items()}
    s = dict(DEFAULT)
    views = {v for v, _ in VIEWS} | ({"compare"} if data.comparison is not None else set()) \
        | ({"ranks"} if getattr(data, "ranks", None) is not None else set())
    if q.get("view") in views:
        s["view"] = q["view"]
    choices = problem_choices(data)
    s["problem"] = q.get("problem") if q.get("problem") in choices else default_problem(data)
    s["threshold"] = _number(q.get("threshold"))
    g = _number(q.get("grain"))
    s["grain"] = int(g) if g is not None and 0 <= g < data.n_grains else None
    s["location"] = q.get("location") or None
    for key in ("zoom", "tzoom", "dzoom", "pzoom"):
        parts = [_number(p) for p in (q.get(key) or "").split(",")]
        s[key] = parts if len(parts) == 4 and None not in parts else None
    if q.get("layout") in LAYOUTS:
        s["layout"] = q["layout"]
    s["expand"] = [t for t in (q.get("expand") or "").split(",") if TOKEN.match(t)] or None
    s["reduce"] = [r for r in REDUCTIONS if r in (q.get("reduce") or "").split(",")] or None
    return s


def format_state(s: dict) -> str:
    q = {}
    for k, v in s.items():
        if v is None or v == DEFAULT.get(k):
            continue
        q[k] = ",".join(p if isinstance(p, str) else f"{p:.6g}" for p in v) \
            if isinstance(v, list) else v
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
    """The trace's worst problem (AppData.worst_problem: the most work flagged),
    else parallel benefit, else none."""
    worst = getattr(data, "worst_problem", None)
    if worst in data.problems:
        return worst
    return "parallel_benefit" if "parallel_benefit" in data.problems else NO_PROBLEM


def current(state, search, data: AppData) -> dict:
    """A copy of the view state to change; an action made before the page's
    first state came back applies to the URL's."""
    return dict(state) if state is not None else parse_state(search, data)


def stale(state, search, data: AppData) -> bool:
    """Does the state lag the URL? Every change writes the two together, so
    when they disagree the URL is the newer: the page's first load, or a link
    followed (the details' "zoom the threads view to this grain"), whose call
    Dash dropped when another input of the same callback fired meanwhile (a
    figure's resize: Dash keeps only the newest call of a callback)."""
    return state is None or format_state(state) != format_state(parse_state(search, data))


# What a change of state writes: the state, the URL and the three controls.
OUTPUTS = ("state", "data"), ("url", "search"), ("view", "value"), ("problem", "value"), \
    ("threshold", "value"), ("graph-layout", "value"), ("graph-reduce", "value")


def register(app, data: AppData):
    """The callback that owns the view state: the URL, the tabs, the problem
    and threshold controls, clicks and zooms on the graph and threads views."""
    @app.callback(
        *[Output(*o) for o in OUTPUTS],
        Input("url", "search"), Input("view", "value"), Input("problem", "value"),
        Input("threshold", "value"),
        Input("graph-fig", "clickData"), Input("threads-fig", "clickData"),
        Input("graph-fig", "relayoutData"), Input("threads-fig", "relayoutData"),
        Input("parallelism-fig", "relayoutData"),
        Input("graph-layout", "value"), Input("graph-reduce", "value"),
        Input("graph-collapse", "n_clicks"), Input("graph-search", "value"),
        State("state", "data"))
    def sync(search, view, problem, threshold, gclick, tclick, grelayout, trelayout,
             prelayout, glayout, greduce, _collapse, find, state):
        trig = ctx.triggered_id
        # A new URL wins over whatever else fired with it, and a state that
        # lags the URL is rebuilt from it (the event that fired was seen
        # against the old view)
        if trig is None or "url.search" in ctx.triggered_prop_ids or stale(state, search, data):
            st = parse_state(search, data)
            th = st["threshold"] if st["threshold"] is not None else \
                data.default_threshold(st["problem"])
            return st, no_update, st["view"], st["problem"], th, st["layout"], \
                st["reduce"] or []
        base = current(state, search, data)
        st = dict(base)
        th_out = no_update
        if trig == "view":
            st["view"] = view
        elif trig in ("graph-layout", "graph-reduce", "graph-collapse"):
            _on_graph_controls(st, trig, glayout, greduce)
        elif trig == "graph-search":
            _on_search(st, data, find)
            if st["problem"] != base["problem"]:
                th_out = None
        elif trig == "problem":
            st["problem"], st["threshold"] = problem, None
            th_out = data.default_threshold(problem)
        elif trig == "parallelism-fig":
            st["pzoom"] = _panels_zoom(prelayout or {}, st.get("pzoom"), data)
        elif trig == "threshold":
            default = data.default_threshold(st["problem"])
            st["threshold"] = None if threshold is None or threshold == default else threshold
        else:
            _on_figures(st, data, set(ctx.triggered_prop_ids),
                        (("graph-fig", gclick, grelayout, "zoom"),
                         ("threads-fig", tclick, trelayout, "tzoom")))
        if st == base and th_out is no_update:
            # Nothing changed (the figures' first autosize, a click on empty
            # space): write nothing, so that a stale copy of the state (each
            # call reads it as it was when the call was sent; before the
            # page's first state came back, none: the URL's) cannot
            # overwrite a newer change made meanwhile, such as a threshold
            # typed while the page was still drawing.
            raise PreventUpdate
        problem_out = st["problem"] if trig == "graph-search" and \
            st["problem"] != base["problem"] else no_update
        return st, format_state(st), no_update, problem_out, th_out, no_update, no_update


def _on_graph_controls(st: dict, trig: str, layout, reduce):
    """The grain graph's own controls: placement, reductions, and "collapse"
    (undo the last expansion of a collapsed subtree)."""
    if trig == "graph-layout" and layout in LAYOUTS:
        st["layout"] = layout
    elif trig == "graph-reduce":
        st["reduce"] = [r for r in REDUCTIONS if r in (reduce or [])] or None
    elif trig == "graph-collapse" and st.get("expand"):
        st["expand"] = st["expand"][:-1] or None


def find(data: AppData, text) -> tuple[str, object] | None:
    """What the graph's search box names: ("grain", id) for "#12" or "12",
    ("location", its full name) for a source location (exact, else the one
    with the most grains among those containing the text, any case)."""
    text = (text or "").strip()
    if not text:
        return None
    m = re.fullmatch(r"#?(\d+)", text)
    if m and int(m.group(1)) < data.n_grains:
        return "grain", int(m.group(1))
    locs, counts = data.locations.counts()
    if text in locs:
        return "location", text
    hit = np.char.find(np.char.lower(locs.astype(str)), text.lower()) >= 0
    if not hit.any():
        return None
    return "location", str(locs[hit][np.argmax(counts[hit])])


def _on_search(st: dict, data: AppData, text):
    """A grain id selects it; a location highlights all its grains."""
    found = find(data, text)
    if found is None:
        return
    kind, value = found
    if kind == "grain":
        st["grain"] = value
    else:
        st["problem"], st["location"], st["threshold"] = LOCATION_VIEW, value, None


def _on_figures(st: dict, data: AppData, fired: set, figures):
    """A click (a grain selected, or an overview cell expanded) or a zoom on
    the graph or threads figure, into the state."""
    for fig, click, relayout, key in figures:
        dag = key == "zoom" and st.get("layout", "dag") == "dag"
        if f"{fig}.clickData" in fired and click:
            gid = _clicked_grain(click, data)
            token = _clicked_token(click)
            if gid is not None:
                st["grain"] = gid
            elif token is not None and dag:    # a collapsed subtree: expand it
                if token not in (st.get("expand") or []):
                    st["expand"] = [*(st.get("expand") or []), token]
            elif not dag:   # a cell of the binned overview: expand it
                st[key] = _expand(click, st.get(key), data, vertical=(key == "zoom"))
        if f"{fig}.relayoutData" in fired and relayout:
            if dag:     # zoomed in the browser; kept in the URL to restore it
                st["dzoom"] = _zoom(relayout, st.get("dzoom"), vertical=True)
            else:
                st[key] = _zoom(relayout, st.get(key), vertical=(key == "zoom"))


def _clicked_data(click):
    """The customdata of a click's first point (its first item, for a list)."""
    try:
        cd = click["points"][0].get("customdata")
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(cd, list):
        cd = cd[0] if cd else None
    return cd


def _clicked_grain(click, data: AppData):
    try:
        gid = int(_clicked_data(click))
    except (TypeError, ValueError):
        return None
    return gid if 0 <= gid < data.n_grains else None


def _clicked_token(click):
    cd = _clicked_data(click)
    return cd if isinstance(cd, str) and TOKEN.match(cd) else None


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


def _panels_zoom(relayout: dict, old, data: AppData):
    """The parallelism view's zoom: the time range of each of its two panels
    (exposed in DAG time, achieved in wall-clock time, each in the unit its
    axis shows), [a0, a1, b0, b1]; a panel not zoomed spans its data."""
    full = list(parallelism_extents(data.ideal, data.achieved))
    cur = list(old) if old else [0.0, full[0], 0.0, full[1]]
    for k, axis in enumerate(("xaxis", "xaxis2")):
        if relayout.get(f"{axis}.autorange"):
            cur[2 * k:2 * k + 2] = [0.0, full[k]]
        try:
            lo, hi = float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])
        except (KeyError, TypeError, ValueError):
            continue
        cur[2 * k:2 * k + 2] = sorted((lo, hi))
    return None if cur == [0.0, full[0], 0.0, full[1]] else cur


def _zoom(relayout: dict, old, vertical: bool):
    if relayout.get("xaxis.autorange") or relayout.get("autosize"):
        return None if relayout.get("xaxis.autorange") else old
    try:
        x0, x1 = float(relayout["xaxis.range[0]"]), float(relayout["xaxis.range[1]"])
        if not vertical and "yaxis.range[0]" not in relayout:
            # the threads view zooms in time only (every thread stays shown)
            y0, y1 = (old[0], old[1]) if old else (-0.5, 0.5)
        else:
            y0, y1 = float(relayout["yaxis.range[0]"]), float(relayout["yaxis.range[1]"])
    except (KeyError, TypeError, ValueError):
        return old
    lo_y, hi_y = sorted((y0, y1))
    lo_x, hi_x = sorted((x0, x1))
    # stored as (position range, time range in ms)
    return [lo_x, hi_x, lo_y, hi_y] if vertical else [lo_y, hi_y, lo_x, hi_x]
