"""Plotly figures of a `grainlab.Scaling` (runs of one program at several
thread counts; grainlab.analysis.scaling). They only draw what the Scaling
computed, for notebooks now and the web app's scaling view later.

    import grainlab as gl
    from grainlab.app.scaling_figures import breakdown_figure, speedup_figure
    s = gl.scaling(["fib-1.parquet", "fib-2.parquet"])
    breakdown_figure(s).show()    # Olivier et al. (SC 2012) Fig. 2/4
    speedup_figure(s).show()      # seed 001 Figs. 1-2: speed-up, OVR, 1/WTI
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

MS = 1e6
# sequential-equivalent work, inflation, overhead, idle
BAR_COLORS = ("#4c72b0", "#dd8452", "#c44e52", "#b0b0b0")


def _labels(runs) -> list:
    """One x label per run: its thread count, with its position when two runs
    have the same count."""
    n = runs["threads"].to_numpy()
    dup = np.unique(n, return_counts=True)
    many = set(dup[0][dup[1] > 1].tolist())
    return [f"{t} ({i + 1})" if t in many else str(t) for i, t in enumerate(n.tolist())]


def breakdown_figure(scaling, title: str | None = None) -> go.Figure:
    """Time of all threads (N x duration) per run, stacked: work up to the
    sequential-equivalent work (the baseline's), work time inflation, overhead,
    idle (Olivier et al., SC 2012, Fig. 2/4); a bar's top is N x duration. Where
    work shrank below the baseline's (negative inflation) a dash marks the
    sequential-equivalent level above the work."""
    b = scaling.breakdown
    x = _labels(scaling.runs)
    seq = b["sequential_ns"].to_numpy(np.float64) / MS
    infl = b["inflation_ns"].to_numpy(np.float64) / MS
    parts = (("sequential-equivalent work", np.minimum(seq, seq + infl)),
             ("work time inflation", np.maximum(infl, 0)),
             ("overhead", b["overhead_ns"].to_numpy(np.float64) / MS),
             ("idle", b["idle_ns"].to_numpy(np.float64) / MS))
    fig = go.Figure()
    for (name, y), color in zip(parts, BAR_COLORS):
        fig.add_bar(x=x, y=y, name=name, marker_color=color,
                    hovertemplate=f"{name}: %{{y:.4g}} ms<extra>%{{x}} threads</extra>")
    shrank = infl < 0
    if shrank.any():
        fig.add_scatter(x=np.asarray(x, dtype=object)[shrank], y=seq[shrank], mode="markers",
                        name="sequential-equivalent work (work shrank below it)",
                        marker=dict(symbol="line-ew-open", size=40, color=BAR_COLORS[1],
                                    line=dict(width=3)),
                        customdata=-infl[shrank],
                        hovertemplate="sequential-equivalent %{y:.4g} ms, work %{customdata:.4g}"
                                      " ms below it<extra></extra>")
    fig.update_layout(barmode="stack", template="plotly_white",
                      title=title or f"Time of all threads: {scaling.program}",
                      xaxis_title="threads", yaxis_title="time of all threads = threads x time (ms)",
                      legend=dict(orientation="h", y=-0.2, traceorder="normal"))
    return fig


def speedup_figure(scaling, title: str | None = None) -> go.Figure:
    """Seed 001 Figs. 1-2, three panels over thread counts: speed-up (with the
    ideal N/N_baseline), OVR_N, and speed-up x OVR_N / (N/N_baseline) = 1/WTI_N
    (1 is no work time inflation; below 1 is inflation)."""
    r = scaling.runs.sort_values("threads", kind="stable")
    n = r["threads"].to_numpy()
    fig = make_subplots(rows=1, cols=3, subplot_titles=(
        "speed-up", "non-work overhead OVR", "speed-up x OVR / N = 1 / WTI"))
    ideal = r["ideal"].to_numpy(np.float64)
    fig.add_scatter(x=n, y=ideal, mode="lines", name="ideal", line=dict(dash="dash",
                    color="grey"), row=1, col=1)
    fig.add_scatter(x=n, y=r["speedup"], mode="lines+markers", name="speed-up",
                    line=dict(color=BAR_COLORS[0]), row=1, col=1)
    fig.add_scatter(x=n, y=r["ovr"], mode="lines+markers", name="OVR",
                    line=dict(color=BAR_COLORS[2]), row=1, col=2)
    inv = r["speedup"].to_numpy(np.float64) * r["ovr"].to_numpy(np.float64) / ideal
    fig.add_scatter(x=n, y=np.ones(len(n)), mode="lines", showlegend=False,
                    line=dict(dash="dash", color="grey"), row=1, col=3)
    fig.add_scatter(x=n, y=inv, mode="lines+markers", name="1 / WTI",
                    line=dict(color=BAR_COLORS[1]), row=1, col=3)
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="threads", tickvals=np.unique(n).tolist(), row=1, col=col)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_layout(template="plotly_white",
                      title=title or f"Speed-up, OVR and WTI: {scaling.program}",
                      legend=dict(orientation="h", y=-0.2))
    return fig
