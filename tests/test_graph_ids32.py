"""The graph's ids are int32 while they fit (docs/graph-model.md "Ids",
grainlab.graph.columns.id_dtype), int64 above: the same graph either way.
Each trace here is built twice, as it is and with the int32 limit lowered
below its ids (so every id column falls back to int64), and the two graphs
must hold the same values. And an analysis lets go of the trace's event
table once its graph is made (Trace.release_events), reading it again only
when asked."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from randprog import random_program

import grainlab as gl
from grainlab import synth
from grainlab.errors import TraceError
from grainlab.graph import build, columns
from grainlab.graph.select import select

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"
# every column holding node, grain or context ids (the doc's contract)
ID_COLUMNS = {"nodes": ("grain", "owner", "child"), "edges": ("src", "dst"),
              "grains": ("parent", "join"), "contexts": ("parent", "join")}
TABLES = tuple(ID_COLUMNS)


def both_builds(trace, monkeypatch):
    """(graph with the default ids, the same build with int64 ids)."""
    narrow = build(trace)
    with monkeypatch.context() as m:
        m.setattr(columns, "ID32_LIMIT", -1)
        wide = build(trace)
    return narrow, wide


def assert_same_graph(narrow, wide, dtypes=(np.int32, np.int64)):
    """The two graphs hold the same values; their id columns have `dtypes`."""
    for table, cols in ID_COLUMNS.items():
        a, b = getattr(narrow, table), getattr(wide, table)
        for c in cols:
            assert a[c].dtype == dtypes[0], (table, c, a[c].dtype)
            assert b[c].dtype == dtypes[1], (table, c, b[c].dtype)
        # every column, values equal; only the id columns' dtypes differ
        assert list(a.columns) == list(b.columns)
        other = [c for c in a.columns if c not in cols]
        assert (a[other].dtypes == b[other].dtypes).all(), table
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert narrow.span == wide.span
    assert narrow.work == wide.work
    np.testing.assert_array_equal(narrow.critical_path, wide.critical_path)
    np.testing.assert_array_equal(narrow.critical_grains, wide.critical_grains)
    assert narrow.topological_order_source == wide.topological_order_source


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("shape", synth.SHAPES)
def test_int32_ids_give_the_int64_graph_on_synthetic_traces(tmp_path, monkeypatch, shape, seed):
    rng = np.random.default_rng(seed)
    path = tmp_path / "s.parquet"
    synth.generate(path, shape, int(rng.integers(1, 600)), threads=int(rng.integers(1, 5)),
                   seed=seed)
    narrow, wide = both_builds(gl.load(path), monkeypatch)
    assert_same_graph(narrow, wide)


@pytest.mark.parametrize("seed", range(0, 60, 5))
def test_int32_ids_give_the_int64_graph_on_random_programs(tmp_path, monkeypatch, seed):
    """Taskwait, taskgroups, barriers, region ends (tests/randprog.py)."""
    program = random_program(seed)
    trace = gl.load(program.trace.write(tmp_path / "p.parquet"))
    assert_same_graph(*both_builds(trace, monkeypatch))


@pytest.mark.parametrize("name", ["depend", "taskgroup", "loops", "fib_t2", "exec_chain",
                                  "taskloop", "sparselu_depend", "regions_single"])
def test_int32_ids_give_the_int64_graph_on_real_traces(monkeypatch, name):
    path = GOLDEN / f"{name}.parquet"
    if not path.exists():
        pytest.skip(f"no golden trace {name}")
    narrow, wide = both_builds(gl.load(path), monkeypatch)
    assert_same_graph(narrow, wide)
    # a part of the graph keeps its ids' dtype
    t0, t1 = int(narrow.nodes["start"].min()), int(narrow.nodes["end"].max())
    window = (t0 + (t1 - t0) // 4, t1 - (t1 - t0) // 4)
    assert_same_graph(select(narrow, window=window), select(wide, window=window))


def test_ids_are_int32_exactly_while_they_fit(tmp_path, monkeypatch):
    """The limit is on the largest id: a graph with ids up to the limit is
    int32, one id more is int64 (the dtype of every id column at once)."""
    path = tmp_path / "f.parquet"
    synth.generate(path, "fork-join", 200, threads=2, seed=3)
    trace = gl.load(path)
    g = build(trace)
    n = max(len(g.nodes), len(g.grains) + len(g.contexts))
    assert columns.id_dtype(n) == np.int32
    monkeypatch.setattr(columns, "ID32_LIMIT", n)
    assert_same_graph(build(trace), g, (np.int32, np.int32))
    monkeypatch.setattr(columns, "ID32_LIMIT", n - 1)
    assert_same_graph(g, build(trace))


def test_an_analysis_releases_the_event_table_and_reads_it_again_on_demand(tmp_path,
                                                                           monkeypatch):
    path = tmp_path / "r.parquet"
    synth.generate(path, "random", 300, threads=2, seed=5)
    events = gl.load(path).events
    reads = []
    from grainlab.trace import trace as T
    reread = T._reread_events
    monkeypatch.setattr(T, "_reread_events", lambda *a: reads.append(a) or reread(*a))
    a = gl.analyze(path)
    a.report()
    trace = a.trace
    assert trace._events is None and reads == []       # the report needs no event
    assert "released" in repr(trace)
    pd.testing.assert_frame_equal(trace.events, events)  # read again: the same rows
    assert len(reads) == 1
    assert trace.events is trace.events and len(reads) == 1   # and kept


def test_a_given_trace_keeps_its_events(tmp_path):
    path = tmp_path / "r.parquet"
    synth.generate(path, "fork-join", 100, threads=2, seed=1)
    trace = gl.load(path)
    gl.analyze(trace).report()
    assert trace._events is not None


def test_a_trace_changed_since_it_was_loaded_is_not_read_again(tmp_path):
    path = tmp_path / "r.parquet"
    synth.generate(path, "fork-join", 100, threads=2, seed=1)
    trace = gl.load(path)
    assert trace.release_events()
    synth.generate(path, "fork-join", 120, threads=2, seed=2)
    with pytest.raises(TraceError, match="changed"):
        len(trace.events)


def test_a_trace_made_in_memory_cannot_release_its_events(tmp_path):
    path = tmp_path / "r.parquet"
    synth.generate(path, "fork-join", 50, threads=2, seed=1)
    t = gl.load(path)
    made = gl.Trace(t.path, t.meta, t.events, t.row_group_sizes)
    assert not made.release_events()
    assert made.events is t.events


def test_the_web_app_data_reads_no_event_table_back(tmp_path, monkeypatch):
    """Building what `grainlab serve` shows keeps the analysis's events
    released (the 'no data accesses' hint asks the file's event column only:
    reading the table back was +0.6 GiB at fib 30), with the same answers."""
    from grainlab.app.data import AppData
    from grainlab.trace import trace as T
    path = tmp_path / "r.parquet"
    synth.generate(path, "random", 300, threads=2, seed=5)
    held = gl.load(path)
    reads = []
    reread = T._reread_events
    monkeypatch.setattr(T, "_reread_events", lambda *a: reads.append(a) or reread(*a))
    a = gl.analyze(path)
    data = AppData(a)
    assert a.trace._events is None and reads == []
    assert data.krd_note and "no data accesses" in data.krd_note
    codes = set(held.events["event"].unique().tolist())
    for code in range(max(codes) + 2):
        assert a.trace.has_event(code) == (code in codes) == held.has_event(code)
    assert reads == []
