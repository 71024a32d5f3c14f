"""Work, span, exposed parallelism and per-grain costs (thesis §4.4 Table 4.1,
§5.4.2): computed by `grainlab.graph`, re-exported here so every metric has one
home. Per-grain columns already in `g.grains`: work, creation_cost,
bookkeeping_cost, sync_cost, on_critical_path.
"""
from __future__ import annotations

import numpy as np

from ._graph import is_one_of

COLUMNS = ("work", "creation_cost", "bookkeeping_cost", "sync_cost")


def summary(g) -> dict:
    grains = g.grains
    is_task = is_one_of(grains["kind"], "task")
    is_chunk = is_one_of(grains["kind"], "chunk")
    span = int(g.span)
    work = int(g.work)
    return {
        "grains": int(len(grains)),
        "tasks": int(np.count_nonzero(is_task)),
        "chunks": int(np.count_nonzero(is_chunk)),
        "work_ns": work,
        "grain_work_ns": int(grains["work"].sum()),
        "span_ns": span,
        "parallelism": float(work / span) if span > 0 else 1.0,
        "critical_path": [int(x) for x in np.asarray(g.critical_grains)],
    }
