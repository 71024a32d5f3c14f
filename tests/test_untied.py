"""Untied tasks (issue 20, item 1): every schedule-row sequence libomp produces
for them is accepted, the graph puts each fragment on the thread that ran it,
and what is truly impossible is still refused.

The rule, from libomp's kmp_tasking.cpp (docs/trace-format.md, "Untied tasks"):
a self-switch (prior == next == X) resumes X on its thread, switching from what
that thread last switched to; an untied part can end silently, its completion
reported later by another thread. Hand-built traces of exactly those row
patterns, then the untied builds of the example programs through real libomp.
"""
from __future__ import annotations

import pytest

import grainlab as gl
from grainlab import schema as S
from grainlab.trace.validate import SwitchedFrom
from conftest import assert_one_line_error
from invariants import check_trace, graph_time_on_threads, time_on_threads
from tracegen import TraceBuilder, task_id, team_region, team_region_end

import numpy as np

UNTIED = S.TASK_EXPLICIT | S.TASK_UNTIED
SW, DONE = S.STATUS_SWITCH, S.STATUS_COMPLETE


def _close(b, region, init, implicit, t, begin=None):
    """Both threads' region-end barrier (thread th entering it at begin[th],
    default t), the implicit tasks' and the region's ends."""
    for th in (0, 1):
        b.add(th, S.SYNC_BEGIN, (begin or {}).get(th, t), task=implicit[th], other=region,
              kind=S.SYNC_BARRIER_IMPLICIT_PARALLEL)
        b.add(th, S.SYNC_END, t + 1, task=implicit[th], other=region,
              kind=S.SYNC_BARRIER_IMPLICIT_PARALLEL)
        b.add(th, S.IMPLICIT_END, t + 2, task=implicit[th], value=th, count=2,
              kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, t + 3)


def issue_rows_trace():
    """The issue's rows (a 16-thread run's thread 8), on thread 1 of two:
    T starts on thread 0 and leaves it (queued); thread 1 resumes it; T leaves
    thread 1 and is resumed there by a self-switch only; T creates C; C starts,
    leaves (queued), runs its body on thread 0 and ends there silently; thread
    1 reports C's completion; T completes."""
    b = TraceBuilder()
    init, region, (i0, i1) = team_region(b)
    T, C = task_id(0, 100), task_id(1, 200)
    b.add(0, S.TASK_CREATE, 10, task=T, other=i0, kind=UNTIED)
    b.add(0, S.TASK_SCHEDULE, 12, task=T, other=i0, kind=SW)       # T begins on 0
    b.add(0, S.TASK_SCHEDULE, 20, task=i0, other=T, kind=SW)       # T leaves 0
    b.add(1, S.TASK_SCHEDULE, 25, task=T, other=i1, kind=SW)       # ... resumes on 1
    b.add(1, S.TASK_SCHEDULE, 40, task=i1, other=T, kind=SW)       # T leaves thread 1
    b.add(1, S.TASK_SCHEDULE, 47, task=T, other=T, kind=SW)        # self-switch: T again
    b.add(1, S.TASK_CREATE, 50, task=C, other=T, kind=UNTIED)      # ... creates C
    b.add(1, S.TASK_SCHEDULE, 52, task=C, other=T, kind=SW)        # C begins
    b.add(1, S.TASK_SCHEDULE, 53, task=T, other=C, kind=SW)        # C leaves (queued)
    b.add(0, S.TASK_SCHEDULE, 60, task=C, other=i0, kind=SW)       # C's body on thread 0
    b.add(1, S.TASK_SCHEDULE, 100, task=T, other=C, kind=DONE)     # C done, said by 1
    b.add(1, S.TASK_SCHEDULE, 120, task=i1, other=T, kind=DONE)    # T done
    # thread 0 goes on after C's silent end: into its barrier at 95
    _close(b, region, init, (i0, i1), 130, begin={0: 95})
    return b, T, C


