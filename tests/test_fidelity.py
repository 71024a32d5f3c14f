"""Fidelity on real programs (issue: right joins, right parallelism, right
idle), through libomp at 1 and 2 threads, against what the programs' shapes
say independently.

- regions: consecutive parallel regions whose tasks (created under `master`
  or `single nowait`) are never waited for by a taskwait. Each of the 8 tasks
  per region spins 30 ms: exposed parallelism ~8 and span ~2 x 30 ms, at 1
  thread (where libomp reports no barrier at a region's end) as at 2.
- achieved parallelism counts running grains: never above the threads.
- a lone thread is never idle; a thread with nothing to run is.
- the invariants every trace must satisfy, on every example. (The critical
  path may hold no grain when the creating code outweighs every grain — e.g.
  `depend` at 1 thread, whose tasks of tens of ns are each created in ~0.1-4 us —
  but never when grains dominate, and the span is never shorter than a grain.)
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import grainlab as gl
from grainlab import schema as S
from grainlab.metrics.contract import threads_used
from conftest import REPO
from grainlab.metrics import instantaneous_parallelism as ip
from grainlab.metrics import time_decomposition as td

MS = 1_000_000


def _longest_per_region(g):
    """Sum over regions of the longest task: what the span must be (plus a
    little serial code) when each region's tasks run beside each other."""
    gr = g.grains
    return int(gr.groupby(gr["join"])["work"].max().sum())


@pytest.mark.parametrize("mode", ["master", "single"])
@pytest.mark.parametrize("threads", [1, 2])
def test_tasks_join_at_their_regions_end(record, mode, threads):
    t = record("regions", 2, 8, 30, mode, threads=threads)
    a = gl.analyze(t)
    s = a.summary
    assert s["tasks"] == 16
    # span: at least the longest task of region 1 plus the longest of region 2
    # (regions never overlap; the bug gave ~1 task). Not bounded above by a
    # factor of it: on a busy machine the creating thread's preemptions land on
    # the path (1.22x measured under load average 2-3; unloaded 1.005-1.06).
    # The structure bounds it instead: independent sibling tasks, so the
    # critical path holds exactly one task of each region (serialised tasks
    # would put all 8 of a region on it).
    longest = _longest_per_region(a.graph)
    assert 60 * MS <= longest <= s["span_ns"], (s["span_ns"], longest)
    _one_task_of_each_region_on_the_path(a.graph)
    # Parallelism never ~16 (overlap): a region's 8 tasks are each at most its
    # longest, and the span holds the longest of each region (a structural
    # bound, whatever the load).
    assert s["grain_work_ns"] <= 8 * s["span_ns"]
    # every task of region r joins before region r+1's tasks start
    g = a.graph
    gr = g.grains
    first_region_end = gr["end"].to_numpy()[:8].max()
    assert (gr["start"].to_numpy()[8:] >= first_region_end).all()
    join_kind = g.nodes["join_kind"].astype(str).to_numpy()[gr["join"].to_numpy()]
    assert set(join_kind) <= {"barrier", "region_end"}, set(join_kind)


def _one_task_of_each_region_on_the_path(g):
    crit = g.grains.loc[g.critical_grains]
    assert len(crit) == g.grains["join"].nunique() == 2, crit
    assert sorted(crit["join"].unique()) == sorted(g.grains["join"].unique())


def test_regions_agree_between_1_and_2_threads(record):
    # Measured on this shared 2-core VM: a 30 ms spin task at 2 threads takes
    # 30-140 ms of wall time when other jobs preempt it (span 60.3 ms at 1
    # thread, 60.4-205 ms at 2), so raw spans cannot be compared by a bound,
    # nor their ratio to the tasks (1.005-1.06 unloaded, 1.22 preempted).
    # What must agree is the structure: at both thread counts the span is at
    # least the longest task of region 1 plus the longest of region 2, and
    # the critical path runs through exactly one task of each region.
    for threads in (1, 2):
        a = gl.analyze(record("regions", 2, 8, 30, "master", threads=threads))
        g = a.graph
        assert g.span >= _longest_per_region(g)
        _one_task_of_each_region_on_the_path(g)


