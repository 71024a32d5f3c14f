"""The threads view's split of each thread's time into work, runtime and
idle (grainlab.app.threads_figure._split) against the plain sweep it
replaced (a lexsort of every interval end): equal on random inputs, with
ties, nested runtime intervals, rows without events and empty inputs."""
import numpy as np
import pytest

from grainlab.app.threads_figure import _sorted_points, _split


def reference(n_rows, t0, t1, w_row, w_s, w_e, r_row, r_s, r_e):
    n_w, n_r = len(w_row), len(r_row)
    row = np.concatenate([w_row, w_row, r_row, r_row])
    time = np.concatenate([w_s, w_e, r_s, r_e])
    dw = np.concatenate([np.ones(n_w, np.int64), -np.ones(n_w, np.int64),
                         np.zeros(2 * n_r, np.int64)])
    dr = np.concatenate([np.zeros(2 * n_w, np.int64), np.ones(n_r, np.int64),
                         -np.ones(n_r, np.int64)])
    o = np.lexsort((time, row))
    row, time, dw, dr = row[o], time[o], dw[o], dr[o]
    cw, cr = np.cumsum(dw), np.cumsum(dr)
    same = row[:-1] == row[1:]
    seg_s, seg_e, seg_row = time[:-1], time[1:], row[:-1]
    long = same & (seg_e > seg_s)
    w_on, r_on = cw[:-1] > 0, cr[:-1] > 0
    rt = long & ~w_on & r_on
    idle = long & ~w_on & ~r_on
    runtime = (seg_row[rt], seg_s[rt], seg_e[rt])
    first = np.ones(len(row), bool)
    first[1:] = row[1:] != row[:-1]
    last = np.ones(len(row), bool)
    last[:-1] = row[:-1] != row[1:]
    empty = np.setdiff1d(np.arange(n_rows), row)
    i_row = np.concatenate([seg_row[idle], row[first], row[last], empty])
    i_s = np.concatenate([seg_s[idle], np.full(first.sum(), t0), time[last],
                          np.full(len(empty), t0)])
    i_e = np.concatenate([seg_e[idle], time[first], np.full(last.sum(), t1),
                          np.full(len(empty), t1)])
    keep = i_e > i_s
    return runtime, (i_row[keep], i_s[keep], i_e[keep])


def intervals(rng, n, n_rows, horizon, tiling):
    """n intervals on rows < n_rows: tiling = each row's intervals one after
    the other (the work fragments: sorted by start overall, as the caller
    passes them), else any, overlapping and nested (the runtime's)."""
    row = rng.integers(0, n_rows, n)
    if tiling:
        start = np.sort(rng.integers(0, horizon, n))
        end = np.empty(n, np.int64)
        for r in range(n_rows):                   # test data only
            i = np.flatnonzero(row == r)
            nxt = np.r_[start[i][1:], horizon]
            end[i] = start[i] + rng.integers(0, 1 + np.maximum(nxt - start[i], 0))
        return row, start, np.minimum(end, np.maximum(start, horizon))
    start = rng.integers(0, horizon, n)
    return row, start, start + rng.integers(0, max(horizon // 4, 1), n)


def same(got, want):
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype.kind == b.dtype.kind
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(60))
def test_split_equals_the_plain_sweep(seed):
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 7))
    horizon = int(rng.choice([5, 50, 10_000, 2 ** 40]))      # small: many ties
    w = intervals(rng, int(rng.integers(0, 300)), n_rows, horizon, tiling=True)
    r = intervals(rng, int(rng.integers(0, 300)), n_rows, horizon, tiling=bool(seed % 3 == 0))
    t0, t1 = 0, horizon + int(rng.integers(0, 3))
    # rows past n_rows (a thread the caller did not count) are kept as they were
    extra = int(rng.integers(0, 2))
    args = (max(n_rows - extra, 1), t0, t1, *w, *r)
    same(_split(*args), reference(*args))


def test_empty_and_unsorted_inputs():
    e = np.zeros(0, np.int64)
    same(_split(3, 0, 10, e, e, e, e, e, e), reference(3, 0, 10, e, e, e, e, e, e))
    # work not sorted by start (the fallback order) and negative times
    w = (np.array([1, 0, 1]), np.array([5, -3, 0]), np.array([7, 2, 4]))
    r = (np.array([0, 0]), np.array([-5, 3]), np.array([9, 4]))
    same(_split(2, -10, 12, *w, *r), reference(2, -10, 12, *w, *r))


def test_times_too_wide_to_pack_take_the_stable_sort():
    rng = np.random.default_rng(11)
    for seed in range(5):
        w = intervals(rng, 50, 3, 2 ** 20, tiling=True)
        r = intervals(rng, 40, 3, 2 ** 20, tiling=False)
        far = 2 ** 61 + seed                           # (row, time) does not fit 62 bits
        w = (w[0], w[1] + far, w[2] + far)
        r = (r[0], r[1] - far, r[2] - far)
        args = (3, -far, far + 2 ** 21, *w, *r)
        same(_split(*args), reference(*args))


@pytest.mark.parametrize("wide", [False, True])
def test_points_are_sorted_by_row_then_time_ties_by_kind(wide):
    """_sorted_points, packed or (times too wide) lexsorted: (row, time)
    order, ties in the order work starts, work ends, runtime starts, ends."""
    rng = np.random.default_rng(7)
    far = 2 ** 61 if wide else 0
    w = (rng.integers(0, 5, 500), rng.integers(-50, 50, 500) + far, rng.integers(-50, 50, 500))
    r = (rng.integers(0, 5, 300), rng.integers(-50, 50, 300) - far, rng.integers(-50, 50, 300))
    time, code = _sorted_points(*w, *r)
    row = np.concatenate([w[0], w[0], r[0], r[0]])
    t = np.concatenate([w[1], w[2], r[1], r[2]])
    c = np.repeat(np.arange(4), [500, 500, 300, 300])
    o = np.lexsort((c, t, row))
    np.testing.assert_array_equal(time, t[o])
    np.testing.assert_array_equal(code, c[o])
