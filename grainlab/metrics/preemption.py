"""CPU time of grains, and grains inflated by preemption (docs/metrics.md,
"CPU time and preemption").

On a busy machine (a shared node, a cloud VM) a grain's wall time includes
the time its thread was switched out: one preempted grain can become the
whole critical path. Where the trace records how long each thread was really
running (`grainlab record --cpu-time`, the collector's `off-cpu` counter; or
`--counters task-clock`), every node has an off-CPU time, the counter's
increase over the node's own time (its thread's time in it: a fragment's or
chunk's, a fork's, a join's `sync_time`, a team barrier's summed over its
threads), and a CPU time:

  off     = off-cpu over the node's own time
            (task-clock recorded: own time - task-clock over it)
  cpu     = duration - off, capped to [0, duration]
  (NaN where the thread's counter did not read, and for forks with task-clock)

A fork weighs its estimated creation cost and a join its resume latency
(docs/graph-model.md), not their whole own time: all of their off-CPU time is
charged to that weight (a waiting thread switched out cannot resume: its
latency is the time it was off the CPU). The serial code before a region and
the region's forks are measured since issue 34's collector reads counters at
PARALLEL_BEGIN/END; in older traces forks and region ends are unmeasured
(NaN: they keep their wall weights).

and per grain (columns of `g.grains`, only where recorded):

  cpu_ns       sum of its fragments' / its chunk's CPU time (float ns)
  off_cpu_ns   work - cpu_ns: time its thread was not running while it was
               the grain's (preempted, or blocked in a system call)
  preempted    work / cpu_ns (inf for no CPU time at all): how many times
               longer the grain took than it ran. Problem (grainlab.problems)
               when > 1.5 and off_cpu_ns >= 100 us.

`weigh_cpu(g)` gives the graph with every measured node weighing its CPU
time instead of its wall time (`grainlab analyze --weigh cpu`): the critical
path, span, work and parallelism, and every metric computed from weights,
then describe the program as if no thread had been switched out. Nodes whose
counter did not read keep their wall weights.
"""
from __future__ import annotations

import copy

import numpy as np

from .contract import is_one_of

CPU_NS, OFF_CPU_NS, COLUMN = "cpu_ns", "off_cpu_ns", "preempted"
# Counters a CPU time can come from, best first: (column, what it holds).
SOURCES = (("counter:off-cpu", "off"), ("counter:task-clock", "cpu"),
           ("counter:cpu-clock", "cpu"))
UNAVAILABLE = ("no CPU time in the trace: record it with `grainlab record --cpu-time` "
               "(or --counters task-clock)")
NO_CPU_TIME = ("--weigh cpu: {trace} has no CPU time; record it with "
               "`grainlab record --cpu-time -o TRACE -- PROGRAM`")


def source(g) -> tuple[str, str] | None:
    """(counter column, "off" | "cpu") the CPU time comes from, or None."""
    for col, kind in SOURCES:
        if col in g.nodes.columns and g.nodes[col].notna().any():
            return col, kind
    return None


def wall_durations(g) -> np.ndarray:
    """Node wall-clock weights: `duration`, or `wall_duration` in a graph
    weighed by CPU time (`weigh_cpu`)."""
    col = "wall_duration" if "wall_duration" in g.nodes.columns else "duration"
    return g.nodes[col].to_numpy(np.int64)


def node_off_cpu(g) -> np.ndarray | None:
    """Off-CPU time (float ns) of every node over its own time (module
    doc); NaN where the counter did not read. None when the trace has none."""
    src = source(g)
    if src is None:
        return None
    col, kind = src
    value = g.nodes[col].to_numpy(np.float64)
    if kind == "off":
        return np.maximum(value, 0.0)
    # task-clock: CPU time over the node's own time; a join's own time is its
    # sync_time. A fork's own time is not its weight (the creation cost is
    # estimated, and counted in the fragment after it): unmeasured
    own = wall_durations(g).astype(np.float64)
    join = is_one_of(g.nodes["type"], "join")
    own[join] = g.nodes["sync_time"].to_numpy(np.float64)[join]
    off = np.maximum(own - value, 0.0)
    off[is_one_of(g.nodes["type"], "fork")] = np.nan
    return off


def node_cpu(g) -> np.ndarray | None:
    """CPU time (float ns) of every node: its weight minus its off-CPU time,
    capped to [0, weight]; NaN where the counter did not read. None when the
    trace has none."""
    off = node_off_cpu(g)
    if off is None:
        return None
    dur = wall_durations(g).astype(np.float64)
    return np.clip(dur - off, 0.0, dur)          # NaN stays NaN


