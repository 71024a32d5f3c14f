"""grainlab.app.layout: pre-order positions against a plain recursive walk,
on random forests (shapes and sibling keys), and the cycle bound."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab.app.layout import depths, preorder
from grainlab.errors import GrainlabError


def reference_preorder(parent, key):
    n = len(parent)
    children = {i: [] for i in range(-1, n)}
    for i, p in enumerate(parent):
        children[int(p)].append(i)
    pos, out = 0, np.zeros(n, np.int64)
    stack = sorted(children[-1], key=lambda i: (key[i], i), reverse=True)
    while stack:
        i = stack.pop()
        out[i] = pos
        pos += 1
        stack += sorted(children[i], key=lambda c: (key[c], c), reverse=True)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_preorder_matches_a_plain_walk(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    # parents always earlier (a forest), sometimes deep chains, several roots
    parent = np.array([-1 if i == 0 or rng.random() < 0.05 else
                       (i - 1 if rng.random() < 0.5 else int(rng.integers(0, i)))
                       for i in range(n)])
    key = rng.permutation(n)                      # distinct sibling keys
    got = preorder(parent, key)
    assert np.array_equal(got, reference_preorder(parent, key))
    # every subtree is a contiguous range of positions right after its root
    d = depths(parent)
    assert d.min() == 0 and (d[parent >= 0] == d[parent[parent >= 0]] + 1).all()


def test_deep_chain_is_linear():
    n = 5000
    parent = np.arange(-1, n - 1)
    assert np.array_equal(preorder(parent, np.zeros(n)), np.arange(n))
    assert depths(parent)[-1] == n - 1


def test_a_cycle_is_an_error_not_a_hang():
    with pytest.raises(GrainlabError, match="cycle"):
        depths(np.array([1, 0, -1]))
