"""Matplotlib figures of the similarity analysis (suite_similarity.ipynb).
Static images on purpose: a notebook's PNG outputs show on GitHub, in
nbviewer and in HTML exports, with no JavaScript (docs/notebooks.md)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .findings import program_and_size
from .runner import SIZES
from .similarity import Similarity

GREY = "#9e9e9e"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939"]


def cluster_colours(k: int) -> dict:
    """Cluster number (1..k) -> colour, the same in every figure."""
    return {c: PALETTE[(c - 1) % len(PALETTE)] for c in range(1, k + 1)}


def scree(sim: Similarity):
    import matplotlib.pyplot as plt
    fig, (ax, cv) = plt.subplots(1, 2, figsize=(10, 3.6))
    n = np.arange(1, len(sim.ratio) + 1)
    ax.bar(n, 100 * sim.ratio, color=[PALETTE[0] if i <= sim.keep else GREY for i in n],
           label="explained by the component")
    ax.plot(n, 100 * np.cumsum(sim.ratio), "o-", color="black", label="cumulative")
    ax.axhline(85, color="#d62728", ls="--", lw=1, label="85%")
    ax.set_xticks(n)
    ax.set_xlabel("principal component")
    ax.set_ylabel("variance explained (%)")
    ax.set_title(f"{sim.keep} PCs retained (coloured)")
    ax.legend(fontsize=8)
    k = np.arange(len(sim.press))
    cv.plot(k, sim.press, "o-")
    cv.plot([sim.cv_best], [sim.press[sim.cv_best]], "o", ms=12, mfc="none", color="#d62728",
            label=f"least error: {sim.cv_best}")
    cv.axvline(sim.keep, color=PALETTE[0], ls=":", label=f"retained: {sim.keep}")
    cv.set_yscale("log")
    cv.set_xlabel("components")
    cv.set_ylabel("leave-one-out PRESS (per element)")
    cv.set_title("cross-validation of the number of PCs")
    cv.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loadings_heatmap(sim: Similarity):
    import matplotlib.pyplot as plt
    L = sim.loadings
    fig, ax = plt.subplots(figsize=(1.3 * L.shape[1] + 3.5, 0.45 * L.shape[0] + 1.2))
    im = ax.imshow(L.to_numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(L.shape[1]), [f"{c}\n{100 * sim.ratio[i]:.0f}%"
                                      for i, c in enumerate(L.columns)])
    ax.set_yticks(range(L.shape[0]), L.index)
    for (i, j), v in np.ndenumerate(L.to_numpy()):
        ax.text(j, i, f"{v:+.2f}", ha="center", va="center", fontsize=8,
                color="white" if abs(v) > 0.5 else "black")
    fig.colorbar(im, ax=ax, label="loading")
    ax.set_title("loadings of the retained components")
    fig.tight_layout()
    return fig


def plane(sim: Similarity, a: int, b: int, ax=None):
    """Traces in the PC a - PC b plane (1-based), coloured by cluster (the
    legend names each cluster by its representative), each program's inputs
    joined smallest to largest and labelled at its largest input, no two
    labels overlapping (`place_labels`)."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 6))
    s = sim.scores
    xa, xb = f"PC{a}", f"PC{b}"
    colours = cluster_colours(sim.k)
    info = pd.DataFrame([program_and_size(n) for n in s.index], index=s.index,
                        columns=["program", "size"])
    info["rank"] = [SIZES.index(z) if z else 0 for z in info["size"]]
    for _, grp in info.sort_values("rank").groupby("program"):
        if len(grp) > 1:
            ax.plot(s.loc[grp.index, xa], s.loc[grp.index, xb], "-", color=GREY, lw=0.8, zorder=1)
    ax.scatter(s[xa], s[xb], c=[colours[c] for c in sim.clusters[s.index]], s=28, zorder=2,
               edgecolor="black", linewidth=0.3)
    ax.axhline(0, color=GREY, lw=0.5)
    ax.axvline(0, color=GREY, lw=0.5)
    ax.set_xlabel(f"{xa} ({100 * sim.ratio[a - 1]:.0f}%)")
    ax.set_ylabel(f"{xb} ({100 * sim.ratio[b - 1]:.0f}%)")
    ax.set_title(f"{xa}-{xb}: inputs of a program joined (label at its largest input)")
    cluster_legend(ax, sim)
    largest = info.groupby("program")["rank"].transform("max") == info["rank"]
    shown = info[largest]
    place_labels(ax, s.loc[shown.index, [xa, xb]].to_numpy(), shown["program"].tolist(),
                 s[[xa, xb]].to_numpy())
    return ax.figure


def cluster_legend(ax, sim: Similarity, **kw):
    """A legend entry per cluster colour: "cluster c: representative (n)",
    outside the plot on its right."""
    from matplotlib.lines import Line2D
    colours = cluster_colours(sim.k)
    sizes = sim.clusters.value_counts()
    handles = [Line2D([], [], marker="o", ls="", color=colours[c], markeredgecolor="black",
                      markeredgewidth=0.3,
                      label=f"cluster {c}: {sim.representatives[c]} ({sizes.get(c, 0)})")
               for c in range(1, sim.k + 1)]
    return ax.legend(handles=handles, title="cluster: representative (traces)", fontsize=8,
                     title_fontsize=8, **({"loc": "upper left", "bbox_to_anchor": (1.02, 1)}
                                          | kw))


# where a label may go beside its point: offsets in points, and its alignment
_SPOTS = [(d * dx, d * dy, ha, va) for d in (1, 2.5, 4.5)
          for dx, dy, ha, va in ((4, 3, "left", "bottom"), (4, -3, "left", "top"),
                                 (-4, 3, "right", "bottom"), (-4, -3, "right", "top"),
                                 (0, 6, "center", "bottom"), (0, -6, "center", "top"))]


