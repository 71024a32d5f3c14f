"""grainlab.metrics: every per-grain metric as a column of `g.grains`.

    import grainlab as gl
    from grainlab.metrics import compute_all
    g = gl.load("fib.parquet").graph()
    values = compute_all(g)            # adds the columns below, returns graph-level values
    g.grains[["work", "parallel_benefit", "instantaneous_parallelism"]]

Columns added (docs/metrics.md has definitions, units, thresholds, sources):
  parallel_benefit, load_balance, scatter, earliest_start,
  instantaneous_parallelism, instantaneous_parallelism_conservative,
  memory_hierarchy_utilization   (only when stall + cycle counters exist),
  cpu_ns, off_cpu_ns, preempted  (only when CPU time is recorded: record --cpu-time),
  work_deviation                 (only with `reference=` another run's graph).
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

METRIC_COLUMNS = (parallel_benefit.COLUMN, load_balance.COLUMN, scatter.COLUMN,
                  instantaneous_parallelism.COLUMN,
                  instantaneous_parallelism.COLUMN_CONSERVATIVE,
                  memory_hierarchy.COLUMN, preemption.CPU_NS, preemption.OFF_CPU_NS,
                  preemption.COLUMN, work_deviation.COLUMN)


def compute_all(g, *, interval="median", reference=None,
                max_intervals: int = instantaneous_parallelism.MAX_INTERVALS,
                progress=None) -> dict:
    """Add every metric column to `g.grains`; return the graph-level values (a JSON-able dict).

    interval:  "median" | "min" | "gap" | ns, for instantaneous parallelism
    reference: graph of a reference run (e.g. 1 thread) -> work_deviation column
    progress:  optional callable(str) told before each step
    """
    step = progress or (lambda _msg: None)
    # The graph-level summaries that only read the graph run on a second
    # thread while the per-grain columns are added here: numpy releases the
    # GIL in its loops, so on 2 cores the two overlap (fib(28), 1M grains:
    # 1.9 -> 1.4 s). The worker sees a shallow copy of the grain table, whose
    # columns do not change under it.
    frozen = copy.copy(g)
    frozen.grains = g.grains.copy(deep=False)
    with ThreadPoolExecutor(1, thread_name_prefix="grainlab-summaries") as pool:
        decomposition = pool.submit(time_decomposition.decompose, frozen)
        achieved = pool.submit(instantaneous_parallelism.achieved_stats, frozen)
        values = work.graph_values(g)
        values["cores_used"] = cores_used(g)
        values["threads_used"] = threads_used(g)
        step("parallel benefit")
        parallel_benefit.compute(g)
        step("load balance")
        load_balance.compute(g)
        step("scatter")
        values["scatter_distance"] = scatter.compute(g)
        values["cores_per_socket"] = scatter.cores_per_socket(g.meta, values["cores_used"])
        step("instantaneous parallelism")
        values["instantaneous_parallelism"] = {
            **instantaneous_parallelism.compute(g, interval, max_intervals),
            **achieved.result()}
        step("memory hierarchy utilization")
        values["memory_hierarchy_utilization"] = memory_hierarchy.compute(g) or "computed"
        step("CPU time")
        values["cpu_time"] = preemption.compute(g) or "computed"
        step("time decomposition")
        values["time_decomposition"] = decomposition.result()
    if reference is not None:
        step("work deviation")
        values["work_deviation"] = work_deviation.compute(g, reference)
        values["time_decomposition"].update(time_decomposition.speedup_terms(
            values["time_decomposition"], time_decomposition.decompose(reference)))
    return values


__all__ = ["compute_all", "earliest_start", "METRIC_COLUMNS", "instantaneous_parallelism",
           "load_balance", "memory_hierarchy", "parallel_benefit", "preemption", "scatter",
           "time_decomposition", "work", "work_deviation"]
