"""What the exporters call a node's owner: identity and source location.

Both exporters name things the same way: a grain (or context) by its identity
(lineage / `<loop>@<first iteration>`), and by its source location when the
grain table carries one (`source`, added by symbolization: `file:line (func)`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ._text import to_arrow

# Grain-table columns that are not exported as attributes (the identity is
# exported on its own; identity_node is a position in GrainGraph.names).
NOT_EXPORTED = ("identity", "identity_node")

# Grain-table columns that hold a code location as text, in order of preference.
SOURCE_COLUMNS = ("source", "location", "source_location")


def owner_identity(g) -> pa.Array:
    """Identity per owner id: grains 0..G-1 then contexts G..G+C-1, made
    from the identity forest when the graph has one. When the graph's
    identities are too long to keep as a column (grainlab.identity.
    materialise: a huge deep graph, whose full identities would take
    O(owners x depth) bytes), each owner is labelled by its last steps and
    its 128-bit identity hash instead (Names.short)."""
    nodes = g.identity_nodes() if hasattr(g, "identity_nodes") else None
    if nodes is not None:
        from ..tables.identity import materialise
        if materialise(g.names, nodes):
            return g.names.arrow(nodes).cast(pa.string())
        return g.names.short(nodes).cast(pa.string())
    parts = [to_arrow(g.grains["identity"].astype(object))]
    contexts = getattr(g, "contexts", None)
    if contexts is not None and len(contexts):
        parts.append(to_arrow(contexts["identity"].astype(object)))
    return pa.concat_arrays([p.cast(pa.string()) for p in parts])


def source_column(grains: pd.DataFrame) -> str | None:
    """Name of the grain column holding source locations, if any."""
    for name in SOURCE_COLUMNS:
        if name in grains.columns:
            return name
    return None


def owner_index(owner: np.ndarray, n_owners: int) -> pa.Array:
    """Take-indices into an owner table: null where the node has no owner
    (team-wide joins have grain -1) or the id is out of range."""
    owner = np.asarray(owner, dtype=np.int64)
    valid = (owner >= 0) & (owner < n_owners)
    return pa.array(np.where(valid, owner, 0), mask=~valid)
