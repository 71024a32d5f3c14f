"""grainlab.analysis: the one analysis object behind the CLI, the web app and
the notebooks — what it computes agrees with the CLI and with plain
recomputation from the graph, it is computed once, and it saves and reopens
without rebuilding (and never trusts a stale save)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab.errors import GrainlabError
from conftest import assert_one_line_error, grainlab


@pytest.fixture(scope="module")
def fib2(record):
    return record("fib", 16, 4, threads=2)


@pytest.fixture(scope="module")
def fib1(record):
    return record("fib", 16, 4, threads=1)


def cli_json(*args):
    r = grainlab(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_summary_is_what_analyze_json_prints(fib2):
    a = gl.analyze(fib2.path)
    assert a.summary == cli_json("analyze", "--json", fib2.path)
    assert a.report(3) == cli_json("analyze", "--json", "--top", "3", fib2.path)
    th = cli_json("analyze", "--json", "--threshold", "load_balance=1.1", fib2.path)
    assert gl.analyze(fib2.path, thresholds={"load_balance": 1.1}).summary == th


def test_grains_hold_every_metric_and_location(fib2):
    a = gl.analyze(fib2.path)
    gr = a.grains
    tasks = int((fib2.events["event"] == 7).sum())           # TASK_CREATE rows
    assert len(gr) == tasks
    for col in ("work", "parallel_benefit", "load_balance", "instantaneous_parallelism",
                "scatter", "on_critical_path", "location"):
        assert col in gr.columns, col
    assert gr["location"].str.startswith("fib.c:").all()
    # The critical path lists grains flagged on_critical_path, in path order.
    assert set(a.critical_path.tolist()) == set(np.flatnonzero(gr["on_critical_path"]))


def test_problems_frame_counts_match_the_columns(fib2):
    a = gl.analyze(fib2.path)
    p = a.problems()
    th = a.resolved_thresholds
    gr = a.grains
    for metric in ("parallel_benefit", "load_balance", "instantaneous_parallelism"):
        v = gr[metric].to_numpy(float)
        below = metric != "load_balance"
        with np.errstate(invalid="ignore"):
            hit = (v < th[metric]) if below else (v > th[metric])
        assert p.at[metric, "grains"] == hit.sum()
        assert p.at[metric, "on_critical_path"] == (hit & gr["on_critical_path"]).sum()
    assert not p.at["work_deviation", "available"]     # no reference given


def test_by_location_partitions_the_grains(fib2):
    a = gl.analyze(fib2.path)
    by = a.by_location()
    gr = a.grains
    assert by["grains"].sum() == len(gr)
    assert by["work_ns"].sum() == gr["work"].sum()
    expect = gr.groupby("location")["work"].sum()
    pd.testing.assert_series_equal(by["work_ns"].sort_index(), expect.sort_index(),
                                   check_names=False, check_dtype=False)
    assert list(by["work_ns"]) == sorted(by["work_ns"], reverse=True)
    assert abs(by["work_percent"].sum() - 100.0) < 1e-6


def test_the_analysis_keeps_its_graph_and_the_trace_hands_out_fresh_ones(tmp_path, fib2):
    """The Analysis owns the cached graph (the metrics add their columns to
    it); Trace.graph() is a plain shortcut, built anew and never touched by
    an analysis (issue 21)."""
    t = gl.load(fib2.path)
    a = gl.analyze(t)
    assert a.trace is t and a.graph is a.graph
    assert "parallel_benefit" not in a.graph.grains.columns
    assert a.graph_with_metrics is a.graph and a.metrics["grains"] == len(a.graph.grains)
    assert "parallel_benefit" in a.graph.grains.columns
    fresh = t.graph()
    assert fresh is not t.graph() and fresh is not a.graph
    assert "parallel_benefit" not in fresh.grains.columns
    assert fresh.grains.index.equals(a.graph.grains.index)
    assert list(fresh.critical_path) == list(a.graph.critical_path)
    assert t.graph(creation_quantile=0.5) is not fresh


def test_compare_is_what_compare_json_prints(fib1, fib2):
    c = gl.analyze(fib2.path).compare(gl.analyze(fib1.path))
    assert c.summary == cli_json("compare", "--json", fib1.path, fib2.path)
    assert c.report(None) == cli_json("compare", "--json", "--all", fib1.path, fib2.path)
    # Per location: the sums of the per-grain frame.
    g = c.grains
    # fib's tasks are the same at 1 and 2 threads: every grain matches.
    assert len(g) == c.info["matched"] == len(c.a.graph.grains) == len(c.b.graph.grains)
    loc = g.groupby("location")[["work_a_ns", "work_b_ns"]].sum()
    pd.testing.assert_frame_equal(c.locations[["work_a_ns", "work_b_ns"]].sort_index(),
                                  loc.sort_index(), check_dtype=False)


def test_compare_against_itself_deviates_by_exactly_one(fib2):
    c = gl.analyze(fib2.path).compare(fib2.path)
    assert (c.grains["work_deviation"] == 1.0).all()
    assert c.report()["inflated"]["grains"] == 0


def test_save_and_open_without_rebuilding(tmp_path, fib2):
    a = gl.analyze(fib2.path)
    saved = a.save(tmp_path / "fib.analysis")
    b = gl.open(saved)
    assert "trace" not in b.__dict__           # nothing was loaded from the trace
    assert b.summary == a.summary
    pd.testing.assert_frame_equal(b.grains, a.grains, check_categorical=False)
    pd.testing.assert_frame_equal(b.by_location(), a.by_location())
    pd.testing.assert_frame_equal(b.graph.nodes, a.graph.nodes, check_categorical=False)
    pd.testing.assert_frame_equal(b.graph.edges, a.graph.edges, check_categorical=False)
    assert b.graph.span == a.graph.span
    assert "trace" not in b.__dict__


def test_a_stale_save_is_rebuilt_never_trusted(tmp_path, record, example):
    trace = tmp_path / "t.parquet"
    first = record("fib", 12, 3, threads=1)
    shutil.copy(first.path, trace)
    a = gl.analyze(trace)
    saved = a.save(tmp_path / "t.analysis")
    # The trace is replaced by another run's: the save no longer describes it.
    other = record("fib", 15, 4, threads=1)
    shutil.copy(other.path, trace)
    b = gl.open(saved)
    assert b.summary["grains"] == gl.analyze(other.path).summary["grains"] != a.summary["grains"]
    # ... and the save was rewritten, so the next open trusts it.
    c = gl.open(saved)
    assert "trace" not in c.__dict__ and c.summary["grains"] == b.summary["grains"]
    # Saved by another grainlab version: rebuilt too.
    doc = json.loads((saved / "analysis.json").read_text())
    doc["grainlab_version"] = "0.0.0-old"
    (saved / "analysis.json").write_text(json.dumps(doc))
    d = gl.open(saved)
    assert "trace" in d.__dict__ and d.summary == b.summary
    # Saved before the metrics split the span: rebuilt, with the split.
    doc = json.loads((saved / "analysis.json").read_text())
    del doc["metrics"]["critical_path_time"]
    (saved / "analysis.json").write_text(json.dumps(doc))
    e = gl.open(saved)
    assert "trace" in e.__dict__ and e.summary == b.summary
    assert sum(e.summary["critical_path_time"][k] for k in
               ("grains_ns", "joins_ns", "contexts_ns", "barriers_ns")) == e.summary["span_ns"]


def test_open_of_something_else_is_one_clear_error(tmp_path):
    with pytest.raises(GrainlabError, match="not a saved grainlab analysis"):
        gl.open(tmp_path)


def test_repr_html_names_the_program_and_problems(fib2):
    html = gl.analyze(fib2.path)._repr_html_()
    assert "fib" in html and "parallel_benefit" in html and "<table" in html


def test_cli_errors_unchanged(tmp_path, cli):
    assert_one_line_error(cli("analyze", tmp_path / "none.parquet"), "no such file")


def test_a_part_shares_the_whole_graph_through_the_constructor(fib2, monkeypatch):
    whole = gl.analyze(fib2.path)
    part = whole.part(region=1)
    assert part.whole_graph is whole.whole_graph
    # a graph given to the constructor is never built again
    import grainlab.analysis.analysis as A

    def no_build(*_a, **_k):
        raise AssertionError("the shared graph was built again")
    monkeypatch.setattr(A, "_graph_while_checking", no_build)
    other = A.Analysis(fib2.path, region=1, whole_graph=whole.whole_graph)
    assert other.report()["span_ns"] == part.report()["span_ns"] > 0
    assert other.report()["grains"] == part.report()["grains"] == whole.report()["grains"]
