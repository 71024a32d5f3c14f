"""The whole run (issue 34): a trace covers its process from start to exit,
and every node of a `--cpu-time` trace carries its thread's off-CPU time.

examples/late_start computes for a long while before its first OpenMP call
(when libomp starts the collector) and prints its own CLOCK_MONOTONIC at
main's start and just before it returns. The trace's clock is on the same
CLOCK_MONOTONIC (metadata clock.start_monotonic_ns is tick 0), so the two
measures of one run are compared with each other, never with a wall-clock
threshold: the trace holds main's whole life, and lasts within 2% of it
(what it adds: the dynamic loader before main, libomp's shut-down after).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys


import numpy as np
import pytest

import grainlab as gl
from conftest import grainlab
from grainlab import _paths

SETUP = "200"        # million rounds of serial work before the first region (~0.6 s)


def main_life(stdout: str) -> tuple[int, int]:
    m = re.search(r"main (\d+) (\d+)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def check_covers(trace, stdout):
    begin, end = main_life(stdout)
    origin = int(trace.meta["clock"]["start_monotonic_ns"])
    last = origin + int(trace.events["time"].max())
    life = end - begin
    assert last >= end                       # the trace ends after main returned
    assert abs((last - origin) - life) <= 0.02 * life, (last - origin, life)
    # the initial thread and task begin at tick 0: the process's start
    ev = trace.events
    first = ev[ev["thread"] == 0].iloc[:2]
    assert list(first["event"]) == [1, 5] and list(first["time"]) == [0, 0]
    return origin, begin


def check_serial_start(trace, begin_ns):
    """The set-up is the initial task's first fragment, from tick 0 to the
    first region's fork, and it is on the critical path."""
    g = trace.graph()
    ctx = g.contexts
    initial = int(ctx.index[ctx["kind"].astype(str) == "initial"][0])
    nodes = g.nodes[g.nodes["owner"] == initial].sort_values("owner_seq")
    first = nodes.iloc[0]
    assert first["type"] == "fragment" and first["start"] == 0
    assert first["end"] > begin_ns           # the set-up runs after main starts
    assert bool(first["on_critical_path"])
    assert nodes.iloc[1]["type"] == "fork"


def test_record_covers_the_process_from_its_start(record):
    trace = record("late_start", SETUP, "8", "10", threads=2)
    stdout = record.stdout("late_start", SETUP, "8", "10", threads=2)
    origin, begin = check_covers(trace, stdout)
    # under record the preloaded libgrainexec.so's constructor is the start:
    # the loaded image, before main, always
    assert origin <= begin
    assert trace.meta["process_start"]["method"] == "preload"
    check_serial_start(trace, begin - origin)