def test_the_issues_rows_load_and_each_part_sits_on_its_thread(tmp_path, cli):
    b, T, C = issue_rows_trace()
    path = b.write(tmp_path / "issue.parquet")
    assert cli("info", path).returncode == 0
    t = gl.load(path)
    g = gl.analyze(t).graph
    got = graph_time_on_threads(g).to_dict()
    # by hand: T ran [12, 20) on thread 0; [25, 40), [47, 52) (the create at
    # 50 included), [53, 100) and [100, 120) on thread 1. C ran [52, 53) on
    # thread 1 and [60, 95) on thread 0, its body ending silently before the
    # barrier; thread 1 said it was done at 100.
    assert got == {(T, 0): 8, (T, 1): 15 + 5 + 47 + 20, (C, 0): 35, (C, 1): 1}
    assert got == time_on_threads(t)[lambda s: s > 0].to_dict()
    # fragments: a new one where a task resumed on another thread, none where
    # it resumed on the thread it had left (the self-switch)
    nodes = g.nodes
    for task, threads in ((T, [0, 1, 1]), (C, [1, 0])):
        grain = int(np.flatnonzero(g.grains["task_id"].to_numpy() == task)[0])
        frag = nodes[(nodes["grain"] == grain) & (nodes["type"] == "fragment")]
        assert frag.sort_values("start")["thread"].tolist() == threads, frag
    check_trace(t, tasks=2, threads=2)


def serialized_child_trace(self_first: bool):
    """s4.1's pattern: T creates C, a deque too full to queue it runs C at
    once; C's first part leaves to T, cannot be queued (serialized) and runs
    again at once, reported as a self-switch; C completes back to T.
    self_first: C's second scheduling point too (a self-switch into the task
    the thread already runs, then the resume)."""
    b = TraceBuilder()
    init, region, (i0, i1) = team_region(b)
    T, C = task_id(0, 100), task_id(0, 101)
    b.add(0, S.TASK_CREATE, 10, task=T, other=i0, kind=UNTIED)
    b.add(0, S.TASK_SCHEDULE, 11, task=T, other=i0, kind=SW)
    b.add(0, S.TASK_CREATE, 20, task=C, other=T, kind=UNTIED)
    b.add(0, S.TASK_SCHEDULE, 22, task=C, other=T, kind=SW)        # C begins
    b.add(0, S.TASK_SCHEDULE, 23, task=T, other=C, kind=SW)        # C leaves to T
    b.add(0, S.TASK_SCHEDULE, 25, task=C, other=C, kind=SW)        # self-switch: C again
    end = 40
    if self_first:
        b.add(0, S.TASK_SCHEDULE, 35, task=C, other=C, kind=SW)    # C leaves to itself
        b.add(0, S.TASK_SCHEDULE, 36, task=C, other=C, kind=SW)    # ... and resumes
        end = 50
    b.add(0, S.TASK_SCHEDULE, end, task=T, other=C, kind=DONE)
    b.add(0, S.TASK_SCHEDULE, end + 10, task=i0, other=T, kind=DONE)
    _close(b, region, init, (i0, i1), end + 20)
    return b, T, C, end


@pytest.mark.parametrize("self_first", [False, True])
def test_a_serialized_untied_child_resumed_by_self_switches(tmp_path, cli, self_first):
    b, T, C, end = serialized_child_trace(self_first)
    path = b.write(tmp_path / "serial.parquet")
    assert cli("info", path).returncode == 0
    t = gl.load(path)
    got = graph_time_on_threads(gl.analyze(t).graph).to_dict()
    assert got == {(T, 0): (22 - 11) + (25 - 23) + (end + 10 - end), (C, 0): 1 + (end - 25)}
    check_trace(t, tasks=2, threads=2)


def test_switched_from_reads_each_threads_last_switch_across_batches():
    sf = SwitchedFrom()
    # thread 1's T -> T is a resume from what thread 1 last ran (I1); thread
    # 0's first row keeps libomp's prior; a thread's rows split over batches
    away = sf.away(np.array([0, 1, 1]), np.array([5, 7, 9], np.uint64),
                   np.array([3, 4, 7], np.uint64))
    assert away.tolist() == [3, 4, 7]
    away = sf.away(np.array([1, 0, 1]), np.array([9, 5, 9], np.uint64),
                   np.array([9, 5, 9], np.uint64))
    # thread 1 last ran 9: a self-switch into it changes nothing (9 -> 9);
    # thread 0 last ran 5: the same
    assert away.tolist() == [9, 5, 9]


def _running_twice(b_rows):
    b = TraceBuilder()
    init, region, (i0, i1) = team_region(b)
    X = task_id(0, 100)
    b.add(0, S.TASK_CREATE, 10, task=X, other=i0, kind=UNTIED)
    b.add(0, S.TASK_SCHEDULE, 12, task=X, other=i0, kind=SW)       # X runs on 0 ...
    for row in b_rows(X, i1):
        b.add(1, *row[:2], **row[2])
    b.add(0, S.TASK_SCHEDULE, 60, task=i0, other=X, kind=DONE)     # ... until 60
    _close(b, region, init, (i0, i1), 70)
    return b


