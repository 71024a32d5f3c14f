"""grainlab: find performance problems in task-parallel OpenMP programs at the
level of grains (tasks and loop chunks).

    import grainlab as gl
    t = gl.load("fib.parquet")
    t.tasks()      # one row per task, with its lineage
    t.chunks()     # one row per loop chunk
    a = gl.analyze("fib.parquet")   # the grain graph, metrics, problems (grainlab.analysis)
    a.grains; a.problems(); a.by_location(); a.summary
    gl.characterize(["a.parquet", "traces/"])   # one row of properties per trace
"""
from .errors import GrainlabError, TraceError
from .analysis import Analysis, Comparison, analyze, open
from .trace import Trace, load
from .characterize import characterize

__version__ = "0.1.0"
__all__ = ["load", "Trace", "analyze", "open", "Analysis", "Comparison", "GrainlabError",
           "TraceError", "characterize", "__version__"]
