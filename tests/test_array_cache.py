"""grainlab's array cache (grainlab/array_cache.py, native/array_cache.c):
numpy's array data from reused mappings. What must hold: every array reads
what was written to it and zeros are zeros whatever the block held before,
resizes keep their contents, the cache never holds more than its arrays'
most at once less what they hold now (it adds nothing to the peak), trim
gives everything back, arrays outlive an uninstall, threads may allocate and
free concurrently, and the grain graph built under the cache equals the one
built without it."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from grainlab import array_cache

pytestmark = pytest.mark.skipif(not array_cache.available(),
                                reason="compiled kernels not built (make build)")

SMALLEST = 64 << 10      # cache blocks from 64 KiB: small tests reach it


@pytest.fixture
def cache():
    array_cache.trim()
    assert array_cache.install(smallest=SMALLEST)
    try:
        yield array_cache
    finally:
        array_cache.uninstall()
        array_cache.configure(array_cache.DEFAULT_BUDGET, True, array_cache.LARGE_MIN)
        array_cache.trim()


def _invariant():
    s = array_cache.stats()
    assert s["cached_bytes"] + s["live_bytes"] <= s["peak_live_bytes"], s
    return s


def test_installed_and_uninstalled(cache):
    assert array_cache.installed()
    assert np._core.multiarray.get_handler_name() == array_cache.NAME
    a = np.arange(1 << 20)           # 8 MiB from the cache
    array_cache.uninstall()
    assert np._core.multiarray.get_handler_name() == "default_allocator"
    assert int(a.sum()) == (1 << 20) * ((1 << 20) - 1) // 2     # outlives the uninstall
    del a                                                      # freed into the cache
    assert _invariant()["cached_bytes"] > 0


def test_random_sequence_keeps_contents_and_zeros(cache):
    rng = np.random.default_rng(7)
    live = []
    for step in range(800):
        if live and rng.random() < 0.45:
            a, value = live.pop(int(rng.integers(len(live))))
            assert (a == value).all(), step
        n = int(rng.choice([rng.integers(1, 4096), rng.integers(SMALLEST // 8, 1 << 19)]))
        kind = rng.integers(3)
        if kind == 0:     # calloc: zero even when carved from a dirty range
            a = np.zeros(n, dtype=np.int64)
            assert not a.any(), step
        elif kind == 1:
            a = np.empty(n, dtype=np.int64)
        else:             # realloc: grow or shrink, keeping the prefix
            a = np.full(n, step, dtype=np.int64)
            m = int(rng.integers(1, 2 * n + 2))
            a.resize(m, refcheck=False)
            assert (a[:min(n, m)] == step).all(), step
        a[:] = step
        live.append((a, step))
        if step % 50 == 0:
            _invariant()
    for a, value in live:
        assert (a == value).all()
    s = _invariant()
    assert s["hits"] > 100 and s["bytes_reused"] > 0      # the cache was used


def test_aligned(cache):
    for n in (SMALLEST, 3 << 20, (5 << 20) + 8):
        a = np.empty(n // 8)
        assert a.ctypes.data % 64 == 0


def test_never_more_than_the_most_held(cache):
    # hold 6 blocks, free them, take smaller ones: cached + live stays under
    # the most held, and trim leaves nothing cached
    blocks = [np.ones(1 << 18) for _ in range(6)]           # 2 MiB each
    most = _invariant()["peak_live_bytes"]
    del blocks
    s = _invariant()
    assert s["live_bytes"] == 0 and 0 < s["cached_bytes"] <= most
    small = [np.zeros(1 << 16) for _ in range(10)]          # carved from the cached ranges
    s = _invariant()
    assert s["peak_live_bytes"] == most and s["hits"] >= 10
    assert all(not x.any() for x in small)
    assert array_cache.trim() > 0
    assert array_cache.stats()["cached_bytes"] == 0


def test_budget_caps_the_cache(cache):
    array_cache.configure(4 << 20, True, SMALLEST)
    blocks = [np.ones(1 << 18) for _ in range(8)]
    del blocks
    assert _invariant()["cached_bytes"] <= 4 << 20


def test_threads(cache):
    errors = []

    def work(seed, out):
        array_cache.install(smallest=SMALLEST)    # numpy's handler is per context
        rng = np.random.default_rng(seed)
        mine = []
        for step in range(300):
            a = np.full(int(rng.integers(SMALLEST // 8, 1 << 18)), seed * 1000 + step)
            mine.append(a)
            if len(mine) > 5:
                out.append(mine.pop(0))       # freed by another thread
        for a in mine:
            if not (a == a[0]).all():
                errors.append(seed)

    handoff = []
    threads = [threading.Thread(target=work, args=(s, handoff)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all((a == a[0]).all() for a in handoff)
    del handoff
    assert not errors
    _invariant()


@pytest.mark.parametrize("shape", ["fork-join", "spine", "random"])
def test_graph_equal_with_and_without(cache, tmp_path, shape):
    import pandas as pd
    from grainlab import synth
    from grainlab.graph import build
    from grainlab.trace.trace import load

    path = tmp_path / "t.parquet"
    synth.generate(path, shape, 20_000, seed=3)
    # loaded before the install: a load fits the command line's memory profile
    # to the trace (process_memory.fit_to_trace), which may uninstall the cache
    trace_a, trace_b = load(path), load(path)
    array_cache.uninstall()
    plain = build(trace_a)
    array_cache.install(smallest=SMALLEST)
    before = array_cache.stats()["hits"]
    cached = build(trace_b)
    assert array_cache.stats()["hits"] > before
    for name in ("nodes", "edges", "grains"):
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(cached, name))
    assert plain.span == cached.span
    assert np.array_equal(plain.critical_path, cached.critical_path)
