"""Source locations: each task or loop construct of the program, its grains,
share of the work and the % of its grains with each problem (thesis Fig.
5.8). A row picked shows its grains on the graph."""
from __future__ import annotations

from dash import Input, Output, State, dash_table, html, no_update
from dash.exceptions import PreventUpdate

from ..data import LOCATION_VIEW, AppData
from ..state import OUTPUTS, PROBLEM_LABELS, current, format_state


def pane(data: AppData):
    return [html.P("Each task or loop construct of the program: its grains, share of "
                   "the work and the % of its grains with each problem (thesis Fig. 5.8). "
                   "Select a row to highlight its grains on the graph."),
            dash_table.DataTable(
                id="loc-table", sort_action="native", row_selectable="single", page_size=20,
                columns=_columns(data), data=_rows(data),
                style_cell={"fontFamily": "monospace", "fontSize": 13, "textAlign": "left"},
                style_table={"overflowX": "auto"})]


def register(app, data: AppData, figures):
    # A location picked in the table: its own callback, not an input of the
    # state's (grainlab.app.state). Dash drops the answer of a call that a
    # newer call of the same callback overtook, and the figures' first
    # autosize calls that one just after they are drawn: a row picked then
    # was lost (2 of 8 page loads in tests/test_serve.py).
    @app.callback(
        *[Output(*o, allow_duplicate=True) for o in OUTPUTS],
        Input("loc-table", "selected_row_ids"), State("url", "search"), State("state", "data"),
        prevent_initial_call=True)
    def pick_location(loc_rows, search, state):
        if not loc_rows:
            raise PreventUpdate
        st = current(state, search, data)
        st.update(problem=LOCATION_VIEW, location=loc_rows[0], threshold=None, view="graph")
        return st, format_state(st), st["view"], st["problem"], no_update, no_update, no_update


def _columns(data: AppData) -> list:
    cols = [{"name": "location", "id": "location"}, {"name": "grains", "id": "grains"},
            {"name": "work (ms)", "id": "work_ms"}, {"name": "work %", "id": "work_percent"}]
    cols += [{"name": f"% {PROBLEM_LABELS.get(m, m).lower()}", "id": f"{m}_percent"}
             for m in data.problems if f"{m}_percent" in data.by_location.columns]
    return cols


def _rows(data: AppData) -> list:
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
