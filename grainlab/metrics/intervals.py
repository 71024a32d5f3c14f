"""Interval arithmetic on columns, shared by the metrics that ask "what was a
thread doing at time t" (achieved parallelism, time decomposition)."""
from __future__ import annotations

import numpy as np

from ..sorting import lexsort


def union_by_group(group: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Merge overlapping [start, end) intervals within each group.
    Returns (group, start, end) of disjoint intervals, sorted by group, start."""
    keep = end > start
    group, start, end = group[keep], start[keep], end[keep]
    if len(start) == 0:
        return group, start, end
    o = lexsort((start, group))
    group, start, end = group[o], start[o], end[o]
    # running maximum of end within each group: offset groups so that one
    # cumulative maximum over the whole array never crosses a group boundary
    span = int(end.max() - start.min()) + 1
    changes = group[1:] != group[:-1]
    # shift = group rank * span - min start, made in one array (in place)
    shift = np.zeros(len(start), np.int64)
    np.cumsum(changes, out=shift[1:])
    shift *= span
    shift -= int(start.min())
    run_end = end + shift
    np.maximum.accumulate(run_end, out=run_end)
    run_end -= shift
    del shift
    new = np.empty(len(start), bool)
    new[0] = True
    np.greater(start[1:], run_end[:-1], out=new[1:])
    new[1:] |= changes
    del changes
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(start) - 1]
    return group[first], start[first], run_end[last]


def covered(ustart: np.ndarray, uend: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each [a, b): how much of it the disjoint sorted intervals
    [ustart, uend) cover."""
    if len(ustart) == 0 or len(a) == 0:
        return np.zeros(len(a), np.int64)
    cum = np.r_[0, np.cumsum(uend - ustart)]          # covered length before interval i

    def F(t):  # covered length in (-inf, t)
        i = np.searchsorted(ustart, t, side="right")  # intervals starting at or before t
        inside = np.clip(t - ustart[np.maximum(i - 1, 0)], 0,
                         (uend - ustart)[np.maximum(i - 1, 0)])
        return cum[np.maximum(i - 1, 0)] + np.where(i > 0, inside, 0)

    return np.maximum(F(b) - F(a), 0)
