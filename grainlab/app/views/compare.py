"""Compare (with a reference run): work deviation per source location, and
the work-time-inflation terms."""
from __future__ import annotations

from dash import dash_table, html

from ..data import AppData


def pane(data: AppData):
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


def register(app, data: AppData, figures):
    """Nothing to do: the table is made once, with the page."""
