"""Instantaneous parallelism (thesis §5.4.2, Fig. 5.4; DESIGN.md "Metrics").

Every grain fragment (fragment and chunk nodes owned by a grain) is placed at its
EARLIEST start in the DAG given the measured durations (`earliest_start`), which
gives the schedule an unbounded machine would run. Time from the first grain's
placed start to the span is cut into intervals of length L, and each interval
counts the grains running in it:
  optimistic   - grains with any overlap with the interval
  conservative - grains with a fragment covering the whole interval
A grain's value is the minimum count over the intervals its fragments overlap.
Problem: optimistic value < cores used (the grain ran while too little other work
was available to keep every core busy).

Interval choices (thesis): "median" grain length (default), "min" grain length,
"gap" = the smallest positive distance between a grain's start and another
grain's end in the placed schedule; or a number of ns. At most `max_intervals`
intervals are used: a finer choice is coarsened to span / max_intervals, and the
summary says so.

Also the *achieved* profile: grains actually running over time, from the
recorded timestamps (`achieved_profile`).

All column operations: interval ranges by integer division, counts by difference
arrays + cumsum, per-grain minimum by a sparse table (range-minimum queries).
"""
from __future__ import annotations

import numpy as np

from ..sorting import argsort, lexsort
import pandas as pd

from .intervals import union_by_group
from .contract import grain_exec_mask
from .earliest_start import earliest_start

COLUMN = "instantaneous_parallelism"
COLUMN_CONSERVATIVE = "instantaneous_parallelism_conservative"
COLUMN_START = "earliest_start"
CHOICES = ("median", "min", "gap")
MAX_INTERVALS = 1 << 20


def placed_fragments(g, es=None):
    """Grain fragments at their earliest start: (grain, start, end) int64 arrays,
    each grain's fragments one run, in time order."""
    m = grain_exec_mask(g)
    dur = g.nodes["duration"].to_numpy(np.int64)[m]
    cols = g.nodes.columns
    if es is None and "earliest_start" not in cols and "earliest_finish" in cols:
        # earliest_start(g) on the grains' fragments only (a node-sized
        # array less at 10^7 grains): the same values
        start = g.nodes["earliest_finish"].to_numpy(np.int64)[m]
        start -= dur
    else:
        start = (earliest_start(g) if es is None else es)[m]
    # gathered, then widened: an int32 id column is not copied whole first
    grain = g.nodes["grain"].to_numpy()[m].astype(np.int64, copy=False)
    order = _grain_order(grain, start)
    if order is None:
        dur += start                     # the ends, in the gathered copy
        return grain, start, dur
    return grain[order], start[order], start[order] + dur[order]


def grain_spans(grain, start, end):
    """(grain ids, placed start, placed end) of every grain with fragments, from
    fragments in runs (placed_fragments)."""
    if len(grain) == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    first = np.flatnonzero(np.r_[True, grain[1:] != grain[:-1]])
    return grain[first], start[first], np.maximum.reduceat(end, first)


def interval_candidates(g, grain, start, end, spans=None) -> dict:
    """The three interval lengths of the thesis, in ns (0 when undefined).
    spans: grain_spans(grain, start, end) when the caller has them."""
    work = g.grains["work"].to_numpy(np.int64)
    pos = work[work > 0]
    out = {"median": int(np.median(pos)) if len(pos) else 0,
           "min": int(pos.min()) if len(pos) else 0}
    # grain-level placed start/end, then the nearest OTHER grain's end to every start
    ids, gs, ge = grain_spans(grain, start, end) if spans is None else spans
    out["gap"] = nearest_gap(ids, gs, ge)
    return out


def nearest_gap(ids, gs, ge, native=None) -> int:
    """The smallest positive distance between a grain's placed start `gs`
    and another grain's placed end `ge` (0: none): the compiled search
    (grainlab/native/parallelism.c) over the starts and the ends each sorted
    once as packed keys, else its twin `_gap_numpy`; `native` forces one
    (tests)."""
    if len(gs) <= 1:
        return 0
    kernel = _gap_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled parallelism kernel is not built")
    starts = _packed_sorted(gs) if kernel is not None else None
    ends = _packed_sorted(ge) if starts is not None else None
    if ends is None:
        return _gap_numpy(ids, gs, ge)
    (skey, bits, smin), (ekey, _, emin) = starts, ends
    ids = np.ascontiguousarray(ids, np.int64)
    return int(kernel(len(gs), skey.ctypes.data, ekey.ctypes.data, bits, smin, emin,
                      ids.ctypes.data))