@pytest.mark.parametrize("name,rows", [
    # switched to on thread 1 while it runs on thread 0
    ("switch", lambda X, i1: [(S.TASK_SCHEDULE, 30, dict(task=X, other=i1, kind=SW)),
                              (S.TASK_SCHEDULE, 40, dict(task=i1, other=X, kind=SW))]),
    # resumed on thread 1 by a self-switch while it runs on thread 0
    ("self-switch", lambda X, i1: [(S.TASK_SCHEDULE, 30, dict(task=X, other=X, kind=SW)),
                                   (S.TASK_SCHEDULE, 40, dict(task=i1, other=X, kind=SW))]),
])
def test_a_task_run_on_two_threads_at_once_is_still_refused(tmp_path, cli, name, rows):
    path = _running_twice(rows).write(tmp_path / f"{name}.parquet")
    assert_one_line_error(cli("info", path), str(path), "two threads at once")
    assert_one_line_error(cli("analyze", path), str(path), "two threads at once")


# --- the untied builds of the examples, through real libomp ----------------------

# program, args, tasks (the tied build's count; sparselu single: +1 producer)
from test_examples_a import fft_tasks, nqueens_tasks, sort_tasks, sparselu_tasks  # noqa: E402
from test_examples_b import health_tasks, uts_tasks  # noqa: E402

UNTIED_CASES = [
    ("fib_untied", (15,), 2 * 987 - 2),
    ("sparselu_untied", ("single", 10, 8), sparselu_tasks(10) + 1),
    ("nqueens_untied", (7, 3), nqueens_tasks(7, 3)),
    ("sort_untied", (4000, 64, 100, 4), sort_tasks(4000, 64, 100)),
    ("fft_untied", (4096, 128), fft_tasks(4096, 128)),
    ("health_untied", (3, 4, 3, 3), health_tasks(3, 4, 3, 3)),
    ("uts_untied", ("deep", 200, 2), uts_tasks("deep", 200, 2)),
]


@pytest.mark.parametrize("threads", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("name,args,tasks", UNTIED_CASES, ids=[c[0] for c in UNTIED_CASES])
def test_untied_examples_load_count_and_hold_the_invariants(record, name, args, tasks, threads):
    t = record(name, *args, threads=threads, env={"GRAINLAB_QUIET": "1"})
    assert t.complete
    assert t.summary()["untied_tasks"] == tasks
    check_trace(t, tasks=tasks, threads=threads)


def test_the_single_producer_migrates_and_is_followed(record):
    """sparselu single's untied producer moves between threads at its
    scheduling points: its fragments land on several threads, and the
    graph's time per thread equals the plain walk over the rows."""
    for attempt in range(5):
        t = record("sparselu_untied", "single", 16, 8, threads=4, env={"RUN": str(attempt)})
        figures = check_trace(t, tasks=sparselu_tasks(16) + 1, threads=4)
        g = gl.analyze(t).graph
        producer = int(np.argmin(g.grains["depth"].to_numpy()))
        threads = set(g.nodes.loc[g.nodes["grain"] == producer, "thread"].tolist())
        if len(threads) > 1:
            assert figures["moved_tasks"] >= 1
            return
    pytest.fail("the untied producer never moved between 4 threads in 5 runs")


@pytest.mark.parametrize("batch_rows", [1, 3, 7])
def test_streamed_checks_carry_each_threads_last_switch(tmp_path, cli, monkeypatch, batch_rows):
    """`grainlab info` checks a file in batches: a thread's last switch is
    carried from batch to batch, so the same rows pass (and the forged ones
    fail) whatever the batch size, the issue's rows split over row groups."""
    from grainlab.trace import batches
    monkeypatch.setattr(batches, "BATCH_ROWS", batch_rows)
    b, _, _ = issue_rows_trace()
    ok = b.write(tmp_path / "issue.parquet", rows_per_group=2)
    assert cli("info", ok).returncode == 0
    bad = _running_twice(lambda X, i1: [(S.TASK_SCHEDULE, 30, dict(task=X, other=X, kind=SW)),
                                        (S.TASK_SCHEDULE, 40, dict(task=i1, other=X, kind=SW))]
                         ).write(tmp_path / "bad.parquet", rows_per_group=2)
    assert_one_line_error(cli("info", bad), str(bad), "two threads at once")
