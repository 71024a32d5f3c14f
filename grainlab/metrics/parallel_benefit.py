"""Parallel benefit (thesis §5.4.2; DESIGN.md "Metrics").

  parallel_benefit = work / (creation_cost + sync_cost)

creation_cost: the fork that created the task (chunks: the book-keeping node
before the chunk); sync_cost: the parent's sync time at the grain's join divided
by the number of grains joined there (both from `grainlab.graph`). Dimensionless;
below 1 the grain costs more to parallelize than it computes.
A grain with zero cost has infinite benefit.
"""
from __future__ import annotations

import numpy as np
from .contract import is_one_of

COLUMN = "parallel_benefit"


def compute(g) -> None:
    gr = g.grains
    is_chunk = is_one_of(gr["kind"], "chunk")
    creation = gr["creation_cost"].to_numpy(np.float64)
    bookkeeping = gr["bookkeeping_cost"].to_numpy(np.float64)
    own_cost = np.where(is_chunk, bookkeeping, creation)
    cost = np.nan_to_num(own_cost) + np.nan_to_num(gr["sync_cost"].to_numpy(np.float64))
    work = gr["work"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pb = np.where(cost > 0, work / np.where(cost > 0, cost, 1.0), np.inf)
    gr[COLUMN] = pb
