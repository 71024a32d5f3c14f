"""Part of a grain graph: one parallel region (or several), or a time window.

Programs whose serial set-up or self-check dominates drown their parallel
kernel: over the whole run parallelism is ~1 and every problem is a few
percent. `select(g, regions=..., window=...)` returns a GrainGraph of just the
chosen part, with its own critical path, so every metric and problem is
computed on it as on a whole run (`grainlab analyze --region/--window`,
`gl.analyze(..., region=, window=)`).

What a selection holds (docs/metrics.md, "Analyzing part of a run"):

* **regions** — every node of the regions' implicit tasks and of everything
  they (transitively) created, nested regions included; the forks that start
  the regions' implicit tasks, their team barriers and region-end joins. The
  encountering task's code around the regions is left out. When several
  regions are chosen (all regions at one source location), consecutive kept
  nodes of one owner are chained by a continuation edge, so the regions run
  one after the other as in the program, with the serial code between them
  taking no time.
* **window [t0, t1)** (ns, trace time) — every node whose time overlaps the
  window (a zero-length node: lies in it), clipped to it; a clipped node keeps
  the share of its own time (duration) that its clipped length is of its
  length. A grain's work is the sum of its kept nodes' durations. Both
  together: the window of the regions' nodes.

Ids are renumbered densely (grains, then contexts, as in every GrainGraph);
references to something left out (a grain's parent, its join) become -1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..sorting import lexsort

from .model import GrainGraph


def select(g: GrainGraph, *, region_contexts=None, window=None) -> GrainGraph:
    """The sub-graph of `g` for the implicit tasks `region_contexts` (context
    ids of the chosen regions' implicit tasks) and/or `window` (t0, t1) in ns;
    its critical path annotated."""
    from .critical_path import annotate_critical_path
    nodes = g.nodes
    keep = np.ones(len(nodes), dtype=bool)
    if region_contexts is not None:
        keep &= region_nodes(g, np.asarray(region_contexts, dtype=np.int64))
    clip = None
    if window is not None:
        t0, t1 = int(window[0]), int(window[1])
        start, end = nodes["start"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
        zero = end <= start
        keep &= np.where(zero, (start >= t0) & (start < t1), (start < t1) & (end > t0))
        clip = (t0, t1)
    sub = _subgraph(g, keep, clip, bridge=region_contexts is not None)
    annotate_critical_path(sub)
    return sub


def in_subtree(g: GrainGraph, chosen: np.ndarray) -> np.ndarray:
    """Per grain or context id: is it one of `chosen` or a
    descendant of one (through `parent`)? Pointer jumping, bounded."""
    from .columns import inherit
    parent = np.concatenate([g.grains["parent"].to_numpy(np.int64),
                             g.contexts["parent"].to_numpy(np.int64)])
    n = len(parent)
    value = np.zeros(n, dtype=np.int8)
    value[chosen] = 1
    up = np.where((parent >= 0) & (parent < n), parent, -1)
    up[chosen] = -1
    return inherit(value, up).astype(bool)


def region_nodes(g: GrainGraph, ctx: np.ndarray) -> np.ndarray:
    """Per node: does a selection of the regions whose implicit tasks are
    `ctx` (context ids) keep it? (see the module doc)"""
    nodes, edges = g.nodes, g.edges
    member = in_subtree(g, ctx)
    owner = nodes["owner"].to_numpy(np.int64)
    child = nodes["child"].to_numpy(np.int64)
    keep = np.zeros(len(nodes), dtype=bool)
    ok = (owner >= 0) & (owner < len(member))
    keep[ok] = member[owner[ok]]
    # the forks that start the regions' implicit tasks (on the encountering task)
    is_fork = np.asarray(nodes["type"] == "fork")
    isin_ctx = np.zeros(len(member), dtype=bool)
    isin_ctx[ctx] = True
    okc = is_fork & (child >= 0) & (child < len(member))
    keep[np.flatnonzero(okc)[isin_ctx[child[okc]]]] = True
    # the joins the regions' implicit tasks end in (region_end)
    G = len(g.grains)
    cj = g.contexts["join"].to_numpy(np.int64)[ctx - G]
    keep[cj[cj >= 0]] = True
    # team barriers (owner -1): kept when a kept node synchronizes into them
    src, dst = edges["src"].to_numpy(np.int64), edges["dst"].to_numpy(np.int64)
    shared = owner < 0
    into = shared[dst] & keep[src]
    keep[dst[into]] = True
    return keep


def _subgraph(g: GrainGraph, keep: np.ndarray, clip, bridge: bool) -> GrainGraph:
    nodes = g.nodes[keep].copy()
    old_node = np.flatnonzero(keep)
    node_map = np.full(len(g.nodes) + 1, -1, dtype=np.int64)   # [-1] -> -1
    node_map[old_node] = np.arange(len(old_node))
    G, C = len(g.grains), len(g.contexts)

    if clip is not None:
        t0, t1 = clip
        s, e = nodes["start"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
        cs, ce = np.clip(s, t0, t1), np.clip(e, t0, t1)
        length = e - s
        dur = nodes["duration"].to_numpy(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(length > 0, (ce - cs) / np.maximum(length, 1), 1.0)
        nodes["start"], nodes["end"] = cs, ce
        nodes["duration"] = np.rint(dur * share).astype(np.int64)
        if "sync_time" in nodes:
            nodes["sync_time"] = np.rint(nodes["sync_time"].to_numpy(np.int64) * share
                                         ).astype(np.int64)

    # grains and contexts that own (or are) a kept node
    ent = np.concatenate([nodes["grain"].to_numpy(np.int64), nodes["owner"].to_numpy(np.int64)])
    ent = ent[ent >= 0]
    has = np.zeros(G + C, dtype=bool)
    has[ent[ent < G + C]] = True
    kept_g, kept_c = np.flatnonzero(has[:G]), np.flatnonzero(has[G:])
    G2 = len(kept_g)
    ent_map = np.full(G + C + 1, -1, dtype=np.int64)
    ent_map[kept_g] = np.arange(G2)
    ent_map[G + kept_c] = G2 + np.arange(len(kept_c))

    def remap(values, table):
        """New ids of `values`, in their own dtype (the graph's id dtype:
        a subgraph's ids are no larger than the graph's)."""
        v = np.asarray(values)
        at = np.where((v >= 0) & (v < len(table) - 1), v, len(table) - 1)
        return table[at].astype(v.dtype, copy=False)

    for col in ("grain", "owner", "child"):
        nodes[col] = remap(nodes[col].to_numpy(), ent_map)
    nodes.index = pd.RangeIndex(len(nodes), name=g.nodes.index.name)

    e = g.edges
    src, dst = remap(e["src"].to_numpy(), node_map), remap(e["dst"].to_numpy(), node_map)
    ok = (src >= 0) & (dst >= 0)
    edges = e[ok].copy()
    edges["src"], edges["dst"] = src[ok], dst[ok]
    if bridge:
        edges = _bridges(nodes, edges)
    edges = edges.reset_index(drop=True)

    grains = g.grains.iloc[kept_g].copy()
    grains.index = pd.RangeIndex(G2, name=g.grains.index.name)
    grains["parent"] = remap(grains["parent"].to_numpy(), ent_map)
    grains["join"] = remap(grains["join"].to_numpy(), node_map)
    contexts = g.contexts.iloc[kept_c].copy()
    contexts.index = pd.RangeIndex(G2, G2 + len(kept_c), name=g.contexts.index.name)
    contexts["parent"] = remap(contexts["parent"].to_numpy(), ent_map)
    contexts["join"] = remap(contexts["join"].to_numpy(), node_map)
    if clip is not None and G2:
        _clip_grains(nodes, grains)

    meta = dict(g.meta)
    nodes_of = g.identity_nodes() if hasattr(g, "identity_nodes") else None
    ident = None if nodes_of is None else nodes_of[np.concatenate(
        [np.asarray(kept_g, np.int64), G + np.asarray(kept_c, np.int64)])]
    return GrainGraph(nodes, edges, grains, contexts, meta,
                      names=getattr(g, "names", None), identity_node=ident)


def _bridges(nodes: pd.DataFrame, edges: pd.DataFrame) -> pd.DataFrame:
    """A continuation edge between consecutive kept nodes of one owner whose
    nodes in between were left out (the serial code between two chosen regions)."""
    owner = nodes["owner"].to_numpy(np.int64)
    seq = nodes["owner_seq"].to_numpy(np.int64)
    idx = np.flatnonzero((owner >= 0) & (seq >= 0))
    idx = idx[lexsort((seq[idx], owner[idx]))]
    a, b = idx[:-1], idx[1:]
    gap = (owner[a] == owner[b]) & (seq[b] - seq[a] > 1)
    if not gap.any():
        return edges
    # only where no edge already leaves `a` along the owner's chain
    n = max(len(nodes), 1)
    have = pd.Index(edges["src"].to_numpy(np.int64) * n + edges["dst"].to_numpy(np.int64))
    a, b = a[gap], b[gap]
    new = have.get_indexer(a * n + b) < 0
    idt = edges["src"].dtype            # the graph's id dtype (a concat keeps it)
    add = pd.DataFrame({"src": a[new].astype(idt), "dst": b[new].astype(idt),
                        "type": pd.Categorical(["continuation"] * int(new.sum()),
                                               categories=edges["type"].cat.categories),
                        "on_critical_path": np.zeros(int(new.sum()), dtype=bool)})
    return pd.concat([edges, add], ignore_index=True)


def _clip_grains(nodes: pd.DataFrame, grains: pd.DataFrame) -> None:
    """A grain's work, start and end from its kept (clipped) nodes."""
    G = len(grains)
    grain = nodes["grain"].to_numpy(np.int64)
    t = nodes["type"]
    own = ((t == "fragment") | (t == "chunk")).to_numpy() & (grain >= 0) & (grain < G)
    gi = grain[own]
    grains["work"] = np.bincount(gi, weights=nodes["duration"].to_numpy(np.int64)[own],
                                 minlength=G).astype(np.int64)
    grains["n_fragments"] = np.bincount(gi, minlength=G).astype(np.int32)
    mine = (grain >= 0) & (grain < G)
    lo = np.full(G, np.iinfo(np.int64).max)
    hi = np.full(G, np.iinfo(np.int64).min)
    np.minimum.at(lo, grain[mine], nodes["start"].to_numpy(np.int64)[mine])
    np.maximum.at(hi, grain[mine], nodes["end"].to_numpy(np.int64)[mine])
    s, e = grains["start"].to_numpy(np.int64), grains["end"].to_numpy(np.int64)
    grains["start"] = np.maximum(s, np.where(lo <= hi, lo, s))
    grains["end"] = np.minimum(e, np.where(lo <= hi, hi, e))
