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

import math
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .. import problems as P
from ..errors import GrainlabError
from ..trace.file import trace_key
from .options import Options

DEFAULT_TOP = 10




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
                 progress=None, **keywords):
        """keywords: thresholds, interval, region, window, weigh (as `analyze`
        takes them), or `options` (an Options) instead."""
        from ..trace.trace import Trace
        self._progress = progress or (lambda _msg: None)
        given = isinstance(trace_or_path, Trace)
        self._given_trace = trace_or_path if given else None
        self.path = Path(trace_or_path.path if given else trace_or_path)
        if options is not None and keywords:
            raise TypeError("Analysis: give options or keywords, not both")
        self.options = options or Options(**keywords)   # bad values fail before loading
        self._reference = reference
        self._saved = None

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
        b = Analysis(self.trace, options=replace(self.options, region=region, window=window),
                     progress=self._progress)
        b.path = self.path
        b.__dict__["_whole_graph"] = self._whole_graph     # the cached_property's slot
        return b

    # -- the pipeline, one cached step each ---------------------------------
    @cached_property
    def _loaded(self):
        """(trace, check): the trace read, its validation running on a thread
        (grainlab.trace.trace.load_checking) while the graph is built; a
        given trace has no check."""
        if self._given_trace is not None:
            return self._given_trace, None
        from ..trace.trace import load_checking
        self._progress(f"loading {self.path}")
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
    def _whole_graph(self):
        """The grain graph of the whole run, built while the trace is validated."""
        trace, check = self._loaded
        self._progress(f"building the grain graph ({len(trace.events)} events)")
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
        g = self._whole_graph
        sel = self.selection
        if sel is not None:
            from ..graph.select import select
            self._progress("selecting " + sel["description"])
            g = select(g, region_contexts=sel["contexts"], window=sel["window_trace_ns"])
        if self.weigh == "cpu":
            from ..metrics.preemption import weigh_cpu
            self._progress("weighing grains by CPU time")
            g = weigh_cpu(g, str(self.path))
        return g

    @cached_property
    def selection(self) -> dict | None:
        """The part of the run analyzed (None: all of it): description,
        regions (numbers as `grainlab info` lists them), window_ns (from the
        trace's start), and the graph ids it stands for (grainlab.analysis.selection)."""
        if self.region is None and self.window is None:
            return None
        from .selection import choose
        return choose(self.trace, lambda: self._whole_graph, self.region, self.window)

    @cached_property
    def _computed(self) -> tuple:
        """(graph, metric values): `grainlab.metrics.compute_all` run once,
        which adds every per-grain metric column to the graph."""
        if self._saved is not None:
            return self._saved.graph, self._saved.metrics
        from ..metrics import compute_all
        ref = self.reference
        values = compute_all(self.graph, interval=self.interval, progress=self._progress,
                             reference=None if ref is None else ref.graph,
                             accesses=self.trace.accesses)
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
        return Analysis(ref, options=self.options.for_reference(), progress=self._progress)

    @cached_property
    def locations(self) -> pd.Series:
        """Source location of every grain (`file:line (function)`), index = grain id."""
        if self._saved is not None:
            return self._saved.locations
        from ..symbolize import grain_locations
        g = self.graph
        self._progress("source locations")
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
    def _found(self, top) -> dict:
        return P.evaluate(self.graph_with_metrics, self.resolved_thresholds, self.locations,
                          top=top)

    def problems(self, top: int = DEFAULT_TOP) -> pd.DataFrame:
        """One row per problem metric (thesis §5.4.3): threshold, direction,
        available, grains, percent, on_critical_path, work_ns, meaning, and the
        `top` source locations responsible (a list of dicts)."""
        found = self._found(top)
        return pd.DataFrame.from_dict(found, orient="index").rename_axis("metric")

    def by_location(self) -> pd.DataFrame:
        """One row per source location, by work: grains, work_ns, work_percent
        and the % of its grains flagged by each available problem (thesis Fig. 5.8)."""
        rows = top_locations(self.graph.grains, self.locations, self._found(0),
                             self.resolved_thresholds, None)
        if not rows:
            return pd.DataFrame(columns=["grains", "work_ns", "work_percent"]).rename_axis(
                "location")
        flat = [{"location": r["location"], "grains": r["grains"], "work_ns": r["work_ns"],
                 "work_percent": r["work_percent"],
                 **{f"{k}_percent": v for k, v in r["problem_percent"].items()}} for r in rows]
        return pd.DataFrame(flat).set_index("location")

    def report(self, top: int = DEFAULT_TOP) -> dict:
        """What `grainlab analyze --json --top N` prints (JSON-able)."""
        g, summary, run = self.graph, self.metrics, self.run
        found = self._found(top)
        th = self.resolved_thresholds
        return jsonable({
            "trace": run["trace"],
            "program": run["program"],
            "complete": run["complete"],
            "selection": run.get("selection"),
            **{k: summary[k] for k in ("grains", "tasks", "chunks", "work_ns", "grain_work_ns",
                                       "span_ns", "parallelism", "critical_path",
                                       "cores_used", "threads_used")},
            "thresholds": th,
            "problems": found,
            "instantaneous_parallelism": summary["instantaneous_parallelism"],
            "time_decomposition": summary["time_decomposition"],
            "memory_hierarchy_utilization": summary["memory_hierarchy_utilization"],
            "numa_locality": summary.get("numa_locality", "not computed"),
            "scatter_distance": summary["scatter_distance"],
            "locations": top_locations(g.grains, self.locations, found, th, top),
            "critical_path_grains": critical_grains(g, self.locations,
                                                    summary["critical_path"], top),
            "critical_path_time": path_time(g, summary["critical_path_time"]),
            "weights": self.weigh,
            "preemption": self.preemption(found),
        })

    def preemption(self, found=None) -> dict:
        """CPU time and preemption (grainlab.metrics.preemption.report): the
        grains' CPU and off-CPU time, how many are preempted, how much of the
        critical path's time its threads were off the CPU; with the
        wall-weighted span when weighed by CPU time."""
        from ..metrics import preemption
        found = self._found(0) if found is None else found
        g = self.graph
        hit = P.flagged(g.grains, "preempted", self.resolved_thresholds) \
            if found["preempted"]["available"] else None
        return preemption.report(g, hit)

    def accesses(self, depend_bytes=None) -> pd.DataFrame:
        """The run's data accesses (grainlab.trace.accesses): its grain_data()
        annotations, or, when it has none and `depend_bytes` is given, its
        `depend` items, each that many bytes."""
        from ..trace.accesses import from_dependences, parse_depend_bytes
        nbytes = None if depend_bytes is None else parse_depend_bytes(depend_bytes)
        trace = self.trace
        if len(trace.accesses) or nbytes is None:
            return trace.accesses
        return from_dependences(trace.events, nbytes)

    def krd(self, domain: str = "llc", *, l2=None, llc=None, depend_bytes=None) -> dict:
        """Kernel Reuse Distance histograms (grainlab.metrics.krd.summary):
        summed, per `domain` ("llc", "numa", "core") and per source location.
        l2, llc: cache sizes in bytes for the close/near/far classes (default:
        the trace's topology). Raises GrainlabError when the trace holds no
        data accesses (krd.NO_ACCESSES says how to add them)."""
        from ..metrics import krd as K
        from ..symbolize import symbolize
        acc = self.accesses(depend_bytes)
        if not len(acc):
            raise GrainlabError(K.no_accesses(self.path, self.trace.events))
        r = K.reuse(acc, self.trace.meta.get("topology"), domain, l2, llc)
        codes = np.unique(r.codeptr)
        names = dict(zip(codes.tolist(), symbolize(codes, self.trace.meta.get("loadmap", []))))
        return K.summary(r, names)

    @cached_property
    def summary(self) -> dict:
        """`report()` with the default top 10: what `grainlab analyze --json` prints."""
        return self.report(DEFAULT_TOP)

    @property
    def span_note(self) -> str | None:
        """"N% of the span in grains" when that share is small (`span_note`)."""
        return span_note(self.summary)

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
                guard: str = "auto", whole: bool = False) -> dict:
        """The grain graph replayed on each core count of `cores` (docs/predict.md):
        predicted time and speed-up, the bounds work/P and span, the burdened
        span (`grainlab predict --json`). what_if: "LOCATION=k", that
        location's grains k times their time; merge_below: tasks deeper than
        this merged into their ancestor at that depth; either gives a second
        replay under "what_if". costs: grainlab.metrics.predict.Costs; wti: a
        work-time-inflation factor, or callable(P) -> factor; guard: "auto" |
        "cpu" | "cap" | "none" (inflated grains); whole: replay the serial
        code before the first parallel region and after the last one too
        (by default the parallel part is timed, as benchmarks time kernels)."""
        from ..metrics.predict import predict
        from ..metrics.replay_graph import location_mask, replay_graph
        g = self.graph
        cores = list(cores)
        self._progress(f"replaying the grain graph on {', '.join(map(str, cores))} cores")
        out = {"trace": str(self.path), "program": self.run["program"],
               **predict(replay_graph(g, guard=guard, whole=whole), cores, costs, wti)}
        if what_if is None and merge_below is None:
            return jsonable(out)
        scale, change = None, []
        if what_if is not None:
            location, k = _what_if(what_if)
            mask = location_mask(self.locations, location)
            scale = (mask, k)
            change.append(f"{int(mask.sum())} grains at {location} x{k:g}")
        if merge_below is not None:
            change.append(f"tasks deeper than {merge_below} merged into their root grain")
        rep = replay_graph(g, guard=guard, scale=scale, merge_below=merge_below, whole=whole)
        alt = predict(rep, cores, costs, wti)
        alt["change"] = "; ".join(change)
        alt["speedup_vs_baseline"] = [out["work_ns"] / max(t, 1) for t in alt["predicted_ns"]]
        alt["gain"] = [a / max(b, 1) for a, b in zip(out["predicted_ns"], alt["predicted_ns"])]
        out["what_if"] = alt
        return jsonable(out)

    def compare(self, other, *, threshold: float | None = None) -> "Comparison":
        """Work deviation of this run against `other`, the reference run
        (an Analysis, Trace or path; usually 1 thread), per grain and per location."""
        ref = other if isinstance(other, Analysis) else Analysis(other, progress=self._progress)
        th = self.thresholds["work_deviation"] if threshold is None else threshold
        return Comparison(ref, self, float(th))

    # -- Jupyter ----------------------------------------------------------------
    def _repr_html_(self) -> str:
        s = self.summary
        head = (f"<b>{_esc(s['program'])}</b> ({_esc(s['trace'])})<br>"
                f"{s['grains']} grains ({s['tasks']} tasks, {s['chunks']} chunks), "
                f"span {s['span_ns']} ns, parallelism {s['parallelism']:.3g}")
        cols = ["threshold", "direction", "available", "grains", "percent", "on_critical_path"]
        return head + self.problems()[cols].to_html(float_format=lambda v: f"{v:.3g}")

    # -- save / open ---------------------------------------------------------------
    def save(self, directory) -> Path:
        """Write the graph, its metric columns and the summary to `directory`
        (Parquet + JSON), keyed by the trace's content and grainlab's version:
        `grainlab.open(directory)` reads it back without rebuilding the graph."""
        from . import store
        return store.save(self, Path(directory))


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


