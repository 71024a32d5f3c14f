"""Real example programs through real libomp and the collector: the traces
have the shapes the programs' definitions dictate (examples/README.md),
computed here independently of grainlab's own code."""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest

from grainlab import schema as S
from conftest import grainlab as run_cli


# ---------------------------------------------------------------- fib

def fib_task_lineages(n: int, cutoff: int | None) -> list[str]:
    """Lineages of the explicit tasks fib(n) creates: the root call runs in the
    implicit task that wins the single ("0.p0"); a creating call makes child 0
    = fib(n-1) and child 1 = fib(n-2)."""
    cutoff = n if cutoff is None else cutoff
    out = []

    def call(n, depth, name):
        if n < 2 or depth >= cutoff:
            return
        for c, m in enumerate((n - 1, n - 2)):
            child = f"{name}.{c}"
            out.append(child)
            call(m, depth + 1, child)
    call(n, 0, "0.p0")
    return out


@lru_cache(maxsize=None)
def fib_tasks(n: int, d: int, cutoff: int) -> int:
    if n < 2 or d >= cutoff:
        return 0
    return 2 + fib_tasks(n - 1, d + 1, cutoff) + fib_tasks(n - 2, d + 1, cutoff)


@pytest.mark.parametrize("n,cutoff", [(12, None), (16, 3), (16, 8), (18, 11)])
@pytest.mark.parametrize("threads", [1, 2])
def test_fib_creates_exactly_the_formula_task_count(record, n, cutoff, threads):
    args = (n,) if cutoff is None else (n, cutoff)
    t = record("fib", *args, threads=threads)
    expected = fib_tasks(n, 0, n if cutoff is None else cutoff)
    s = t.summary()
    assert s["tasks"] == expected
    assert s["taskwaits"] == expected // 2
    assert s["complete"] and s["problems"] == []


@pytest.mark.parametrize("n,cutoff", [(12, None), (16, 5)])
def test_fib_lineages_match_definition_with_1_and_2_threads(record, n, cutoff):
    args = (n,) if cutoff is None else (n, cutoff)
    expected = sorted(fib_task_lineages(n, cutoff))
    for threads in (1, 2):
        tasks = record("fib", *args, threads=threads).tasks()
        explicit = tasks[tasks["kind"] == "explicit"]
        assert sorted(explicit["lineage"]) == expected, f"{threads} thread(s)"
        # Depth is the number of explicit ancestors below the region (+2).
        assert (explicit["depth"] == explicit["lineage"].str.count(r"\.") + 0).all()


@pytest.mark.parametrize("program,args", [
    ("tree", (3, 4)), ("taskgroup", (20,)), ("depend", (10,)),
    ("undeferred", (10,)), ("taskloop", (1000, 100))])
def test_lineage_set_same_with_1_and_2_threads(record, program, args):
    sets = []
    for threads in (1, 2):
        tasks = record(program, *args, threads=threads).tasks()
        lineage = tasks.loc[tasks["kind"] == "explicit", "lineage"]
        assert lineage.notna().all()
        assert not lineage.duplicated().any()
        sets.append(set(lineage))
    if program == "taskloop":
        # libomp splits taskloops differently per thread count (README); the
        # chunk-running leaves still form one set of iterations: checked below.
        return
    assert sets[0] == sets[1]


@pytest.mark.parametrize("program,args,tasks", [
    ("tree", (3, 5), 5 + 25 + 125), ("taskgroup", (20,), 60), ("depend", (10,), 50),
    ("undeferred", (10,), 41), ("taskloop", (10000, 1000), 10)])
def test_task_counts_of_other_examples(record, program, args, tasks):
    assert record(program, *args).summary()["tasks"] == tasks


# ---------------------------------------------------------------- loops

N = 1000
THREADS = 2


def covers_exactly(chunks: pd.DataFrame, n: int) -> bool:
    c = chunks.sort_values("first")
    first = c["first"].to_numpy()
    end = first + c["iterations"].to_numpy()
    return (len(c) > 0 and first[0] == 0 and end[-1] == n
            and bool(np.all(first[1:] == end[:-1])))


@pytest.mark.parametrize("schedule,expected_chunks", [
    ("static", THREADS), ("static,7", math.ceil(N / 7)), ("dynamic,7", math.ceil(N / 7)),
    ("guided", None)])
def test_every_schedule_covers_every_iteration_once(record, schedule, expected_chunks):
    t = record("loops", schedule, N, threads=THREADS)
    loops, chunks = t.loops(), t.chunks()
    assert len(loops) == 1
    loop = loops.iloc[0]
    assert loop["iterations"] == N
    mine = chunks[chunks["loop"] == loop["loop"]]
    assert covers_exactly(mine, N), mine[["first", "iterations", "thread", "inferred"]]
    if expected_chunks is not None:
        assert len(mine) == expected_chunks
    # Each chunk has a start and an end on its thread, end after start.
    assert (mine["end_ns"] >= mine["start_ns"]).all()
    if schedule == "static,7":
        # chunk j runs on thread j mod T; libomp reports only the first per thread
        j = mine.sort_values("first")["first"].to_numpy() // 7
        threads = mine.sort_values("first")["thread"].to_numpy()
        assert len(set(zip(j % THREADS, threads))) == THREADS
        assert mine["inferred"].sum() == len(mine) - THREADS