@pytest.mark.parametrize("program, args", [
    ("fib", (16,)), ("fib", (18, 6)), ("tree", (8, 4)), ("undeferred", (10,)), ("depend", (8,))])
@pytest.mark.parametrize("threads", [1, 2])
def test_achieved_parallelism_never_exceeds_the_threads(record, program, args, threads):
    g = gl.analyze(record(program, *args, threads=threads)).graph
    prof = ip.achieved_profile(g)
    summ = ip.achieved_stats(g)
    assert prof["running"].max() <= threads and summ["achieved_max"] <= threads
    assert prof["running"].min() >= 0 and prof["running"].iloc[-1] == 0
    if threads == 1:
        assert summ["achieved_max"] == 1
    assert 0 < summ["achieved_mean"] <= threads


@pytest.mark.parametrize("program, args", [("fib", (18,)), ("tree", (8, 4)), ("fib", (20, 6)),
                                           ("loops", ("dynamic,3", 200))])
def test_a_lone_thread_is_never_idle(record, program, args):
    t = record(program, *args, threads=1)
    per = td.per_thread(gl.analyze(t).graph)
    assert len(per) == 1
    row = per.iloc[0]
    # Idle only in the gaps the collector's own rows leave (hundreds of ns
    # measured), and in buffer flushes that happen when no task waits: a flush
    # is nobody's time, and a busy machine can stretch it by any amount.
    ev = t.events.sort_values("time", kind="stable")
    code, tm = ev["event"].to_numpy(), ev["time"].to_numpy()
    fl = np.flatnonzero(np.isin(code, [S.FLUSH_BEGIN, S.FLUSH_END]))
    b = fl[:-1][(code[fl[:-1]] == S.FLUSH_BEGIN) & (code[fl[1:]] == S.FLUSH_END)]
    flush = int((tm[fl[np.searchsorted(fl, b) + 1]] - tm[b]).sum())
    assert row["idle"] <= 0.02 * row["total"] + flush, (row.to_dict(), flush)
    assert row["work"] + row["overhead"] + row["idle"] == row["total"]


def test_a_thread_with_nothing_to_run_is_idle(record):
    # The creating thread spins 100 ms alone before creating 4 tasks of 20 ms.
    g = gl.analyze(record("regions", 1, 4, 20, "master", 100, threads=2)).graph
    per = td.per_thread(g).set_index("thread")
    window = int(g.nodes["end"].max() - g.nodes["start"].min())
    assert (per["total"] == window).all()
    assert (per["work"] + per["overhead"] + per["idle"] == per["total"]).all()
    n = g.nodes
    forks = n[(n["type"].astype(str) == "fork") & (n["child"] < len(g.grains))]   # task forks
    assert len(forks) == 4
    creator = int(forks["thread"].iloc[0])
    assert (forks["thread"] == creator).all() and len(per) == 2
    waiter = int(per.index[per.index != creator][0])
    # The waiting thread has nothing to run until the first task exists: at
    # least that long idle (~100 ms: the creator spins it alone first; and
    # the program's start: 640 ms of it, measured on a loaded machine).
    # Bounds from the run's own events, not from the 100 ms: a busy machine
    # stretches every part of it.
    first_task = int(forks["start"].min()) - int(n["start"].min())
    assert first_task >= 90 * MS                         # the spin is wall time: at least that
    assert per.at[waiter, "idle"] >= first_task, per.to_dict()
    # The spinning thread is busy but for the end (its tasks done, the other's
    # still running): no idle time before its last grain ended.
    mine = g.grains[g.grains["thread"] == creator]
    assert len(mine) > 0
    after_last = int(n["end"].max()) - int(mine["end"].max())
    assert per.at[creator, "idle"] <= after_last, (per.to_dict(), after_last)
    assert per.at[creator, "idle"] < per.at[waiter, "idle"]