# ---------------------------------------------------------------------------
# Comparison of two runs


class Comparison:
    """Run B (`b`) against reference run A (`a`), grains matched by identity.

    grains     DataFrame, one row per grain of B matched in A: identity, kind,
               location, work_a_ns, work_b_ns, work_deviation, inflated
    locations  DataFrame, one row per source location of B: grains, work_a_ns,
               work_b_ns, work_deviation, inflated (grains)
    report(top) / summary: what `grainlab compare --json` prints
    """

    def __init__(self, a: Analysis, b: Analysis, threshold: float):
        from ..metrics import time_decomposition, work_deviation
        self.a, self.b, self.threshold = a, b, threshold
        ga, gb = a.graph, b.graph
        self.info = work_deviation.compute(gb, ga)
        if self.info["matched"] == 0 and (len(ga.grains) or len(gb.grains)):
            raise GrainlabError(f"{b.path}: no grain matches a grain of {a.path} by identity "
                                "(different programs or inputs?)")
        gr = gb.grains
        dev = gr[work_deviation.COLUMN].to_numpy(np.float64)
        pos = work_deviation.match(ga.grains, gr, work_deviation.hashes_of(ga),
                                   work_deviation.hashes_of(gb))
        work_a = np.where(pos >= 0, ga.grains["work"].to_numpy(np.int64)[np.maximum(pos, 0)], 0)
        with np.errstate(invalid="ignore"):
            inflated = dev > threshold
        self.matched = ~np.isnan(dev)
        self.inflated = inflated
        self._graph_b = gb
        # identities: a column only when the graph has one (short identities);
        # report() makes the ones it prints on demand
        per = {"identity": gr["identity"].to_numpy()} if "identity" in gr else {}
        self.per_grain = pd.DataFrame({
            **per, "kind": gr["kind"].to_numpy(),
            "location": b.locations.to_numpy(), "work_a_ns": work_a,
            "work_b_ns": gr["work"].to_numpy(np.int64), "work_deviation": dev,
            "inflated": inflated, "on_critical_path": gr["on_critical_path"].to_numpy(bool)},
            index=gr.index)
        self.time_a = time_decomposition.decompose(ga)
        self.time_b = time_decomposition.decompose(gb)
        self.terms = time_decomposition.speedup_terms(self.time_b, self.time_a)

    @cached_property
    def grains(self) -> pd.DataFrame:
        return self.per_grain[self.matched]

    @cached_property
    def locations(self) -> pd.DataFrame:
        from ..metrics import work_deviation
        m = self.grains
        by = m.groupby("location", sort=False).agg(
            grains=("work_a_ns", "size"), work_a_ns=("work_a_ns", "sum"),
            work_b_ns=("work_b_ns", "sum"), inflated=("inflated", "sum"))
        by["work_deviation"] = work_deviation.ratio(by["work_b_ns"].to_numpy(),
                                                    by["work_a_ns"].to_numpy())
        return by.sort_values("work_b_ns", ascending=False)

    def report(self, top: int | None = DEFAULT_TOP) -> dict:
        """What `grainlab compare --json` prints; `top` None lists everything."""
        from ..metrics import work_deviation
        info, a, b = self.info, self.a, self.b
        by = self.locations if top is None else self.locations.head(top)
        pg = self.per_grain
        dev = pg["work_deviation"].to_numpy()
        work_b = pg["work_b_ns"].to_numpy()
        idx = np.flatnonzero(self.matched)
        order = idx[np.lexsort((-work_b[idx], -np.nan_to_num(dev[idx], posinf=1e300)))]
        if top is not None:
            order = order[:top]
        n = len(pg)
        inflated, crit = self.inflated, pg["on_critical_path"].to_numpy()
        return jsonable({
            "a": a.run["trace"], "b": b.run["trace"], "program": b.run["program"],
            "threads_a": self.time_a["threads"], "threads_b": self.time_b["threads"],
            "grains_a": info["grains_a"], "grains_b": info["grains_b"],
            "matched": info["matched"],
            "only_a": info["grains_a"] - info["matched"], "only_b": n - info["matched"],
            "work_a_ns": info["work_a_matched_ns"], "work_b_ns": info["work_b_matched_ns"],
            "work_deviation": float(work_deviation.ratio(
                np.array([info["work_b_matched_ns"]]), np.array([info["work_a_matched_ns"]]))[0]),
            "threshold": self.threshold,
            "inflated": {"grains": int(inflated.sum()),
                         "percent": 100.0 * int(inflated.sum()) / n if n else 0.0,
                         "on_critical_path": int((inflated & crit).sum())},
            "time_decomposition": {"a": self.time_a, "b": self.time_b, **self.terms},
            "locations": [{"location": str(k), "grains": int(r.grains),
                           "work_a_ns": int(r.work_a_ns), "work_b_ns": int(r.work_b_ns),
                           "work_deviation": float(r.work_deviation),
                           "inflated": int(r.inflated)} for k, r in by.iterrows()],
            "grains": [{"grain": int(i), "identity": _text(name),
                        "kind": str(pg.at[i, "kind"]), "location": str(pg.at[i, "location"]),
                        "work_a_ns": int(pg.at[i, "work_a_ns"]),
                        "work_b_ns": int(pg.at[i, "work_b_ns"]),
                        "work_deviation": float(pg.at[i, "work_deviation"])}
                       for i, name in zip(order.tolist(),
                                          _identities(self._graph_b, pg.index.to_numpy()[order]))],
        })

    @cached_property
    def summary(self) -> dict:
        return self.report(DEFAULT_TOP)