@pytest.mark.parametrize("threads", [1, 2])
def test_all_schedules_in_one_run(record, threads):
    t = record("loops", "all", N, threads=threads)
    loops = t.loops()
    if threads > 1:  # a team of one runs guided as static (libomp 19)
        assert list(loops["work"]) == ["static", "static", "dynamic", "guided"]
    assert len(loops) == 4
    for loop in loops["loop"]:
        assert covers_exactly(t.chunks()[t.chunks()["loop"] == loop], N), loop
    assert t.summary()["iterations"] == 4 * N
    # Chunk identity (loop instance + first iteration) is unique.
    assert t.chunks()["id"].is_unique


@pytest.mark.parametrize("n,grain", [(10000, 1000), (100, 7), (1000, 100)])
def test_taskloop_chunks_cover_every_iteration_once(record, n, grain):
    t = record("taskloop", n, grain, threads=THREADS)
    loops, chunks = t.loops(), t.chunks()
    assert list(loops["construct"]) == ["taskloop"]
    assert covers_exactly(chunks, n)
    k = max(1, n // grain)
    assert len(chunks) == k
    sizes = sorted(chunks["iterations"])
    assert sizes == sorted([n // k + 1] * (n % k) + [n // k] * (k - n % k))
    # Chunks are named by their loop instance and first iteration.
    assert chunks["id"].is_unique


# ------------------------------------------------- structural invariants

EXAMPLES = [("fib", (14, 6)), ("tree", (3, 3)), ("undeferred", (10,)),
            ("taskgroup", (10,)), ("depend", (5,)), ("taskloop", (1000, 100)),
            ("loops", ("all", 500))]


@pytest.fixture(params=EXAMPLES, ids=[e[0] for e in EXAMPLES])
def example_trace(request, record):
    name, args = request.param
    return record(name, *args, threads=2)


PAIRS = [(S.THREAD_BEGIN, S.THREAD_END, ["thread"]),
         (S.PARALLEL_BEGIN, S.PARALLEL_END, ["other"]),
         (S.IMPLICIT_BEGIN, S.IMPLICIT_END, ["task"]),
         (S.SYNC_BEGIN, S.SYNC_END, ["thread", "kind"]),
         (S.WORK_BEGIN, S.WORK_END, ["thread", "kind"]),
         (S.FLUSH_BEGIN, S.FLUSH_END, ["thread"])]


def test_every_begin_has_an_end(example_trace):
    ev = example_trace.events
    for begin, end, key in PAIRS:
        b = ev[ev["event"] == begin].groupby(key).size()
        e = ev[ev["event"] == end].groupby(key).size()
        both = pd.concat([b, e], axis=1).fillna(0)
        assert (both.iloc[:, 0] == both.iloc[:, 1]).all(), (S.EVENT_NAMES[begin], both)
    # Every explicit task that starts also completes, exactly once.
    sched = ev[ev["event"] == S.TASK_SCHEDULE]
    created = ev.loc[ev["event"] == S.TASK_CREATE, "task"]
    completes = sched[sched["kind"] == S.STATUS_COMPLETE].groupby("other").size()
    assert (completes.reindex(created).fillna(0) == 1).all()
    assert example_trace.problems == []


def test_time_never_goes_backwards_on_a_thread(example_trace):
    ev = example_trace.events
    inferred = (ev["event"] == S.CHUNK) & ((ev["flags"] & 1) != 0)
    for thread, rows in ev[~inferred].groupby("thread"):
        assert (np.diff(rows["tsc"].to_numpy().astype(np.int64)) >= 0).all(), thread


def test_every_task_parent_exists(example_trace):
    ev = example_trace.events
    ids = set(ev.loc[ev["event"].isin([S.TASK_CREATE, S.IMPLICIT_BEGIN]), "task"])
    parents = set(ev.loc[ev["event"] == S.TASK_CREATE, "other"])
    assert parents <= ids
    tasks = example_trace.tasks()
    assert tasks["lineage"].notna().all()
    roots = tasks[tasks["kind"] == "initial"]
    assert list(roots["lineage"]) == ["0"]


def test_info_json_agrees_with_the_trace(example_trace):
    result = run_cli("info", "--json", example_trace.path)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    ev = example_trace.events
    assert info["events"] == len(ev)
    assert info["threads"] == ev["thread"].nunique()
    assert info["tasks"] == int((ev["event"] == S.TASK_CREATE).sum())
    assert info["parallel_regions"] == int((ev["event"] == S.PARALLEL_BEGIN).sum())
    assert info["taskwaits"] == int(((ev["event"] == S.SYNC_BEGIN) & (ev["kind"] == 5)).sum())
    assert info["complete"] is True
    for key in ("events", "threads", "tasks", "chunks", "iterations",
                "parallel_regions", "taskwaits"):
        assert type(info[key]) is int, key
