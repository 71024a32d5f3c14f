"""Instantaneous parallelism's compiled kernel (grainlab/native/parallelism.c)
against its numpy twin (grainlab.metrics.instantaneous_parallelism.
_parallelism_numpy: _counts and _grain_min, the computation it replaces) on
random placed fragments, and against a brute-force oracle; the metric's
columns computed both ways on the golden traces."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab.metrics import instantaneous_parallelism as ip


def _random_fragments(rng, n_grains, max_frags, horizon, zero_share, shuffled):
    """Grain runs of sequential fragments (some of zero length, some grains
    with only zero-length ones, some with none); `shuffled`: the runs' order
    broken (the kernel must hand them to the twin, which orders them)."""
    per = rng.integers(0, max_frags + 1, n_grains)
    grain = np.repeat(np.arange(n_grains), per)
    start = np.empty(len(grain), np.int64)
    end = np.empty(len(grain), np.int64)
    pos = 0
    for m in per:                      # test data, not the metric: a loop is fine
        t = int(rng.integers(0, horizon))
        for _ in range(m):
            d = 0 if rng.random() < zero_share else int(rng.integers(1, horizon // 4 + 2))
            start[pos], end[pos] = t, t + d
            t += d + int(rng.integers(0, 5))
            pos += 1
    if shuffled and len(grain) > 1:
        o = rng.permutation(len(grain))
        grain, start, end = grain[o], start[o], end[o]
    if len(start):
        origin = start.min()
        start, end = start - origin, end - origin
    return grain, start, end


def _brute_force(grain, start, end, length, k, n):
    """Every interval by its definition: optimistic = grains with a positive
    fragment overlapping it, conservative = fragments covering it whole; a
    grain's value the minimum over the intervals its kept fragments touch."""
    lo_t = np.arange(k) * length
    hi_t = lo_t + length
    pos = end > start
    opt = np.zeros(k, np.int64)
    cons = np.zeros(k, np.int64)
    touched = [set() for _ in range(k)]
    for g, s, e, p in zip(grain, start, end, pos):
        if not p:
            continue
        for i in range(k):
            if s < hi_t[i] and e > lo_t[i]:
                touched[i].add(g)
            if s <= lo_t[i] and e >= hi_t[i]:
                cons[i] += 1
    for i in range(k):
        opt[i] = len(touched[i])
    g_opt, g_cons = np.full(n, np.nan), np.full(n, np.nan)
    has_pos = np.zeros(n, bool)
    has_pos[grain[pos]] = True
    for g, s, e, p in zip(grain, start, end, pos):
        if has_pos[g] and not p:
            continue
        lo = min(s // length, k - 1)
        hi = min((e - 1) // length, k - 1) if p else lo
        for arr, c in ((g_opt, opt), (g_cons, cons)):
            v = c[lo:hi + 1].min()
            arr[g] = v if np.isnan(arr[g]) else min(arr[g], v)
    return opt, cons, g_opt, g_cons


@pytest.mark.parametrize("seed", range(40))
def test_kernel_equals_numpy_twin_on_random_fragments(build, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    horizon = int(rng.integers(1, 100_000))
    grain, start, end = _random_fragments(rng, n, int(rng.integers(0, 6)), horizon,
                                          float(rng.random() * 0.4), shuffled=seed % 5 == 4)
    if len(grain) == 0:
        return
    k_wanted = int(rng.integers(1, 5000))          # past 64 * 64: the block table's levels
    length = max(-(-int(end.max()) // k_wanted), 1)
    k = max(-(-int(end.max()) // length), 1)
    native = ip.parallelism(grain, start, end, length, k, n + 3, native=True)
    twin = ip.parallelism(grain, start, end, length, k, n + 3, native=False)
    for a, b in zip(native, twin):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("seed", range(12))
def test_kernel_equals_brute_force(build, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 40))
    grain, start, end = _random_fragments(rng, n, 4, 2000, 0.3, shuffled=False)
    if len(grain) == 0:
        return
    length = int(rng.integers(1, 300))
    k = max(-(-int(end.max()) // length), 1)
    got = ip.parallelism(grain, start, end, length, k, n, native=True)
    for a, b in zip(got, _brute_force(grain, start, end, length, k, n)):
        assert np.array_equal(a, b, equal_nan=True)


def test_kernel_one_interval_and_long_ranges(build):
    """One interval for everything; a fragment spanning every block."""
    grain = np.array([0, 1, 1, 2], np.int64)
    start = np.array([0, 0, 10_000, 5], np.int64)
    end = np.array([100_000, 5_000, 99_999, 5], np.int64)
    for length, k in ((100_000, 1), (7, -(-100_000 // 7))):
        native = ip.parallelism(grain, start, end, length, k, 4, native=True)
        twin = ip.parallelism(grain, start, end, length, k, 4, native=False)
        for a, b in zip(native, twin):
            assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", ["fib_t2", "loops", "depend", "imbalance", "taskloop"])
def test_metric_columns_native_and_numpy_equal(build, monkeypatch, name):
    """The whole metric on a golden trace with and without the kernel."""
    from pathlib import Path

    import grainlab as gl
    path = Path(__file__).parent / "golden" / "traces" / f"{name}.parquet"
    if not path.exists():
        pytest.skip(f"no golden trace {path.name}")
    out = []
    for native in ("1", "0"):
        monkeypatch.setenv("GRAINLAB_NATIVE", native)
        from grainlab import _paths
        _paths._KERNELS.clear()
        g = gl.load(path).graph()
        info = ip.compute(g)
        out.append((info, g.grains[[ip.COLUMN, ip.COLUMN_CONSERVATIVE, ip.COLUMN_START]]))
    _paths._KERNELS.clear()
    assert out[0][0] == out[1][0]
    assert out[0][1].equals(out[1][1])


@pytest.mark.parametrize("seed", range(30))
def test_gap_kernel_equals_numpy_twin(build, seed):
    """Grain spans with tied ends and starts, zero-length grains, a grain's
    end equal to another's start."""
    rng = np.random.default_rng(500 + seed)
    n = int(rng.integers(0, 600))
    hi = int(rng.choice([5, 50, 10_000]))
    ids = rng.permutation(n + 7)[:n].astype(np.int64)
    gs = rng.integers(0, hi, n).astype(np.int64)
    ge = gs + rng.integers(0, hi // 2 + 1, n) * (rng.random(n) < 0.9)
    assert ip.nearest_gap(ids, gs, ge, native=True) == ip.nearest_gap(ids, gs, ge, native=False)


def test_gap_of_starts_too_wide_to_pack_is_the_twins(build):
    """Placed times 2^62 apart leave no bits for the positions: the twin answers."""
    ids = np.arange(4, dtype=np.int64)
    gs = np.array([0, 5, 1 << 62, (1 << 62) + 3], np.int64)
    ge = gs + np.array([2, 0, 1, 9])
    assert ip._packed_sorted(gs) is None
    assert ip.nearest_gap(ids, gs, ge, native=True) == ip.nearest_gap(ids, gs, ge, native=False) == 2