# ---------------------------------------------------------------------------
# Pieces of the report (columns in, plain dicts out)


def top_locations(gr, locations, found, th, top) -> list:
    """Every source location with its grains and work, and the % of its grains
    flagged by each available problem (thesis Fig. 5.8), by work: the first
    `top` of them (None: all)."""
    if len(gr) == 0:
        return []
    codes, names = P.location_codes(locations)
    df = pd.DataFrame({"location": codes, "work": gr["work"].to_numpy(np.int64)})
    for name, res in found.items():
        if res["available"]:
            df[name] = P.flagged(gr, name, th)
    flags = [c for c in df.columns if c in P.RULES]
    by = df.groupby("location", sort=False).agg(
        grains=("work", "size"), work_ns=("work", "sum"), **{f: (f, "mean") for f in flags})
    by = by.sort_values("work_ns", ascending=False)
    if top is not None:
        by = by.head(top)
    total = max(int(gr["work"].sum()), 1)
    return [{"location": str(names[code]), "grains": int(r["grains"]), "work_ns": int(r["work_ns"]),
             "work_percent": 100.0 * float(r["work_ns"]) / total,
             "problem_percent": {f: 100.0 * float(r[f]) for f in flags}}
            for code, r in by.iterrows()]


def _what_if(text: str) -> tuple[str, float]:
    """"fib.c:28=0.5" -> ("fib.c:28", 0.5)."""
    from ..errors import UsageError
    location, _, k = str(text).rpartition("=")
    try:
        factor = float(k)
    except ValueError:
        factor = -1.0
    if not location.strip() or not math.isfinite(factor) or factor < 0:
        raise UsageError(f"--what-if {text}: give LOCATION=k with k >= 0, e.g. fib.c:28=0.5")
    return location.strip(), factor


