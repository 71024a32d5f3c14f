"""CPU time per grain and grains inflated by preemption
(grainlab.metrics.preemption; `grainlab record --cpu-time`, the "preempted"
problem, `grainlab analyze --weigh cpu`).

By hand: a graph whose grains' off-CPU times are chosen, every value worked
out here. Real runs of examples/spin (equal tasks of pure CPU work, 2 threads):

* pinned to one CPU (`taskset -c 0`) the two threads take turns, so their
  grains are inflated ~2x, more if other jobs share that CPU: flagged. What
  is checked holds whatever else runs: one CPU cannot give the grains more CPU
  time than the wall time they span, and most of them are flagged.
* one CPU per thread under SCHED_FIFO (`chrt -f 10`): no job of normal
  priority can take the CPU from them, so nothing is flagged even while other
  jobs keep every core busy (the suite must pass on a busy machine). The run is
  short (< 0.2 s of CPU per thread): far from the kernel's real-time
  throttling (95% of each second). Not being able to set SCHED_FIFO fails the
  test, with the reason.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from conftest import assert_one_line_error, grainlab
from handgraph import HandGraph
from grainlab import problems as P
from grainlab.errors import UsageError
from grainlab.graph.model import JOIN_KINDS
from grainlab.metrics import compute_all, preemption

MS, US = 1_000_000, 1_000
# (wall, off-CPU) of the root's four children, ns; None: the counter did not read
CHILDREN = [(12 * MS, 9 * MS),      # ratio 4, 9 ms off: preempted
            (10 * US, 8 * US),      # ratio 5, but 8 us off: under the floor
            (10 * MS, 1 * MS),      # ratio 1.11
            (2 * MS, None)]         # unknown


def hand_graph(counter="off-cpu"):
    """A root creates the four CHILDREN and waits for them; the CPU time is
    recorded as `counter` (off-cpu: the off-CPU time; task-clock: CPU time)."""
    b = HandGraph()
    root = b.task("0")
    prev = b.node(root, "fragment", 0, 0)
    kids = []
    for i, (wall, _) in enumerate(CHILDREN):
        c = b.task(f"0.{i}", parent=root, thread=i % 2, cpu=i % 2)
        fk = b.node(root, "fork", 0, 0, child=c)
        fr = b.node(root, "fragment", 0, 0)
        b.chain(prev, fk, fr)
        n = b.node(c, "fragment", 0, wall, thread=i % 2)
        b.edge(fk, n, "creation")
        kids.append(n)
        prev = fr
    j = b.node(root, "join", 0, 0)
    last = b.node(root, "fragment", 12 * MS, 0)
    b.chain(prev, j, last)
    for n in kids:
        b.edge(n, j, "synchronization")
    g = b.build()
    off = np.zeros(len(g.nodes))
    off[(g.nodes["type"] != "fragment").to_numpy()] = np.nan
    for n, (_, o) in zip(kids, CHILDREN):
        off[n] = np.nan if o is None else o
    dur = g.nodes["duration"].to_numpy(np.float64)
    g.nodes[f"counter:{counter}"] = off if counter == "off-cpu" else dur - off
    # the columns the critical path reads of a built graph
    g.nodes["join_kind"] = pd.Categorical([None] * len(g.nodes), categories=JOIN_KINDS)
    return g


@pytest.mark.parametrize("counter", ["off-cpu", "task-clock"])
def test_cpu_time_and_preempted_by_hand(counter):
    g = hand_graph(counter)
    compute_all(g)
    gr = g.grains
    # grain 0 is the root (no work), grains 1..4 the children
    np.testing.assert_array_equal(gr["cpu_ns"].to_numpy()[:4], [0, 3 * MS, 2 * US, 9 * MS])
    np.testing.assert_array_equal(gr["off_cpu_ns"].to_numpy()[:4], [0, 9 * MS, 8 * US, 1 * MS])
    np.testing.assert_allclose(gr["preempted"].to_numpy()[:4], [1, 4, 5, 10 / 9])
    assert gr[["cpu_ns", "off_cpu_ns", "preempted"]].iloc[4].isna().all()   # never read
    th = P.resolve(P.thresholds(), {"cores_used": 2})
    found = P.evaluate(g, th)["preempted"]
    # grain 1 only: grain 2's 8 us off the CPU is under preempted_min_us (100)
    assert found["available"] and found["grains"] == 1 and found["on_critical_path"] == 1
    assert found["floor"] == {"column": "off_cpu_ns", "setting": "preempted_min_us",
                              "value": 100_000.0}
    assert P.flagged(gr, "preempted", {**th, "preempted_min_us": 5.0}).sum() == 2
    assert P.flagged(gr, "preempted", {**th, "preempted": 4.5}).sum() == 0
    # the wall-time critical path runs through grain 1: 9 of its 12 ms off the CPU
    s = preemption.report(g, P.flagged(gr, "preempted", th))
    assert s["critical_path"] == {"preempted_grains": 1, "wall_ns": 12 * MS,
                                  "off_cpu_ns": 9 * MS}
    assert s["grain_cpu_ns"] == 3 * MS + 2 * US + 9 * MS
    assert s["grain_off_cpu_ns"] == 10 * MS + 8 * US and s["unmeasured_grains"] == 1


def test_weighing_by_cpu_time_moves_the_critical_path_by_hand():
    g = hand_graph()
    w = preemption.weigh_cpu(g)
    # CPU weights: 3 ms, 2 us, 9 ms, and 2 ms of wall for the unmeasured one
    assert w.span == 9 * MS and list(w.critical_grains) == [0, 3]
    assert g.span == 12 * MS and 1 in g.critical_grains    # untouched
    np.testing.assert_array_equal(w.grains["work"].to_numpy(), [0, 3 * MS, 2 * US, 9 * MS, 2 * MS])
    np.testing.assert_array_equal(w.grains["wall_ns"].to_numpy(),
                                  [0, 12 * MS, 10 * US, 10 * MS, 2 * MS])
    assert w.meta["weights"] == "cpu" and w.meta["wall_span_ns"] == 12 * MS
    # the preemption columns are the same on either graph: wall times are kept
    compute_all(w)
    compute_all(g)
    pd.testing.assert_frame_equal(w.grains[["cpu_ns", "off_cpu_ns", "preempted"]],
                                  g.grains[["cpu_ns", "off_cpu_ns", "preempted"]])


def test_no_cpu_time_no_columns_and_weighing_is_refused():
    g = hand_graph()
    g.nodes = g.nodes.drop(columns=["counter:off-cpu"])
    summary = compute_all(g)
    assert "cpu_ns" not in g.grains and "preempted" not in g.grains
    assert "--cpu-time" in summary["cpu_time"]
    assert P.evaluate(g, P.resolve(P.thresholds(), summary))["preempted"]["available"] is False
    with pytest.raises(UsageError, match="has no CPU time.*record --cpu-time"):
        preemption.weigh_cpu(g, "t.parquet")


def test_weigh_cpu_on_a_trace_without_cpu_time_is_one_line(cli):
    trace = os.path.join(os.path.dirname(__file__), "golden", "traces", "fib_t2.parquet")
    assert_one_line_error(cli("analyze", "--weigh", "cpu", trace),
                          "fib_t2.parquet has no CPU time", "grainlab record --cpu-time")
    with pytest.raises(UsageError, match="weigh"):
        gl.analyze(trace, weigh="cycles")


def test_record_cpu_time_adds_the_off_cpu_counter():
    from grainlab.commands.record import check_counters
    assert check_counters(None) is None
    assert check_counters(None, cpu_time=True) == "off-cpu"
    assert check_counters("task-clock", cpu_time=True) == "task-clock,off-cpu"
    assert check_counters("OFF-CPU,task-clock", cpu_time=True) == "off-cpu,task-clock"


# ---------------------------------------------------------------- real runs

SPIN_ARGS = ("8", "10000000")     # 8 tasks of ~20 ms of CPU each here


def record_spin(tmp_path, example, name, prefix, env):
    out = tmp_path / f"{name}.parquet"
    r = subprocess.run([*prefix, sys.executable, "-m", "grainlab.cli", "record", "-q",
                        "--cpu-time", "-o", str(out), "--", example("spin"), *SPIN_ARGS],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "OMP_NUM_THREADS": "2", **env})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"spin({SPIN_ARGS[0]}, {SPIN_ARGS[1]}): checksum"), r.stdout
    return out


def window_ns(gr) -> int:
    return int(gr["end"].max() - gr["start"].min())


@pytest.fixture(scope="module")
def pinned(tmp_path_factory, example):
    """spin's two threads on one CPU: the first CPU this process may use."""
    cpu = min(os.sched_getaffinity(0))
    return record_spin(tmp_path_factory.mktemp("preempt"), example, "pinned",
                       ["taskset", "-c", str(cpu)], {})


