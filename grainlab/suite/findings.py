"""Sentences that state the findings of a similarity analysis, generated from
its numbers (never written by hand), for the notebook to show as Markdown.
Each function returns text; tests/test_similarity.py re-derives each number
it states."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .runner import SIZES
from .similarity import PROPERTIES, Similarity

STRONG = 0.35          # a loading at least this large (in magnitude) is named


def program_and_size(name: str) -> tuple[str, str | None]:
    """'uts-geo-small' -> ('uts-geo', 'small'); a name without a size suffix
    is its own program."""
    base, _, size = name.rpartition("-")
    return (base, size) if base and size in SIZES else (name, None)


def _meaning(prop: str) -> str:
    if prop in PROPERTIES:
        return PROPERTIES[prop]
    return f"{prop.removeprefix('counter:').removesuffix('_median')} per grain (median, log10)"


def strong_loadings(loadings: pd.Series, strong: float = STRONG) -> pd.Series:
    """The loadings of one PC with |value| >= strong, largest first (at
    least the largest one)."""
    order = loadings.abs().sort_values(ascending=False)
    names = order.index[order >= strong].tolist() or order.index[:1].tolist()
    return loadings[names]


def describe_variance(sim: Similarity) -> str:
    cum = np.cumsum(sim.ratio)
    parts = ", ".join(f"PC{i + 1} {100 * v:.1f}%" for i, v in enumerate(sim.ratio[:sim.keep]))
    cv = sim.cv_best
    if cv == sim.keep:
        check = (f"Leave-one-out cross-validation agrees: its prediction error is least with "
                 f"{cv} components.")
    else:
        check = (f"Leave-one-out cross-validation's prediction error is least with {cv} "
                 f"component{'s' if cv != 1 else ''} (PRESS {sim.press[cv]:.3f} against "
                 f"{sim.press[min(sim.keep, len(sim.press) - 1)]:.3f} with {sim.keep}): "
                 f"{'fewer' if cv < sim.keep else 'more'} than the 85% rule keeps, so the last "
                 f"retained component{'s are' if abs(cv - sim.keep) > 1 else ' is'} "
                 f"{'partly noise' if cv < sim.keep else 'not all the structure there is'}.")
    return (f"The first **{sim.keep}** principal components explain "
            f"**{100 * cum[sim.keep - 1]:.1f}%** of the variance of {sim.properties.shape[1]} "
            f"autoscaled properties over {len(sim.properties)} traces ({parts}). {check}")


def describe_components(sim: Similarity) -> str:
    """One bullet per retained PC: its strong loadings with their signs and
    meanings, and the traces that score highest and lowest on it."""
    lines = []
    for pc in sim.loadings.columns:
        i = int(pc[2:]) - 1
        s = strong_loadings(sim.loadings[pc])
        what = [f"{'high' if v > 0 else 'low'} {_meaning(p)} ({v:+.2f})" for p, v in s.items()]
        sc = sim.scores[pc].sort_values()
        lines.append(f"- **{pc}** ({100 * sim.ratio[i]:.1f}%) is large for traces with "
                     f"{'; '.join(what)}. Highest: {', '.join(sc.index[::-1][:3])}; "
                     f"lowest: {', '.join(sc.index[:3])}.")
    return "\n".join(lines)


def run_length_check(sim: Similarity, df: pd.DataFrame) -> str:
    """How strongly each retained PC follows the run's length (log10 of the
    total work): the properties are meant to describe the program, not how
    long it ran."""
    work = pd.Series(np.log10(df["work_ns"].astype(float).clip(lower=1)).to_numpy(),
                     index=sim.scores.index)
    r = sim.scores.corrwith(work)
    worst = r.abs().idxmax()
    return ("Correlation of each retained PC with log10 of the run's total work: "
            + ", ".join(f"{pc} {v:+.2f}" for pc, v in r.items())
            + f". The strongest is {worst} ({r[worst]:+.2f}): "
            + ("the components describe more than how long the runs were."
               if abs(r[worst]) < 0.7 else
               f"{worst} partly measures how long the run was."))


def size_moves(sim: Similarity) -> pd.DataFrame:
    """Per program with several sizes: the path length through the
    autoscaled retained PC space from its smallest to its largest input."""
    rows = []
    y = pd.DataFrame(sim.scaled_scores, index=sim.scores.index)
    prog = pd.Series({n: program_and_size(n)[0] for n in y.index})
    rank = pd.Series({n: SIZES.index(s) if (s := program_and_size(n)[1]) else 0
                      for n in y.index})
    for p, names in prog.groupby(prog).groups.items():
        if len(names) < 2:
            continue
        pts = y.loc[sorted(names, key=lambda n: rank[n])].to_numpy()
        step = np.sqrt((np.diff(pts, axis=0) ** 2).sum(1)).sum()
        rows.append({"program": p, "inputs": len(names), "path": float(step),
                     "clusters": len(set(sim.clusters[list(names)]))})
    return pd.DataFrame(rows).sort_values("path").reset_index(drop=True) if rows else \
        pd.DataFrame(columns=["program", "inputs", "path", "clusters"])


def describe_sizes(sim: Similarity) -> str:
    m = size_moves(sim)
    if m.empty:
        return "No program was recorded with several inputs."
    median = float(m["path"].median())
    stable = m[m["path"] <= median]["program"].tolist()
    moving = m[m["path"] > median].sort_values("path", ascending=False)
    split = m[m["clusters"] > 1]["program"].tolist()
    return (f"Across its inputs a program moves a median distance of {median:.2f} (autoscaled "
            f"retained PC space). Most input-sensitive: "
            + ", ".join(f"{r.program} ({r.path:.2f})" for r in moving.itertuples())
            + f". Least: {', '.join(stable)}. "
            + (f"Inputs of {', '.join(split)} fall into different clusters."
               if split else "Every program's inputs fall into one cluster."))


def describe_clusters(sim: Similarity) -> str:
    t = sim.cut_table
    if not len(t):
        return "One cluster."
    gap = t.loc[sim.k, "gap"]
    best_sil = int(t["silhouette"].idxmax())
    lines = [f"**{sim.k} clusters**: the dendrogram is cut at Ward height {sim.height:.2f}, "
             f"through its largest gap between successive merges ({gap:.2f}; the next largest "
             f"is {t['gap'].drop(sim.k).max():.2f}). The mean silhouette of this cut is "
             f"{t.loc[sim.k, 'silhouette']:.2f}"
             + (" (the highest of k = 2.." if best_sil == sim.k else
                f" (the highest, {t['silhouette'].max():.2f}, is at k = {best_sil} of 2..")
             + f"{t.index.max()})."]
    for c, members in sim.members().items():
        lines.append(f"- **cluster {c}** ({len(members)}): representative "
                     f"**{sim.representatives[c]}**; members {', '.join(members)}")
    return "\n".join(lines)
