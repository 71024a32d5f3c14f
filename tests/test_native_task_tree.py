"""The task forest's compiled walk (grainlab/native/task_tree.c via
grainlab/trace/task_tree.py) against its numpy twins: the cycle check of
validation (validate._has_cycle_numpy) and the deepest task of `info`
(facts._explicit_depth_numpy), on random forests in any order, with unrooted
chains, cycles (self-loops and longer) and both id widths."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab.trace.facts import _explicit_depth_numpy
from grainlab.trace.task_tree import walk
from grainlab.trace.validate import _has_cycle, _has_cycle_numpy

pytestmark = pytest.mark.skipif(walk(np.full(1, -1, np.int32)) is None,
                                reason="compiled kernels not built (make build)")


def random_forest(rng, n):
    """Parent positions: each task's parent is a task before it in a random
    order (so a forest), or none; a share of deep chains."""
    order = rng.permutation(n)
    up = np.full(n, -1, np.int64)
    for k in range(1, n):
        r = rng.random()
        if r < 0.1:
            continue                                   # a top
        j = k - 1 if r < 0.5 else int(rng.integers(0, k))   # chains, and bushes
        up[order[k]] = order[j]
    return up


def add_cycle(rng, up):
    n = len(up)
    length = int(rng.integers(1, min(n, 6) + 1))
    members = rng.choice(n, length, replace=False)
    up[members] = np.roll(members, 1)                # a self-loop when length is 1
    return up


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_walk_equals_twins(seed, dtype):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 600))
    up = random_forest(rng, n)
    cyclic = seed % 3 == 0
    if cyclic:
        up = add_cycle(rng, up)
    up = up.astype(dtype)
    rooted = (up < 0) & (rng.random(n) < 0.8)
    looped, deepest = walk(up, rooted)
    assert looped == _has_cycle_numpy(up) == cyclic
    assert _has_cycle(up) == cyclic
    if not cyclic:
        assert deepest == _explicit_depth_numpy(up.copy(), rooted)
        assert walk(up)[1] == _explicit_depth_numpy(up.copy(), up < 0)


def test_hand_made_forest():
    # 0 <- 1 <- 2 <- 3 (rooted top 0: depth 4); 4 <- 5 (unrooted top: counts nothing)
    up = np.array([-1, 0, 1, 2, -1, 4], np.int32)
    rooted = np.array([True, False, False, False, False, False])
    assert walk(up, rooted) == (False, 4)
    assert walk(up) == (False, 4)
    rooted[4] = True
    assert walk(up, rooted) == (False, 4)
    up[0] = 3                                    # 0 -> 3 -> 2 -> 1 -> 0
    assert walk(up, rooted)[0] is True
    with pytest.raises(ValueError):
        walk(np.array([5], np.int32))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_depths_equal_list_rank(seed, dtype):
    """Every task's depth from the walk (the grains table's depth) against
    the pointer jumping it replaces; a looping forest gives None (then the
    twin raises its own error)."""
    from grainlab.graph.columns import list_rank
    from grainlab.trace.task_tree import depths
    rng = np.random.default_rng(500 + seed)
    n = int(rng.integers(1, 600))
    up = random_forest(rng, n).astype(dtype)
    got = depths(up)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, list_rank(up) + 1)
    assert depths(add_cycle(rng, up.copy()).astype(dtype)) is None
