"""Critical path and span against an independent reference: networkx's
dag_longest_path on the same fragment graph with node weights moved onto edges.
Real example programs (through real libomp) and random synthetic DAGs."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from grainlab import synth
from grainlab.graph import build
from grainlab.graph.convert import weighted_edge_networkx
from grainlab.graph.critical_path import longest_path, node_arrays
from grainlab.trace import load


def reference_span(g) -> int:
    return int(nx.dag_longest_path_length(weighted_edge_networkx(g)))


def assert_exact_critical_path(g):
    assert g.span == reference_span(g)
    path = g.critical_path
    w = g.nodes["duration"].to_numpy()
    assert int(w[path].sum()) == g.span
    edges = set(zip(g.edges["src"].tolist(), g.edges["dst"].tolist()))
    assert all((a, b) in edges for a, b in zip(path[:-1].tolist(), path[1:].tolist()))
    # marks agree with the path
    assert set(np.flatnonzero(g.nodes["on_critical_path"].to_numpy())) == set(path.tolist())
    assert int(g.edges["on_critical_path"].sum()) == len(path) - 1
    grains = g.nodes["grain"].to_numpy()[path]
    grains = set(grains[(grains >= 0) & (grains < len(g.grains))].tolist())
    assert set(np.flatnonzero(g.grains["on_critical_path"].to_numpy())) == grains
    assert 1.0 <= g.parallelism
    assert g.work == int(w.sum())


EXAMPLES = [
    ("fib", (12, 4)), ("fib", (10,)), ("tree", (3, 3)), ("undeferred", (10,)),
    ("taskgroup", (12,)), ("depend", (6,)), ("taskloop", (200, 9)),
    ("loops", ("all", 300)),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("program,args", EXAMPLES)
def test_critical_path_matches_networkx_on_examples(record, program, args, threads):
    assert_exact_critical_path(build(record(program, *args, threads=threads)))


@pytest.mark.parametrize("seed,grains,threads", [(1, 40, 1), (2, 150, 2), (3, 400, 3),
                                                  (4, 900, 2), (5, 60, 4)])
def test_critical_path_matches_networkx_on_random_dags(tmp_path, seed, grains, threads):
    path = tmp_path / "r.parquet"
    synth.generate(path, "random", grains, threads=threads, seed=seed,
                   timing=synth.Timing(jitter=0.7))
    g = build(load(path))
    assert (g.edges["type"] == "dependence").any() or grains < 100
    assert_exact_critical_path(g)


@pytest.mark.parametrize("shape", ["fork-join", "spine", "loop"])
def test_critical_path_matches_networkx_on_other_shapes(tmp_path, shape):
    path = tmp_path / "s.parquet"
    synth.generate(path, shape, 300, threads=3, seed=9, timing=synth.Timing(jitter=0.5))
    assert_exact_critical_path(build(load(path)))


def test_longest_path_when_times_disagree_with_edges():
    """Node times in reverse of the edge order force the exact igraph fallback."""
    rng = np.random.default_rng(0)
    n = 300
    src, dst = [], []
    for v in range(1, n):                       # a random DAG on 0..n-1 (forward edges)
        for u in rng.choice(v, size=min(v, 3), replace=False):
            src.append(int(u))
            dst.append(v)
    w = rng.integers(0, 100, n)
    nodes = pd.DataFrame({
        "type": pd.Categorical(["fragment"] * n, categories=["fragment", "fork", "join",
                                                             "bookkeeping", "chunk"]),
        "join_kind": pd.Categorical([None] * n, categories=["taskwait", "taskgroup", "barrier",
                                                            "region_end", "program_end"]),
        "start": np.arange(n)[::-1] * 10, "end": np.arange(n)[::-1] * 10 + 5, "duration": w})
    edges = pd.DataFrame({"src": src, "dst": dst})
    path, span, finish, how = longest_path(**node_arrays(nodes), src=edges["src"].to_numpy(),
                                           dst=edges["dst"].to_numpy())
    assert how == "igraph"
    h = nx.DiGraph()
    h.add_weighted_edges_from((s, d, int(w[s])) for s, d in zip(src, dst))
    h.add_weighted_edges_from(("S", i, 0) for i in range(n))
    h.add_weighted_edges_from((i, "T", int(w[i])) for i in range(n))
    assert span == nx.dag_longest_path_length(h)
    assert int(w[path].sum()) == span