def test_two_threads_on_one_cpu_are_flagged_preempted(pinned):
    a = gl.analyze(pinned)
    gr = a.grains
    assert len(gr) == 8 and gr["cpu_ns"].notna().all()
    assert gr["thread"].nunique() == 2 and gr["cpu"].nunique() == 1
    # one CPU gives the grains at most the wall time they span (clock
    # differences between the threads' reads: well under 2%)
    assert gr["cpu_ns"].sum() <= 1.02 * window_ns(gr)
    np.testing.assert_allclose(gr["cpu_ns"] + gr["off_cpu_ns"], gr["work"])
    found = a.problems().loc["preempted"]
    assert found["available"] and found["grains"] >= 4, gr[["work", "cpu_ns", "preempted"]]
    # the critical path (the longest task) runs through a preempted grain, and says so
    pre = a.summary["preemption"]
    assert pre["available"] and pre["source"] == "counter:off-cpu" and pre["weights"] == "wall"
    assert pre["critical_path"]["preempted_grains"] >= 1
    r = grainlab("analyze", pinned)
    assert r.returncode == 0, r.stderr
    assert "the critical path runs through" in r.stdout and \
        f"grainlab analyze --weigh cpu {pinned}" in r.stdout


def test_weighing_by_cpu_time_shortens_the_span(pinned):
    wall, cpu = gl.analyze(pinned), gl.analyze(pinned, weigh="cpu")
    assert cpu.summary["weights"] == "cpu"
    assert cpu.summary["span_ns"] < wall.summary["span_ns"]
    assert cpu.summary["preemption"]["wall"]["span_ns"] == wall.summary["span_ns"]
    assert cpu.summary["preemption"]["wall"]["work_ns"] == wall.summary["work_ns"]
    gr = cpu.grains
    # grains weigh their CPU time; their wall time is kept beside it
    np.testing.assert_array_equal(gr["work"], np.rint(gr["cpu_ns"]).astype(np.int64))
    np.testing.assert_array_equal(gr["wall_ns"], wall.grains["work"])
    crit = cpu.critical_path
    # independent tasks: the path runs through the one that ends last in DAG
    # time (its creation's offset plus its CPU time; with near-equal tasks not
    # always the longest: forks slowed by a busy machine spread the starts)
    finish = gr["earliest_start"] + gr["work"]
    assert finish.loc[crit].max() == finish.max()
    r = grainlab("analyze", "--json", "--weigh", "cpu", pinned)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["span_ns"] == cpu.summary["span_ns"]
    r = grainlab("analyze", "--weigh", "cpu", pinned)
    assert r.returncode == 0 and "weights      CPU time (--weigh cpu)" in r.stdout


