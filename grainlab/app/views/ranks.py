"""Ranks (docs/cluster.md), with `serve --ranks`: the traces of one MPI run
side by side, the rank x time figure (each rank's parallel regions on one
time axis) and one row per rank (`grainlab ranks`)."""
from __future__ import annotations

from dash import dash_table, dcc, html

from ...analysis.report import WHOLE_RUN
from ..data import AppData
from ..rank_figures import rank_timeline
from .graph import GRAPH_CONFIG

COLUMNS = ["rank", "host", "threads", "duration_ns", "in_openmp_ns", "outside_openmp_ns",
           "work_ns", "span_ns", "parallelism", "top_problem", "top_problem_location"]
NS = [c for c in COLUMNS if c.endswith("_ns")]     # shown in ms
# the table's headers: units said, and each rank's parallelism by its name
# (analysis.report: work / span of the rank's whole run)
HEADERS = {"duration_ns": "duration (ms)", "in_openmp_ns": "in OpenMP (ms)",
           "outside_openmp_ns": "outside OpenMP (ms)", "work_ns": "work (ms)",
           "span_ns": "span (ms)", "parallelism": WHOLE_RUN, "top_problem": "top problem",
           "top_problem_location": "its location"}


def pane(data: AppData):
    r = data.ranks
    if r is None:
        return []
    imb = r.imbalance
    t = r.table[COLUMNS].copy()
    t[NS] = (t[NS] / 1e6).round(3)
    t["parallelism"] = t["parallelism"].round(2)
    rows = t.astype(object).where(t.notna(), None)
    return [
        html.P(id="ranks-summary", children=(
            f"{imb['ranks']} ranks: work max/mean {imb['work_max_over_mean']:.3g}, time in "
            f"OpenMP max/mean {imb['in_openmp_max_over_mean']:.3g}; critical rank "
            f"{imb['critical_rank']} (most work: the others wait for it outside OpenMP)."
            + (f" Warning: {r.warning}" if r.warning else ""))),
        dcc.Graph(id="ranks-fig", config=GRAPH_CONFIG, figure=rank_timeline(r)),
        dash_table.DataTable(id="ranks-table", sort_action="native", page_size=32,
                             columns=[{"name": HEADERS.get(c, c), "id": c} for c in t.columns],
                             data=rows.to_dict(orient="records"),
                             style_cell={"fontFamily": "monospace", "fontSize": 13})]


def register(app, data: AppData, figures):
    """Nothing to do: drawn once, with the page."""
