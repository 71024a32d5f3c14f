"""The compiled pass over the TASK_SCHEDULE rows (grainlab/native/schedules.c,
validate._schedule_batch_native) gives exactly what its numpy twin
(_Tasks._schedule_batch) gives: every task's first run, first switch away,
its row group, lowest and highest thread, the count of schedule rows and the
first row naming a task never created, on random batches (ids created,
implicit, 0 and unknown; several batches, so the state carried between them
counts), and `grainlab info` answers the same with and without it on every
golden trace."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grainlab import schema as S
from grainlab.trace import validate
from grainlab.trace.batches import Collected

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"

def _kernel_built() -> bool:
    from grainlab._paths import graph_kernels_library
    return graph_kernels_library() is not None


def _ids(rng, thread, k):
    """Collector ids: (thread + 1) << 40 | k."""
    return (np.uint64(thread + 1) << np.uint64(40)) | np.asarray(k, np.uint64)


def random_batches(seed):
    """(creates-and-implicit batch, schedule batches) of a random run."""
    rng = np.random.default_rng(seed)
    threads = int(rng.integers(1, 5))
    n_tasks = int(rng.integers(1, 300))
    created = _ids(rng, rng.integers(0, threads, n_tasks), rng.permutation(n_tasks))
    implicit = _ids(rng, np.arange(threads), 1 << 30)
    strangers = _ids(rng, rng.integers(0, threads + 2, 20), rng.integers(0, 1 << 39, 20))
    pool = np.concatenate([created, implicit, strangers, np.zeros(5, np.uint64)])
    weights = np.concatenate([np.full(len(created), 20.0), np.full(threads, 10.0),
                              np.full(20, rng.choice([0.0, 0.3])), np.full(5, 1.0)])
    weights /= weights.sum()

    def batch(n, rg0):
        b = {c: np.zeros(n, np.dtype(t)) for c, t in S.COLUMNS.items()}
        b["event"] = rng.choice([S.TASK_SCHEDULE, S.TASK_SCHEDULE, S.SYNC_BEGIN, S.TASK_CREATE],
                                n).astype(np.uint8)
        b["task"] = rng.choice(pool, n, p=weights)
        b["other"] = rng.choice(pool, n, p=weights)
        b["tsc"] = rng.integers(0, 1 << 52, n).astype(np.uint64)
        b["thread"] = rng.integers(0, threads, n).astype(np.uint16)
        b["rg"] = np.sort(rng.integers(rg0, rg0 + 5, n)).astype(np.int32)
        b["pos"] = np.arange(n, dtype=np.int64)
        return b

    first = {c: np.zeros(n_tasks + threads, np.dtype(t)) for c, t in S.COLUMNS.items()}
    first["event"][:n_tasks] = S.TASK_CREATE
    first["event"][n_tasks:] = S.IMPLICIT_BEGIN
    first["task"] = np.concatenate([created, implicit])
    first["other"][:n_tasks] = rng.choice(implicit, n_tasks)
    first["tsc"] = rng.integers(0, 1 << 52, len(first["task"])).astype(np.uint64)
    first["rg"] = np.zeros(len(first["task"]), np.int32)
    first["pos"] = np.arange(len(first["task"]), dtype=np.int64)
    sizes = rng.integers(0, 400, int(rng.integers(1, 6)))
    return first, [batch(int(m), 5 * i + 1) for i, m in enumerate(sizes)]


def run_pass(first, batches, native: bool, monkeypatch):
    rows = Collected()
    rows.feed(first)
    tasks = validate._Tasks(rows)
    with monkeypatch.context() as m:
        if not native:
            m.setattr(validate, "_schedule_kernel", lambda index: None)
        found = tasks._schedules(lambda columns: iter(batches))
    return tasks, found


@pytest.mark.skipif(not _kernel_built(), reason="compiled kernels not built (make build)")
@pytest.mark.parametrize("seed", range(40))
def test_compiled_pass_is_the_numpy_pass(seed, monkeypatch):
    first, batches = random_batches(seed)
    a, found_a = run_pass(first, batches, True, monkeypatch)
    b, found_b = run_pass(first, batches, False, monkeypatch)
    assert validate._schedule_kernel(a.index) is not None      # the compiled pass ran
    assert found_a == found_b
    for name in ("first_run", "first_stop", "stop_rg", "lo", "hi"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.skipif(not _kernel_built(), reason="compiled kernels not built (make build)")
def test_first_switch_away_keeps_its_row_group(monkeypatch):
    """A task switched away from in two row groups keeps the first one's:
    a pass that overwrote stop_rg would answer the last."""
    first, batches = random_batches(3)
    task = first["task"][0]
    twice = []
    for rg, tsc in ((7, 500), (9, 100)):
        b = {c: np.zeros(3, v.dtype) for c, v in batches[0].items()}
        b["event"][:] = S.TASK_SCHEDULE
        b["task"][:] = 0
        b["other"][:] = task
        b["rg"][:] = rg
        b["tsc"][:] = [tsc, tsc + 1, tsc + 2]
        b["thread"][:] = [0, 0, 0]
        twice.append(b)
    tasks, _ = run_pass(first, twice, True, monkeypatch)
    assert tasks.stop_rg[0] == 7
    assert tasks.first_stop[0] == 100.0


def test_ids_outside_the_collector_scheme_take_the_numpy_pass():
    from grainlab.idindex import IdIndex
    assert validate._schedule_kernel(IdIndex(np.array([3, 1, 2], np.uint64))) is None


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.parquet")))
def test_info_is_the_same_without_the_compiled_pass(name, monkeypatch):
    from grainlab.errors import TraceError
    from grainlab.trace.scan import scan
    path = GOLDEN / f"{name}.parquet"

    def info():
        try:
            return scan(path).summary()
        except TraceError as e:          # the same one-line error either way
            return str(e)
    native = info()
    with monkeypatch.context() as m:
        m.setattr(validate, "_schedule_kernel", lambda index: None)
        plain = info()
    assert native == plain