def _packed_sorted(values):
    """(keys, position bits, min): (value - min) << bits | position, sorted
    (sorting.argsort's packing, kept packed: the kernel reads values and
    positions from the keys, so neither is gathered); None when they do not
    fit 63 bits."""
    n = len(values)
    lo = int(values.min())
    bits = (n - 1).bit_length()
    if (int(values.max()) - lo).bit_length() + bits > 63:
        return None
    key = values.astype(np.int64)              # a copy: the caller's values stay
    key -= lo
    key <<= bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    return key, bits, lo


def _gap_numpy(ids, gs, ge) -> int:
    # starts in order: each search begins where the last one ended (the
    # minimum does not care about order; at 1M grains 0.3 -> 0.1 s)
    by_start = argsort(gs)
    ids, gs, ge = ids[by_start], gs[by_start], ge[by_start]
    order = argsort(ge)
    ends, owner = ge[order], ids[order]
    m = len(ends)
    i = np.searchsorted(ends, gs)                 # first end >= start: never
    left = gs - ends[np.maximum(i - 1, 0)]        # the grain's own end on the left
    left = np.where(i > 0, left, -1)
    own = owner[np.minimum(i, m - 1)] == ids      # skip its own end on the right
    j = np.where(own, i + 1, i)
    right = np.where(j < m, ends[np.minimum(j, m - 1)] - gs, -1)
    d = np.concatenate([left, right])
    d = d[d > 0]
    return int(d.min()) if len(d) else 0


def _gap_kernel():
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_nearest_gap", [i, p, p, i, i, i, p], restype=ctypes.c_int64)


def compute(g, interval="median", max_intervals: int = MAX_INTERVALS, es=None) -> dict:
    """Add the optimistic/conservative columns (and `earliest_start` of the
    grain's first fragment); return what was used."""
    gr = g.grains
    n = len(gr)
    grain, start, end = placed_fragments(g, es)
    origin = int(start.min()) if len(start) else 0
    # from the first placed start on; the arrays are this call's own (no copies)
    start -= origin
    end -= origin
    spans = grain_spans(grain, start, end)
    length, k, info = _choose_length(g, grain, start, end, interval, max_intervals, spans)
    opt_counts, cons_counts, gr_opt, gr_cons = parallelism(grain, start, end, length, k, n)
    del grain, start, end
    info["origin_ns"] = origin
    placed = np.full(n, -1, np.int64)
    ids, first, _ = spans
    placed[ids] = first + origin
    gr[COLUMN_START] = placed
    gr[COLUMN] = gr_opt
    gr[COLUMN_CONSERVATIVE] = gr_cons
    info["ideal_mean"] = float(opt_counts.mean())
    info["ideal_min"] = int(opt_counts.min())
    g.ideal_profile = _profile(origin, length, opt_counts, cons_counts)
    return info


def parallelism(grain, start, end, length, k, n, native=None):
    """(optimistic counts[k], conservative counts[k], per grain the minimum
    of each over the intervals its fragments overlap (NaN: no fragment)) of
    fragments in grain runs (placed_fragments, start relative to the first).
    The compiled kernel (grainlab/native/parallelism.c) when built: no
    fragment-sized temporaries; else, or when the fragments are not in runs,
    its numpy twin `_parallelism_numpy`; `native` forces one (tests)."""
    kernel = _parallelism_kernel() if native is not False and len(grain) else None
    if native and kernel is None and len(grain):
        raise RuntimeError("the compiled parallelism kernel is not built")
    if kernel is not None:
        c64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
        grain, start, end = c64(grain), c64(start), c64(end)
        opt, cons = np.empty(k, np.int64), np.empty(k, np.int64)
        diff = np.empty(k + 1, np.int64)
        g_opt, g_cons = np.full(n, np.nan), np.full(n, np.nan)
        rc = kernel(len(grain), grain.ctypes.data, start.ctypes.data, end.ctypes.data,
                    int(length), int(k), int(n), opt.ctypes.data, cons.ctypes.data,
                    diff.ctypes.data, g_opt.ctypes.data, g_cons.ctypes.data)
        if rc == 0:
            return opt, cons, g_opt, g_cons
        if rc in (-1, -2):
            from ..errors import GrainlabError
            raise GrainlabError("instantaneous parallelism: " + (
                "out of memory" if rc == -1 else "a grain id out of range "
                "(a grainlab bug: please report it with the trace)"))
        # -3: not in grain runs; the twin orders them
    return _parallelism_numpy(grain, start, end, length, k, n)


