"""One analysis of one trace, shared by the CLI, the web app and notebooks.

    import grainlab as gl
    a = gl.analyze("fib.parquet")    # lazy: nothing is computed until asked for
    a.grains                         # DataFrame, one row per grain: every metric + location
    a.problems()                     # DataFrame, one row per problem metric
    a.by_location()                  # DataFrame, one row per source location
    a.summary                        # dict: what `grainlab analyze --json` prints
    a.critical_path                  # grain ids on the critical path, in path order
    gl.analyze("t.parquet", weigh="cpu")   # grains weigh their CPU time (record --cpu-time)
    c = a.compare(gl.analyze("one-thread.parquet"))   # Comparison: work deviation
    a.save("fib.analysis")           # Parquet + JSON; gl.open("fib.analysis") reads it back

Data flows one way: trace -> graph (built and kept here) -> metrics
(`grainlab.metrics.compute_all`, once) -> source locations -> problems. Every
view reads these results; none recomputes a metric its own way.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .. import problems as P
from ..trace.file import trace_key
from . import report
from .comparison import Comparison
from .options import Options
from .report import DEFAULT_TOP, jsonable, program_of




def analyze(trace_or_path, *, reference=None, thresholds=None, interval="median",
            region=None, window=None, weigh="wall", options=None, progress=None) -> "Analysis":
    """An Analysis of a trace (a `grainlab.Trace` or a path to one).

    reference:  another run of the same program (Analysis, Trace or path) ->
                `work_deviation` per grain (usually a 1-thread run)
    thresholds: {metric: value | "auto"} overriding the defaults (docs/metrics.md)
    interval:   "median" | "min" | "gap" | ns, for instantaneous parallelism
    region:     analyze only parallel region N (1, 2, ... as `grainlab info`
                lists them) or every region at a source location ("app.c:42",
                "app.c", a function name)
    window:     analyze only (t0, t1) ns from the trace's start, or a text
                "120ms:300ms" (units ns/us/ms/s, default ms, a side may be empty)
    weigh:      "wall" (default): nodes weigh their wall-clock time; "cpu": the
                time their thread really ran (a trace recorded with
                `grainlab record --cpu-time`): critical path, span, work and
                parallelism as if no thread had been preempted
    options:    all of the above as one grainlab.analysis.options.Options
                (then the keywords are not given)
    progress:   optional callable(str), told before each long step
    """
    options = options or Options(thresholds=thresholds, interval=interval, region=region,
                                 window=window, weigh=weigh)
    return Analysis(trace_or_path, reference=reference, options=options, progress=progress)


class Analysis:
    """Lazy, cached results of analyzing one trace (see the module doc)."""

    def __init__(self, trace_or_path, *, reference=None, options: Options | None = None,
                 progress=None, whole_graph=None, **keywords):
        """keywords: thresholds, interval, region, window, weigh (as `analyze`
        takes them), or `options` (an Options) instead. whole_graph: the grain
        graph of this same run, already built (another analysis's
        `whole_graph`): shared, not built again (`part`)."""
        from ..trace.trace import Trace
        self.progress = progress or (lambda _msg: None)
        given = isinstance(trace_or_path, Trace)
        self._given_trace = trace_or_path if given else None
        self.path = Path(trace_or_path.path if given else trace_or_path)
        if options is not None and keywords:
            raise TypeError("Analysis: give options or keywords, not both")
        self.options = options or Options(**keywords)   # bad values fail before loading
        self._reference = reference
        self._saved = None
        self._shared_graph = whole_graph

    # what it was asked for (Options)
    thresholds = property(lambda self: self.options.thresholds)
    interval = property(lambda self: self.options.interval)
    region = property(lambda self: self.options.region)
    window = property(lambda self: self.options.window)
    weigh = property(lambda self: self.options.weigh)

    @classmethod
    def from_saved(cls, parts, *, progress=None) -> "Analysis":
        """The analysis a store kept (grainlab.analysis.store.Saved): its graph,
        metrics, run facts and locations as they were saved; the trace is
        read only if asked for."""
        a = cls(parts.trace, options=parts.options, progress=progress)
        a._saved = parts
        return a

    def __repr__(self):
        return f"<grainlab.Analysis {self.path}>"

    def part(self, region=None, window=None) -> "Analysis":
        """The analysis of one part of this run (a parallel region, as
        `grainlab info` numbers them, or a time window), sharing this
        analysis's trace and whole-run graph: many parts cost one build
        (grainlab.cluster.parts)."""
        from dataclasses import replace
        return Analysis(self.trace, options=replace(self.options, region=region, window=window),
                        progress=self.progress, whole_graph=self.whole_graph)

    # -- the pipeline, one cached step each ---------------------------------
    @cached_property
    def _loaded(self):
        """(trace, check): the trace read, its validation running on a thread
        (grainlab.trace.trace.load_checking) while the graph is built; a
        given trace has no check."""
        if self._given_trace is not None:
            return self._given_trace, None
        from ..trace.trace import load_checking
        self.progress(f"loading {self.path}")
        return load_checking(self.path)

    def _checked(self):
        """The trace once its validation is over (a damaged trace: its
        TraceError here)."""
        trace, check = self._loaded
        if check is not None:
            check.result()
        return trace

    @cached_property
    def trace(self):
        return self._checked()

    @cached_property
    def whole_graph(self):
        """The grain graph of the whole run (`graph` is of the part analyzed),
        built while the trace is validated, or the one given to share."""
        if self._shared_graph is not None:
            return self._shared_graph
        trace, check = self._loaded
        self.progress(f"building the grain graph ({len(trace.events)} events)")
        g = _graph_while_checking(trace, check)
        self._checked()                 # the validation's error wins
        return g

    @cached_property
    def graph(self):
        """The grain graph (of the whole run, or the chosen part of it: see
        `selection`), kept by this analysis; the metric columns join its
        `grains` table when `metrics` (or `grains`, a report...) is first
        used: `graph_with_metrics` is the graph with them."""
        if self._saved is not None:
            return self._saved.graph
        g = self.whole_graph
        sel = self.selection
        if sel is not None:
            from ..graph.select import select
            self.progress("selecting " + sel["description"])
            g = select(g, region_contexts=sel["contexts"], window=sel["window_trace_ns"])
        if self.weigh == "cpu":
            from ..metrics.preemption import weigh_cpu
            self.progress("weighing grains by CPU time")
            g = weigh_cpu(g, str(self.path))
        self._release_events()
        return g

    def _release_events(self) -> None:
        """Once the graph is made (and the trace validated, the part
        selected), nothing on the analysis's way reads the event table
        again: the metrics read the graph and `trace.accesses`, the report
        the trace's metadata. Released (Trace.release_events), it costs no
        memory meanwhile (~270 bytes per grain, issue 31); a later reader
        (a view, `trace.tasks()`) reads it from the file again. A trace the
        caller gave keeps its events: it is the caller's."""
        if self._given_trace is None and "_loaded" in self.__dict__:
            self._loaded[0].release_events()

    @cached_property
    def selection(self) -> dict | None:
        """The part of the run analyzed (None: all of it): description,
        regions (numbers as `grainlab info` lists them), window_ns (from the
        trace's start), and the graph ids it stands for (grainlab.analysis.selection)."""
        if self.region is None and self.window is None:
            return None
        from .selection import choose
        return choose(self.trace, lambda: self.whole_graph, self.region, self.window)

    @cached_property
    def _computed(self) -> tuple:
        """(graph, metric values): `grainlab.metrics.compute_all` run once,
        which adds every per-grain metric column to the graph."""
        if self._saved is not None:
            return self._saved.graph, self._saved.metrics
        from ..metrics import compute_all
        ref = self.reference
        values = compute_all(self.graph, interval=self.interval, progress=self.progress,
                             reference=None if ref is None else ref.graph,
                             accesses=self.trace.accesses)
        # the build's and metrics' freed arrays, kept for reuse meanwhile
        # (grainlab/array_cache.py), go back: what follows holds its own
        from .. import array_cache
        array_cache.trim()
        return self.graph, values

    @property
    def metrics(self) -> dict:
        """Graph-level metric values (the dict `grainlab.metrics.compute_all`
        returns); computing them adds every per-grain metric column to the graph."""
        return self._computed[1]

    @property
    def graph_with_metrics(self):
        """`graph`, with every per-grain metric column (computed on first use)."""
        return self._computed[0]

    @cached_property
    def reference(self) -> "Analysis | None":
        ref = self._reference
        if self._saved is not None:
            return None
        if ref is None or isinstance(ref, Analysis):
            return ref
        return Analysis(ref, options=self.options.for_reference(), progress=self.progress)

    @cached_property
    def locations(self) -> pd.Series:
        """Source location of every grain (`file:line (function)`), index = grain id."""
        if self._saved is not None:
            return self._saved.locations
        from ..symbolize import grain_locations
        g = self.graph
        self.progress("source locations")
        return pd.Series(grain_locations(g, g.meta).array, index=g.grains.index,
                         name="location")

    def source_lines(self, location: str, context: int = 4):
        """(path, first line number, [lines], the location's line number)
        around a source location (`file.c:28 (func)`, as in `locations`), from
        the files the trace's debug information names only; None when its
        file is not there or unreadable (grainlab.symbolize.source_lines)."""
        from ..symbolize import source_lines
        return source_lines(location, self.graph.meta.get("loadmap"), context)

    @cached_property
    def resolved_thresholds(self) -> dict:
        """Thresholds with "auto" replaced by this run's cores used / per socket."""
        return P.resolve(self.thresholds, self.metrics)

    @cached_property
    def grains(self) -> pd.DataFrame:
        """One row per grain: the graph's grain columns, every metric, `location`."""
        gr = self.graph_with_metrics.grains
        return gr.assign(location=self.locations.to_numpy(dtype=object)) if len(gr) else \
            gr.assign(location=pd.Series([], dtype=object))

    @cached_property
    def run(self) -> dict:
        """Facts about the run the report states: trace path, complete, problems
        (recoverable damage), program (its command line)."""
        if self._saved is not None:
            return self._saved.run
        t = self.trace
        sel = self.selection
        return {"trace": str(t.path), "complete": bool(t.complete),
                "problems": list(t.problems), "program": program_of(t.meta),
                "selection": None if sel is None else
                {k: sel[k] for k in ("description", "regions", "window_ns")}}

    @property
    def critical_path(self) -> np.ndarray:
        """Grain ids on the critical path, in path order."""
        return np.asarray(self.metrics["critical_path"], dtype=np.int64)

    # -- problems and locations ---------------------------------------------
    def found(self, top: int = DEFAULT_TOP) -> dict:
        """Each problem metric's evaluation at this run's thresholds
        (grainlab.problems.evaluate), with its `top` locations."""
        return P.evaluate(self.graph_with_metrics, self.resolved_thresholds, self.locations,
                          top=top)

    def problems(self, top: int = DEFAULT_TOP) -> pd.DataFrame:
        """One row per problem metric (thesis §5.4.3): threshold, direction,
        available, grains, percent, on_critical_path, work_ns, meaning, and the
        `top` source locations responsible (a list of dicts)."""
        return report.problems_frame(self, top)

    def by_location(self) -> pd.DataFrame:
        """One row per source location, by work: grains, work_ns, work_percent
        and the % of its grains flagged by each available problem (thesis Fig. 5.8)."""
        return report.by_location(self)

    def report(self, top: int = DEFAULT_TOP) -> dict:
        """What `grainlab analyze --json --top N` prints (JSON-able;
        grainlab.analysis.report)."""
        return report.report(self, top)

    def preemption(self, found=None) -> dict:
        """CPU time and preemption (grainlab.metrics.preemption.report): the
        grains' CPU and off-CPU time, how many are preempted, how much of the
        critical path's time its threads were off the CPU; with the
        wall-weighted span when weighed by CPU time."""
        from ..metrics import preemption
        found = self.found(0) if found is None else found
        g = self.graph
        hit = P.flagged(g.grains, "preempted", self.resolved_thresholds) \
            if found["preempted"]["available"] else None
        return preemption.report(g, hit)

    def accesses(self, depend_bytes=None) -> pd.DataFrame:
        """The run's data accesses (grainlab.analysis.locality.accesses): its
        grain_data() annotations, or, when it has none and `depend_bytes` is
        given, its `depend` items, each that many bytes."""
        from . import locality
        return locality.accesses(self, depend_bytes)

    def krd(self, domain: str = "llc", *, l2=None, llc=None, depend_bytes=None) -> dict:
        """Kernel Reuse Distance histograms (grainlab.metrics.krd.summary):
        summed, per `domain` ("llc", "numa", "core") and per source location.
        l2, llc: cache sizes in bytes for the close/near/far classes (default:
        the trace's topology). Raises GrainlabError when the trace holds no
        data accesses (krd.NO_ACCESSES says how to add them)."""
        from . import locality
        return locality.krd(self, domain, l2=l2, llc=llc, depend_bytes=depend_bytes)

    @cached_property
    def summary(self) -> dict:
        """`report()` with the default top 10: what `grainlab analyze --json` prints."""
        return self.report(DEFAULT_TOP)

    @property
    def span_parts(self) -> list:
        """[(part, ns)]: what the span is made of (serial start, other serial
        code, team code, grains, their join waits, team barriers; `report.span_parts`)."""
        return report.span_parts(self.summary)

    @property
    def span_text(self) -> str:
        """The span's parts in words, as the views print them (`report.span_text`)."""
        return report.span_text(self.summary)

    @property
    def parallelism_numbers(self) -> list:
        """[(name, value)]: the parallelism of the whole run and of the parallel
        part, by the names every view shows them (`report.parallelism_numbers`)."""
        return report.parallelism_numbers(self.summary)

    @cached_property
    def parallelism_profiles(self) -> dict:
        """Parallelism over time, DataFrames: "exposed" (one row per interval of
        the instantaneous parallelism: start ns, optimistic and conservative
        counts of grains at their earliest start) and "achieved" (grains
        running, from the recorded times: time ns, running)."""
        from ..metrics import instantaneous_parallelism as ip
        g = self.graph_with_metrics
        exposed = ip.kept_profile(g)
        if exposed is None:             # a saved analysis: placed again
            exposed = ip.ideal_profile(g, self.interval)
        return {"exposed": exposed, "achieved": ip.achieved_profile(g)}

    def predict(self, cores=(1, 2, 4, 8, 16), *, what_if: str | None = None,
                merge_below: int | None = None, costs=None, wti=None,
                guard: str = "auto", whole: bool = False, runs=None, measured=None,
                contention=None) -> dict:
        """The grain graph replayed on each core count of `cores` (docs/predict.md):
        predicted time and speed-up, the bounds work/P and span, the burdened
        span (`grainlab predict --json`). what_if: "LOCATION=k", that
        location's grains k times their time; merge_below: tasks deeper than
        this merged into their ancestor at that depth; either gives a second
        replay under "what_if". costs: grainlab.metrics.predict.Costs; wti: a
        work-time-inflation factor, or callable(P) -> factor; guard: "auto" |
        "cpu" | "cap" | "none" (inflated grains); whole: replay the serial
        code before the first parallel region and after the last one too
        (by default the parallel part is timed, as benchmarks time kernels).
        Contention (grainlab.metrics.contention; docs/predict.md): runs:
        traces (paths or Analyses) of the same program at more threads, from
        which each location's inflation is fitted; measured: {threads:
        measured speed-up} (times only: one factor for every grain);
        contention: a ready Contention. Without them "range" holds the
        contention-free prediction and a pessimistic bound."""
        from .prediction import predict
        return predict(self, cores, what_if=what_if, merge_below=merge_below, costs=costs,
                       wti=wti, guard=guard, whole=whole,
                       runs=analyses(runs, self.progress) if runs else runs, measured=measured,
                       contention=contention)

    def compare(self, other, *, threshold: float | None = None) -> "Comparison":
        """Work deviation of this run against `other`, the reference run
        (an Analysis, Trace or path; usually 1 thread), per grain and per location."""
        ref = other if isinstance(other, Analysis) else Analysis(other, progress=self.progress)
        th = self.thresholds["work_deviation"] if threshold is None else threshold
        return Comparison(ref, self, float(th))

    # -- Jupyter ----------------------------------------------------------------
    def _repr_html_(self) -> str:
        return report.html(self)

    # -- save / open ---------------------------------------------------------------
    def save(self, directory) -> Path:
        """Write the graph, its metric columns and the summary to `directory`
        (Parquet + JSON), keyed by the trace's content and grainlab's version:
        `grainlab.open(directory)` reads it back without rebuilding the graph."""
        from . import store
        return store.save(self, Path(directory))


