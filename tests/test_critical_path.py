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
from grainlab.graph.interop import weighted_edge_networkx
from grainlab.graph.critical_path import longest_path, node_arrays
from grainlab.trace.trace import load


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


# -- the compiled dynamic programme against the Dijkstra reduction ----------

def _both(monkeypatch, **arrays):
    """longest_path's result by the compiled kernel, then by scipy's Dijkstra."""
    from grainlab.graph import critical_path as cp
    assert cp._native_kernel() is not None, "build/lib/libgrainlab_graph.so is not built"
    native = longest_path(**arrays)
    with monkeypatch.context() as m:
        m.setenv("GRAINLAB_NATIVE", "0")
        assert cp._native_kernel() is None
        fallback = longest_path(**arrays)
    return native, fallback


def _random_dag(rng, n, max_preds, zero_share):
    """Forward edges on 0..n-1 (some duplicated), small weights with zeros
    and ties, nodes shuffled so that ids are not a topological order."""
    src, dst = [], []
    for v in range(1, n):
        k = int(rng.integers(0, min(v, max_preds) + 1))
        for u in rng.choice(v, size=k, replace=True):      # duplicates allowed
            src.append(int(u))
            dst.append(v)
    w = rng.integers(0, 4, n) * (rng.random(n) >= zero_share)
    perm = rng.permutation(n)                               # new id of old node i
    start = np.empty(n, np.int64)
    start[perm] = np.arange(n) * 10                         # times agree with edges
    wp = np.empty(n, np.int64)
    wp[perm] = w
    return {"duration": wp, "start": start, "end": start + 5,
            "is_join": np.zeros(n, bool), "released": np.zeros(n, bool),
            "src": perm[np.asarray(src, np.int64)], "dst": perm[np.asarray(dst, np.int64)]}


@pytest.mark.parametrize("seed,n,max_preds,zero_share", [
    (0, 1, 0, 0.0), (1, 2, 1, 1.0), (2, 50, 0, 0.0), (3, 200, 3, 0.5),
    (4, 2000, 2, 0.2), (5, 5000, 6, 0.0), (6, 300, 1, 0.9)])
def test_compiled_longest_path_equals_dijkstra(build, monkeypatch, seed, n, max_preds,
                                               zero_share):
    a = _random_dag(np.random.default_rng(seed), n, max_preds, zero_share)
    (p1, s1, f1, h1), (p2, s2, f2, h2) = _both(monkeypatch, **a)
    assert h1 == h2 == "time"
    assert s1 == s2 and np.array_equal(f1, f2)
    # a real path: along edges, from a node without predecessors, weighing the span
    edges = set(zip(a["src"].tolist(), a["dst"].tolist()))
    for p in (p1, p2):
        assert all((u, v) in edges for u, v in zip(p[:-1].tolist(), p[1:].tolist()))
        assert p[0] not in set(a["dst"].tolist())
        assert int(a["duration"][p].sum()) == s1
    # and the span is networkx's
    h = nx.DiGraph()
    h.add_nodes_from(range(n))
    h.add_weighted_edges_from((int(u), int(v), int(a["duration"][u])) for u, v in edges)
    h.add_weighted_edges_from((i, "T", int(a["duration"][i])) for i in range(n))
    assert s1 == nx.dag_longest_path_length(h)


@pytest.mark.parametrize("seed,n,max_preds,zero_share", [
    (0, 1, 0, 0.0), (3, 200, 3, 0.5), (4, 2000, 2, 0.2), (5, 5000, 6, 0.0)])
def test_int32_edge_ends_give_the_int64_result(build, monkeypatch, seed, n, max_preds,
                                               zero_share):
    """The kernel's 32-bit entry (the graph's int32 ids) against its 64-bit
    one and against Dijkstra on the same int32 ends."""
    from grainlab.graph import critical_path as cp
    assert cp._native_kernel(32) is not None
    a = _random_dag(np.random.default_rng(seed), n, max_preds, zero_share)
    narrow = dict(a, src=a["src"].astype(np.int32), dst=a["dst"].astype(np.int32))
    assert cp._edge_ends(narrow["src"], narrow["dst"])[2] is cp._native_kernel(32)
    wide = longest_path(**a)
    for got in _both(monkeypatch, **narrow):
        for x, y in zip(got, wide):
            np.testing.assert_array_equal(x, y)


def test_compiled_longest_path_equals_dijkstra_on_a_real_graph(monkeypatch, record):
    g = build(record("fib", 14, 3, threads=2))
    arrays = dict(node_arrays(g.nodes), src=g.edges["src"].to_numpy(),
                  dst=g.edges["dst"].to_numpy())
    (p1, s1, f1, _), (p2, s2, f2, _) = _both(monkeypatch, **arrays)
    assert s1 == s2 == g.span == reference_span(g)
    assert np.array_equal(f1, f2)


def test_compiled_longest_path_refuses_a_node_out_of_range(build):
    """A bad edge is an error, never a write out of bounds."""
    from grainlab.errors import GrainlabError
    from grainlab.graph import critical_path as cp
    kernel = cp._native_kernel()
    assert kernel is not None
    w = np.ones(3, np.int64)
    order = np.arange(3, dtype=np.int64)
    for src, dst in (([0], [3]), ([-1], [1]), ([0, 1], [1, 7])):
        with pytest.raises(GrainlabError, match="does not exist"):
            cp._native_longest(kernel, order, w, np.asarray(src, np.int64),
                               np.asarray(dst, np.int64))
        with pytest.raises(GrainlabError, match="does not exist"):
            cp._native_longest(cp._native_kernel(32), order, w, np.asarray(src, np.int32),
                               np.asarray(dst, np.int32))
    with pytest.raises(GrainlabError):
        cp._native_longest(kernel, np.asarray([0, 1, 5], np.int64), w,
                           np.asarray([0], np.int64), np.asarray([1], np.int64))


@pytest.mark.parametrize("program,args", [("fib", (14, 3)), ("depend", (6,)), ("loops", ("all", 300))])
def test_builder_second_thread_changes_nothing(monkeypatch, record, program, args):
    """Under OVERLAP_EVENTS the builder makes the explicit tasks' slots, the
    edges and the critical path on a second thread, each beside another
    phase; from that size on, one after the other. The same graph either way
    (the path from the builder's node columns or from the public tables)."""
    import importlib
    builder = importlib.import_module("grainlab.graph.build")
    trace = record(program, *args, threads=2)
    monkeypatch.setattr(builder, "OVERLAP_EVENTS", 1 << 40)
    beside = build(trace)
    monkeypatch.setattr(builder, "OVERLAP_EVENTS", 0)
    after = build(trace)
    assert np.array_equal(beside.critical_path, after.critical_path)
    assert beside.span == after.span == reference_span(after)
    for table in ("nodes", "edges", "grains"):
        pd.testing.assert_frame_equal(getattr(beside, table), getattr(after, table))
    assert_exact_critical_path(beside)
