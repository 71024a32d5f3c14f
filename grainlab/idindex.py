"""Position of task ids in an id column, by direct table look-up.

Collector task ids are `(thread + 1) << 40 | n` with `n` dense per thread
(docs/trace-format.md), so `base[thread] + n` indexes a table of positions: one
gather per query instead of hashing or a binary search (4 million queries into
1 million ids: ~0.6 s of searchsorted at 10^6 grains). Ids that do not follow
the scheme (hand-made traces) fall back to a sorted search with the same answers.
The table is built and read by compiled kernels (grainlab/native/idindex.c:
one pass, no id-sized temporaries) when they are built, else by their numpy
twins, in blocks.
"""
from __future__ import annotations

import numpy as np

from .sorting import argsort

_SHIFT = np.uint64(40)
_LOW = np.uint64((1 << 40) - 1)
_MAX_THREADS = 1 << 16
_BLOCK = 1 << 20


class IdIndex:
    """index.get(values) -> position in `ids` of each value (-1: absent).

    With repeated ids, the position of one of the occurrences."""

    def __init__(self, ids, native=None):
        """native: the compiled kernels (grainlab/native/idindex.c) when
        built (None), always (True) or never (False: the numpy twin)."""
        ids = np.ascontiguousarray(ids, dtype=np.uint64)
        self.n = len(ids)
        self._table = None
        self._sorted = None
        self._native = native
        if self.n == 0:
            return
        # the thread slots' range from the ids' (a shift keeps the order)
        hi_min, hi_max = int(ids.min() >> _SHIFT), int(ids.max() >> _SHIFT)
        if hi_min >= 1 and hi_max < _MAX_THREADS:
            # limit[h] = 1 + largest n of thread slot h; a last entry of 0
            # catches every out-of-range `hi` of a query
            limit = np.zeros(hi_max + 2, dtype=np.int64)
            kernel = _kernel("gl_id_limits", native)
            if kernel is None or kernel(self.n, ids.ctypes.data, len(limit), limit.ctypes.data):
                limit[:] = 0
                _limits_numpy(ids, limit)
            size = int(limit.sum())
            if size <= 4 * self.n + 1024:
                base = np.zeros(len(limit), dtype=np.int64)
                np.cumsum(limit[:-1], out=base[1:])
                dtype = np.int32 if self.n < (1 << 31) - 1 else np.int64
                table = np.full(size + 1, -1, dtype=dtype)   # last entry: "absent"
                kernel = _kernel("gl_id_fill", native)
                if kernel is None:
                    _fill_numpy(ids, base, table)
                else:
                    kernel(self.n, ids.ctypes.data, base.ctypes.data, table.ctypes.data,
                           int(dtype == np.int64))
                self._table, self._base, self._limit = table, base, limit
                return
        order = argsort(ids)
        self._sorted, self._order = ids[order], order

    def get(self, values, dtype=np.int64, out=None) -> np.ndarray:
        """dtype: of the positions returned (int32 halves a row-sized
        answer; the caller knows its positions fit); out: an array of
        len(values) to write them into (then of its dtype), returned."""
        values = np.asarray(values, dtype=np.uint64)
        if out is None:
            return self._get(values, np.empty(len(values), dtype=dtype))
        if out.flags.c_contiguous:
            return self._get(values, out)
        out[:] = self._get(values, np.empty(len(values), dtype=out.dtype))
        return out

    def _get(self, values, out) -> np.ndarray:
        if self.n == 0:
            out[:] = -1
            return out
        if self._table is not None:
            kernel = _kernel("gl_id_lookup", self._native) \
                if out.dtype in (np.int32, np.int64) else None
            if kernel is not None:
                values = np.ascontiguousarray(values)
                kernel(len(values), values.ctypes.data, len(self._limit),
                       self._base.ctypes.data, self._limit.ctypes.data, len(self._table),
                       self._table.ctypes.data, int(self._table.dtype == np.int64),
                       out.ctypes.data, int(out.dtype == np.int64))
                return out
            # in blocks: the temporaries stay a few MB however many values
            for at in range(0, len(values), _BLOCK):
                out[at:at + _BLOCK] = self._lookup(values[at:at + _BLOCK])
            return out
        pos = np.searchsorted(self._sorted, values, side="right") - 1
        pos[pos < 0] = 0
        hit = self._sorted[pos] == values
        out[:] = np.where(hit, self._order[pos], -1)
        return out

    def _lookup(self, values) -> np.ndarray:
        hi = np.minimum(values >> _SHIFT, np.uint64(len(self._limit) - 1)).astype(np.intp)
        lo = (values & _LOW).astype(np.int64)
        slot = self._base[hi]
        slot += lo
        slot[lo >= self._limit[hi]] = len(self._table) - 1
        return self._table[slot]

    def table_args(self):
        """The direct table as the compiled kernels take it (idindex.h's
        gl_id_table: nlimit, base, limit, tsize, table, wide), or None when
        this index has none (no ids, or ids not of the collector's scheme)."""
        if self._table is None:
            return None
        return (len(self._limit), self._base.ctypes.data, self._limit.ctypes.data,
                len(self._table), self._table.ctypes.data, int(self._table.dtype == np.int64))

    def contains(self, values) -> np.ndarray:
        return self.get(values) >= 0

    @property
    def unique(self) -> bool:
        """No id is repeated (then `get` answers the one position of an id,
        whichever way the index is built)."""
        if self._table is not None:
            return int(np.count_nonzero(self._table >= 0)) == self.n
        if self._sorted is not None:
            return not bool((self._sorted[1:] == self._sorted[:-1]).any())
        return True

    def permuted(self, perm) -> "IdIndex":
        """The index of ids[perm] (perm a permutation of 0..n-1) from this
        one, by renumbering its positions instead of building it anew: the
        same answers as IdIndex(ids[perm]) when the ids are `unique`."""
        perm = np.asarray(perm)
        out = IdIndex.__new__(IdIndex)
        out.n, out._table, out._sorted, out._native = self.n, None, None, self._native
        if self.n == 0:
            return out
        if self._table is not None:
            inv = np.empty(self.n + 1, dtype=self._table.dtype)
            inv[perm] = np.arange(self.n, dtype=inv.dtype)
            inv[-1] = -1                    # an absent entry (-1) reads the last: -1
            out._table, out._base, out._limit = inv[self._table], self._base, self._limit
        else:
            inv = np.empty(self.n, dtype=np.int64)
            inv[perm] = np.arange(self.n)
            out._sorted, out._order = self._sorted, inv[self._order]
        return out


