"""Sibling groups shared by load balance and scatter.

A task's group is its siblings joined at the same join (same parent, same waiter
join node) — for load balance, also created by the same task construct; a
chunk's group is its loop instance. `sibling_groups` returns one
int64 label per grain, 0..n_groups-1.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ..sorting import lexsort

from .contract import is_one_of


def sibling_groups(grains: pd.DataFrame, by_construct: bool = False) -> np.ndarray:
    """`by_construct`: tasks are grouped also by the construct that created
    them (their codeptr), so that siblings of different kinds (an init task
    beside compute tasks) are not compared (docs/metrics.md, load balance)."""
    groups = SiblingGroups(grains)
    return groups.by_construct if by_construct else groups.plain


class SiblingGroups:
    """Both labelings of one grain table, each made at most once: `plain`
    (scatter's) and `by_construct` (load balance's), the latter refined from
    the former. compute_all makes one per graph (registry.sibling_groups), so
    the grains are grouped once for the two metrics, not three times."""

    def __init__(self, grains: pd.DataFrame):
        self.grains = grains

    @cached_property
    def is_chunk(self) -> np.ndarray:
        return is_one_of(self.grains["kind"], "chunk")

    @cached_property
    def plain(self) -> np.ndarray:
        grains, is_chunk = self.grains, self.is_chunk
        n = len(grains)
        if n == 0:
            return np.zeros(0, np.int64)
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
        return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)

    @cached_property
    def by_construct(self) -> np.ndarray:
        group, is_chunk = self.plain, self.is_chunk
        if len(group) == 0:
            return group
        # a chunk's loop instance already is one construct (and some of its
        # chunks carry no codeptr): only tasks are split by theirs
        codes = pd.factorize(self.grains["codeptr"].to_numpy())[0]
        construct = np.where(is_chunk, -1, codes)
        tasks = construct[~is_chunk]
        if len(tasks) == 0 or tasks.min() == tasks.max():
            # one task construct (fib): a group is all tasks (one construct)
            # or all chunks (-1), so the refined key below is one value per
            # group, increasing with it: its labels are the plain ones
            return group
        key = group * (int(construct.max()) + 2) + construct + 1
        return dense_ranks(key, (int(group.max()) + 1) * (int(construct.max()) + 2))


def dense_ranks(key: np.ndarray, size: int) -> np.ndarray:
    """np.unique(key, return_inverse=True)[1] (int64) of keys in [0, size):
    one bincount and a cumulative sum when the table is no bigger than a
    few times the keys (a few constructs per group), instead of a sort."""
    if size > 4 * len(key) + 1024:
        return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)
    rank = np.bincount(key, minlength=size) > 0
    rank = np.cumsum(rank) - 1
    return rank[key]


def sorted_by_group(group: np.ndarray, value: np.ndarray):
    """(order, starts, ends): `order` sorts by (group, value); group g occupies
    order[starts[g]:ends[g]] (every label 0..max must be present)."""
    order = lexsort((value, group))
    counts = np.bincount(group)
    ends = np.cumsum(counts)
    return order, ends - counts, ends


def group_median(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Median of `value` per group label (mean of the two middle values).
    Groups of one or two values (every sibling pair of a recursive program)
    take (min + max) / 2, the same sum of the same two values, from one
    pass each; only the values of larger groups are sorted."""
    size = np.bincount(group)
    small = size <= 2
    if value.dtype != np.float64 or not small.any() or np.isnan(value).any() \
            or (np.signbit(value) & (value == 0)).any():
        # NaN and -0.0 (which a min and a max would not pair as the sort does)
        # never come from summed work: the sorted path for them
        return _sorted_median(group, value)
    out = np.empty(len(size))
    in_small = small[group]
    sg, sv = group[in_small], value[in_small]
    low = np.full(len(size), np.inf)
    high = np.full(len(size), -np.inf)
    np.minimum.at(low, sg, sv)
    np.maximum.at(high, sg, sv)
    out[small] = (low[small] + high[small]) / 2.0
    if not small.all():
        large = ~in_small
        relabel = np.cumsum(~small) - 1        # the large groups, numbered 0..
        out[~small] = _sorted_median(relabel[group[large]], value[large])
    return out


def _sorted_median(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    order, starts, ends = sorted_by_group(group, value)
    v = value[order]
    lo = starts + (ends - starts - 1) // 2
    hi = starts + (ends - starts) // 2
    return (v[lo] + v[hi]) / 2.0


def group_max(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.full(n_groups, -np.inf)
    np.maximum.at(out, group, value)
    return out