def test_the_collector_alone_covers_the_process(example, tmp_path):
    out = tmp_path / "alone.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_OUTPUT": str(out),
           "GRAINLAB_CONVERT": "wait", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR)}
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([example("late_start"), SETUP, "8", "10"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    trace = gl.load(out)
    origin, begin = check_covers(trace, run.stdout)
    start = trace.meta["process_start"]
    # the kernel's clock tick bounds it from below: never more than one tick early
    assert origin + start["uncertainty_ns"] >= origin
    check_serial_start(trace, begin - origin)


def test_predict_whole_sees_the_serial_start(record):
    """predict --whole replays from the process's start: the set-up (most of
    the run) is serial, so no core count gives even 2x (Amdahl), and the
    predicted time at 1 core is the whole trace's."""
    trace = record("late_start", SETUP, "8", "10", threads=2)
    # --guard none: on a busy machine the guard may cap a preempted task,
    # and the replay's span would no longer be the graph's
    r = grainlab("predict", "--whole", "--guard", "none", "--json", "--cores", "1,16",
                 trace.path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    g = trace.graph()
    assert doc["span_ns"] == g.span
    first = g.nodes[g.nodes["start"] == 0]
    assert len(first) and doc["span_ns"] >= int(first["duration"].max())
    assert doc["speedup"][1] < 2


# ---------------------------------------------------------------- item 2

@pytest.fixture(scope="module")
def pinned_busy(tmp_path_factory, example):
    """late_start at 2 threads pinned to CPU 0 beside a busy loop pinned
    there too, recorded with --cpu-time: every thread is switched out often,
    in its serial set-up, its tasks and its waits."""
    out = tmp_path_factory.mktemp("busy") / "busy.parquet"
    busy = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    try:
        r = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "grainlab.cli", "record",
                            "-q", "--cpu-time", "-o", str(out), "--", example("late_start"),
                            "30", "16", "3"], env={**os.environ, "OMP_NUM_THREADS": "2"},
                           capture_output=True, text=True, timeout=300)
    finally:
        busy.kill()
        busy.wait()
    assert r.returncode == 0, r.stderr
    return gl.load(out)


def reference_join_off_cpu(trace, g):
    """Per own-thread join node (a taskwait's): the waiting thread's off-cpu
    increase over the rows from SYNC_BEGIN to SYNC_END while the waiting task
    was the one running (not a child it ran meanwhile), read from the events."""
    ev = trace.events
    out = {}
    joins = g.nodes[(g.nodes["type"] == "join") & (g.nodes["thread"] >= 0)
                    & (g.nodes["join_kind"].astype(str) == "taskwait")]
    task_ids = g.contexts["task_id"].to_dict() | g.grains["task_id"].to_dict()
    for node, row in joins.iterrows():
        waiter = task_ids[int(row["owner"])]
        th = ev[ev["thread"] == row["thread"]].sort_values("time", kind="stable")
        off = th["counter:off-cpu"].to_numpy(np.float64)
        kinds, tasks = th["event"].to_numpy(), th["task"].to_numpy()
        times = th["time"].to_numpy()
        begin = np.flatnonzero((kinds == 9) & (tasks == waiter) & (times == row["start"]))
        assert len(begin) == 1
        i, current, total = begin[0], waiter, 0.0
        last = (i, off[i])
        while not (kinds[i] == 10 and tasks[i] == waiter):
            i += 1
            if np.isnan(off[i]):
                continue
            if current == waiter:
                total += off[i] - last[1]
            last = (i, off[i])
            if kinds[i] == 8:
                current = tasks[i]
        out[node] = total
    return out


def test_each_join_carries_its_waiting_threads_off_cpu(pinned_busy):
    g = pinned_busy.graph()
    ref = reference_join_off_cpu(pinned_busy, g)
    assert ref, "no taskwait join"
    got = g.nodes.loc[list(ref), "counter:off-cpu"].to_numpy()
    assert np.array_equal(got, np.array(list(ref.values())))
    assert max(ref.values()) > 0          # the busy loop switched a waiter out
    # the serial set-up and the region's forks are measured too
    assert not g.nodes["counter:off-cpu"].isna().any()


def longest_path(nodes, edges, weight) -> int:
    """A plain reference: longest node-weighted path, by a topological order."""
    import networkx as nx
    d = nx.DiGraph()
    d.add_nodes_from(range(len(nodes)))
    d.add_edges_from(zip(edges["src"].to_numpy(), edges["dst"].to_numpy()))
    best = np.zeros(len(nodes))
    for v in nx.topological_sort(d):
        pred = [best[u] for u in d.predecessors(v)]
        best[v] = (max(pred) if pred else 0) + weight[v]
    return int(best.max())


def test_weigh_cpu_is_the_graph_without_its_off_cpu_time(pinned_busy):
    from grainlab.metrics import preemption
    g = pinned_busy.graph()
    wall = g.nodes["duration"].to_numpy(np.int64)
    off = g.nodes["counter:off-cpu"].to_numpy(np.float64)
    by_hand = np.rint(np.clip(wall - off, 0, wall)).astype(np.int64)
    w = preemption.weigh_cpu(g)
    assert np.array_equal(w.nodes["duration"].to_numpy(np.int64), by_hand)
    assert w.span == longest_path(g.nodes, g.edges, by_hand)
    assert g.span == longest_path(g.nodes, g.edges, wall)
    assert w.span < g.span
    # the report counts the off-CPU time of every node on the critical path
    preemption.compute(g)
    rep = preemption.report(g, None)
    path = np.asarray(g.critical_path)
    assert rep["critical_path"]["off_cpu_ns"] == int((wall[path] - np.clip(
        wall[path] - off[path], 0, wall[path])).sum())


def test_off_cpu_is_a_category_of_the_thread_time(pinned_busy):
    from grainlab.metrics import time_decomposition
    g = pinned_busy.graph()
    d = time_decomposition.decompose(g)
    assert d["off_cpu"] > 0
    assert d["work"] + d["overhead"] + d["off_cpu"] + d["idle"] == d["total"]
