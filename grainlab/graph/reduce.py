"""Reductions of the grain graph for display (thesis §5.4.1, Fig. 5.3d-h).

Grouped nodes keep their members' weights (`ReducedGraph.group` maps every
original node to its group) and aggregate them. A reduced graph is for drawing
only: grouping a task's fragments can create cycles with its forks. Metrics and
the critical path are always computed on the full fragment-level graph.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

UNGROUPED, FRAGMENTS, FORKS, BOOKKEEPING = range(4)


@dataclass
class ReducedGraph:
    nodes: pd.DataFrame    # index = reduced node id
    edges: pd.DataFrame    # src, dst, type, count
    group: pd.Series       # original node id -> reduced node id


def _owner_runs(grain: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Per node (in id order): how many flagged nodes of the same owner come
    before it. Nodes of one owner's chain have consecutive ids."""
    c = np.cumsum(flag)
    start = np.ones(len(grain), dtype=bool)
    start[1:] = grain[1:] != grain[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(grain)), 0))
    before_first = c[first] - flag[first]
    return c - flag - before_first


def group_codes(typ: np.ndarray, owner: np.ndarray, fragments: bool = True,
                forks: bool = True, bookkeeping: bool = True) -> np.ndarray:
    """Reduced-node code (0..K-1, in first-member order) of every node, from
    its type (str array) and owner (nodes of one owner consecutive, -1 for a
    team join). Works on any subset of whole owners' chains, in node order:
    the drawing (grainlab.export.drawing) reduces only what it shows."""
    n = len(typ)
    tag = np.full(n, UNGROUPED)
    seg = np.arange(n)
    owned = owner >= 0
    if fragments:
        m = owned & (typ == "fragment")
        tag[m] = FRAGMENTS
        seg[m] = 0
    if forks:
        joins_before = _owner_runs(owner, (typ == "join").astype(np.int64))
        m = owned & (typ == "fork")
        tag[m] = FORKS
        seg[m] = joins_before[m]
    if bookkeeping:
        others_before = _owner_runs(owner, (~np.isin(typ, ["bookkeeping", "chunk"])).astype(np.int64))
        m = owned & (typ == "bookkeeping")
        tag[m] = BOOKKEEPING
        seg[m] = others_before[m]
    key_grain = np.where(tag == UNGROUPED, -2, owner)
    codes, _ = pd.factorize(pd.MultiIndex.from_arrays([tag, key_grain, seg]), sort=False)
    return codes


def reduce(g, fragments: bool = True, forks: bool = True, bookkeeping: bool = True) -> ReducedGraph:
    nodes = g.nodes
    typ = nodes["type"].astype(object).to_numpy()
    owner = nodes["owner"].to_numpy()
    codes = group_codes(typ, owner, fragments, forks, bookkeeping)
    group = pd.Series(codes, index=nodes.index, name="group")

    agg = {"type": ("type", "first"), "grain": ("grain", "first"), "n_members": ("duration", "size"),
           "start": ("start", "min"), "end": ("end", "max"), "duration": ("duration", "sum"),
           "duration_max": ("duration", "max")}
    if "on_critical_path" in nodes:
        agg["on_critical_path"] = ("on_critical_path", "any")
    for c in nodes.columns:
        if c.startswith("counter:"):
            agg[c] = (c, "sum")
    frame = nodes.assign(_group=codes)
    rnodes = frame.groupby("_group", sort=True).agg(**agg)
    rnodes.index.name = "node"

    e = g.edges
    src = codes[e["src"].to_numpy()]
    dst = codes[e["dst"].to_numpy()]
    keep = src != dst
    redges = pd.DataFrame({"src": src[keep], "dst": dst[keep], "type": e["type"].to_numpy()[keep]})
    redges = redges.groupby(["src", "dst", "type"], sort=True, observed=True).size() \
        .rename("count").reset_index()
    return ReducedGraph(nodes=rnodes, edges=redges, group=group)
