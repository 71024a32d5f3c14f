"""Exports of a grain graph to other tools.

    from grainlab.export import write_graphml, write_perfetto
    write_graphml(g, "fib.graphml")            # yEd / Cytoscape (thesis's viewer)
    write_graphml(g, "fib.graphml", reduced=True)
    write_perfetto(g, "fib.json")              # ui.perfetto.dev, chrome://tracing

Both take a grain graph as documented in docs/graph-model.md (with metric
columns in `g.grains` if `grainlab.metrics.compute_all(g)` ran) and write the
file in batches built column-wise. See docs/exports.md.
"""
from .graphml import write_graphml
from .perfetto import write_perfetto

__all__ = ["write_graphml", "write_perfetto"]
