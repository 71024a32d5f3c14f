"""Analyzing part of a run: `analyze --region N|LOCATION`, `--window T0:T1`,
`gl.analyze(region=, window=)`, and `info`'s list of regions (issue 6 item 7).

setup_kernel spends ~600 ms in serial code around a 16-task kernel region:
over the whole run the parallelism is ~1.5 and the kernel's shape is drowned;
the kernel region alone must show its own parallelism (~16) and span (~one
20 ms task), at 1 and 2 threads. Every selection's critical path is checked
against networkx on the sub-graph, and invariants are checked on every region
of every example."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import grainlab as gl
from grainlab.metrics import time_decomposition
from grainlab.metrics.contract import threads_used
from grainlab.graph.select import select
from grainlab.trace.regions import region_table
from conftest import assert_one_line_error, grainlab
from test_critical_path import assert_exact_critical_path

REPO = Path(__file__).resolve().parents[1]
MS = 1_000_000
SETUP, TASKS, TASK_MS, CHECK = 250, 16, 20, 250


def _pragma_lines(name, pattern):
    src = (REPO / "examples" / name).read_text().splitlines()
    return [i + 1 for i, line in enumerate(src) if re.match(pattern, line)]


def _kernel_line():
    # the second `#pragma omp parallel` of setup_kernel.c is the kernel's
    return _pragma_lines("setup_kernel.c", r"\s*#pragma omp parallel\s*$")[1]


def _info(path):
    r = grainlab("info", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module", params=[1, 2], ids=["t1", "t2"])
def setup_kernel(request, record):
    return record("setup_kernel", SETUP, TASKS, TASK_MS, CHECK, threads=request.param)


def test_info_lists_every_region_with_its_duration(setup_kernel):
    info = _info(setup_kernel.path)
    regions = info["region_list"]
    assert len(regions) == info["parallel_regions"] == 2
    assert [r["region"] for r in regions] == [1, 2]
    line = _kernel_line()
    assert regions[1]["location"].startswith(f"setup_kernel.c:{line} ")
    assert regions[0]["location"] != regions[1]["location"]
    threads = setup_kernel.threads
    # the kernel: 16 tasks of 20 ms on `threads` threads, after >= 250 ms of set-up
    assert regions[1]["duration_ns"] >= TASKS * TASK_MS * MS / threads * 0.95
    assert regions[1]["begin_ns"] >= SETUP * MS
    assert regions[0]["duration_ns"] < regions[1]["duration_ns"]
    text = grainlab("info", setup_kernel.path).stdout
    assert f"setup_kernel.c:{line}" in text and "--region" in text


def test_the_kernel_region_shows_its_own_parallelism(setup_kernel):
    whole = gl.analyze(setup_kernel)
    kernel = gl.analyze(setup_kernel, region=2)
    s, w = kernel.summary, whole.summary
    assert s["grains"] == s["tasks"] == TASKS
    # the span is the longest task (plus creating them): independent tasks.
    # Not bounded above by a factor of the longest task: a busy machine
    # stretches tasks and the code creating them by any amount. The structure
    # bounds it instead: exactly one task on the critical path (the span of
    # serialised tasks would hold all TASKS of them).
    longest = kernel.grains["work"].max()
    assert TASK_MS * MS * 0.95 <= longest <= s["span_ns"]
    assert len(kernel.graph.critical_grains) == 1
    # the whole run's span holds the serial set-up and check (spins of wall
    # time) and the kernel's: the kernel's parallelism is drowned in it ...
    assert w["span_ns"] >= (SETUP + CHECK) * MS * 0.95 + longest
    # ... and the kernel alone shows more: Σ tasks / (one task + creating
    # them) > (Σ tasks + serial code) / (serial code + one task + ...),
    # whatever each part's length, as long as the tasks are independent
    assert s["parallelism"] > w["parallelism"]
    assert s["parallelism"] == pytest.approx(s["work_ns"] / s["span_ns"])
    assert s["work_ns"] >= s["grain_work_ns"] >= TASKS * TASK_MS * MS * 0.95
    assert s["selection"]["regions"] == [2]
    assert s["selection"]["window_ns"] is None
    assert s["critical_path"] and len(s["critical_path"]) >= 1
    assert_exact_critical_path(kernel.graph)
    # a lone thread is never idle, a kernel region on 2 threads barely: a
    # thread is idle only before its own first task (the first is created,
    # then stolen) and after its own last task, while the other finishes
    # (structure, not a share of the time: a busy machine stretches the last
    # task, or the steal, by any amount)
    g = kernel.graph
    per = time_decomposition.per_thread(g).set_index("thread")
    n = g.nodes
    lo, hi = int(n["start"].min()), int(n["end"].max())
    for thread, row in per.iterrows():
        mine = g.grains[g.grains["thread"] == thread]
        first = int(mine["start"].min()) if len(mine) else hi
        last = int(mine["end"].max()) if len(mine) else lo
        assert row["idle"] <= (first - lo) + (hi - last), (thread, per.to_dict())
    if setup_kernel.threads == 1:
        assert per["idle"].iloc[0] <= 0.02 * per["total"].iloc[0]
    # by location: the same region
    by_loc = gl.analyze(setup_kernel, region=f"setup_kernel.c:{_kernel_line()}").summary
    assert by_loc["selection"]["regions"] == [2]
    assert by_loc["span_ns"] == s["span_ns"] and by_loc["grains"] == s["grains"]


def test_a_window_around_the_kernel_agrees_with_the_region(setup_kernel):
    info = _info(setup_kernel.path)
    k = info["region_list"][1]
    lo, hi = k["begin_ns"], k["begin_ns"] + k["duration_ns"]
    a = gl.analyze(setup_kernel, window=(lo, hi)).summary
    region = gl.analyze(setup_kernel, region=2).summary
    assert a["grains"] == TASKS
    assert a["span_ns"] <= hi - lo
    assert a["selection"]["window_ns"] == [lo, hi]
    assert a["parallelism"] == pytest.approx(region["parallelism"], rel=0.05)
    # exact: every grain of the region starts after its PARALLEL_BEGIN and ends
    # before its PARALLEL_END, so the window keeps each grain's nodes whole
    # (docs/metrics.md: a node is clipped only where it crosses the window's
    # edge; only the implicit tasks' fragments do, hence the 5% on parallelism)
    assert a["grain_work_ns"] == region["grain_work_ns"], (a["grain_work_ns"],
                                                           region["grain_work_ns"])
    # text form, ms, open end
    b = gl.analyze(setup_kernel, window=f"{lo / MS}ms:").summary
    assert b["grains"] == TASKS and b["selection"]["window_ns"][0] == int(round(lo / MS * MS))


def test_a_window_clips_grains_to_it(record):
    t = record("regions", 1, 2, 40, "master", threads=1)   # two 40 ms tasks, one after the other
    whole = gl.analyze(t)
    gr = whole.graph.grains
    first = gr.sort_values("start").iloc[0]
    origin = int(t.events["time"].min())
    mid = int((first["start"] + first["end"]) // 2) - origin
    a = gl.analyze(t, window=(mid, mid + 10 * MS))
    g = a.graph
    assert len(g.grains) == 1                          # only the first task overlaps
    assert 9 * MS <= int(g.grains["work"].iloc[0]) <= 10 * MS + 1
    assert g.nodes["start"].min() >= mid + origin and g.nodes["end"].max() <= mid + origin + 10 * MS
    assert a.summary["span_ns"] <= 10 * MS
    assert_exact_critical_path(g)
    # the whole run as a window is the whole run
    full = gl.analyze(t, window=(0, int(t.events["time"].max()) - origin + 1)).summary
    assert full["grains"] == whole.summary["grains"]
    assert full["span_ns"] == whole.summary["span_ns"]


@pytest.mark.parametrize("threads", [1, 2])
def test_regions_at_one_location_run_one_after_the_other(record, threads):
    t = record("regions", 3, 4, 10, "master", threads=threads)
    per = [gl.analyze(t, region=n).summary for n in (1, 2, 3)]
    assert [p["grains"] for p in per] == [4, 4, 4]
    both = gl.analyze(t, region="regions.c")
    s = both.summary
    assert s["selection"]["regions"] == [1, 2, 3]
    assert s["grains"] == 12
    # the serial code between the regions is left out; the regions stay in order
    assert s["span_ns"] >= sum(p["span_ns"] for p in per) * 0.99
    assert s["span_ns"] <= gl.analyze(t).summary["span_ns"]
    assert_exact_critical_path(both.graph)


EXAMPLES = [("fib", (12, 4)), ("tree", (3, 3)), ("taskgroup", (7,)), ("depend", (6,)),
            ("taskloop", (100, 9)), ("loops", ("all", 300)), ("undeferred", (8,)),
            ("regions", (3, 4, 2, "single"))]


@pytest.mark.parametrize("program, args", EXAMPLES, ids=lambda v: str(v))
@pytest.mark.parametrize("threads", [1, 2])
def test_every_region_of_every_example_is_a_sound_graph(record, program, args, threads):
    t = record(program, *args, threads=threads)
    whole = t.graph()
    table = region_table(t)
    top = table[~table["nested"]]
    total = 0
    for n, r in top.iterrows():
        a = gl.analyze(t, region=int(n))
        g = a.graph
        assert_exact_critical_path(g)
        s = a.summary
        total += s["grains"]
        assert s["span_ns"] <= r["duration_ns"]
        assert s["grain_work_ns"] <= threads_used(g) * r["duration_ns"]
        assert s["instantaneous_parallelism"]["achieved_max"] <= threads_used(g)
        if s["grains"]:
            assert len(g.critical_path) > 0
        # every edge stays inside, every kept reference resolves
        assert ((g.edges["src"] < len(g.nodes)) & (g.edges["dst"] < len(g.nodes))).all()
        join = g.grains["join"].to_numpy()
        tasks = (g.grains["kind"].astype(str) == "task").to_numpy()
        assert (join[tasks] >= 0).all()
        assert (g.nodes["end"].to_numpy()[join[tasks]] >= g.grains["end"].to_numpy()[tasks]).all()
    # the top-level regions partition the run's grains
    assert total == len(whole.grains)


def test_select_with_nothing_chosen_is_empty_and_sound(record):
    g = record("fib", 10, 3, threads=1).graph()
    sub = select(g, region_contexts=np.zeros(0, np.int64))
    assert len(sub.nodes) == 0 and len(sub.grains) == 0 and sub.span == 0


def test_a_selection_is_saved_and_reopened(record, tmp_path):
    t = record("setup_kernel", 50, 8, 5, 50, threads=2)
    a = gl.analyze(t, region=2)
    a.save(tmp_path / "k")
    b = gl.open(tmp_path / "k")
    assert b.summary["selection"] == a.summary["selection"]
    assert b.summary["span_ns"] == a.summary["span_ns"]
    assert b.region == "2"


def test_analyze_cli_region_and_window(record):
    t = record("setup_kernel", 50, 8, 5, 50, threads=2)
    r = grainlab("analyze", "--json", "--region", "2", t.path)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["selection"]["regions"] == [2] and rep["grains"] == 8
    text = grainlab("analyze", "--region", f"setup_kernel.c:{_kernel_line()}", t.path).stdout
    assert "part         region 2 (setup_kernel.c:" in text
    r = grainlab("analyze", "--json", "--window", "0:10s", t.path)
    assert r.returncode == 0 and json.loads(r.stdout)["grains"] == 8


@pytest.mark.parametrize("flag, value, fragments", [
    ("--region", "9", ["no region 9", "1 to 2"]),
    ("--region", "nowhere.c:3", ["no parallel region at", "setup_kernel.c"]),
    ("--window", "5", ["bad window", "T0:T1"]),
    ("--window", "3ms:1ms", ["empty window"]),
    ("--window", "abc:", ["bad window time"]),
    ("--window", "100s:200s", ["outside the run"]),
])
def test_bad_selections_are_one_line_errors(record, flag, value, fragments, cli):
    t = record("setup_kernel", 50, 8, 5, 50, threads=2)
    assert_one_line_error(cli("analyze", flag, value, t.path), *fragments)


def _first_region(builder, path):
    """(trace, analysis of region 1, its graph, the region's wall time) of a
    hand-built trace; the region's critical path checked exactly."""
    t = gl.load(builder.write(path))
    a = gl.analyze(t, region=1)
    assert_exact_critical_path(a.graph)
    return t, a, a.graph, region_table(t).loc[1, "duration_ns"]


def test_a_worker_that_begins_before_its_master_does_not_count_the_team_start_twice(tmp_path):
    """The master is preempted between releasing its team (PARALLEL_BEGIN at
    100) and beginning its own implicit task (1100); the worker began at 200
    and ran until the barrier at 2000. The region lasted 1920 ns: its span
    cannot be longer (it was 2812 when the fork weighed the master's 1000 ns
    on the worker's path too; seen under load as a 13 us region of
    `loops all 300` with an 18 us span)."""
    from tracegen import TraceBuilder, task_id, team_region_end
    from grainlab import schema as S
    b = TraceBuilder()
    init, region = task_id(0, 1), task_id(0, 2)
    imp = [task_id(0, 10), task_id(1, 10)]
    b.add(0, S.THREAD_BEGIN, 1, kind=1)
    b.add(0, S.IMPLICIT_BEGIN, 2, task=init, kind=S.TASK_INITIAL, count=1)
    b.add(1, S.THREAD_BEGIN, 4, kind=2)
    b.add(0, S.PARALLEL_BEGIN, 100, task=init, other=region, count=2)
    b.add(1, S.IMPLICIT_BEGIN, 200, task=imp[1], other=region, value=1, count=2,
          kind=S.TASK_IMPLICIT)
    b.add(0, S.IMPLICIT_BEGIN, 1100, task=imp[0], other=region, value=0, count=2,
          kind=S.TASK_IMPLICIT)
    b.add(0, S.SYNC_BEGIN, 1500, task=imp[0], other=region, kind=9)
    b.add(1, S.SYNC_BEGIN, 2000, task=imp[1], other=region, kind=9)
    for th in range(2):
        b.add(th, S.SYNC_END, 2010, task=imp[th], other=region, kind=9)
        b.add(th, S.IMPLICIT_END, 2012, task=imp[th], value=th, count=2, kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, 2020)
    t, a, g, wall = _first_region(b, tmp_path / "late_master.parquet")
    assert a.summary["span_ns"] <= wall
    # the path: the team start until the worker began (100 ns), the
    # worker's 1800 ns, the barrier's resume latency, the worker's end
    assert a.summary["span_ns"] == 100 + 1800 + 10 + 2
    fork = g.nodes[(g.nodes["type"].astype(str) == "fork") & (g.nodes["duration"] > 0)]
    assert fork["end"].max() <= 200
    whole = gl.analyze(t)
    assert whole.summary["span_ns"] <= 2023 - 2       # the initial task's life


def test_a_task_taken_while_its_creator_is_still_in_the_runtime(tmp_path):
    """Thread 0 creates a task at 10 and is back from the runtime only at 40;
    thread 1 took the task at 12 and ran it until 100. The fork weighs the
    creation until the child began (2 ns), not 30: the path creator -> child
    counts no time twice and the span stays within the region (it was 132 ns
    in a 105 ns region)."""
    from tracegen import TraceBuilder, task_id, team_region, team_region_end
    from grainlab import schema as S
    b = TraceBuilder()
    init, region, imp = team_region(b, 2)
    kid = task_id(0, 100)
    b.add(0, S.TASK_CREATE, 10, task=kid, other=imp[0], kind=S.TASK_EXPLICIT)
    b.add(1, S.TASK_SCHEDULE, 12, task=kid, other=imp[1], kind=S.STATUS_SWITCH)
    b.add(0, S.SYNC_BEGIN, 40, task=imp[0], other=region, kind=S.SYNC_TASKWAIT)
    b.add(1, S.TASK_SCHEDULE, 100, task=imp[1], other=kid, kind=S.STATUS_COMPLETE)
    b.add(0, S.SYNC_END, 101, task=imp[0], other=region, kind=S.SYNC_TASKWAIT)
    for th in range(2):
        b.add(th, S.SYNC_BEGIN, 105, task=imp[th], other=region, kind=9)
        b.add(th, S.SYNC_END, 106, task=imp[th], other=region, kind=9)
        b.add(th, S.IMPLICIT_END, 107, task=imp[th], value=th, count=2, kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, 108)
    t, a, g, wall = _first_region(b, tmp_path / "early_child.parquet")
    fork = g.nodes[(g.nodes["type"].astype(str) == "fork") & (g.nodes["child"] == 0)]
    assert fork["duration"].tolist() == [2] and fork["end"].tolist() == [12]
    assert a.summary["span_ns"] <= wall
    # the creator's time after the child began stays the creator's work
    creator = g.nodes[(g.nodes["owner"] == g.nodes.loc[fork.index[0], "owner"])
                      & (g.nodes["type"].astype(str) == "fragment")]
    assert creator["duration"].sum() == (10 - 5) + (40 - 12) + (105 - 101) + (107 - 106)
