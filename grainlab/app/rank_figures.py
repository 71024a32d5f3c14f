"""The rank x time figure of an MPI run (grainlab.cluster.ranks.Ranks): one
row per rank, its parallel regions as bars on a time axis shared by all
ranks (each host's real-time clock, from the earliest rank's start), and the
gaps between them, where the rank is outside OpenMP (in MPI or serial code)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

INSIDE = "#2ca02c"    # the thesis's green for grains: OpenMP at work
OUTSIDE = "#d9d9d9"   # outside OpenMP: MPI calls and serial code


def rank_timeline(ranks) -> go.Figure:
    """Horizontal bars per rank: grey for the rank's whole run, green for
    its parallel regions; hover gives each region's length."""
    t0 = min(b for b, _ in ranks.bounds.values())
    fig = go.Figure()
    order = sorted(ranks.bounds)
    labels = [f"rank {r}" for r in order]
    lo = np.array([ranks.bounds[r][0] - t0 for r in order], dtype=np.float64) / 1e6
    hi = np.array([ranks.bounds[r][1] - t0 for r in order], dtype=np.float64) / 1e6
    fig.add_bar(y=labels, x=hi - lo, base=lo, orientation="h", marker_color=OUTSIDE,
                name="outside OpenMP (MPI, serial)", hovertemplate="%{y}: run %{x:.3f} ms")
    ys, xs, bases = [], [], []
    for r, label in zip(order, labels):
        reg = np.asarray(ranks.regions[r], dtype=np.float64).reshape(-1, 2)
        ys.extend([label] * len(reg))
        bases.extend(((reg[:, 0] - t0) / 1e6).tolist())
        xs.extend(((reg[:, 1] - reg[:, 0]) / 1e6).tolist())
    fig.add_bar(y=ys, x=xs, base=bases, orientation="h", marker_color=INSIDE,
                marker_line_width=0, name="in a parallel region",
                hovertemplate="%{y}: region of %{x:.3f} ms at %{base:.3f} ms<extra></extra>")
    imb = ranks.imbalance
    fig.update_layout(
        barmode="overlay", height=140 + 40 * len(order), bargap=0.3,
        title=f"{len(order)} ranks: work max/mean {imb['work_max_over_mean']:.2f}, "
              f"critical rank {imb['critical_rank']}",
        xaxis_title="time since the first rank started (ms)",
        yaxis=dict(autorange="reversed"), legend=dict(orientation="h", y=-0.25),
        margin=dict(l=80, r=20, t=50, b=60), plot_bgcolor="white")
    return fig