def compute(g) -> str | None:
    """Add cpu_ns, off_cpu_ns and preempted to `g.grains` where the trace
    records CPU time; return why not (None when added)."""
    cpu = node_cpu(g)
    if cpu is None:
        return UNAVAILABLE
    gr = g.grains
    G = len(gr)
    grain = g.nodes["grain"].to_numpy(np.int64)
    own = is_one_of(g.nodes["type"], "fragment", "chunk") & (grain >= 0) & (grain < G)
    # NaN in any of a grain's nodes makes its sum NaN: unknown, not zero
    cpu_ns = np.bincount(grain[own], weights=cpu[own], minlength=G)[:G]
    wall = np.bincount(grain[own], weights=wall_durations(g)[own].astype(np.float64),
                       minlength=G)[:G]
    gr[CPU_NS] = cpu_ns
    gr[OFF_CPU_NS] = np.maximum(wall - cpu_ns, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gr[COLUMN] = np.where(cpu_ns > 0, wall / cpu_ns, np.where(wall > 0, np.inf, 1.0))
    gr.loc[np.isnan(cpu_ns), COLUMN] = np.nan
    return None


def report(g, hit: np.ndarray | None) -> dict:
    """What the report says about CPU time: totals over the grains, and the
    critical path's time off the CPU. `hit`: the grains flagged preempted
    (grainlab.problems), None when unavailable."""
    if CPU_NS not in g.grains.columns:
        return {"available": False, "reason": UNAVAILABLE}
    gr = g.grains
    cpu = node_cpu(g)
    path = np.asarray(g.critical_path, np.int64)
    wall = wall_durations(g)
    off_path = np.nan_to_num(wall[path] - cpu[path])   # unmeasured nodes: none known
    crit = gr["on_critical_path"].to_numpy(bool)
    hit = np.zeros(len(gr), bool) if hit is None else hit
    path_wall = int(wall[path].sum())
    wall_col = "wall_ns" if "wall_ns" in gr.columns else "work"
    out = {"available": True, "source": source(g)[0],
           "weights": g.meta.get("weights", "wall"),
           "grain_wall_ns": int(gr[wall_col].sum()),
           "grain_cpu_ns": int(np.nansum(gr[CPU_NS].to_numpy(np.float64))),
           "grain_off_cpu_ns": int(np.nansum(gr[OFF_CPU_NS].to_numpy(np.float64))),
           "unmeasured_grains": int(np.isnan(gr[CPU_NS].to_numpy(np.float64)).sum()),
           "preempted_grains": int(hit.sum()),
           "critical_path": {"preempted_grains": int((hit & crit).sum()),
                             "wall_ns": path_wall, "off_cpu_ns": int(off_path.sum())}}
    if "wall_span_ns" in g.meta:
        out["wall"] = {k: g.meta[f"wall_{k}"] for k in ("span_ns", "work_ns", "parallelism")}
    return out


def weigh_cpu(g, trace_name: str = "the trace"):
    """A copy of `g` whose measured nodes weigh their CPU time (see the
    module doc), critical path recomputed; `wall_duration` (nodes) and
    `wall_ns` (grains, contexts) keep the wall times. GrainlabError (one
    line) when the trace has no CPU time."""
    from ..errors import UsageError
    from ..graph.critical_path import annotate_critical_path
    cpu = node_cpu(g)
    if cpu is None:
        raise UsageError(NO_CPU_TIME.format(trace=trace_name))
    w = copy.copy(g)
    w.meta = {**g.meta, "weights": "cpu", "wall_span_ns": int(g.span),
              "wall_work_ns": int(g.work),
              "wall_parallelism": float(g.work / g.span) if g.span > 0 else 1.0}
    w.nodes = g.nodes.copy(deep=False)
    wall = w.nodes["duration"].to_numpy(np.int64)
    w.nodes["wall_duration"] = wall
    w.nodes["duration"] = np.where(np.isnan(cpu), wall, np.rint(np.nan_to_num(cpu))).astype(np.int64)
    w.edges = g.edges.copy(deep=False)
    w.grains = g.grains.copy(deep=False)
    w.contexts = g.contexts.copy(deep=False)
    G = len(g.grains)
    grain = w.nodes["grain"].to_numpy(np.int64)
    own = is_one_of(w.nodes["type"], "fragment", "chunk") & (grain >= 0)
    size = G + len(g.contexts)
    work = np.bincount(grain[own], weights=w.nodes["duration"].to_numpy(np.int64)[own],
                       minlength=size).astype(np.int64)
    for table, part in ((w.grains, work[:G]), (w.contexts, work[G:size])):
        if "work" in table.columns:
            table["wall_ns"] = table["work"].to_numpy(np.int64)
            table["work"] = part
    annotate_critical_path(w)
    return w
