"""Work, span, exposed parallelism and per-grain costs (thesis §4.4 Table 4.1,
§5.4.2): computed by `grainlab.graph`, re-exported here so every metric has one
home. Per-grain columns already in `g.grains`: work, creation_cost,
bookkeeping_cost, sync_cost, on_critical_path.

Also where the span goes (`critical_path_time`): the critical path's nodes
are grains' own work (their fragments, chunks, the forks they create from),
grains' join waits (a task's taskwait / taskgroup end: the delay before it
resumes once its children are done), contexts' (the initial and implicit
tasks: serial code, task creation, waiting) or shared team barriers'. A path with no grain on it is a true result (a short
program whose serial start-up outweighs its tasks): the split says so.
"""
from __future__ import annotations

import numpy as np

from .contract import is_one_of

COLUMNS = ("work", "creation_cost", "bookkeeping_cost", "sync_cost")


def graph_values(g) -> dict:
    """Every graph-level value of this module: `totals` and `span_values`."""
    return {**totals(g), **span_values(g)}


def totals(g) -> dict:
    """Counts and total work: additive over any split of the graph."""
    grains = g.grains
    return {
        "grains": int(len(grains)),
        "tasks": int(np.count_nonzero(is_one_of(grains["kind"], "task"))),
        "chunks": int(np.count_nonzero(is_one_of(grains["kind"], "chunk"))),
        "work_ns": int(g.work),
        "grain_work_ns": int(grains["work"].sum()),
    }


def span_values(g) -> dict:
    """The span, exposed parallelism (work / span) and the critical path."""
    span = int(g.span)
    work = int(g.work)
    return {
        "span_ns": span,
        "parallelism": float(work / span) if span > 0 else 1.0,
        "critical_path": [int(x) for x in np.asarray(g.critical_grains)],
        "critical_path_time": critical_path_time(g),
    }


def critical_path_time(g) -> dict:
    """The span split by whose nodes the critical path runs through (ns):
    grains' own work (grains_ns: fragments, chunks, forks), grains' join
    waits (joins_ns), contexts (initial / implicit tasks), shared team
    barriers; and per context, longest first: [{"context": public id,
    "kind", "ns"}]. The four parts add up to the span."""
    path = np.asarray(g.critical_path, np.int64)
    G = len(g.grains)
    dur = g.nodes["duration"].to_numpy(np.int64)[path]
    grain = g.nodes["grain"].to_numpy(np.int64)[path]
    in_grain = (grain >= 0) & (grain < G)
    join = is_one_of(g.nodes["type"], "join")[path]
    in_context = grain >= G
    per = np.bincount(grain[in_context] - G, weights=dur[in_context]).astype(np.int64)
    ctx = np.flatnonzero(per > 0)
    ctx = ctx[np.argsort(-per[ctx], kind="stable")]
    # graphs made by hand may have no context table
    kind = g.contexts["kind"].astype(str).to_numpy() if "kind" in g.contexts else []
    return {"grains_ns": int(dur[in_grain & ~join].sum()),
            "joins_ns": int(dur[in_grain & join].sum()),
            "contexts_ns": int(dur[in_context].sum()),
            "barriers_ns": int(dur[~in_grain & ~in_context].sum()),
            "contexts": [{"context": int(G + c),
                          "kind": str(kind[c]) if c < len(kind) else "context",
                          "ns": int(per[c])} for c in ctx]}


def parallel_part(g) -> dict:
    """Work, span and parallelism (work / span) of the parallel part: the
    run from its first parallel region's fork to its last region's end, the
    initial task's code before and after weighing nothing (what `grainlab
    predict` replays by default, as benchmarks time their kernels; the serial
    code between regions stays). `outside_ns`: the time left out. Equal to the
    whole run's values when the program has no region or nothing outside."""
    from ..graph.critical_path import graph_order, span_in_order
    from .replay_graph import _outside_regions
    dur = g.nodes["duration"].to_numpy(np.int64)
    # graphs made by hand may have no context kinds or region columns: no regions known
    known = "kind" in g.contexts and {"owner", "owner_seq", "child", "join_kind"} <= set(g.nodes)
    outside = _outside_regions(g) if known else np.zeros(len(dur), bool)
    outside_ns = int(dur[outside].sum())
    work, span = int(g.work) - outside_ns, int(g.span)
    if outside_ns:     # the longest path with those nodes weighing nothing, in the
        # order the critical path was found in (no sort of 10^7 keys again)
        span = span_in_order(graph_order(g), np.where(outside, 0, dur),
                             g.edges["src"].to_numpy(), g.edges["dst"].to_numpy())
    return {"work_ns": work, "span_ns": int(span), "outside_ns": outside_ns,
            "parallelism": float(work / span) if span > 0 else 1.0}


def serial_part(g, work_ns: int, whole: bool = True, split: dict | None = None) -> dict:
    """The initial task's code on the critical path (it runs alone at any
    core count) and Amdahl's bound work / serial; its serial start: the
    initial task's code before its first parallel region, and its serial
    end: after its last region's end (`serial_end_ns`). whole=False: the
    initial task's code before the first region and after the last one is
    not counted (what `predict` times by default). split: the span's split
    (critical_path_time) when already computed."""
    from .replay_graph import _outside_regions
    split = critical_path_time(g) if split is None else split
    serial = sum(c["ns"] for c in split["contexts"] if c["kind"] == "initial")
    start = serial_start(g)
    dur = g.nodes["duration"].to_numpy(np.int64)
    outside = int(dur[_outside_regions(g)].sum()) if "kind" in g.contexts else 0
    end = max(outside - start, 0)
    if not whole:
        serial -= outside
        start = end = 0
    serial = max(int(serial), 0)
    return {"serial_ns": serial, "serial_start_ns": start, "serial_end_ns": end,
            "amdahl_speedup": (work_ns / serial) if serial > 0 else None}


def serial_start(g) -> int:
    """The initial task's time before its first parallel-region fork (0
    when it has no region)."""
    nodes, ctx = g.nodes, g.contexts
    if "kind" not in ctx:
        return 0
    initial = ctx.index[(ctx["kind"] == "initial").to_numpy(bool)]
    if not len(initial):
        return 0
    owner = nodes["owner"].to_numpy(np.int64)
    mine = owner == int(initial[0])
    child = nodes["child"].to_numpy(np.int64)
    forks = mine & (nodes["type"] == "fork").to_numpy(bool) & (child >= len(g.grains))
    if not forks.any():
        return 0
    seq = nodes["owner_seq"].to_numpy(np.int64)
    first = seq[forks].min()
    return int(nodes["duration"].to_numpy(np.int64)[mine & (seq < first)].sum())
