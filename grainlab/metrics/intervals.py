"""Interval arithmetic on columns, shared by the metrics that ask "what was a
thread doing at time t" (achieved parallelism, time decomposition)."""
from __future__ import annotations

import numpy as np

from ..sorting import lexsort


def union_by_group(group: np.ndarray, start: np.ndarray, end: np.ndarray, mask=None,
                   native=None):
    """Merge overlapping [start, end) intervals within each group (only the
    rows `mask` selects, when given: no gathered copies).
    Returns (group, start, end) of disjoint intervals, sorted by group, start.
    `native` forces the compiled merge on (True) or off (False; tests)."""
    keep = end > start
    if mask is not None:
        keep &= mask
    if not keep.any():
        return group[keep], start[keep], end[keep]
    out = _union_packed(group, start, end, keep, native)
    if out is not None:
        return out
    if not keep.all():
        group, start, end = group[keep], start[keep], end[keep]
    del keep
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


_LAST = np.int64(np.iinfo(np.int64).max)    # the key of a row not merged: sorts last


def _union_packed(group, start, end, keep, native=None):
    """union_by_group's merge when (group, start, row) fit one int64, as they
    do up to ~10^8 intervals (None otherwise). The key
    (group - min) << B | (start - min), B the bits of the time range, is the
    start on a timeline where each group has its own 2^B-long stretch, so one
    np.sort of key << row bits | row orders the rows (stable: ties by row;
    the rows `keep` drops get a key that sorts after all), and a running
    maximum of the ends shifted onto that timeline never crosses a group.
    The merge over the sorted keys is compiled (gl_union_sorted: no further
    interval-sized arrays; twin `_merge_sorted_numpy`). One row-sized array
    (the keys) instead of ~12 (lexsort's digits, the gathers, the shifts):
    at 10^7 grains' nodes, 1-2 GB less at the metrics' peak."""
    n = len(start)
    if group.dtype.kind not in "iu" or start.dtype.kind not in "iu" \
            or end.dtype.kind not in "iu":
        return None
    # bounds over every row, not only the kept ones (a masked reduction is
    # several times slower): they bound the kept rows too, which is all
    # the key needs; a dropped row's key is overwritten below
    g0, t0 = int(group.min()), int(start.min())
    t_bits = (int(max(end.max(), start.max())) - t0).bit_length()
    g_bits = (int(group.max()) - g0).bit_length()
    i_bits = (n - 1).bit_length()
    if g_bits + t_bits + i_bits > 62:                         # below _LAST
        return None
    key = group.astype(np.int64)
    key -= g0
    key <<= t_bits
    key += start
    key -= t0
    key <<= i_bits
    key |= np.arange(n, dtype=np.int64)
    key[~keep] = _LAST
    key.sort()
    m = int(np.count_nonzero(keep))
    kernel = _union_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled union kernel is not built")
    if kernel is not None:
        end = np.ascontiguousarray(end, dtype=np.int64)
        # the runs' ends; np.empty's pages past the runs are never touched
        run_end = np.empty(m, np.int64)
        u = kernel(m, key.ctypes.data, i_bits, t_bits, end.ctypes.data, t0,
                   run_end.ctypes.data)
        first, last_end = key[:u], run_end[:u]
    else:
        first, last_end = _merge_sorted_numpy(key[:m], i_bits, t_bits, end, t0)
    mask = (1 << t_bits) - 1
    out_group = ((first >> t_bits) + g0).astype(group.dtype, copy=False)
    out_start = ((first & mask) + t0).astype(start.dtype, copy=False)
    out_end = ((last_end & mask) + t0).astype(end.dtype, copy=False)
    return out_group, out_start, out_end


def _merge_sorted_numpy(key, i_bits, t_bits, end, t0):
    """(timeline start, timeline end) of each merged run of the sorted keys
    (`_union_packed`): the twin of gl_union_sorted."""
    n = len(key)
    row = key & ((1 << i_bits) - 1)
    key = key >> i_bits                   # the sorted timeline starts
    run_end = end[row]                    # the ends, in that order
    del row
    run_end -= t0
    run_end += key                        # ... onto the timeline: + group << B + start - t0,
    run_end -= key & ((1 << t_bits) - 1)  # less start - t0
    np.maximum.accumulate(run_end, out=run_end)
    new = np.empty(n, bool)
    new[0] = True
    np.greater(key[1:], run_end[:-1], out=new[1:])
    first = np.flatnonzero(new)
    del new
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = n - 1
    return key[first], run_end[last]


def _union_kernel():
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_union_sorted", [i, p, i, i, p, i, p], restype=ctypes.c_int64)

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
