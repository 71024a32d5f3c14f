"""The GrainGraph container (docs/graph-model.md is its contract)."""
from __future__ import annotations

import numpy as np
import pandas as pd

NODE_TYPES = ["fragment", "fork", "join", "bookkeeping", "chunk"]
JOIN_KINDS = ["taskwait", "taskgroup", "barrier", "region_end", "program_end"]
EDGE_TYPES = ["creation", "synchronization", "continuation", "dependence"]


class GrainGraph:
    """Fragment-level grain graph of one trace.

    nodes     DataFrame indexed by node id 0..N-1 (type, grain, start, end, duration...)
    edges     DataFrame (src, dst, type, on_critical_path)
    grains    DataFrame indexed by grain id 0..G-1 (tasks then chunks)
    contexts  DataFrame indexed by context id G..G+C-1 (initial and implicit tasks)
    meta      trace metadata plus build parameters
    critical_path, critical_grains, span, work, grain_work, parallelism: see the doc.
    """

    def __init__(self, nodes: pd.DataFrame, edges: pd.DataFrame, grains: pd.DataFrame,
                 contexts: pd.DataFrame, meta: dict, names=None, identity_node=None):
        # identity forest (grainlab.tables.identity) and the node of every grain then
        # every context in it (by id); None for a graph without one.
        self.names = names
        self.identity_node = None if identity_node is None else np.asarray(identity_node, np.int64)
        self.nodes = nodes
        self.edges = edges
        self.grains = grains
        self.contexts = contexts
        self.meta = meta
        self.critical_path = np.empty(0, dtype=np.int64)
        self.critical_grains = np.empty(0, dtype=np.int64)
        self.span = 0
        self.topological_order_source = ""
        # the node order the critical path was found in (critical_path.graph_order)
        self.topological_order = None
        # parallelism over time at the earliest starts, one row per interval:
        # kept by grainlab.metrics.instantaneous_parallelism.compute
        self.ideal_profile = None

    def __repr__(self):
        return (f"<GrainGraph grains={len(self.grains)} nodes={len(self.nodes)} "
                f"edges={len(self.edges)} span={self.span} ns "
                f"parallelism={self.parallelism:.3g}>")

    @property
    def work(self) -> int:
        """Sum of all node durations (ns)."""
        return int(self.nodes["duration"].sum())

    @property
    def grain_work(self) -> int:
        """Sum of the grains' work (tasks and chunks only, ns)."""
        return int(self.grains["work"].sum())

    @property
    def parallelism(self) -> float:
        """Exposed parallelism: total work / span."""
        return float(self.work / self.span) if self.span > 0 else float("nan")

    def grain_edges(self) -> pd.DataFrame:
        """The edges between grains (and contexts), from `edges`: creation
        (the creating grain -> the created one, from the fork's start to the
        child's first node's start), in fork order, then synchronization (a
        grain -> the grain or context whose join waits for it, from the
        grain's end to the join's start), by grain. A join shared by a team
        (grain -1) is no one's. Columns src, dst (grain/context ids), t0, t1 (ns)."""
        nodes, e = self.nodes, self.edges
        owner = nodes["grain"].to_numpy(np.int64)
        start, end = nodes["start"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
        src, dst = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
        typ = e["type"].astype(str).to_numpy()
        known = (owner[src] >= 0) & (owner[dst] >= 0)
        create = np.flatnonzero((typ == "creation") & known)
        create = create[np.argsort(src[create], kind="stable")]
        sync = np.flatnonzero((typ == "synchronization") & known
                              & (owner[src] < len(self.grains)))
        sync = sync[np.argsort(owner[src[sync]], kind="stable")]
        return pd.DataFrame({
            "src": np.r_[owner[src[create]], owner[src[sync]]],
            "dst": np.r_[owner[dst[create]], owner[dst[sync]]],
            "t0": np.r_[start[src[create]], end[src[sync]]],
            "t1": np.r_[start[dst[create]], start[dst[sync]]]})

    # -- identities --------------------------------------------------------
    def identity_nodes(self) -> np.ndarray | None:
        """Identity-forest node of every grain then every context (by id)."""
        if self.names is None or self.identity_node is None or \
                len(self.identity_node) != len(self.grains) + len(self.contexts):
            return None
        return self.identity_node

    def identity_hashes(self):
        """(h1, h2, valid) per grain (row order = grain id): the 128-bit
        identity hash (grainlab.tables.identity), or None without a forest."""
        nodes = self.identity_nodes()
        if nodes is None:
            return None
        nodes = nodes[:len(self.grains)]
        h1, h2 = self.names.hashes(nodes)
        return h1, h2, self.names.valid(nodes)

    def identities(self, ids=None) -> np.ndarray:
        """Identity strings of grain / context ids (default: every grain),
        made on demand (O(k x depth) for k ids): the "identity" column holds
        them too, but only while every identity is short (grainlab.tables.identity).
        Object array; None where an id has no identity."""
        G = len(self.grains)
        ids = np.arange(G) if ids is None else np.asarray(ids, np.int64).ravel()
        nodes = self.identity_nodes()
        if nodes is not None:
            return self.names.strings(nodes[ids])
        both = pd.concat([self.grains["identity"].astype(object),
                          self.contexts["identity"].astype(object)], ignore_index=True)
        out = both.to_numpy(dtype=object)[ids]
        out[pd.isna(out)] = None
        return out

    def identity_arrow(self, ids=None):
        """identities() as an Arrow large_string array (for exports)."""
        import pyarrow as pa
        G = len(self.grains)
        ids = np.arange(G) if ids is None else np.asarray(ids, np.int64).ravel()
        nodes = self.identity_nodes()
        if nodes is not None:
            return self.names.arrow(nodes[ids])
        return pa.array(self.identities(ids), pa.large_string())

    # -- conversions and reductions --------------------------------------
    def to_igraph(self):
        from .interop import to_igraph
        return to_igraph(self)

    def to_networkx(self):
        from .interop import to_networkx
        return to_networkx(self)

    def reduce(self, fragments: bool = True, forks: bool = True,
               bookkeeping: bool = True):
        from .reduce import reduce
        return reduce(self, fragments=fragments, forks=forks, bookkeeping=bookkeeping)
