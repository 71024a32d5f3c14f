"""The graph and threads figures, drawn once per state and kept: a recent
few, shared by Flask's request threads (under a lock)."""
from __future__ import annotations

import threading
from collections import OrderedDict


from ..export.drawing import from_start
from .data import LOCATION_VIEW, NO_PROBLEM, AppData
from .figures import classes, segment_figure
from .graph_figure import dag_figure
from .threads_figure import selection_shapes, threads_figure

KEEP = 32


class FigureCache:
    def __init__(self, data: AppData):
        self.data = data
        self._figures: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, state: dict, which: str):
        """(figure dict, level of detail, problem grains) of the "graph" or
        "threads" view in `state`; on the graph, the selected grain marked."""
        problem, threshold = state["problem"], state["threshold"]
        zoom = state["zoom"] if which == "graph" else state["tzoom"]
        if which == "graph" and state.get("layout", "dag") == "dag":
            which, zoom = "dag", None
        key = (which, problem, threshold,
               state.get("location") if problem == LOCATION_VIEW else None,
               tuple(zoom) if zoom else None, tuple(state.get("expand") or ()),
               tuple(state.get("reduce") or ()))
        with self._lock:
            found = self._figures.get(key)
            if found is not None:
                self._figures.move_to_end(key)
        if found is None:
            # drawn outside the lock: two threads may draw the same figure
            # at once, and both get it (the second one is kept)
            found = self._draw(state, which, zoom)
            with self._lock:
                self._figures[key] = found
                while len(self._figures) > KEEP:
                    self._figures.popitem(last=False)
        fig, level, count, drawing = found
        gid = state.get("grain")
        if gid is not None and which == "graph":
            fig = _with_selection(fig, self.data, gid)
        elif gid is not None and which == "threads":
            fig = _with_thread_selection(fig, self.data, gid)
        elif gid is not None and which == "dag":
            fig = _with_dag_selection(fig, drawing, gid)
        if which == "dag" and state.get("dzoom"):
            fig = _with_dag_zoom(fig, state["dzoom"])
        return fig, level, count

    def drawing(self, state: dict, sev=None):
        """The laid-out grain graph of a state (DAG or wall time), coloured by
        `sev`: the layout is kept per (placement, expansions, reductions), so
        a new problem or threshold only recolours it."""
        data = self.data
        red = tuple(r for r in ("fragments", "forks", "bookkeeping")
                    if r in (state.get("reduce") or ()))
        mode, expand = state.get("layout", "dag"), tuple(state.get("expand") or ())
        key = ("layout", mode, expand, red)
        with self._lock:
            d = self._figures.get(key)
        if d is None:
            d = data.grain_layout.draw(mode=mode, expand=expand, fragments="fragments" in red,
                                       forks="forks" in red, bookkeeping="bookkeeping" in red)
            with self._lock:
                self._figures[key] = d
        return data.grain_layout.colour(d, sev)

    def _draw(self, state: dict, which: str, zoom):
        data, problem = self.data, state["problem"]
        sev, count = data.severity(problem, state["threshold"], state.get("location"))
        cls = classes(data.n_grains, data.n_total, sev, show_all=(problem == NO_PROBLEM))
        if which == "dag":
            d = self.drawing(state, None if problem == NO_PROBLEM else sev)
            fig = dag_figure(d, hover=data.hover,
                             by_value=data.value_steps(problem, state["threshold"], sev))
            c = d.counts()
            level = (f"{len(d.items)} elements ({c.get('summary', 0)} collapsed subtrees, "
                     "click one to expand)" if c.get("summary") else f"{len(d.items)} elements")
            if d.extra.get("auto_reduced"):
                level += ", reduced (too many nodes to draw one by one)"
            return fig, level, count, d
        if which == "graph":
            fig, level = segment_figure(
                data.segments, "x", cls, data.critical, vertical=True, window=zoom,
                edges=data.edges, hover_labels=data.hover,
                title="Grain graph: time flows down, children beside their parent",
                pos_title="task tree (pre-order: a task's children to its right)")
        else:
            fig, level = threads_figure(
                data.timeline, cls, data.critical, list(data.thread_rows), window=zoom,
                hover_labels=data.hover, by_value=data.value_steps(problem, state["threshold"], sev),
                title="Threads: work (as on the graph), runtime, idle; drag to zoom in time")
        return fig.to_dict(), level, count, None


def _with_dag_zoom(fig: dict, zoom) -> dict:
    """The DAG-time graph zoomed as the URL says (columns, ms from the start)."""
    p0, p1, t0, t1 = zoom
    lay = fig["layout"]
    return {**fig, "layout": {**lay, "xaxis": {**lay.get("xaxis", {}), "range": [p0, p1]},
                              "yaxis": {**lay.get("yaxis", {}), "range": [t1, t0],
                                        "autorange": False}}}


def _with_thread_selection(fig: dict, data: AppData, gid: int) -> dict:
    crit = len(data.thread_rows) if data.critical[gid] else None
    shapes = selection_shapes(data.timeline, gid, crit)
    if not shapes:
        return fig
    layout = {**fig["layout"], "shapes": [*fig["layout"].get("shapes", ()), *shapes]}
    return {**fig, "layout": layout}


def _with_dag_selection(fig: dict, d, gid: int) -> dict:
    it = d.items
    own = it[it["grain"].to_numpy() == gid]
    if not len(own):
        return fig
    marker = {"type": "scattergl", "x": [float(own["x"].iloc[0]) - 0.6],
              "y": [float(from_start(d, own["y0"].min())) / 1e6], "mode": "markers",
              "marker": {"symbol": "star", "size": 16, "color": "#08519c",
                         "line": {"color": "white", "width": 1}},
              "name": f"selected #{gid}", "hoverinfo": "skip", "customdata": [gid],
              "meta": "selected"}
    return {**fig, "data": [*fig["data"], marker]}


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
