"""Column idioms the graph builder repeats, named once.

The builder's most common question is "for this owner at this row, which
entry of a sorted table of (owner, position) pairs comes next / came last?".
It answers with one sort and one `searchsorted` over *packed keys*:
`pack(owner, position, stride) = owner * stride + position`, where `stride`
exceeds every position, so keys sort by owner, then position, and
`key // stride` gives the owner back.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..sorting import argsort, lexsort  # noqa: F401  (re-exported for the builder)

I64MAX = np.iinfo(np.int64).max

# Node, grain and context ids are int32 while they fit (docs/graph-model.md
# "Ids"): 4 bytes instead of 8 in every id column kept (g.nodes' grain,
# owner and child, g.edges' src and dst, parent and join), some 100 bytes
# per grain. A graph with more than ID32_LIMIT ids (2^31 - 1: ~5·10^8
# grains at 4 nodes each) takes int64 throughout instead. Tests lower the
# limit to build the same graph with int64 ids and compare.
ID32_LIMIT = np.iinfo(np.int32).max


def id_dtype(n: int) -> type:
    """The dtype of ids 0..n-1 and -1 (int32 when they fit, else int64)."""
    return np.int32 if n <= ID32_LIMIT else np.int64


def pack(major, minor, stride: int) -> np.ndarray:
    """Packed keys major * stride + minor (minor < stride)."""
    return np.asarray(major, np.int64) * stride + np.asarray(minor, np.int64)


def sorted_keys(keys: np.ndarray, payload: np.ndarray | None = None):
    """keys sorted (stable) and payload (default: positions) in the same order."""
    o = argsort(keys)
    return keys[o], (o if payload is None else payload[o])


def first_after(sorted_key, payload, who, after, stride: int) -> np.ndarray:
    """For each (who, after): payload of the first entry with key
    pack(who, s) for some s > after (same `who`), else -1."""
    out = np.full(len(who), -1, dtype=np.int64)
    if not len(sorted_key) or not len(who):
        return out
    i = np.searchsorted(sorted_key, pack(who, after, stride), side="right")
    ok = i < len(sorted_key)
    ok[ok] = sorted_key[i[ok]] // stride == who[ok]
    out[ok] = payload[i[ok]]
    return out


def last_at_or_before(sorted_key, who, at, stride: int) -> np.ndarray:
    """For each (who, at): index into sorted_key of the last entry
    pack(who, s) with s <= at (same `who`), else -1."""
    i = np.searchsorted(sorted_key, pack(who, at, stride), side="right") - 1
    ok = i >= 0
    ok[ok] = sorted_key[i[ok]] // stride == np.asarray(who)[ok]
    return np.where(ok, i, -1)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    start = np.ones(len(sorted_keys), dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return start


def group_ends(sorted_keys: np.ndarray) -> np.ndarray:
    end = np.ones(len(sorted_keys), dtype=bool)
    end[:-1] = sorted_keys[1:] != sorted_keys[:-1]
    return end


def cumcount(sorted_keys: np.ndarray, dtype=np.int64) -> np.ndarray:
    """0, 1, 2 ... within runs of equal keys (keys sorted), as `dtype` (int32
    when the caller knows the positions fit). Two arrays of that type, made
    in place (it made five int64 ones: 1.9 s at 45M slots, most of it fresh
    memory faulting in)."""
    n = len(sorted_keys)
    out = np.arange(n, dtype=dtype)
    first = np.where(group_starts(sorted_keys), out, 0).astype(dtype, copy=False)
    np.maximum.accumulate(first, out=first)
    np.subtract(out, first, out=out)
    return out


def first_per_key(keys: np.ndarray, n_keys: int, native: bool | None = None) -> np.ndarray:
    """Positions (into keys) of the first occurrence of each present key, in
    increasing key order (keys are dense ints in [0, n_keys)). One compiled
    pass (gl_first_per_key, grainlab/native/columns.c) for int32/int64 keys
    where built, else the numpy twin; `native` False forces the twin."""
    if native is not False and keys.dtype in (np.int32, np.int64):
        first = _first_per_key_native(keys, n_keys)
        if first is not None:
            return first[first < len(keys)]
    first = np.full(n_keys, len(keys), dtype=np.int64)
    np.minimum.at(first, keys, np.arange(len(keys)))
    return first[first < len(keys)]


def _first_per_key_native(keys, n_keys):
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    fn = graph_kernel("gl_first_per_key", [i, p, i, i, p])
    if fn is None:
        return None
    keys = np.ascontiguousarray(keys)
    first = np.empty(max(int(n_keys), 0), np.int64)
    rc = fn(len(keys), keys.ctypes.data, int(keys.dtype == np.int64), len(first),
            first.ctypes.data)
    return first if rc == 0 else None


def isin_small(values: np.ndarray, codes) -> np.ndarray:
    """values in codes, for small non-negative codes (event kinds, enums): a
    table lookup, much cheaper than np.isin on tens of millions of rows."""
    codes = np.asarray(codes, dtype=np.int64)
    if values.dtype == np.uint8:            # event kinds, flags: index directly
        table = np.zeros(256, dtype=bool)
        table[codes[codes < 256]] = True
        return table[values]
    table = np.zeros(int(codes.max()) + 2, dtype=bool)
    table[codes] = True
    # clamp in the values' own dtype: no int64 copy of tens of millions of rows
    top = np.asarray(len(table) - 1).astype(values.dtype)
    return table[np.minimum(values, top)]


# -- forests: pointer jumping ------------------------------------------------

def max_rounds(n: int) -> int:
    """Pointer jumping halves every remaining path each pass: a forest of n
    elements needs at most ceil(log2 n) + 1 passes (+1 for the pass that sees
    the last ones done); more means a cycle."""
    return int(np.ceil(np.log2(max(n, 2)))) + 3


def cycle_error():
    from ..errors import TraceError
    return TraceError("the trace's task tree has a cycle (a task is its own ancestor): "
                      "the trace is corrupt")


def list_rank(parent: np.ndarray) -> np.ndarray:
    """Number of steps to the root along `parent` pointers (-1 = root), for
    every element at once, by pointer jumping (O(log depth) passes)."""
    d = np.where(parent >= 0, 1, 0).astype(np.int64)
    p = parent.copy()
    for _ in range(max_rounds(len(p))):
        live = np.flatnonzero(p >= 0)
        if not len(live):
            return d
        q = p[live]
        d[live] += d[q]
        p[live] = p[q]
    raise cycle_error()


def inherit(value: np.ndarray, up: np.ndarray, native: bool | None = None) -> np.ndarray:
    """value[x] = value[up[x]] for every x with up[x] >= 0, transitively:
    each node takes the value of the top of its chain. One compiled walk
    (gl_forest_inherit, grainlab/native/task_tree.c) for int64 values where
    built, else (and for a chain that loops, which it then reports) the
    numpy twin; `native` False forces the twin (tests)."""
    if native is not False and value.dtype == np.int64 and len(up):
        got = _inherit_native(value, up)
        if got is not None:
            return got
    return _inherit_numpy(value, up)


def _inherit_native(value, up):
    import ctypes
    from .._paths import graph_kernel
    p = ctypes.c_void_p
    fn = graph_kernel("gl_forest_inherit", [ctypes.c_int64, p, ctypes.c_int, p, p, p, p])
    if fn is None:
        return None
    wide = up.dtype != np.int32
    up = np.ascontiguousarray(up, dtype=np.int64 if wide else np.int32)
    value = np.ascontiguousarray(value)
    out = np.empty(len(up), np.int64)
    state = np.empty(len(up), np.uint8)
    path = np.empty(len(up), up.dtype)
    rc = fn(len(up), up.ctypes.data, int(wide), value.ctypes.data, out.ctypes.data,
            state.ctypes.data, path.ctypes.data)
    return out if rc == 0 else None


def _inherit_numpy(value: np.ndarray, up: np.ndarray) -> np.ndarray:
    """inherit's twin: pointer jumping, O(log depth) passes."""
    value, up = value.copy(), up.copy()
    for _ in range(max_rounds(len(up))):
        live = np.flatnonzero(up >= 0)
        if not len(live):
            return value
        p = up[live]
        done = up[p] < 0
        value[live[done]] = value[p[done]]
        nd = live[~done]
        # jump from the pointers as they were before this pass: clearing
        # the done ones first would cut a grandchild loose with no value
        up[nd] = up[p[~done]]
        up[live[done]] = -1
    raise cycle_error()


# -- pandas without copies ---------------------------------------------------

def frame(columns: dict, index=None) -> pd.DataFrame:
    """DataFrame from columns without consolidating them into 2-D blocks
    (pandas would copy every same-typed column at construction)."""
    with warnings.catch_warnings():
        # pandas 3 deprecates copy=False (CoW makes it lazy) but still honours it
        warnings.simplefilter("ignore")
        return pd.DataFrame(columns, index=index, copy=False)


def lookup(values, index) -> pd.Series:
    """A Series for look-ups by `index` (first of duplicate labels kept)."""
    s = pd.Series(values, index=index)
    return s[~s.index.duplicated()]


def reindexed(series: pd.Series, labels, missing=-1) -> np.ndarray:
    """series[labels] as int64, `missing` where a label is absent."""
    return series.reindex(labels).to_numpy(dtype=np.float64, na_value=missing).astype(np.int64)