def _limits_numpy(ids, limit) -> None:
    """The build's first pass, numpy's way (the twin of gl_id_limits)."""
    for at in range(0, len(ids), _BLOCK):
        part = ids[at:at + _BLOCK]
        np.maximum.at(limit, (part >> _SHIFT).astype(np.intp),
                      (part & _LOW).astype(np.int64) + 1)


def _fill_numpy(ids, base, table) -> None:
    """The build's second pass, numpy's way (the twin of gl_id_fill), in
    blocks as get()."""
    for at in range(0, len(ids), _BLOCK):
        part = ids[at:at + _BLOCK]
        table[base[(part >> _SHIFT).astype(np.intp)] + (part & _LOW).astype(np.int64)] = \
            np.arange(at, at + len(part), dtype=table.dtype)


_SIGNATURES = {"gl_id_limits": "ipip", "gl_id_fill": "ippPi",
               "gl_id_lookup": "ipippipipi"}


def _kernel(symbol, native):
    """A compiled kernel of grainlab/native/idindex.c, or None (not built,
    GRAINLAB_NATIVE=0, or native False)."""
    if native is False:
        return None
    import ctypes
    from ._paths import graph_kernel
    types = {"i": ctypes.c_int64, "p": ctypes.c_void_p, "P": ctypes.c_void_p}
    fn = graph_kernel(symbol, [types[c] for c in _SIGNATURES[symbol]])
    if native and fn is None:
        raise RuntimeError("the compiled id index kernels are not built")
    return fn
