"""Sorting columns fast. numpy's stable multi-key sort (np.lexsort) is
several times slower than a plain argsort of one int64 key; most keys the
analysis sorts by are small integers (threads, owners, ranks) and times,
whose ranges pack into one int64."""
from __future__ import annotations

import numpy as np


def lexsort(keys) -> np.ndarray:
    """np.lexsort(keys) (last key primary; stable), faster: integer keys whose
    ranges fit are packed, with the row index last, into one int64 that a
    plain (unstable, ~4x faster) argsort orders exactly as the stable
    multi-key sort would. Other keys fall back to np.lexsort."""
    keys = [np.asarray(k) for k in keys]
    n = len(keys[0]) if keys else 0
    if n < 2 or not all(k.dtype.kind in "biu" for k in keys):
        return np.lexsort(keys)
    lows, ranges, total = [], [], n
    for k in keys:
        lo, hi = (int(k.min()), int(k.max())) if k.dtype != bool else (0, 1)
        lows.append(lo)
        ranges.append(hi - lo + 1)
        total *= hi - lo + 1
        if total >= (1 << 62):
            return np.lexsort(keys)
    packed = np.zeros(n, np.int64)
    for k, lo, rng in zip(reversed(keys), reversed(lows), reversed(ranges)):
        packed *= rng
        packed += k.astype(np.int64) - lo if lo else k.astype(np.int64)
    packed *= n
    packed += np.arange(n)
    return np.argsort(packed)
