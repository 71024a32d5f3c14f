"""Exact critical path of the fragment-level grain graph.

The critical path is the node-weighted longest path of the DAG: a dynamic
programme over a topological order (nodes sorted by the time they became
possible — a join when it was released, anything else when it started —
verified against every edge; igraph's topological sort if the times
disagree). The programme is sequential, so it runs compiled:

  * grainlab/native/longest_path.c, O(V + E), through ctypes when it is built
    (fib 28, 4.1M nodes: 0.07 s for the loop, 0.24 s with the order);
  * else scipy's Dijkstra on a reduced graph (0.6-0.7 s there): with prefix
    sums p(v) = sum of weights up to v in topological order, plus rank(v),
    the reduced edge weight  p(v) - w(v) - p(u)  is >= 1 on every edge
    u -> v, and path lengths telescope: reduced length of s ~> v = p(v) -
    p(s) - (sum of node weights on the path), so the shortest reduced path
    is the longest weighted one. Integers below 2^53 are exact in float64.
GRAINLAB_NATIVE=0 forces the second (the tests compare the two).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import GrainlabError
from ..sorting import argsort


def topological_order(start, end, is_join, released, src: np.ndarray, dst: np.ndarray):
    """Node ids in a topological order, and which method produced it.
    released: joins that became possible when released (`end`), not when
    reached (region and program ends)."""
    n = len(start)
    # joins first among equal times; a stable sort keeps node id order after
    # that (the key made in one array: time * 2, + 1 unless a join)
    key = np.where(released, end, start).astype(np.int64, copy=False)
    key *= 2
    np.add(key, 1, out=key, where=~np.asarray(is_join, bool))
    order = argsort(key)
    del key
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


def node_arrays(nodes: pd.DataFrame) -> dict:
    """What the longest path reads of a node table: keyword arguments of
    `longest_path` with `src` and `dst`."""
    is_join = np.asarray(nodes["type"] == "join")
    ends = np.asarray(nodes["join_kind"].isin(["region_end", "program_end"]))
    return {"duration": nodes["duration"].to_numpy(), "start": nodes["start"].to_numpy(),
            "end": nodes["end"].to_numpy(), "is_join": is_join, "released": is_join & ~ends}


def longest_path(duration, start, end, is_join, released, src, dst):
    """(path node ids in order, span, earliest finish per node, order source)
    of the graph of nodes with these columns (`node_arrays`) and edges src -> dst."""
    return longest_path_and_order(duration, start, end, is_join, released, src, dst)[:4]


def longest_path_and_order(duration, start, end, is_join, released, src, dst):
    """`longest_path`'s four values and the topological order it used (kept
    on the graph by `annotate_critical_path`, so later spans of the same
    graph, e.g. the parallel part's, need no sort of their own)."""
    n = len(duration)
    if n == 0:
        return np.empty(0, np.int64), 0, np.empty(0, np.int64), "empty", np.empty(0, np.int64)
    w = np.ascontiguousarray(duration, dtype=np.int64)
    src, dst, kernel = _edge_ends(src, dst)
    order, rank, how = topological_order(start, end, is_join, released, src, dst)
    del rank
    if kernel is not None:
        finish, pred = _native_longest(kernel, order, w, src, dst)
    else:
        finish, pred = _dijkstra_longest(order, w, src, dst)
    sink = int(np.argmax(finish))
    span = int(finish[sink])
    path = []
    v = sink
    while 0 <= v < n:   # walks the path only (its length), not the graph
        path.append(v)
        v = int(pred[v])
    return np.asarray(path[::-1], dtype=np.int64), span, finish, how, order


def graph_order(g) -> np.ndarray:
    """A topological order of `g`'s nodes: the one its critical path was
    found in (`annotate_critical_path` keeps it, at the ids' width), else
    made now (`topological_order` over the node table)."""
    order = getattr(g, "topological_order", None)
    if order is not None and len(order) == len(g.nodes):
        return order
    src, dst, _ = _edge_ends(g.edges["src"].to_numpy(), g.edges["dst"].to_numpy())
    times = node_arrays(g.nodes)
    del times["duration"]
    return topological_order(**times, src=src, dst=dst)[0]


def span_in_order(order, w, src, dst) -> int:
    """The longest node-weighted path's length, given a topological `order`
    (as `topological_order` returns it): for callers that weigh one graph
    several ways (grainlab.metrics.predict's span and burdened spans)."""
    if len(w) == 0:
        return 0
    w = np.ascontiguousarray(w, dtype=np.int64)
    src, dst, kernel = _edge_ends(src, dst)
    finish, _ = (_native_longest(kernel, order, w, src, dst) if kernel is not None
                 else _dijkstra_longest(order, w, src, dst))
    return int(finish.max())


