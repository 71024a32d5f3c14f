"""Small shared helpers to read the graph contract (docs/graph-model.md).

Metrics only read `g.nodes`, `g.edges`, `g.grains`, `g.meta` and the scalar
attributes the contract lists; these helpers keep the "which nodes are a
grain's own execution" rule in one place.
"""
from __future__ import annotations

import numpy as np

# Node kinds that are a grain's (or a context's) own computation.
EXEC_TYPES = ("fragment", "chunk")


def exec_node_mask(nodes) -> np.ndarray:
    """True for fragment and chunk nodes."""
    return nodes["type"].astype(str).isin(EXEC_TYPES).to_numpy()


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