def test_a_saved_analysis_keeps_its_weights(pinned, tmp_path):
    a = gl.analyze(pinned, weigh="cpu")
    a.save(tmp_path / "saved")
    again = gl.open(tmp_path / "saved")
    assert again.weigh == "cpu" and again.summary["span_ns"] == a.summary["span_ns"]
    assert again.summary["preemption"] == a.summary["preemption"]


def test_one_cpu_per_thread_under_sched_fifo_is_not_flagged(tmp_path, example):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.fail(f"needs 2 CPUs for one CPU per thread; this process may use {cpus}")
    probe = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail("cannot run under SCHED_FIFO (`chrt -f 10 true`: "
                    f"{probe.stderr.strip() or probe.returncode}): this test needs root or "
                    "CAP_SYS_NICE so that no other job can preempt its threads")
    pair = f"{cpus[0]},{cpus[1]}"
    out = record_spin(tmp_path, example, "fifo", ["chrt", "-f", "10", "taskset", "-c", pair],
                      {"OMP_PROC_BIND": "true", "OMP_PLACES": f"{{{cpus[0]}}},{{{cpus[1]}}}"})
    a = gl.analyze(out)
    gr = a.grains
    assert len(gr) == 8 and gr["cpu_ns"].notna().all()
    assert sorted(gr["cpu"].unique()) == cpus[:2]
    # they ran side by side: more CPU time than one CPU could give in their window
    assert gr["cpu_ns"].sum() > 1.2 * window_ns(gr)
    assert a.problems().loc["preempted", "grains"] == 0, gr[["work", "off_cpu_ns"]]
    assert a.summary["preemption"]["critical_path"]["preempted_grains"] == 0
    r = grainlab("analyze", out)
    assert r.returncode == 0 and "critical path runs through" not in r.stdout