# ---------------------------------------------------------------------------
# invariants on every example, 1 and 2 threads

EXAMPLES = [("fib", (15, 5)), ("fib", (14,)), ("tree", (6, 3)), ("undeferred", (8,)),
            ("taskgroup", (7,)), ("depend", (6,)), ("taskloop", (100, 9)),
            ("loops", ("all", 300)), ("regions", (2, 4, 5, "master")),
            ("regions", (2, 4, 5, "single"))]


@pytest.mark.parametrize("program, args", EXAMPLES, ids=lambda v: str(v))
@pytest.mark.parametrize("threads", [1, 2])
def test_invariants_hold_on_every_example(record, program, args, threads):
    t = record(program, *args, threads=threads)
    a = gl.analyze(t)
    g, s = a.graph, a.summary
    duration = int(t.events["time"].max() - t.events["time"].min())
    n_threads = threads_used(g)
    assert s["span_ns"] <= duration
    assert s["grain_work_ns"] <= n_threads * duration
    assert s["instantaneous_parallelism"]["achieved_max"] <= n_threads
    assert len(g.critical_path) > 0
    if s["grains"]:
        # a path through the longest grain exists: the span is at least as long
        assert s["span_ns"] >= g.grains["work"].max()
        if program in ("regions", "fib") and len(args) > 1:
            # grains that dominate their creator's own time are on it
            assert len(s["critical_path"]) > 0
    # every task is joined at a node that ends after it
    gr = g.grains
    tasks = gr[gr["kind"].astype(str) == "task"]
    join_end = g.nodes["end"].to_numpy()[tasks["join"].to_numpy()]
    assert (tasks["join"].to_numpy() >= 0).all()
    assert (join_end >= tasks["end"].to_numpy()).all()
    per = td.per_thread(g)
    assert (per["work"] + per["overhead"] + per["idle"] == per["total"]).all()


# ---------------------------------------------------------------------------
# which join: every grain's join is its region's, never the program's end

def _join_kinds(g):
    j = g.grains["join"].to_numpy(np.int64)
    kinds = np.full(len(j), "none", dtype=object)
    kinds[j >= 0] = g.nodes["join_kind"].astype(str).to_numpy()[j[j >= 0]]
    return kinds


@pytest.mark.parametrize("threads", [1, 2])
def test_a_deep_tree_without_taskwait_joins_at_the_region_end(record, threads):
    # tree 5 3: 3 + 9 + 27 + 81 + 243 tasks, none waited for by a taskwait;
    # every one, at every depth, joins at the region's end (its barrier with 2
    # threads, the region_end join with 1). The catch join was inherited down
    # the tree by pointer jumping that lost every task 3+ levels below the
    # task holding it: those joined at the program's end.
    g = gl.analyze(record("tree", 5, 3, threads=threads)).graph
    assert len(g.grains) == 363
    kinds = _join_kinds(g)
    expected = "barrier" if threads == 2 else "region_end"
    assert set(kinds) == {expected}, dict(zip(*np.unique(kinds, return_counts=True)))
    assert len(np.unique(g.grains["join"])) == 1
    assert (g.grains["depth"].to_numpy() == 5).sum() == 243


def test_loop_chunks_of_a_team_of_one_join_at_their_regions_end(record):
    # loops all N at 1 thread: libomp reports one chunk for dynamic and guided
    # (none for the static ones) and no barrier: the chunk joins at its own
    # region's end, one region per loop, not nowhere
    g = gl.analyze(record("loops", "all", 300, threads=1)).graph
    kinds = _join_kinds(g)
    assert len(kinds) and set(kinds) == {"region_end"}, kinds
    join = g.grains["join"].to_numpy()
    assert len(np.unique(join)) == len(join)       # each chunk its own loop's region
    ends = g.nodes["end"].to_numpy()[join]
    assert (ends >= g.grains["end"].to_numpy()).all()


