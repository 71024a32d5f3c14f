"""Small shared helpers to read the graph contract (docs/graph-model.md).

Metrics only read `g.nodes`, `g.edges`, `g.grains`, `g.meta` and the scalar
attributes the contract lists; these helpers keep the "which nodes are a
grain's own execution" rule in one place.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

# Node kinds that are a grain's (or a context's) own computation.
EXEC_TYPES = ("fragment", "chunk")


def is_one_of(column, *values) -> np.ndarray:
    """Boolean array: column value in `values`. Compares category codes when the
    column is categorical (a string comparison per row is slow at 10^7 rows)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = list(column.cat.categories)
        codes = column.cat.codes.to_numpy()
        out = np.zeros(len(codes), bool)
        for v in values:          # a handful of values, each one vector compare
            if v in cats:
                out |= codes == cats.index(v)
        return out
    return np.isin(column.to_numpy(), values)


def exec_node_mask(nodes) -> np.ndarray:
    """True for fragment and chunk nodes."""
    return is_one_of(nodes["type"], *EXEC_TYPES)


def grain_exec_mask(g) -> np.ndarray:
    """True for fragment/chunk nodes owned by a grain (not by a context)."""
    owner = g.nodes["grain"].to_numpy()
    return exec_node_mask(g.nodes) & (owner >= 0) & (owner < len(g.grains))


def threads_used(g) -> int:
    """Threads that ran anything in the graph."""
    return distinct_non_negative(g.nodes["thread"].to_numpy())


def distinct_non_negative(x: np.ndarray) -> int:
    """len(np.unique(x[x >= 0])) of small integer ids (threads, cpus): one
    bincount over a node column instead of a sort or hash of it."""
    if len(x) == 0:
        return 0
    top = int(x.max())
    if top < 0:
        return 0
    if x.dtype.kind in "iu" and top < 1 << 22:
        return int(np.count_nonzero(np.bincount(x[x >= 0])))
    return len(np.unique(x[x >= 0]))


def cores_used(g) -> int:
    """The thesis's "cores used": the threads that ran anything, but no more
    than the CPUs they ran on (64 threads time-sliced on 2 CPUs used 2
    cores). A node's `cpu` is where its thread was when it started; a trace
    without CPU numbers counts threads."""
    n = threads_used(g)
    cpu = g.nodes["cpu"].to_numpy() if "cpu" in g.nodes else np.zeros(0)
    cpus = distinct_non_negative(cpu)
    if cpus:
        n = min(n, cpus)
    if n == 0:
        n = int(g.meta.get("threads", 1) or 1) if isinstance(getattr(g, "meta", None), dict) else 1
    return max(n, 1)