def place_labels(ax, xy, labels, points=None, fontsize=8):
    """Label each point of `xy` (data coordinates) beside it, at the first
    spot (`_SPOTS`, nearest first) where the label overlaps no label placed
    before it, no point of `points` and stays inside the axes; a label that
    finds none goes to its nearest spot with a line to its point. The axes'
    limits are fixed first (labels are placed in display space)."""
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    dots = ax.transData.transform(np.asarray(points if points is not None else xy, float))
    pad = 2.5 * fig.dpi / 72             # a dot's radius, in pixels
    placed = []
    for (x, y), text in zip(np.asarray(xy, float), labels):
        for i, (dx, dy, ha, va) in enumerate(_SPOTS + [_SPOTS[0]]):
            last = i == len(_SPOTS)
            t = ax.annotate(text, (x, y), xytext=(dx * (3 if last else 1), dy * (3 if last else 1)),
                            textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                            arrowprops=dict(arrowstyle="-", color=GREY, lw=0.6) if last else None)
            box = t.get_window_extent(renderer)
            free = (frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
                    and not any(box.overlaps(b) for b in placed)
                    and not ((dots[:, 0] > box.x0 - pad) & (dots[:, 0] < box.x1 + pad)
                             & (dots[:, 1] > box.y0 - pad) & (dots[:, 1] < box.y1 + pad)).any())
            if free or last:
                placed.append(box)
                break
            t.remove()
    return placed


def link_colours(sim: Similarity) -> dict:
    """Dendrogram link id -> colour: a link whose leaves are all in one
    cluster has that cluster's colour, any other is grey."""
    n = len(sim.clusters)
    colours = cluster_colours(sim.k)
    owner = list(sim.clusters.to_numpy()) + [0] * (n - 1)
    for i, (l, r, *_) in enumerate(sim.links):
        a, b = owner[int(l)], owner[int(r)]
        owner[n + i] = a if a == b else 0
    return {i: colours.get(c, GREY) for i, c in enumerate(owner)}


def dendrogram(sim: Similarity):
    """The Ward dendrogram of the autoscaled retained PC scores, drawn
    sideways (leaves top to bottom on the left, their names horizontal at
    9 pt; the root on the right), the cut
    drawn, links and leaf labels coloured by the printed clusters, a legend
    per cluster. Returns (figure, leaf name -> colour as drawn)."""
    import matplotlib.pyplot as plt
    from scipy.cluster.hierarchy import dendrogram as draw
    colours = link_colours(sim)
    names = list(sim.clusters.index)
    fig, ax = plt.subplots(figsize=(10, max(4.5, 0.2 * len(names) + 1.4)))
    draw(sim.links, labels=names, orientation="right", leaf_font_size=9, ax=ax,
         link_color_func=lambda i: colours[i])
    ax.invert_yaxis()                    # the first leaf (cluster 1) at the top
    leaf = {}
    for tick in ax.get_yticklabels():
        c = colours[names.index(tick.get_text())]
        tick.set_color(c)
        leaf[tick.get_text()] = c
    ax.axvline(sim.height, color="black", ls="--", lw=1)
    ax.text(sim.height, ax.get_ylim()[1], f" cut: {sim.k} clusters", va="top", ha="left",
            fontsize=9)
    ax.set_xlabel("Ward distance (autoscaled retained PC scores)")
    ax.set_title("Ward clustering; links and labels coloured by cluster (grey: joins clusters)")
    cluster_legend(ax, sim)
    fig.tight_layout()
    return fig, leaf


CUTOFF_PANELS = [("makespan (ms)", ["alone_s", "collector_s"], 1e3),
                 ("speed-up over the best serial run", ["speedup"], 1),
                 ("span (ms, traced)", ["span_ms"], 1),
                 ("overhead share of thread time", ["overhead_fraction"], 1),
                 ("median parallel benefit", ["parallel_benefit_median"], 1),
                 ("parallelism of the whole run (work / span)", ["parallelism"], 1)]
LABELS = {"alone_s": "alone", "collector_s": "under the collector"}


def cutoff_figure(table, recommended, cores: int, title: str = ""):
    """Six panels over the cutoffs, means with one-standard-deviation error
    bars; the recommended cutoff marked."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.2))
    x = table["cutoff"].to_numpy()
    log_x = x.min() > 0 and x.max() / x.min() > 50
    for ax, (label, cols, scale) in zip(axes.flat, CUTOFF_PANELS):
        for col in cols:
            ax.errorbar(x, scale * table[f"{col}_mean"], yerr=scale * table[f"{col}_sd"],
                        marker="o", ms=4, capsize=3, label=LABELS.get(col))
        if recommended is not None:
            ax.axvline(recommended, color="#2ca02c", ls="--", lw=1)
        ax.set_title(label, fontsize=10)
        if log_x:
            ax.set_xscale("log", base=2)
        ax.set_xlabel("cutoff")
        if len(cols) > 1:
            ax.legend(fontsize=8)
    axes[1, 0].axhline(0.5, color="#d62728", ls=":", lw=1)
    axes[1, 1].axhline(1.0, color="#d62728", ls=":", lw=1)
    axes[1, 2].axhline(cores, color="gray", ls=":", lw=1)
    axes[1, 1].set_yscale("log")
    axes[1, 2].set_yscale("log")
    mark = f"dashed green: recommended cutoff {recommended}" if recommended is not None else \
        "no cutoff recommended"
    fig.suptitle(f"{title} ({mark}; "
                 f"{int(table['reps'].min())} runs per cutoff, bars: ±1 sd)", fontsize=11)
    fig.tight_layout()
    return fig