def scaling(runs, *, baseline=None, progress=None):
    """A Scaling (grainlab.analysis.scaling) of `runs`: paths, Traces or
    Analyses of one program and input at several thread counts. `baseline`:
    the run (its position in `runs`) speed-up is measured against; default
    the first with the fewest threads."""
    from .scaling import Scaling
    return Scaling(analyses(runs, progress), baseline=baseline, progress=progress)


def analyses(runs, progress=None) -> list:
    """Each of `runs` (paths, Traces or Analyses) as an Analysis."""
    return [r if isinstance(r, Analysis) else Analysis(r, progress=progress) for r in runs]


def open(directory, *, progress=None) -> Analysis:  # noqa: A001 (gl.open is the API)
    """Reopen an analysis saved with `Analysis.save`. If its trace has changed
    since (content key) or it was saved by another grainlab version, it is
    rebuilt from the trace, never trusted."""
    from . import store
    directory = Path(directory)
    parts = store.open_saved(directory)
    if parts.current:
        return Analysis.from_saved(parts, progress=progress)
    a = Analysis(parts.trace, reference=parts.reference, options=parts.options,
                 progress=progress)
    store.save(a, directory)
    return a


def _graph_while_checking(trace, check):
    """The trace's grain graph, built while `check` (a Future of the trace's
    validation, or None) runs: a failed validation stops the build at its
    next phase, and is the error reported whatever the build made of the
    damaged events."""
    from ..graph import build
    if check is None:
        return build(trace)

    def failed():
        if check.done():
            check.result()
    try:
        return build(trace, checkpoint=failed)
    except Exception:
        check.result()
        raise


__all__ = ["analyze", "open", "scaling", "Analysis", "Comparison", "trace_key", "jsonable"]
