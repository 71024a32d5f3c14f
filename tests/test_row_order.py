"""The rows' per-thread order from the row groups (events._by_row_groups:
each row group is one thread's buffer) is exactly the stable sort by thread
it replaces, on random row groups; a row group holding two threads' rows (a
damaged trace) falls back to that sort; the builder's order (sorted_rows)
is the same either way, ties in time included."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grainlab.graph import events as E


def random_events(rng, mixed=False):
    ng = int(rng.integers(1, 40))
    sizes = rng.integers(0, 25, ng)
    th = rng.integers(0, 5, ng).astype(np.uint16)
    thread = np.repeat(th, sizes)
    if mixed and len(thread) > 1:
        i = int(rng.integers(1, len(thread)))
        thread[i] = (thread[i] + 1) % 5          # another thread inside a row group
    n = len(thread)
    return pd.DataFrame({"row_group": np.repeat(np.arange(ng, dtype=np.int32), sizes),
                         "thread": thread,
                         "time": rng.integers(0, 50, n).astype(np.int64)})


@pytest.mark.parametrize("seed", range(60))
def test_row_group_order_is_the_stable_sort_by_thread(seed):
    ev = random_events(np.random.default_rng(seed))
    thread = ev["thread"].to_numpy()
    got = E._by_row_groups(ev, thread)
    assert got is not None
    np.testing.assert_array_equal(got, np.argsort(thread, kind="stable"))


@pytest.mark.parametrize("seed", range(30))
def test_mixed_row_groups_fall_back_and_sorted_rows_is_unchanged(seed, monkeypatch):
    rng = np.random.default_rng(1000 + seed)
    ev = random_events(rng, mixed=bool(seed % 2))
    thread = ev["thread"].to_numpy()
    if seed % 2 and (np.diff(thread.astype(int)) != 0).any():
        # a change of thread inside a row group: refused
        starts = np.flatnonzero(np.diff(ev["row_group"].to_numpy())) + 1
        changes = np.flatnonzero(np.diff(thread.astype(int))) + 1
        if not np.isin(changes, starts).all():
            assert E._by_row_groups(ev, thread) is None
    fast = E.sorted_rows(ev)
    monkeypatch.setattr(E, "_by_row_groups", lambda events, thread: None)
    np.testing.assert_array_equal(fast, E.sorted_rows(ev))


def test_a_row_group_of_two_threads_is_refused():
    ev = pd.DataFrame({"row_group": np.array([0, 0, 0, 1, 1], np.int32),
                       "thread": np.array([0, 0, 1, 1, 1], np.uint16),
                       "time": np.arange(5, dtype=np.int64)})
    assert E._by_row_groups(ev, ev["thread"].to_numpy()) is None
    np.testing.assert_array_equal(E.sorted_rows(ev), [0, 1, 2, 3, 4])
