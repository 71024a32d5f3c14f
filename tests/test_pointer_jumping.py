"""Pointer jumping in the graph builder ends on any input: exact on forests
(against a plain walk), a one-line TraceError on a parent cycle, never a hang."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab.errors import TraceError
from grainlab.graph.columns import inherit, list_rank


def walk_depth(parent):
    out = []
    for i in range(len(parent)):
        d, p = 0, parent[i]
        while p >= 0:
            d, p = d + 1, parent[p]
        out.append(d)
    return np.array(out)


@pytest.mark.parametrize("seed", range(8))
def test_list_rank_matches_a_walk(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    parent = np.array([-1 if i == 0 or rng.random() < 0.01 else
                       (i - 1 if rng.random() < 0.7 else int(rng.integers(0, i)))
                       for i in range(n)])
    perm = rng.permutation(n)                  # ids in any order
    inv = np.argsort(perm)
    shuffled = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1)
    assert np.array_equal(list_rank(shuffled), walk_depth(shuffled))


def test_deep_chain():
    n = 100_000
    parent = np.arange(-1, n - 1)
    assert list_rank(parent)[-1] == n - 1
    value = np.full(n, -1)
    value[0] = 7
    up = np.where(np.arange(n) == 0, -1, parent)
    assert (inherit(value, up) == 7).all()


@pytest.mark.parametrize("parent", [[0], [1, 0], [1, 2, 0, -1], [-1, 2, 3, 1]])
def test_a_cycle_is_an_error_not_a_hang(parent):
    parent = np.array(parent)
    with pytest.raises(TraceError, match="cycle"):
        list_rank(parent)
    with pytest.raises(TraceError, match="cycle"):
        inherit(np.full(len(parent), -1), parent)


def walk_top_value(value, up):
    out = value.copy()
    for i in range(len(up)):
        v = i
        while up[v] >= 0:
            v = up[v]
        out[i] = value[v]
    return out


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_inherit_compiled_equals_twin_and_a_walk(seed, dtype):
    """gl_forest_inherit against the pointer-jumping twin and a plain walk,
    on random forests with ids in any order (the twin is forced with
    native=False; the compiled path must be the one that ran)."""
    from grainlab.graph.columns import _inherit_native
    rng = np.random.default_rng(700 + seed)
    n = int(rng.integers(1, 2000))
    parent = np.array([-1 if i == 0 or rng.random() < 0.05 else
                       (i - 1 if rng.random() < 0.6 else int(rng.integers(0, i)))
                       for i in range(n)])
    perm = rng.permutation(n)
    inv = np.argsort(perm)
    up = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1).astype(dtype)
    value = rng.integers(-5, 1000, n).astype(np.int64)
    want = walk_top_value(value, up)
    native = _inherit_native(value, up)
    assert native is not None
    np.testing.assert_array_equal(native, want)
    np.testing.assert_array_equal(inherit(value, up, native=False), want)
    np.testing.assert_array_equal(inherit(value, up), want)
