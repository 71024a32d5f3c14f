"""grainlab.metrics: every per-grain metric as a column of `g.grains`.

    import grainlab as gl
    from grainlab.metrics import compute_all
    g = gl.load("fib.parquet").graph()
    values = compute_all(g)            # adds the columns below, returns graph-level values
    g.grains[["work", "parallel_benefit", "instantaneous_parallelism"]]

The columns and values are those the registry (grainlab.metrics.registry)
declares, in its order; docs/metrics.md's table is made from it. Some are
absent when the run lacks what they read: memory_hierarchy_utilization (stall
and cycle counters), cpu_ns/off_cpu_ns/preempted (record --cpu-time),
numa_locality (`accesses=` with NUMA nodes), work_deviation (`reference=`).
Already there from grainlab.graph: work, creation_cost, bookkeeping_cost,
sync_cost, on_critical_path.

One module per metric family; each works on whole columns.
"""
from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

from . import (instantaneous_parallelism, load_balance, memory_hierarchy,
               parallel_benefit, preemption, scatter, time_decomposition, work,
               work_deviation)
from .contract import cores_used, threads_used
from .earliest_start import earliest_start
from .registry import METRICS, Context

# The grain columns compute_all adds (the graph makes work, the costs and
# on_critical_path itself), from the registry.
METRIC_COLUMNS = tuple(c for m in METRICS if not m.by_graph for c in m.columns)


def compute_all(g, *, interval="median", reference=None, accesses=None,
                max_intervals: int = instantaneous_parallelism.MAX_INTERVALS,
                progress=None) -> dict:
    """Add every metric column of the registry (grainlab.metrics.registry) to
    `g.grains`; return the graph-level values (a JSON-able dict).

    interval:  "median" | "min" | "gap" | ns, for instantaneous parallelism
    reference: graph of a reference run (e.g. 1 thread) -> work_deviation column
               and the time decomposition's speed-up terms
    accesses:  the run's data accesses (Trace.accesses) -> numa_locality
    progress:  optional callable(str) told before each step
    """
    step = progress or (lambda _msg: None)
    ctx = Context(g, interval=interval, max_intervals=max_intervals,
                  reference=reference, accesses=accesses)
    # Metrics marked `background` only read the graph: they run on a second
    # thread, on a shallow copy of the graph whose grain table's columns do
    # not change under them, while the per-grain columns are added here.
    frozen = copy.copy(g)
    frozen.grains = g.grains.copy(deep=False)
    behind = Context(frozen, interval=interval, max_intervals=max_intervals,
                     reference=ctx.reference, accesses=accesses)
    values = ctx.values
    with ThreadPoolExecutor(1, thread_name_prefix="grainlab-summaries") as pool:
        later = {m.name: pool.submit(m.compute, behind) for m in METRICS if m.background}
        for m in METRICS:
            if m.compute is None:
                continue
            if not m.background:
                step(m.label.lower())
                _merge(values, m.compute(ctx))
                continue
            if not later[m.name].done():
                # its own step while it is waited for (else the wait would be
                # timed as the step before it, e.g. in benchmarks/analyze_scale.py)
                step(f"{m.label.lower()} (finishing)")
            _merge(values, later[m.name].result())
    return values


def _merge(values: dict, out: dict) -> None:
    """A metric's graph-level values into `values`; two metrics' values under
    one key are dicts, joined (achieved parallelism joins instantaneous)."""
    for key, value in out.items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value


__all__ = ["compute_all", "earliest_start", "METRIC_COLUMNS", "METRICS",
           "instantaneous_parallelism", "load_balance", "memory_hierarchy", "parallel_benefit",
           "preemption", "scatter", "time_decomposition", "work", "work_deviation",
           "cores_used", "threads_used"]