def critical_grains(g, locations, path, top) -> list:
    """The first `top` grains of the critical path (identities made for
    those grains only)."""
    gr = g.grains
    ids = np.asarray(path, np.int64)[:top] if top else np.zeros(0, np.int64)
    locations = pd.Series(locations).iloc[ids].to_numpy(dtype=object) if len(ids) else []
    names = _identities(g, ids)
    return [{"grain": int(i), "kind": str(gr.at[i, "kind"]), "identity": _text(name),
             "location": str(where), "work_ns": int(gr.at[i, "work"])}
            for i, where, name in zip(ids.tolist(), locations, names)]


def span_in_grains(report: dict) -> float:
    """Share of the span on the critical path's grains (the rest: serial
    code, task creation and waits in the initial / implicit tasks, team
    barriers). The views say it when it is under SPAN_IN_GRAINS_NOTED."""
    span = report["span_ns"]
    return report["critical_path_time"]["grains_ns"] / span if span > 0 else 1.0


SPAN_IN_GRAINS_NOTED = 0.9


def span_note(report: dict) -> str | None:
    """"N% of the span in grains" when the critical path runs mostly outside
    grains (under SPAN_IN_GRAINS_NOTED): a path through serial code and the
    runtime says the grains are not the problem. None otherwise."""
    share = span_in_grains(report)
    return None if share >= SPAN_IN_GRAINS_NOTED else f"{100.0 * share:.0f}% of the span in grains"