def _parallelism_numpy(grain, start, end, length, k, n):
    """The kernel's twin: counts by difference arrays, minima by a sparse table."""
    opt, cons, lo, hi, owner = _counts(grain, start, end, length, k)
    return opt, cons, _grain_min(opt, lo, hi, owner, n), _grain_min(cons, lo, hi, owner, n)


def _parallelism_kernel():
    """gl_parallelism through ctypes, or None (not built, GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_parallelism", [i, p, p, p, i, i, i, p, p, p, p, p])


def kept_profile(g) -> pd.DataFrame | None:
    """The ideal profile `compute` kept on the graph (None before it ran)."""
    return getattr(g, "ideal_profile", None)


def _profile(origin, length, opt, cons) -> pd.DataFrame:
    return pd.DataFrame({"start": origin + np.arange(len(opt), dtype=np.int64) * length,
                         "optimistic": opt, "conservative": cons})


def ideal_profile(g, interval="median", max_intervals: int = MAX_INTERVALS) -> pd.DataFrame:
    """One row per interval: start (ns), optimistic and conservative counts."""
    grain, start, end = placed_fragments(g)
    origin = int(start.min()) if len(start) else 0
    start, end = start - origin, end - origin
    length, k, _ = _choose_length(g, grain, start, end, interval, max_intervals)
    opt, cons, *_ = _counts(grain, start, end, length, k)
    return _profile(origin, length, opt, cons)


def _choose_length(g, grain, start, end, interval, max_intervals, spans=None):
    candidates = interval_candidates(g, grain, start, end, spans)
    if isinstance(interval, str):
        if interval not in candidates:
            raise ValueError(f"interval must be one of {CHOICES} or a number of ns")
        choice, length = interval, candidates[interval]
    else:
        choice, length = "ns", int(interval)
    horizon = int(end.max()) if len(end) else 0
    info = {"interval_choice": choice, "interval_candidates_ns": candidates, "note": None}
    if length <= 0:
        length = max(horizon, 1)
        info["note"] = f"interval choice {choice!r} is undefined for this graph: one interval"
    if horizon > 0 and -(-horizon // length) > max_intervals:
        coarse = -(-horizon // max_intervals)
        info["note"] = (f"interval {length} ns would give {-(-horizon // length)} intervals; "
                        f"coarsened to {coarse} ns ({max_intervals} intervals)")
        length = coarse
    k = max(-(-horizon // length), 1)
    info.update(interval_ns=int(length), intervals=int(k))
    return length, k, info


def running_intervals(g):
    """When each thread was running a grain: per thread, the union of its grain
    fragments and chunks. A fragment's [start, end] can contain other grains run
    inline on the same thread (undeferred or included children, tasks executed
    at a taskwait or barrier): the union counts that time once, so a thread
    runs at most one grain at any instant. Returns (thread, start, end)."""
    thread = g.nodes["thread"].to_numpy()
    gt, s, e = union_by_group(thread, g.nodes["start"].to_numpy(np.int64),
                              g.nodes["end"].to_numpy(np.int64), mask=grain_exec_mask(g))
    return gt.astype(np.int64, copy=False), s, e


def achieved_profile(g) -> pd.DataFrame:
    """Grains actually running over time (recorded timestamps): a step function,
    one row per change: time (ns) and the number of threads running a grain
    from then on (never more than the threads)."""
    _, s, e = running_intervals(g)
    if len(s) == 0:
        return pd.DataFrame({"time": np.zeros(0, np.int64), "running": np.zeros(0, np.int64)})
    t = np.concatenate([s, e])
    d = np.concatenate([np.ones(len(s), np.int64), -np.ones(len(e), np.int64)])
    times, inv = np.unique(t, return_inverse=True)
    delta = np.bincount(inv, weights=d, minlength=len(times)).astype(np.int64)
    return pd.DataFrame({"time": times, "running": np.cumsum(delta)})


def achieved_stats(g) -> dict:
    """Time-weighted mean and maximum of the achieved profile, without building
    it: mean = busy time / window; the maximum is reached at some start, where
    running = starts so far - ends so far."""
    _, s, e = running_intervals(g)
    s, e = np.sort(s, kind="stable"), np.sort(e, kind="stable")
    if len(s) == 0:
        return {"achieved_mean": 0.0, "achieved_max": 0}
    window = int(e[-1] - s[0])
    running = np.arange(1, len(s) + 1) - np.searchsorted(e, s, side="right")
    return {"achieved_mean": float((e - s).sum() / window) if window else 0.0,
            "achieved_max": int(running.max())}


def _counts(grain, start, end, length, k):
    """Per-interval optimistic and conservative counts, and the deduplicated
    interval ranges [lo, hi] of every grain piece (owner = grain id)."""
    # Zero-length fragments run nothing: they never add to a count. They only
    # place a grain that has no positive fragment (for its own value).
    positive = end > start
    has_positive = np.zeros(int(grain.max()) + 1 if len(grain) else 0, bool)
    has_positive[grain[positive]] = True
    keep = positive | ~has_positive[grain]
    grain, start, end = grain[keep], start[keep], end[keep]

    lo = np.minimum(start // length, k - 1)
    hi = np.where(end > start, (end - 1) // length, lo)
    hi = np.minimum(hi, k - 1)
    # a grain counts once per interval: its fragments are sequential, so after
    # sorting by (grain, lo) each piece starts after the previous piece's end
    order = _grain_order(grain, lo)
    if order is not None:
        grain, lo, hi, start, end = grain[order], lo[order], hi[order], start[order], end[order]
    same = np.r_[False, grain[1:] == grain[:-1]]
    prev_hi = np.r_[-1, hi[:-1]]
    lo_d = np.where(same, np.maximum(lo, prev_hi + 1), lo)
    piece = (lo_d <= hi) & (end > start)
    opt = _range_add(lo_d[piece], hi[piece], k)

    clo = -(-start // length)
    chi = end // length - 1
    full = clo <= chi
    cons = _range_add(clo[full], np.minimum(chi[full], k - 1), k)
    return opt, cons, lo, hi, grain


def _grain_order(grain, lo):
    """Permutation making each grain's fragments one run, in time order. The
    graph numbers an owner's nodes consecutively in execution order, so this is
    usually the identity (checked in O(n)): then None; otherwise a lexsort."""
    if len(grain) == 0:
        return None
    new_run = np.r_[True, grain[1:] != grain[:-1]]
    one_run_each = np.bincount(grain[new_run]).max() <= 1
    if one_run_each and ((lo[1:] >= lo[:-1]) | new_run[1:]).all():
        return None
    return lexsort((lo, grain))


def _range_add(lo, hi, k):
    diff = np.bincount(lo, minlength=k + 1)[: k + 1].astype(np.int64)
    diff -= np.bincount(hi + 1, minlength=k + 1)[: k + 1]
    return np.cumsum(diff[:k])


def _grain_min(counts, lo, hi, owner, n):
    """min(counts[lo..hi]) per piece, then min per owner grain (NaN if none).
    Range minimum by a sparse table: level j holds minima of 2^j intervals."""
    out = np.full(n, np.nan)
    if len(lo) == 0:
        return out
    k = len(counts)
    length = hi - lo + 1
    lvl = np.log2(length).astype(np.int64)       # exact for the small ints here
    levels = int(lvl.max())
    table = np.empty((levels + 1, k), np.int32)
    table[0] = counts
    for j in range(1, levels + 1):               # log2(intervals) vector steps
        half = 1 << (j - 1)
        table[j, : k - half] = np.minimum(table[j - 1, : k - half], table[j - 1, half:])
        table[j, k - half:] = table[j - 1, k - half:]
    val = np.minimum(table[lvl, lo], table[lvl, hi - (1 << lvl) + 1])
    # owner is in runs (see _grain_order): one minimum per run
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    out[owner[starts]] = np.minimum.reduceat(val, starts)
    return out
