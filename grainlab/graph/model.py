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
                 contexts: pd.DataFrame, meta: dict):
        self.nodes = nodes
        self.edges = edges
        self.grains = grains
        self.contexts = contexts
        self.meta = meta
        self.critical_path = np.empty(0, dtype=np.int64)
        self.critical_grains = np.empty(0, dtype=np.int64)
        self.span = 0
        self.topological_order_source = ""

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

    # -- conversions and reductions --------------------------------------
    def to_igraph(self):
        from .convert import to_igraph
        return to_igraph(self)

    def to_networkx(self):
        from .convert import to_networkx
        return to_networkx(self)

    def reduce(self, fragments: bool = True, forks: bool = True,
               bookkeeping: bool = True):
        from .reduce import reduce
        return reduce(self, fragments=fragments, forks=forks, bookkeeping=bookkeeping)
