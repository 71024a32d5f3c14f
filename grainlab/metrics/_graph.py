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


def cores_used(g) -> int:
    """Threads that ran anything in the graph (the thesis's "cores used")."""
    t = g.nodes["thread"].to_numpy()
    n = len(np.unique(t[t >= 0]))
    if n == 0:
        n = int(g.meta.get("threads", 1) or 1) if isinstance(getattr(g, "meta", None), dict) else 1
    return max(n, 1)
