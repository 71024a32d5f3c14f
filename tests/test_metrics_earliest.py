"""The columnar longest-path pass (earliest start of every node) against a plain
topological-order dynamic programme over networkx, on random DAGs whose node ids
are not in topological order and whose chains are broken in random places."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from grainlab.errors import GrainlabError
from grainlab.metrics.earliest_start import longest_path_starts


def reference(n, src, dst, dur):
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    es = np.zeros(n, np.int64)
    for v in nx.topological_sort(G):
        for u in G.predecessors(v):
            es[v] = max(es[v], es[u] + dur[u])
    return es


@pytest.mark.parametrize("seed", range(40))
def test_random_dags(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    m = int(rng.integers(0, 3 * n + 1))
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1)[a != b], axis=0)
    perm = rng.permutation(n)
    src, dst = perm[pairs[:, 0]].astype(np.int64), perm[pairs[:, 1]].astype(np.int64)
    cont = rng.random(len(src)) < 0.7
    dur = rng.integers(0, 20, n).astype(np.int64)
    assert (longest_path_starts(dur, src, dst, cont) == reference(n, src, dst, dur)).all()


def test_long_chain_is_a_prefix_sum():
    n = 100_000
    dur = np.arange(n, dtype=np.int64) % 7
    src = np.arange(n - 1, dtype=np.int64)
    es = longest_path_starts(dur, src, src + 1, np.ones(n - 1, bool))
    assert (es == np.r_[0, np.cumsum(dur)[:-1]]).all()


def test_cycle_is_an_error():
    with pytest.raises(GrainlabError, match="cycle"):
        longest_path_starts(np.ones(3, np.int64), np.array([0, 1, 2]), np.array([1, 2, 0]),
                            np.array([False, False, False]))
