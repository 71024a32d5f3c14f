"""The one registry of metrics: every metric grainlab computes, declared once.

Like Perfetto's trace processor keeps one list of metrics and Hatchet makes a
metric a DataFrame column, each entry here says everything the rest of
grainlab needs to know about a metric:

- what it computes: `compute(ctx)` over the graph's columns (adds `columns`
  to `g.grains`, returns the graph-level value stored under `summary`), and
  what it reads (`needs`: grain or node columns, or "reference", "accesses");
- what it means: `per` (grain, sibling group, graph, ...), `unit`, `label`
  (the app's name for it), `definition` and `source` (docs/metrics.md's
  table is made from these: `markdown_table`, checked by a test);
- when it is a problem: `worse` ("lower" or "higher" is worse), the default
  `threshold` (a number, "auto", or None: never a problem), the problem's
  `meaning`, and an optional `floor` (a second column that must also be past
  a setting, `grainlab.problems`);
- how it composes when one trace is analyzed in parts (`compose`, one of
  COMPOSE: what a parts-wise analysis must do at the parts' boundaries).

Who reads it: `grainlab.metrics.compute_all` (runs `compute` in this
order), `grainlab.problems` (its rules are the entries with a threshold),
`grainlab analyze` (its threshold help), the web app (labels), and
docs/metrics.md. Adding a metric: one module with its function, one entry
here, one test; tests/test_registry.py checks that every entry is computed,
documented and labelled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# How a metric's value for a grain (or the graph) is obtained when a trace is
# analyzed in parts (time windows, regions or subtrees; issue 31).
COMPOSE = {
    "sum": "additive: the whole's value is the sum of the parts' values",
    "local": "a grain's value reads only the grain's own nodes: exact in the part that holds "
             "the grain",
    "group": "reads the grain's sibling group (the grains its parent joins together) or loop "
             "instance: exact when one part holds the whole group, recomputed on the "
             "boundary otherwise",
    "path": "a longest path: the parts' paths are joined through the boundary nodes "
            "(span = serial part + the parts' spans in sequence)",
    "schedule": "reads the earliest-start schedule of the whole graph: recomputed on the "
                "boundary, each part shifted by its earliest start",
    "threads": "per thread over the whole run: the parts' per-thread sums are added, then "
               "the ratios are taken",
    "pair": "per grain matched by identity between two runs: exact in the part that holds "
            "the grain",
}
PER = ("grain", "sibling group / loop instance", "graph", "thread", "grain (2 runs)",
       "run (≥ 2 runs)", "location × run")
WORSE = ("lower", "higher", None)


@dataclass
class Context:
    """What a metric's `compute` may read: the graph and the run's options.
    `values` holds the graph-level values computed so far (read-only by
    convention: a metric returns its own value, it does not write others')."""
    g: object
    interval: object = "median"
    max_intervals: int = 1 << 20
    reference: object = None          # another run's graph (work deviation)
    accesses: object = None           # the run's data accesses (NUMA locality)
    values: dict = field(default_factory=dict)
    # intermediates several metrics read, made once per graph (sibling_groups)
    shared: dict = field(default_factory=dict)

    def sibling_groups(self):
        """The grains' sibling groups (grainlab.metrics.groups.SiblingGroups),
        made once for load balance and scatter: grouping 10^7 grains is a
        sort each time."""
        if "sibling_groups" not in self.shared:
            from .groups import SiblingGroups
            self.shared["sibling_groups"] = SiblingGroups(self.g.grains)
        return self.shared["sibling_groups"]


@dataclass(frozen=True)
class Metric:
    name: str                          # the grain column, or the graph-level value's key
    per: str                           # one of PER
    unit: str
    label: str                         # shown in the app and the docs
    definition: str                    # one line, for docs/metrics.md
    source: str                        # where the definition comes from
    compose: str                       # one of COMPOSE
    columns: tuple = ()                # its grain columns (none: graph-level only)
    by_graph: bool = False             # the columns are made by grainlab.graph, not compute
    needs: tuple = ()                  # grain/node columns, "reference", "accesses"
    summary: tuple = ()                # keys of the graph-level values it returns
    compute: Callable | None = None    # compute(ctx) -> {summary key: value}; None: by the graph
    worse: str | None = None           # which direction is a problem ("lower" | "higher")
    threshold: object = None           # default threshold (float | "auto"); None: no problem
    auto: str = ""                     # the graph-level value an "auto" threshold takes
    meaning: str = ""                  # the problem, in a sentence
    floor: tuple | None = None         # (grain column, setting, scale): also past a setting
    optional: str = ""                 # when it may be absent, and why (no counter, ...)
    # computed on a second thread while the per-grain columns are added: it
    # only reads the graph (numpy releases the GIL in its loops, so on 2 cores
    # the two overlap: fib(28), 1M grains, 1.9 -> 1.4 s)
    background: bool = False
    # computed from several runs, not by compute_all: the module and commands that do
    computed_by: str = ""

    @property
    def is_problem(self) -> bool:
        return self.threshold is not None

    @property
    def below(self) -> bool:
        """A problem when the value is below the threshold."""
        return self.worse == "lower"


# ---------------------------------------------------------------------------
# the compute functions: thin adapters over the metric modules (one job each)

def _work(ctx):
    from . import work
    return work.totals(ctx.g)


def _span(ctx):
    from . import work
    return work.span_values(ctx.g)


def _serial(ctx):
    from . import work
    v = ctx.values
    return {"serial": work.serial_part(ctx.g, v["work_ns"], split=v["critical_path_time"])}


def _parallel_part(ctx):
    from . import work
    return {"parallel_part": work.parallel_part(ctx.g)}


def _cores(ctx):
    from .contract import cores_used, threads_used
    return {"cores_used": cores_used(ctx.g), "threads_used": threads_used(ctx.g)}


def _parallel_benefit(ctx):
    from . import parallel_benefit
    parallel_benefit.compute(ctx.g)
    return {}


def _load_balance(ctx):
    from . import load_balance
    load_balance.compute(ctx.g, ctx.sibling_groups().by_construct)
    return {}


def _scatter(ctx):
    from . import scatter
    distance = scatter.compute(ctx.g, ctx.sibling_groups().plain)
    # the last reader in this order: the labels (16 B per grain) are not
    # kept through instantaneous parallelism, the metrics' peak (a reader
    # placed later would make them again, the same)
    ctx.shared.pop("sibling_groups", None)
    return {"scatter_distance": distance,
            "cores_per_socket": scatter.cores_per_socket(ctx.g.meta, ctx.values["cores_used"])}


def _instantaneous_parallelism(ctx):
    from . import instantaneous_parallelism as ip
    return {"instantaneous_parallelism": ip.compute(ctx.g, ctx.interval, ctx.max_intervals)}


def _achieved(ctx):
    from . import instantaneous_parallelism as ip
    return {"instantaneous_parallelism": ip.achieved_stats(ctx.g)}


def _memory_hierarchy(ctx):
    from . import memory_hierarchy
    return {"memory_hierarchy_utilization": memory_hierarchy.compute(ctx.g) or "computed"}


def _cpu_time(ctx):
    from . import preemption
    return {"cpu_time": preemption.compute(ctx.g) or "computed"}


def _time_decomposition(ctx):
    from . import time_decomposition as td
    out = td.decompose(ctx.g)
    if ctx.reference is not None:       # the speed-up terms against the reference run
        out.update(td.speedup_terms(out, td.decompose(ctx.reference)))
    return {"time_decomposition": out}


def _numa_locality(ctx):
    if ctx.accesses is None:
        return {}
    from . import numa_locality
    return {"numa_locality": numa_locality.compute(ctx.g, ctx.accesses)}


def _work_deviation(ctx):
    if ctx.reference is None:
        return {}
    from . import work_deviation
    return {"work_deviation": work_deviation.compute(ctx.g, ctx.reference)}


# ---------------------------------------------------------------------------
# the registry, in the order compute_all runs it (PROBLEM_ORDER: reports' order)

METRICS: tuple[Metric, ...] = (
    Metric("work", "grain", "ns", "Work",
           "time in the grain's own fragments, without runtime calls and other grains run "
           "inside it; graph: Σ node durations",
           "thesis §5.4.1, Table 4.1", "sum",
           columns=("work",), by_graph=True, needs=("duration",),
           summary=("grains", "tasks", "chunks", "work_ns", "grain_work_ns"), compute=_work),
    Metric("grain_costs", "grain", "ns", "Creation, book-keeping and sync cost",
           "`creation_cost`: fork duration; `bookkeeping_cost`: book-keeping before a chunk; "
           "`sync_cost`: the parent's sync time at the join ÷ grains joined there",
           "thesis §5.4.2", "group",
           columns=("creation_cost", "bookkeeping_cost", "sync_cost"), by_graph=True),
    Metric("span", "graph", "ns", "Span and critical path",
           "critical-path length (exact, on the fragment-level graph), `parallelism` = "
           "work / span of the whole run, `critical_path` its grains, `critical_path_time` the span split by "
           "whose nodes it runs through (grains' fragments, chunks and forks; the grains' "
           "joins, their waits; initial / implicit tasks; team barriers); grain column "
           "`on_critical_path`",
           "thesis Table 4.1", "path",
           columns=("on_critical_path",), by_graph=True, needs=("duration",),
           summary=("span_ns", "parallelism", "critical_path", "critical_path_time"),
           compute=_span),
    Metric("serial", "graph", "ns", "Serial part (Amdahl)",
           "the initial task's code on the critical path, which runs alone on any number of "
           "cores: `serial_ns`, Amdahl's bound `amdahl_speedup` = work / serial_ns, "
           "`serial_start_ns`, its code before the first parallel region, and "
           "`serial_end_ns`, after the last region's end",
           "Amdahl; issue 34", "path",
           summary=("serial",), compute=_serial),
    Metric("parallel_part", "graph", "ns, ratio", "Parallelism of the parallel part",
           "work / span from the first parallel region's fork to the last region's end: the "
           "initial task's code before and after weighs nothing (the serial code between "
           "regions stays); `work_ns`, `span_ns`, `parallelism`, `outside_ns` (the time left "
           "out). `parallelism` above is the whole run's (program start to exit)",
           "issue 32; what `grainlab predict` replays (docs/predict.md)", "path",
           summary=("parallel_part",), compute=_parallel_part, background=True),
    Metric("cores_used", "graph", "cores", "Cores used",
           "threads that ran anything, but no more than the CPUs they ran on; "
           "`threads_used` the threads", "thesis §5.4.3", "sum",
           needs=("thread", "cpu"), summary=("cores_used", "threads_used"), compute=_cores),
    Metric("parallel_benefit", "grain", "ratio", "Parallel benefit",
           "work / (creation_cost or bookkeeping_cost + sync_cost)",
           "thesis §5.4.2–5.4.3", "group",
           columns=("parallel_benefit",),
           needs=("work", "creation_cost", "bookkeeping_cost", "sync_cost"),
           compute=_parallel_benefit, worse="lower", threshold=1.0,
           meaning="grain work does not pay for its creation and sync"),
    Metric("load_balance", "sibling group / loop instance", "ratio", "Load balance",
           "longest grain / median length of the chains of consecutive grains (per thread "
           "for loops)", "thesis §5.4.2–5.4.3 (threshold 1.5, thesis 1)", "group",
           columns=("load_balance",), needs=("work", "parent", "thread"),
           compute=_load_balance, worse="higher", threshold=1.5,
           meaning="one grain approaches the makespan of its sibling group"),
    Metric("scatter", "sibling group / loop instance", "cpu-id steps (or NUMA distance)",
           "Scatter",
           "median pairwise distance between the cores that ran the grains",
           "thesis §5.4.2–5.4.3", "group",
           columns=("scatter",), needs=("cpu", "parent"),
           summary=("scatter_distance", "cores_per_socket"), compute=_scatter,
           worse="higher", threshold="auto", auto="cores_per_socket",
           meaning="siblings run on cores far apart"),
    Metric("instantaneous_parallelism", "grain", "grains", "Instantaneous parallelism",
           "min, over the intervals the grain overlaps, of the grains overlapping each "
           "interval (optimistic) in the earliest-start schedule; "
           "`instantaneous_parallelism_conservative` counts only grains covering the whole "
           "interval; `earliest_start` the grain's start in that schedule",
           "thesis §5.4.2, Fig. 5.4", "schedule",
           columns=("instantaneous_parallelism", "instantaneous_parallelism_conservative",
                    "earliest_start"),
           needs=("duration", "work"), summary=("instantaneous_parallelism",),
           compute=_instantaneous_parallelism, worse="lower", threshold="auto",
           auto="cores_used",
           meaning="too little parallelism to feed the cores"),
    Metric("achieved_parallelism", "graph", "grains", "Achieved parallelism",
           "threads running a grain over time, from the recorded timestamps (never above "
           "the threads); joins the `instantaneous_parallelism` values as `achieved_*`",
           "DESIGN.md", "threads",
           needs=("start", "end", "thread"),
           summary=("instantaneous_parallelism",), compute=_achieved, background=True),
    Metric("memory_hierarchy_utilization", "grain", "ratio", "Memory-hierarchy utilization",
           "(cycles − stalled cycles) / stalled cycles", "thesis §5.4.2–5.4.3", "local",
           columns=("memory_hierarchy_utilization",), needs=("stall and cycle counters",),
           summary=("memory_hierarchy_utilization",), compute=_memory_hierarchy,
           worse="lower", threshold=2.0, meaning="grain mostly waits for memory",
           optional="only when stall and cycle counters were recorded"),
    Metric("preempted", "grain", "ratio", "Preempted (wall / CPU time)",
           "work / cpu_ns: how many times longer the grain took than it ran; `cpu_ns` the "
           "time its thread really ran during its fragments, `off_cpu_ns` = work − cpu_ns",
           "issue 20", "local",
           columns=("cpu_ns", "off_cpu_ns", "preempted"), needs=("CPU time counters",),
           summary=("cpu_time",), compute=_cpu_time, worse="higher", threshold=1.5,
           meaning="grain's thread was off the CPU (preempted or blocked) for much of its "
                   "wall time",
           floor=("off_cpu_ns", "preempted_min_us", 1e3),
           optional="only when CPU time was recorded: record --cpu-time"),
    Metric("time_decomposition", "thread", "ns", "Time decomposition",
           "per thread: work / overhead (create, schedule, sync, runtime) / idle, and off-CPU "
           "time where CPU time was recorded; N the team; with two runs OVR, WTI and the "
           "speed-up they explain (docs/metrics.md)",
           "Olivier et al. SC 2012 §2–3 (seed 000)", "threads",
           needs=("duration", "thread"), summary=("time_decomposition",),
           compute=_time_decomposition, background=True),
    Metric("work_deviation", "grain (2 runs)", "ratio", "Work deviation",
           "work in this run / work of the same grain (by identity) in the reference run",
           "thesis §5.4.2–5.4.3", "pair",
           columns=("work_deviation",), needs=("work", "identity", "reference"),
           summary=("work_deviation",), compute=_work_deviation, worse="higher",
           threshold=2.0, meaning="grain takes longer than in the reference run",
           optional="only against a reference run: grainlab compare"),
    Metric("numa_locality", "grain", "share", "NUMA locality",
           "byte-weighted share of the grain's annotated data (`grain_data()`, recorded with "
           "`GRAINLAB_PAGES=1`) on the NUMA node of the CPU that used it; also "
           "`remote_bytes`, and `data_bytes` (its annotated footprint)",
           "seeds 002, 004; docs/locality.md", "local",
           columns=("numa_locality", "remote_bytes", "data_bytes"), needs=("accesses",),
           summary=("numa_locality",), compute=_numa_locality, worse="lower", threshold=0.5,
           meaning="most of the grain's annotated data is on another NUMA node than the CPU "
                   "it ran on",
           optional="only when the run's data accesses carry their NUMA node"),
    Metric("scaling", "run (≥ 2 runs)", "ratio", "Scaling: speed-up, OVR, WTI",
           "`speedup` T_B / T_N; `wti` work_N / work_B; `ovr` the overhead and idle ratio "
           "against the baseline, so that speed-up = (N / N_B) / (OVR · WTI) "
           "(\"Time decomposition and scaling\" below); `efficiency` speed-up / (N / N_B)",
           "Olivier et al. SC 2012 (seed 000); seed 001 §II", "threads",
           summary=("speedup", "ovr", "wti", "efficiency"),
           computed_by="grainlab.metrics.scaling (grainlab scaling, compare)"),
    Metric("inflation", "location × run", "ratio, ns", "Work time inflation per location",
           "mean work per task (per iteration for loops) at N / at the baseline; "
           "`added_work_ns` = the difference × grains", "seed 001 Table I", "sum",
           summary=("inflation", "added_work_ns"),
           computed_by="grainlab.metrics.scaling (grainlab scaling)"),
)

BY_NAME = {m.name: m for m in METRICS}
# the metrics that flag problems, in the order reports list them
PROBLEM_ORDER = ("parallel_benefit", "load_balance", "work_deviation",
                 "instantaneous_parallelism", "scatter", "memory_hierarchy_utilization",
                 "numa_locality", "preempted")
PROBLEMS = tuple(BY_NAME[n] for n in PROBLEM_ORDER)


def grain_columns() -> tuple:
    """Every grain column a metric adds or the graph provides, in registry order."""
    return tuple(c for m in METRICS for c in m.columns)


def label(name: str) -> str:
    """The app's name of a metric or of one of its columns."""
    m = BY_NAME.get(name) or next((m for m in METRICS if name in m.columns), None)
    return m.label if m is not None else name


def check() -> list[str]:
    """What is wrong with the registry's declarations (an empty list: nothing)."""
    bad = []
    if set(PROBLEM_ORDER) != {m.name for m in METRICS if m.is_problem}:
        bad.append("PROBLEM_ORDER is not exactly the metrics with a threshold")
    seen = set()
    for m in METRICS:
        if m.per not in PER:
            bad.append(f"{m.name}: per {m.per!r} not in {PER}")
        if m.compose not in COMPOSE:
            bad.append(f"{m.name}: compose {m.compose!r} not in COMPOSE")
        if m.worse not in WORSE:
            bad.append(f"{m.name}: worse {m.worse!r}")
        if m.is_problem and (m.worse is None or not m.meaning or m.name not in m.columns):
            bad.append(f"{m.name}: a problem needs a direction, a meaning and its column")
        if (m.threshold == "auto") != bool(m.auto):
            bad.append(f"{m.name}: an 'auto' threshold names the value it takes, and only it")
        if not (m.label and m.unit and m.definition and m.source):
            bad.append(f"{m.name}: label, unit, definition and source are required")
        if m.compute is None and not (m.by_graph and not m.summary) and not m.computed_by:
            bad.append(f"{m.name}: without compute: grain columns the graph makes, or "
                       "computed_by another module")
        for key in m.columns:        # summary values of one key are merged (dicts)
            if key in seen:
                bad.append(f"{m.name}: column {key} declared twice")
            seen.add(key)
    return bad


def markdown_table() -> str:
    """docs/metrics.md's metric table, made from the registry."""
    rows = ["| metric | columns / values | per | definition | unit | problem when (default) "
            "| composes in parts | source |", "|---|---|---|---|---|---|---|---|"]
    for m in METRICS:
        names = ", ".join(f"`{c}`" for c in (*m.columns, *m.summary)) or "—"
        problem = "—"
        if m.is_problem:
            problem = f"{'<' if m.below else '>'} " + (
                f"{m.auto.replace('_', ' ')} (auto)" if m.auto else f"{m.threshold:g}")
            if m.floor:
                problem += f" and `{m.floor[0]}` ≥ `{m.floor[1]}`"
        definition = m.definition + (f" ({m.optional})" if m.optional else "")
        if m.computed_by:
            definition += f"; computed by {m.computed_by}"
        rows.append(f"| {m.label} | {names} | {m.per} | {definition} | {m.unit} | {problem} "
                    f"| {m.compose} | {m.source} |")
    return "\n".join(rows)


TABLE_BEGIN = "<!-- metric table: made by grainlab.metrics.registry.markdown_table -->"
TABLE_END = "<!-- end of metric table -->"


if __name__ == "__main__":    # python -m grainlab.metrics.registry: the docs' table
    print(TABLE_BEGIN)
    print(markdown_table())
    print(TABLE_END)
