"""The nesting check's shortcut for a batch whose begin/end rows all have one
key (validate._Pair._feed_one) leaves the same state as its general path
(sort by key, one running depth per key): on random batches of one key and
of several, in any mix, the depth carried between batches included."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab import schema as S
from grainlab.trace import validate


def random_batches(rng, pair):
    out = []
    for _ in range(int(rng.integers(1, 8))):
        n = int(rng.integers(1, 60))
        b = {"event": rng.choice([pair.begin, pair.end], n, p=[0.45, 0.55]).astype(np.uint8),
             "rg": np.sort(rng.integers(0, 50, n)).astype(np.int32)}
        one_key = rng.random() < 0.6
        for c in pair.columns:
            values = rng.integers(0, 3, n if not one_key else 1)
            b[c] = np.resize(values, n).astype(np.uint64 if c != "thread" else np.uint16)
        out.append(b)
    return out


@pytest.mark.parametrize("which", range(len(validate.PAIRS)))
@pytest.mark.parametrize("seed", range(25))
def test_one_key_shortcut_is_the_general_path(which, seed):
    rng = np.random.default_rng(seed * 7 + which)
    fast, general = validate._Pair(*validate.PAIRS[which]), validate._Pair(*validate.PAIRS[which])
    for b in random_batches(rng, fast):
        rows = np.arange(len(b["event"]))
        fast.feed(b, rows)
        general._feed_groups(b, rows, [b[c][rows] for c in general.columns])
    assert fast.state == general.state


def test_end_before_begin_is_found_in_its_row_group():
    pair = validate._Pair(*validate.PAIRS[3])           # sync regions, keyed by thread and kind
    b = {"event": np.array([S.SYNC_BEGIN, S.SYNC_END, S.SYNC_END, S.SYNC_BEGIN], np.uint8),
         "rg": np.array([4, 4, 5, 6], np.int32), "thread": np.zeros(4, np.uint16),
         "kind": np.full(4, S.SYNC_TASKWAIT, np.uint32)}
    pair.feed(b, np.arange(4))
    assert pair.state == {(0, S.SYNC_TASKWAIT): [0, -1, 5]}