def path_time(g, split: dict) -> dict:
    """The metrics' span split (metrics.work.critical_path_time) with each
    context's identity."""
    ctx = split["contexts"]
    names = _identities(g, [c["context"] for c in ctx]) if ctx else []
    return {**split, "contexts": [{**c, "identity": _text(n)} for c, n in zip(ctx, names)]}


def _identities(g, ids) -> list:
    """Identity strings of grain ids, made on demand (GrainGraph.identities);
    from the identity column for graph-like objects without one."""
    if hasattr(g, "identities"):
        return list(g.identities(ids))
    col = g.grains["identity"]
    return [None if pd.isna(v) else v for v in col.loc[np.asarray(ids, np.int64)]]


def _text(identity) -> str:
    """An identity as the reports always printed it (str(NaN) for none)."""
    return "nan" if identity is None else str(identity)


def program_of(meta: dict) -> str:
    """The run's command line, from trace metadata."""
    cmd = meta.get("command")
    if isinstance(cmd, list) and cmd:
        return " ".join(map(str, cmd))
    return str(cmd or "?")


def jsonable(x):
    """Plain JSON types: numpy scalars unwrapped, non-finite floats -> None."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x


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


def _esc(s) -> str:
    import html
    return html.escape(str(s))


__all__ = ["analyze", "open", "Analysis", "Comparison", "trace_key", "jsonable"]
