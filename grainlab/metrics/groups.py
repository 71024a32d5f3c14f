"""Sibling groups shared by load balance and scatter.

A task's group is its siblings joined at the same join (same parent, same waiter
join node) — for load balance, also created by the same task construct; a
chunk's group is its loop instance. `sibling_groups` returns one
int64 label per grain, 0..n_groups-1.
"""
from __future__ import annotations

import numpy as np

from ..sorting import lexsort
import pandas as pd

from .contract import is_one_of


def sibling_groups(grains: pd.DataFrame, by_construct: bool = False) -> np.ndarray:
    """`by_construct`: tasks are grouped also by the construct that created
    them (their codeptr), so that siblings of different kinds (an init task
    beside compute tasks) are not compared (docs/metrics.md, load balance)."""
    n = len(grains)
    if n == 0:
        return np.zeros(0, np.int64)
    is_chunk = is_one_of(grains["kind"], "chunk")
    parent = grains["parent"].to_numpy(np.int64)
    join = grains["join"].to_numpy(np.int64)
    loop_code = np.zeros(n, np.int64)
    if is_chunk.any():
        loop_code[is_chunk] = pd.factorize(grains["loop"].to_numpy()[is_chunk])[0]
    # Tasks: (parent, join); chunks: (loop code, -2), a key no task has (join >= -1).
    a = np.where(is_chunk, loop_code, parent)
    b = np.where(is_chunk, -2, join)
    a = a - a.min()
    b = b - b.min()
    key = a * (int(b.max()) + 1) + b          # < 2^60 for any realistic graph
    group = np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)
    if not by_construct:
        return group
    # a chunk's loop instance already is one construct (and some of its
    # chunks carry no codeptr): only tasks are split by theirs
    construct = np.where(is_chunk, -1, pd.factorize(grains["codeptr"].to_numpy())[0])
    key = group * (int(construct.max()) + 2) + construct + 1
    return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)


def sorted_by_group(group: np.ndarray, value: np.ndarray):
    """(order, starts, ends): `order` sorts by (group, value); group g occupies
    order[starts[g]:ends[g]] (every label 0..max must be present)."""
    order = lexsort((value, group))
    counts = np.bincount(group)
    ends = np.cumsum(counts)
    return order, ends - counts, ends


def group_median(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Median of `value` per group label (mean of the two middle values)."""
    order, starts, ends = sorted_by_group(group, value)
    v = value[order]
    lo = starts + (ends - starts - 1) // 2
    hi = starts + (ends - starts) // 2
    return (v[lo] + v[hi]) / 2.0


def group_max(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.full(n_groups, -np.inf)
    np.maximum.at(out, group, value)
    return out
