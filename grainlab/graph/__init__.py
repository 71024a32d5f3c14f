"""The grain graph (docs/graph-model.md): `build(trace) -> GrainGraph`.

    import grainlab as gl
    g = gl.load("fib.parquet").graph()     # or grainlab.graph.build(trace)
    g.nodes, g.edges, g.grains, g.contexts, g.critical_path, g.span
"""
from .build import build
from .model import EDGE_TYPES, JOIN_KINDS, NODE_TYPES, GrainGraph

__all__ = ["build", "GrainGraph", "NODE_TYPES", "JOIN_KINDS", "EDGE_TYPES"]
