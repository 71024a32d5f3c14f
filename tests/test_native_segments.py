"""The builder's compiled kernels (grainlab/native/segments.c: the segment
credit and the running owners) against their numpy twins
(grainlab.graph.slots._segment_credit_numpy, grainlab.graph.events.
_running_segments_numpy) on random rows and chains, the whole grain graph
built with and without the kernels."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grainlab.graph import build
from grainlab.graph.slots import segment_credit


def _random_case(rng, n_rows, n_owners, max_chain, recv_share, untied):
    """Slots in chain order (owner, then row; rows repeat inside a chain, as
    a fork and the fragment after it do), rows with a running owner (-1:
    nobody, owners without slots too), segments with zeros, and a global
    order key that is the position or (untied) a permutation of it."""
    lengths = rng.integers(0, max_chain + 1, n_owners)
    slot_owner = np.repeat(np.arange(n_owners), lengths)
    slot_row = np.concatenate([np.sort(rng.integers(0, n_rows + 2, k)) for k in lengths]) \
        if len(slot_owner) else np.zeros(0, np.int64)
    recv = rng.random(len(slot_owner)) < recv_share
    owner_running = rng.integers(-1, n_owners + 1, n_rows)
    owner_running[owner_running >= n_owners] = -1
    seg = rng.integers(0, 5, n_rows) * (rng.random(n_rows) < 0.8)
    seg_end = rng.integers(0, 1000, n_rows)
    grank = rng.permutation(n_rows) if untied else None
    return (owner_running.astype(np.int64), grank, seg.astype(np.int64),
            seg_end.astype(np.int64), slot_owner.astype(np.int64),
            slot_row.astype(np.int64), recv)


@pytest.mark.parametrize("owner_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("untied", [False, True])
def test_compiled_credit_equals_numpy_twin(build, seed, untied, owner_dtype):
    """The running owner int64 or int32 (the rows' dtype while ids fit: the
    kernel reads it in place)."""
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(0, 3000))
    case = list(_random_case(rng, n_rows, n_owners=int(rng.integers(1, 60)),
                             max_chain=int(rng.integers(0, 40)),
                             recv_share=float(rng.random()), untied=untied))
    case[0] = case[0].astype(owner_dtype)
    native = segment_credit(*case, native=True)
    twin = segment_credit(*case, native=False)
    for a, b in zip(native, twin):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_compiled_credit_on_edge_cases(build):
    """No rows, no slots, every row idle, one long chain probed out of order."""
    z = np.zeros(0, np.int64)
    cases = [
        (z, None, z, z, z, z, np.zeros(0, bool)),
        (np.array([0, 0, -1]), None, np.array([1, 2, 3]), np.array([5, 6, 7]), z, z,
         np.zeros(0, bool)),
        (np.full(5, -1), None, np.ones(5, np.int64), np.arange(5), np.zeros(3, np.int64),
         np.array([0, 2, 4]), np.ones(3, bool)),
        (np.zeros(200, np.int64), np.random.default_rng(1).permutation(200),
         np.ones(200, np.int64), np.arange(200), np.zeros(50, np.int64),
         np.sort(np.random.default_rng(2).integers(0, 200, 50)), np.ones(50, bool)),
    ]
    for case in cases:
        case = tuple(np.asarray(c, np.int64) if c is not None and c.dtype != bool else c
                     for c in case)
        for a, b in zip(segment_credit(*case, native=True), segment_credit(*case, native=False)):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("program,args,threads", [
    ("fib", (14, 3), 2), ("taskgroup", (12,), 2), ("loops", ("all", 300), 2),
    ("depend", (6,), 1), ("fib_untied", (13,), 2), ("uts_untied", ("deep", 300, 4), 2)])
def test_builder_with_and_without_kernels_is_the_same_graph(monkeypatch, record, program, args,
                                                           threads):
    trace = record(program, *args, threads=threads)
    native = build(trace)
    monkeypatch.setenv("GRAINLAB_NATIVE", "0")
    twin = build(trace)
    for table in ("nodes", "edges", "grains", "contexts"):
        pd.testing.assert_frame_equal(getattr(native, table), getattr(twin, table))
    assert native.span == twin.span


def _random_rows(rng, n, n_owners, threads):
    """Rows of a few threads (consecutive per thread, times rising with
    ties), every event code the trace uses and some it does not, owners
    -1 .. n_owners-1, clips inside the time range and unlimited."""
    from grainlab import schema as S
    codes = np.array([c for c in range(30)] + [S.TASK_CREATE] * 5 + [S.TASK_SCHEDULE] * 5,
                     np.uint8)
    ev = rng.choice(codes, n)
    thread = np.sort(rng.integers(0, threads, n))
    first = np.ones(n, bool)
    first[1:] = thread[1:] != thread[:-1]
    time = np.cumsum(rng.integers(0, 4, n)).astype(np.int64)
    task_owner = rng.integers(-1, n_owners, n).astype(np.int64)
    other_owner = rng.integers(-1, n_owners, n).astype(np.int64)
    clip = np.where(rng.random(n_owners) < 0.5, np.iinfo(np.int64).max,
                    rng.integers(0, max(int(time[-1]) if n else 1, 1) + 1, n_owners))
    return ev, first, time, task_owner, other_owner, clip.astype(np.int64)


@pytest.mark.parametrize("owner_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("seed", range(16))
def test_compiled_running_owners_equal_numpy_twin(build, seed, owner_dtype):
    """Owners int64 or int32 (the builder's ids while they fit: the kernel
    reads those in place)."""
    from grainlab.graph.events import running_segments
    rng = np.random.default_rng(100 + seed)
    case = list(_random_rows(rng, n=int(rng.integers(0, 4000)),
                             n_owners=int(rng.integers(1, 50)), threads=int(rng.integers(1, 6))))
    case[3], case[4] = case[3].astype(owner_dtype), case[4].astype(owner_dtype)
    native = running_segments(*case, native=True)
    twin = running_segments(*case, native=False)
    for a, b in zip(native, twin):
        assert a.dtype == b.dtype and np.array_equal(a, b)



@pytest.mark.parametrize("seed", range(16))
def test_compiled_fork_gaps_equal_numpy_twin(build, seed):
    """gl_gap_to_next against _gap_numpy: rows in per-thread time order with
    runs of dependence rows (the creation's), creations anywhere, the last row
    of a thread and of the trace among them, times that go back (gap 0)."""
    from types import SimpleNamespace

    from grainlab import schema as S
    from grainlab.graph.slots import _gap_kernel, _gap_numpy, _gap_to_next_runtime_row
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(1, 3000))
    thread = np.sort(rng.integers(0, int(rng.integers(1, 5)), n)).astype(np.uint16)
    codes = np.array([S.TASK_CREATE, S.DEPENDENCE, S.TASK_DEPENDENCE, S.TASK_SCHEDULE,
                      S.SYNC_BEGIN], np.uint8)
    event = codes[rng.integers(0, len(codes), n)]
    time = np.cumsum(rng.integers(-3, 20, n)).astype(np.int64)
    idx = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    idx = np.unique(np.append(idx, [n - 1]))          # the trace's last row
    rows = SimpleNamespace(event=event, thread=thread, time=time)
    twin = _gap_numpy(event, thread, time, idx)
    assert _gap_kernel() is not None
    native = _gap_to_next_runtime_row(rows, idx)
    assert native.dtype == twin.dtype and np.array_equal(native, twin)
    assert (twin >= 0).all() and twin[-1] == 0
