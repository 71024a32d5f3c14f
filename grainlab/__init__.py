"""grainlab: find performance problems in task-parallel OpenMP programs at the
level of grains (tasks and loop chunks).

    import grainlab as gl
    t = gl.load("fib.parquet")
    t.tasks()      # one row per task, with its lineage
    t.chunks()     # one row per loop chunk
    a = gl.analyze("fib.parquet")   # the grain graph, metrics, problems (grainlab.analysis)
    a.grains; a.problems(); a.by_location(); a.summary
    gl.characterize(["a.parquet", "traces/"])   # one row of properties per trace
    gl.scan("big.parquet").summary()   # what `grainlab info` says, streamed (grainlab.trace.scan)
    gl.scaling(["one.parquet", "two.parquet"])   # speed-up, OVR, WTI (grainlab.analysis.scaling)
    r = gl.ranks(["run.0.parquet", "run.1.parquet"])   # an MPI run, one row per rank
    gl.rank_timeline(r)                 # the rank x time figure
"""
from .errors import GrainlabError, TraceError

__version__ = "0.1.0"

# numpy/pandas/pyarrow load on first use, not at `import grainlab` (which must
# stay fast for `grainlab --version` and tools that import it for a name).
_LAZY = {"Analysis": "analysis.analysis", "Comparison": "analysis.analysis",
         "analyze": "analysis.analysis", "open": "analysis.analysis", "Trace": "trace.trace",
         "load": "trace.trace", "scan": "trace.scan", "characterize": "suite.characterization",
         "scaling": "analysis.analysis", "Scaling": "analysis.scaling",
         "ranks": "cluster.ranks", "rank_timeline": "app.rank_figures"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'grainlab' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
__all__ = ["load", "scan", "Trace", "analyze", "open", "Analysis", "Comparison", "GrainlabError",
           "TraceError", "characterize", "scaling", "Scaling", "ranks", "rank_timeline",
           "__version__"]
