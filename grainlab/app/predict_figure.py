"""The figure of `grainlab predict` (docs/predict.md): predicted speed-up
against cores, between its bounds, as Cilkscale plots it.

    import grainlab as gl
    from grainlab.app.predict_figure import prediction_figure
    fig = prediction_figure(gl.analyze("one.parquet").predict([1, 2, 4, 8, 16, 32]))
    fig.write_html("predict.html")

It only draws what `Analysis.predict` computed.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

PREDICTED = "#08519c"
WHAT_IF = "#e6550d"
BOUND = "#9e9e9e"
CONTENDED = "#756bb1"


def log_ticks(bottom: float, top: float) -> list:
    """Tick values of a log axis from `bottom` to `top`: 1-2-5 per decade, and
    1-1.5-2-3-4-5-7 when the axis spans less than a decade (a speed-up from 1
    to 4 would otherwise show only 1 and 2)."""
    steps = (1, 2, 5) if top / max(bottom, 1e-9) >= 10 else (1, 1.5, 2, 3, 4, 5, 7)
    return [v for v in (m * 10.0 ** e for e in range(-2, 5) for m in steps)
            if bottom <= v <= top]


def prediction_figure(pred: dict, title: str | None = None) -> go.Figure:
    """Speed-up vs cores: the prediction, the range its bounds allow (work/P
    and span above, Brent's bound with the costs below), the linear speed-up,
    the parallelism (work/span) and burdened parallelism, and the what-if
    replay when there is one; with contention (docs/predict.md) the range
    from the pessimistic bound to the contention-free prediction, and the
    prediction with the contention fitted from measured runs."""
    P = np.asarray(pred["cores"], np.float64)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=P, y=pred["speedup_upper"], mode="lines", line=dict(width=0),
                             showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=P, y=pred["speedup_lower"], mode="lines", line=dict(width=0),
                             fill="tonexty", fillcolor="rgba(158,202,225,0.35)",
                             name="bounds: max(work/P, span) .. Brent with costs"))
    fig.add_trace(go.Scatter(x=P, y=P, mode="lines", name="linear (work/P)",
                             line=dict(color=BOUND, dash="dot")))
    named = pred.get("parallelism_name") or f"parallelism of the {pred.get('part', 'parallel part')}"
    for value, name, dash in ((pred["parallelism"], named, "dash"),
                              (pred["burdened_parallelism"], "burdened parallelism", "dashdot")):
        fig.add_trace(go.Scatter(x=[P.min(), P.max()], y=[value, value], mode="lines",
                                 name=f"{name} {value:.3g}", line=dict(color=BOUND, dash=dash)))
    rng = pred.get("range")
    if rng:
        lo = [x[0] for x in rng["speedup"]]
        hi = [x[1] for x in rng["speedup"]]
        fig.add_trace(go.Scatter(x=P, y=hi, mode="lines", line=dict(width=0),
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=P, y=lo, mode="lines", line=dict(width=0, color=CONTENDED),
                                 fill="tonexty", fillcolor="rgba(117,107,177,0.18)",
                                 name="contention range: pessimistic bound .. contention-free"))
    fig.add_trace(go.Scatter(x=P, y=pred["speedup"], mode="lines+markers",
                             name="predicted",
                             line=dict(color=PREDICTED, width=3)))
    c = pred.get("contention")
    if c and c.get("fitted"):
        fig.add_trace(go.Scatter(x=P, y=c["speedup"], mode="lines+markers",
                                 name="predicted with measured contention",
                                 line=dict(color=CONTENDED, width=3)))
    alt = pred.get("what_if")
    if alt:
        fig.add_trace(go.Scatter(x=P, y=alt["speedup_vs_baseline"], mode="lines+markers",
                                 name=f"what-if: {alt['change']}",
                                 line=dict(color=WHAT_IF, width=2, dash="dash")))
    # the y axis spans the predictions and their range, not the linear line
    # (64 cores would stretch a speed-up of 3 into the bottom quarter): from
    # just below 1 (or the lowest prediction) to above the highest one
    shown = [np.asarray(pred["speedup"], np.float64), np.asarray(pred["speedup_upper"],
                                                                  np.float64)]
    if alt:
        shown.append(np.asarray(alt["speedup_vs_baseline"], np.float64))
    # at least to 1.5, so that a run predicted not to scale (a speed-up of
    # about 1 everywhere) still has two labelled ticks, 1 and 1.5
    top = max(max(float(np.nanmax(np.concatenate(shown))), 1.0) * 1.4, 1.5)
    bottom = min(float(np.nanmin(np.concatenate(shown[:1] + shown[2:]))), 1.0) * 0.85
    ticks = log_ticks(bottom, top)
    fig.update_layout(
        title=title or f"Predicted speed-up: {pred.get('program') or pred.get('trace', '')}",
        plot_bgcolor="white", margin=dict(l=60, r=10, t=50, b=40),
        xaxis=dict(title="cores", type="log", tickvals=P, ticktext=[str(int(p)) for p in P],
                   gridcolor="#eeeeee"),
        yaxis=dict(title="speed-up over 1 core", type="log", range=[np.log10(bottom),
                   np.log10(top)], tickvals=ticks, ticktext=[f"{v:g}" for v in ticks],
                   gridcolor="#eeeeee"),
        legend=dict(orientation="h", y=-0.18))
    return fig