@pytest.mark.parametrize("program, args", EXAMPLES, ids=lambda v: str(v))
@pytest.mark.parametrize("threads", [1, 2])
def test_no_grain_of_a_parallel_region_waits_for_the_program_end(record, program, args, threads):
    g = gl.analyze(record(program, *args, threads=threads)).graph
    kinds = _join_kinds(g)
    assert "program_end" not in set(kinds) and "none" not in set(kinds), \
        dict(zip(*np.unique(kinds, return_counts=True)))


def _reference_busy(g):
    """Plain reference for the achieved mean: per thread, sort the grain
    fragments and sweep them, merging overlaps (a fragment encloses the
    children its thread ran inline); the busy time is the merged length."""
    from grainlab.metrics.contract import grain_exec_mask
    busy = 0
    for _, part in g.nodes[grain_exec_mask(g)].groupby("thread"):
        cur = None
        for s, e in sorted(zip(part["start"].tolist(), part["end"].tolist())):
            if e <= s:
                continue
            if cur is None or s > cur[1]:
                busy += 0 if cur is None else cur[1] - cur[0]
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        busy += 0 if cur is None else cur[1] - cur[0]
    return busy


@pytest.mark.parametrize("program, args", [("fib", (16,)), ("tree", (6, 3)), ("undeferred", (10,))])
@pytest.mark.parametrize("threads", [1, 2])
def test_achieved_mean_is_the_threads_busy_time_over_the_window(record, program, args, threads):
    g = gl.analyze(record(program, *args, threads=threads)).graph
    prof = ip.achieved_profile(g)
    window = int(prof["time"].iloc[-1] - prof["time"].iloc[0])
    mean = ip.achieved_stats(g)["achieved_mean"]
    assert mean * window == pytest.approx(_reference_busy(g), rel=1e-9)


# ---------------------------------------------------------------------------
# load balance compares like with like (siblings of one join and one construct)

@pytest.mark.parametrize("threads", [1, 2])
def test_load_balance_flags_only_real_imbalance_in_a_mixed_family(record, threads):
    src = (REPO / "examples" / "mixed.c").read_text().splitlines()
    task_lines = [i + 1 for i, line in enumerate(src)
                  if re.match(r"\s*#pragma omp task\b(?!wait)", line)]
    init_line, compute_line = task_lines
    # a 20 ms init task beside 8 equal 2 ms compute tasks: balanced
    balanced = gl.analyze(record("mixed", 8, 2, 20, 1, threads=threads))
    bg = balanced.grains
    # the init task is its own group (it used to make all 9 grains "imbalanced");
    # the equal compute tasks are not flagged unless a loaded machine preempts
    # one of them, so that is not asserted
    assert (bg.loc[bg["location"] == f"mixed.c:{init_line} (main, task)",
                   "load_balance"] == 1.0).all()
    flagged = balanced.summary["problems"]["load_balance"]["locations"]
    assert all(l["location"] == f"mixed.c:{compute_line} (main, task)" for l in flagged)
    # one compute task 20x longer: the compute tasks are flagged, at their
    # line. Load balance is the longest over the median of the 8 (wall time):
    # under a CPU hog on both cores single 2 ms tasks took 4-10 ms (the value
    # was 3.9-6.0 with 5x); at 20x more than half of them would have to take
    # over 27 ms before the flag could go.
    skewed = gl.analyze(record("mixed", 8, 2, 20, 20, threads=threads))
    p = skewed.summary["problems"]["load_balance"]
    assert p["grains"] == 8
    assert [l["location"] for l in p["locations"]] == [f"mixed.c:{compute_line} (main, task)"]
    gr = skewed.grains
    init = gr[gr["location"] == f"mixed.c:{init_line} (main, task)"]
    assert len(init) == 1 and init["load_balance"].iloc[0] == 1.0