def _native_kernel(bits: int = 64):
    """gl_dag_longest_path (edge ends int64; bits=32: gl_dag_longest_path32,
    int32 ends) from the compiled kernels, or None (not built, a build
    without it, or GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    p = ctypes.c_void_p
    name = "gl_dag_longest_path32" if bits == 32 else "gl_dag_longest_path"
    return graph_kernel(name, [ctypes.c_int64, ctypes.c_int64, p, p, p, p, p, p])


def _edge_ends(src, dst):
    """(src, dst, compiled kernel or None) as the longest path takes them:
    int32 ends (the graph's ids while they fit, docs/graph-model.md "Ids")
    as they are, for the kernel's 32-bit entry (two int64 copies of the
    edge columns fewer: 16 bytes an edge); other ends, or a build without
    that entry, as int64. The Dijkstra twin (no kernel) takes either."""
    src, dst = np.asarray(src), np.asarray(dst)
    if src.dtype == np.int32 and dst.dtype == np.int32:
        kernel = _native_kernel(32)
        if kernel is not None or _native_kernel() is None:
            return np.ascontiguousarray(src), np.ascontiguousarray(dst), kernel
    return (np.ascontiguousarray(src, dtype=np.int64), np.ascontiguousarray(dst, dtype=np.int64),
            _native_kernel())


def _native_longest(kernel, order, w, src, dst):
    """(finish, pred) by the compiled dynamic programme (pred -1: a start)."""
    n = len(w)
    order = np.ascontiguousarray(order, dtype=np.int64)
    finish = np.empty(n, np.int64)
    pred = np.empty(n, np.int64)
    rc = kernel(n, len(src), order.ctypes.data, w.ctypes.data, src.ctypes.data,
                dst.ctypes.data, finish.ctypes.data, pred.ctypes.data)
    if rc == -1:
        raise MemoryError("the critical path's scratch arrays")
    if rc != 0:
        raise GrainlabError("the grain graph has an edge to a node that does not exist "
                            "(a grainlab bug: please report it with the trace)")
    return finish, pred


def _dijkstra_longest(order, w, src, dst):
    """(finish, pred) by scipy's Dijkstra on the reduced graph (module
    docstring); pred n (the super source) or negative: a start."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = len(w)
    p = np.empty(n, dtype=np.int64)
    p[order] = np.cumsum(w[order]) + np.arange(n)
    # super source s = n with p(s) = -1, linked to every node without predecessor
    indeg = np.bincount(dst, minlength=n)
    roots = np.flatnonzero(indeg == 0)
    S = np.concatenate([src, np.full(len(roots), n)])
    D = np.concatenate([dst, roots])
    ps = np.append(p, -1)
    reduced = (ps[D] - w[D] - ps[S]).astype(np.float64)
    del ps
    # CSR directly (rows = sources): a stable sort by source, then offsets
    o = argsort(S)
    indptr = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(np.bincount(S, minlength=n + 1), out=indptr[1:])
    graph = csr_matrix((reduced[o], D[o].astype(np.int32), indptr), shape=(n + 1, n + 1))
    del o, reduced, S, D
    dist, pred = dijkstra(graph, directed=True, indices=n, return_predecessors=True)
    del graph
    finish = (p + 1 - dist[:n]).astype(np.int64)   # earliest finish = longest path to v, incl. v
    return finish, pred[:n]


def annotate_critical_path(g, found=None) -> None:
    """Set g.critical_path, g.critical_grains, g.span and the on_critical_path
    columns of nodes, edges and grains. found: `longest_path`'s result when
    already computed (the builder computes it while it makes the tables)."""
    if found is None:
        found = longest_path_and_order(**node_arrays(g.nodes), src=g.edges["src"].to_numpy(),
                                       dst=g.edges["dst"].to_numpy())
    path, span, finish, how = found[:4]
    if len(found) > 4:      # 4 bytes a node while the ids fit (columns.id_dtype)
        order = found[4]
        g.topological_order = order.astype(g.edges["src"].dtype, copy=False) \
            if g.edges["src"].dtype == np.int32 else order
    g.critical_path = path
    g.span = span
    g.topological_order_source = how
    g.nodes["earliest_finish"] = finish
    on = np.zeros(len(g.nodes), dtype=bool)
    on[path] = True
    g.nodes["on_critical_path"] = on
    # an edge is on the path when it leads from a path node to the next one
    after = np.full(len(g.nodes), -1, np.int64)
    after[path[:-1]] = path[1:]
    g.edges["on_critical_path"] = after[g.edges["src"].to_numpy()] == g.edges["dst"].to_numpy()
    grain = g.nodes["grain"].to_numpy()[path]
    grain = grain[(grain >= 0) & (grain < len(g.grains))]
    _, first = np.unique(grain, return_index=True)
    g.critical_grains = grain[np.sort(first)]
    flag = np.zeros(len(g.grains), dtype=bool)
    flag[g.critical_grains] = True
    g.grains["on_critical_path"] = flag
