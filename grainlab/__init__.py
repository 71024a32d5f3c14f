"""grainlab: find performance problems in task-parallel OpenMP programs at the
level of grains (tasks and loop chunks).

    import grainlab as gl
    t = gl.load("fib.parquet")
    t.tasks()      # one row per task, with its lineage
    t.chunks()     # one row per loop chunk
"""
from .errors import GrainlabError, TraceError
from .trace import Trace, load

__version__ = "0.1.0"
__all__ = ["load", "Trace", "GrainlabError", "TraceError", "__version__"]
