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

from ...analysis.report import fmt_parallelism
from ..data import AppData
from ..predict_figure import prediction_figure
from ..scaling_figures import breakdown_figure, speedup_figure
from ..state import parse_state
from .graph import GRAPH_CONFIG

CORES = (1, 2, 4, 8, 16, 32, 64)


def pane(data: AppData):
    parts = [dcc.Loading(dcc.Graph(id="predict-fig", config=GRAPH_CONFIG,
                                   style={"height": "60vh"})),
             html.Div(id="predict-note", className="note")]
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

    @app.callback(Output("predict-fig", "figure"), Output("predict-note", "children"),
                  Input("state", "data"))
    def draw(state):
        state = state or parse_state("", data)
        if state["view"] != "scaling":
            return no_update, no_update
        if "fig" not in drawn:
            pred = predict(data)
            drawn["fig"] = prediction_figure(pred)
            drawn["note"] = [parallelism_note(data), *note(pred)]
        return drawn["fig"], drawn["note"]


def predict(data: AppData) -> dict:
    """The prediction, with contention fitted from the runs of `serve --runs`
    at more threads than this trace when there are such runs."""
    from ...errors import GrainlabError
    runs = []
    if data.scaling is not None:
        mine = int(data.analysis.graph.meta.get("threads") or 1)
        runs = [a for a, n in zip(data.scaling.analyses, data.scaling.runs["threads"])
                if a is not data.analysis and int(n) > mine]
    if runs:
        try:
            return data.analysis.predict(CORES, runs=runs)
        except GrainlabError:
            pass
    return data.analysis.predict(CORES)


def _names(text: str) -> str:
    """Trace paths in a text shortened to their file names (a temporary
    folder's path says nothing on a page)."""
    import re
    return re.sub(r"(?<![\w.])/(?:[^\s/()]+/)+([^\s/()]+\.parquet)", r"\1", text)


def parallelism_note(data: AppData):
    """Both parallelism numbers, by their names (analysis.report): the
    prediction replays the parallel part."""
    shown = []
    for name, v in data.parallelism:
        shown += [" · "] if shown else []
        shown.append(html.Span(f"{name} {fmt_parallelism(v)}", className="parallelism"))
    return html.P(id="scaling-parallelism", children=shown + [
        ". The prediction replays the parallel part (from the first parallel region's start "
        "to the last one's end); the whole run adds the serial start and end, which no number "
        "of cores shortens."])


def note(pred: dict) -> list:
    """The serial part, the inflation used at each P and where it came from,
    and the range, in words (what `grainlab predict` prints)."""
    from ...units import fmt_ns
    out = []
    guard = pred.get("guard") or {}
    if guard.get("capped_grains") or guard.get("cpu_time"):
        what = (f"capped {guard['capped_grains']} grain(s) that ran far longer than the others "
                f"of their source location ({fmt_ns(guard.get('capped_ns', 0))} taken off: "
                "preempted, most likely)" if guard.get("capped_grains") else
                "weighed the grains by their CPU time")
        out.append(html.P(f"The replay's guard {what}: hence its {pred['parallelism_name']} "
                          f"{pred['parallelism']:.3g}, beside the measured (unguarded) "
                          "parallelism of the parallel part above."))
    s = pred.get("serial") or {}
    if s.get("serial_ns"):
        where = "of the whole run" if pred.get("part") == "whole run" else "in the parallel part"
        out.append(html.P(f"Serial code {where}: {fmt_ns(s['serial_ns'])} of the initial task on the "
                          f"critical path: at most {s['amdahl_speedup']:.1f}x on any number of "
                          "cores (Amdahl)."))
    c, rng = pred.get("contention"), pred.get("range")
    if c:
        per = ", ".join(f"{f:.2f}x at {P}" for P, f in zip(pred["cores"], c["inflation"]))
        top = "; ".join(f"{f['location']} A = {f['amplitude']:.2f}" for f in c["locations"][:3])
        out.append(html.P(f"Contention fitted from {_names(c['source'])} ({c['model']}): grains "
                          f"inflated {per} cores" + (f"; most: {top}" if top else "") + "."))
    if rng:
        p = rng["pessimistic"]
        per = ", ".join(f"{lo:.1f}-{hi:.1f} at {P}" for P, (lo, hi) in
                        zip(pred["cores"], rng["speedup"]))
        said = [f"Range of the speed-up: {per} cores, from the pessimistic bound "
                f"({p['source']}; inflation up to {p['inflation'][-1]:.2f}x at "
                f"{pred['cores'][-1]} cores) to the contention-free prediction."]
        said += [f"{n[:1].upper()}{n[1:]}".rstrip(".") + "." for n in p["notes"]]
        if not c:
            said.append("Serve with --runs (the same program at more threads) to fit the "
                        "inflation instead.")
        out.append(html.P(" ".join(said)))
    return out
