"""Exact critical path of the fragment-level grain graph.

The critical path is the node-weighted longest path of the DAG. A longest-path
dynamic programme is sequential, so instead of a Python loop over nodes we turn
it into a shortest-path problem that a compiled routine (scipy's Dijkstra)
solves exactly:

  * take a topological order (nodes sorted by the time they became possible —
    a join when it was released, anything else when it started — verified
    against every edge; igraph's topological sort if the times disagree);
  * with prefix sums p(v) = sum of weights up to v in that order, plus rank(v),
    the reduced edge weight  p(v) - w(v) - p(u)  is >= 1 on every edge u -> v;
  * path lengths telescope: reduced length of s ~> v = p(v) - p(s) - (sum of
    node weights on the path), so the shortest reduced path is the longest
    weighted one. Integers below 2^53 are exact in float64.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import GrainlabError


def topological_order(nodes: pd.DataFrame, src: np.ndarray, dst: np.ndarray):
    """Node ids in a topological order, and which method produced it."""
    n = len(nodes)
    is_join = np.asarray(nodes["type"] == "join")
    jk = nodes["join_kind"]
    released = is_join & ~np.asarray(jk.isin(["region_end", "program_end"]))
    ktime = np.where(released, nodes["end"].to_numpy(), nodes["start"].to_numpy())
    # joins first among equal times; a stable sort keeps node id order after that
    order = np.argsort(ktime.astype(np.int64) * 2 + np.where(is_join, 0, 1), kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    if not len(src) or np.all(rank[src] < rank[dst]):
        return order, rank, "time"
    import igraph as ig
    g = ig.Graph(n=n, edges=list(zip(src.tolist(), dst.tolist())), directed=True)
    if not g.is_dag():
        raise GrainlabError("the grain graph has a cycle: the trace's events contradict each other")
    order = np.asarray(g.topological_sorting(mode="out"), dtype=np.int64)
    rank[order] = np.arange(n)
    return order, rank, "igraph"


def longest_path(nodes: pd.DataFrame, edges: pd.DataFrame):
    """(path node ids in order, span, earliest finish per node, order source)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = len(nodes)
    if n == 0:
        return np.empty(0, np.int64), 0, np.empty(0, np.int64), "empty"
    w = nodes["duration"].to_numpy().astype(np.int64, copy=False)
    src = edges["src"].to_numpy().astype(np.int64, copy=False)
    dst = edges["dst"].to_numpy().astype(np.int64, copy=False)
    order, rank, how = topological_order(nodes, src, dst)
    del rank
    p = np.empty(n, dtype=np.int64)
    p[order] = np.cumsum(w[order]) + np.arange(n)
    del order
    # super source s = n with p(s) = -1, linked to every node without predecessor
    indeg = np.bincount(dst, minlength=n)
    roots = np.flatnonzero(indeg == 0)
    S = np.concatenate([src, np.full(len(roots), n)])
    D = np.concatenate([dst, roots])
    ps = np.append(p, -1)
    reduced = (ps[D] - w[D] - ps[S]).astype(np.float64)
    del ps
    # CSR directly (rows = sources): a stable sort by source, then offsets
    o = np.argsort(S, kind="stable")
    indptr = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(np.bincount(S, minlength=n + 1), out=indptr[1:])
    graph = csr_matrix((reduced[o], D[o].astype(np.int32), indptr), shape=(n + 1, n + 1))
    del o, reduced, S, D
    dist, pred = dijkstra(graph, directed=True, indices=n, return_predecessors=True)
    del graph
    finish = (p + 1 - dist[:n]).astype(np.int64)   # earliest finish = longest path to v, incl. v
    sink = int(np.argmax(finish))
    span = int(finish[sink])
    path = []
    v = sink
    while v != n and v >= 0:   # walks the path only (its length), not the graph
        path.append(v)
        v = int(pred[v])
    return np.asarray(path[::-1], dtype=np.int64), span, finish, how


def annotate_critical_path(g) -> None:
    """Set g.critical_path, g.critical_grains, g.span and the on_critical_path
    columns of nodes, edges and grains."""
    path, span, finish, how = longest_path(g.nodes, g.edges)
    g.critical_path = path
    g.span = span
    g.topological_order_source = how
    g.nodes["earliest_finish"] = finish
    on = np.zeros(len(g.nodes), dtype=bool)
    on[path] = True
    g.nodes["on_critical_path"] = on
    n = max(len(g.nodes), 1)
    pair = path[:-1] * n + path[1:]
    key = g.edges["src"].to_numpy() * n + g.edges["dst"].to_numpy()
    g.edges["on_critical_path"] = pd.Index(pair).get_indexer(key) >= 0 if len(pair) else np.zeros(len(key), bool)
    grain = g.nodes["grain"].to_numpy()[path]
    grain = grain[(grain >= 0) & (grain < len(g.grains))]
    _, first = np.unique(grain, return_index=True)
    g.critical_grains = grain[np.sort(first)]
    flag = np.zeros(len(g.grains), dtype=bool)
    flag[g.critical_grains] = True
    g.grains["on_critical_path"] = flag
