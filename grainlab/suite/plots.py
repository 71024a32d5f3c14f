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
    """Traces in the PC a - PC b plane (1-based), coloured by cluster, each
    program's inputs joined smallest to largest."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 5.5))
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
    for name, r in info.iterrows():
        if r["rank"] == max(info.loc[info["program"] == r["program"], "rank"]):
            ax.annotate(r["program"], (s.loc[name, xa], s.loc[name, xb]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.axhline(0, color=GREY, lw=0.5)
    ax.axvline(0, color=GREY, lw=0.5)
    ax.set_xlabel(f"{xa} ({100 * sim.ratio[a - 1]:.0f}%)")
    ax.set_ylabel(f"{xb} ({100 * sim.ratio[b - 1]:.0f}%)")
    ax.set_title(f"{xa}-{xb}: inputs of a program joined (label at its largest input)")
    return ax.figure


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
    """The Ward dendrogram of the autoscaled retained PC scores, the cut
    drawn, links and leaf labels coloured by the printed clusters. Returns
    (figure, leaf name -> colour as drawn)."""
    import matplotlib.pyplot as plt
    from scipy.cluster.hierarchy import dendrogram as draw
    colours = link_colours(sim)
    names = list(sim.clusters.index)
    fig, ax = plt.subplots(figsize=(max(7, 0.22 * len(names) + 2), 4.8))
    draw(sim.links, labels=names, leaf_rotation=90, ax=ax,
             link_color_func=lambda i: colours[i])
    leaf = {}
    for tick in ax.get_xticklabels():
        c = colours[names.index(tick.get_text())]
        tick.set_color(c)
        leaf[tick.get_text()] = c
    ax.axhline(sim.height, color="black", ls="--", lw=1)
    ax.text(ax.get_xlim()[1], sim.height, f" cut: {sim.k} clusters", va="bottom", ha="right",
            fontsize=8)
    ax.set_ylabel("Ward distance (autoscaled retained PC scores)")
    ax.set_title("Ward clustering; links and labels coloured by cluster")
    fig.tight_layout()
    return fig, leaf


CUTOFF_PANELS = [("makespan (ms)", ["alone_s", "collector_s"], 1e3),
                 ("speed-up over the best serial run", ["speedup"], 1),
                 ("span (ms, traced)", ["span_ms"], 1),
                 ("overhead share of thread time", ["overhead_fraction"], 1),
                 ("median parallel benefit", ["parallel_benefit_median"], 1),
                 ("exposed parallelism (work / span)", ["parallelism"], 1)]
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
