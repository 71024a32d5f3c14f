"""Sorting columns fast.

numpy's stable sorts of int64 keys (np.argsort(kind="stable"), np.lexsort) are
a merge sort: ~110 ns per row on 10^6 random keys. Its plain np.sort of int64
is a vectorised quicksort, ~15 ns per row, but unstable and without indices.
Most keys the analysis sorts by are small integers (threads, owners, ranks)
and times, so their value range and the row index fit together in one int64:
key - min in the high bits, the row index in the low bits. Sorting those
integers with np.sort orders rows exactly as the stable sort would (ties keep
index order), and the low bits are the permutation (at 4M rows, 0.6 -> 0.14
s on random 40-bit keys; one integer key that is already in a few sorted
runs, or of a 1- or 2-byte type, stays with numpy, which is faster there). Wider keys take one such
sort per digit (lexsort). Floats sort by their IEEE bits. NaN keys, objects
and 64-bit ranges fall back to numpy's stable sorts.
"""
from __future__ import annotations

import numpy as np

_BITS = 63          # packed values stay non-negative int64


def argsort(key) -> np.ndarray:
    """np.argsort(key, kind="stable"), faster for integer and float keys."""
    return lexsort((key,))


def lexsort(keys) -> np.ndarray:
    """np.lexsort(keys) (last key primary; stable), faster for integer and
    float keys. Keys whose ranges, with the row index, fit in 63 bits take one
    packed sort; wider ones are cut into 63 - index-bits digits, sorted least
    significant digit first (each pass stable, so the result is the stable
    multi-key order: an LSD radix sort with np.sort as the digit sort)."""
    keys = [np.asarray(k) for k in keys]
    n = len(keys[0]) if keys else 0
    if n < 2:
        return _numpy_sort(keys)
    if len(keys) == 1 and keys[0].dtype.kind in "biu":
        # numpy's own cases, checked before any offset is made (integers: no NaN)
        k = keys[0]
        if k.dtype.itemsize <= 2:
            return np.argsort(k, kind="stable")   # numpy radix-sorts small types
        descents = np.count_nonzero(k[1:] < k[:-1])
        if descents == 0:
            return np.arange(n)
        if descents < n // 64:
            return np.argsort(k, kind="stable")   # a few sorted runs: timsort's case
    fields = []                           # (offset >= 0, bits), least significant first
    for k in keys:
        field = _ordered_offsets(k)
        if field is None:
            return _numpy_sort(keys)
        if field[1]:                      # a constant key orders nothing
            fields.append(field)
    index_bits = (n - 1).bit_length()
    perm = None
    for digit in _digits(fields, _BITS - index_bits):
        o = _packed_argsort(digit if perm is None else digit[perm], index_bits)
        perm = o if perm is None else perm[o]
    return np.arange(n) if perm is None else perm


def _ordered_offsets(k):
    """(k - min as int64, bits of max - min) with the order of k; floats by
    their IEEE bits. None for keys this cannot order (NaN, objects, ranges of
    64 bits)."""
    if k.dtype == bool:
        return k.astype(np.int64), 1
    if k.dtype.kind == "f":
        x = k.astype(np.float64) + 0.0    # -0.0 -> 0.0: numpy sorts them as equal
        if np.isnan(x).any():
            return None                   # numpy sorts every NaN last
        bits = x.view(np.int64)
        k = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))   # order-preserving
    elif k.dtype.kind not in "iu":
        return None
    lo, hi = int(k.min()), int(k.max())
    width = (hi - lo).bit_length()
    if width > _BITS:
        return None
    if k.dtype.kind == "u":
        off = (k - k.dtype.type(lo)).astype(np.int64) if lo else k.astype(np.int64)
    else:
        off = k.astype(np.int64, copy=False)
        off = (off.view(np.uint64) - np.uint64(lo % (1 << 64))).view(np.int64) if lo else off
    return off, width


def _digits(fields, room):
    """Fields (least significant first) cut into pieces of at most `room`
    bits and combined into as few digits of at most `room` bits as they fill,
    least significant first."""
    pieces = []
    for off, bits in fields:
        shift = 0
        while bits - shift > room:
            pieces.append(((off >> shift) & ((1 << room) - 1), room))
            shift += room
        pieces.append((off >> shift if shift else off, bits - shift))
    digit, used = None, 0
    for piece, bits in pieces:
        if digit is not None and used + bits > room:
            yield digit
            digit, used = None, 0
        if digit is None:
            digit = piece.copy()          # piece may be the caller's key
        else:
            digit |= piece << used
        used += bits
    if digit is not None:
        yield digit


def _packed_argsort(digit, index_bits) -> np.ndarray:
    """Stable argsort of non-negative int64 values below 2**(63 - index_bits):
    value and row index in one int64, one np.sort."""
    packed = digit << index_bits
    packed |= np.arange(len(digit), dtype=np.int64)
    packed.sort()
    packed &= (1 << index_bits) - 1
    return packed


def _numpy_sort(keys) -> np.ndarray:
    if len(keys) == 1:
        return np.argsort(keys[0], kind="stable")
    return np.lexsort(keys)
