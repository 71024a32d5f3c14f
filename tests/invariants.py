"""Invariants every trace and its grain graph must satisfy, whatever the program,
the thread count or the runtime's scheduling choices, checked against plain
reference computations (tests/test_untied.py; benchmarks/untied_stress.py runs
them over many recordings). Each check raises AssertionError with what differs."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd

import grainlab as gl
from grainlab import schema as S
from grainlab.graph.interop import weighted_edge_networkx
from grainlab.metrics import instantaneous_parallelism as ip
from grainlab.metrics import time_decomposition as td
from grainlab.metrics.contract import threads_used

# Rows after which the row's `task` runs on its thread; after which nobody
# does; TASK_CREATE: its `other` (the creator) goes on. Others change nothing.
_RUNS_TASK = {S.TASK_SCHEDULE, S.IMPLICIT_BEGIN, S.SYNC_BEGIN, S.SYNC_END, S.WORK_BEGIN,
              S.WORK_END, S.CHUNK, S.PARALLEL_BEGIN, S.PARALLEL_END}
_RUNS_NOBODY = {S.IMPLICIT_END, S.THREAD_BEGIN, S.THREAD_END, S.FLUSH_BEGIN}
# A task's time from its SYNC_BEGIN to its SYNC_END of these is its join's,
# not its work (a taskgroup's sync region spans its whole body: work).
_WAITS = {S.SYNC_TASKWAIT, *S.SYNC_BARRIERS}


def time_on_threads(trace) -> pd.Series:
    """Reference: nanoseconds each explicit task ran on each thread, by a plain
    walk over every thread's rows in time order (docs/graph-model.md: a row
    opens a segment until the thread's next row, credited to the task running
    after the row), leaving out the time a task spends waiting in a taskwait
    or barrier. Indexed (task id, thread). Loop chunks are not included."""
    ev = trace.events
    explicit = set(ev.loc[ev["event"] == S.TASK_CREATE, "task"].tolist())
    # an explicit task runs no later than its completion is reported (an
    # untied task's last part can end silently on another thread)
    done = ev[(ev["event"] == S.TASK_SCHEDULE) & ev["kind"].isin(S.STATUS_FINISHED)]
    finished = done.groupby("other")["time"].min().to_dict()
    out: dict = {}
    waiting: set = set()
    for thread, rows in ev.groupby("thread", sort=True):
        rows = rows.sort_values("time", kind="stable")
        running = 0
        last = None
        for event, task, other, time, kind in zip(
                rows["event"].tolist(), rows["task"].tolist(), rows["other"].tolist(),
                rows["time"].tolist(), rows["kind"].tolist()):
            end = min(time, finished.get(running, time))
            if last is not None and running in explicit and running not in waiting \
                    and end > last:
                key = (running, thread)
                out[key] = out.get(key, 0) + (end - last)
            last = time
            if event == S.SYNC_BEGIN and kind in _WAITS:
                waiting.add(task)
            elif event == S.SYNC_END and kind in _WAITS:
                waiting.discard(task)
            if event in _RUNS_TASK:
                running = task
            elif event == S.TASK_CREATE:
                running = other
            elif event in _RUNS_NOBODY:
                running = 0
    index = pd.MultiIndex.from_tuples(list(out), names=["task_id", "thread"]) if out else \
        pd.MultiIndex.from_arrays([[], []], names=["task_id", "thread"])
    return pd.Series(list(out.values()), index=index, dtype=np.int64).sort_index()


def graph_time_on_threads(g) -> pd.Series:
    """What the graph says: the durations of each task grain's fragments and
    forks (not its joins), summed per (task id, the node's thread)."""
    nodes = g.nodes
    grain = np.where(nodes["type"].astype(str).to_numpy() == "join", -1,
                     nodes["grain"].to_numpy())
    grains = g.grains
    is_task = np.zeros(len(grains) + 1, bool)
    is_task[:-1] = grains["kind"].astype(str).to_numpy() == "task"
    mine = (grain >= 0) & (grain < len(grains))
    mine[mine] = is_task[grain[mine]]
    frame = pd.DataFrame({"task_id": grains["task_id"].to_numpy()[grain[mine]].astype(np.int64),
                          "thread": nodes["thread"].to_numpy()[mine].astype(np.int64),
                          "ns": nodes["duration"].to_numpy()[mine].astype(np.int64)})
    s = frame.groupby(["task_id", "thread"])["ns"].sum()
    return s[s > 0].sort_index()


def check_trace(trace, *, tasks: int | None = None, threads: int | None = None) -> dict:
    """Every invariant on one loaded trace; returns a few figures for reports."""
    summary = trace.summary()
    if tasks is not None:
        assert summary["tasks"] == tasks, (summary["tasks"], tasks)
    a = gl.analyze(trace)
    g, s = a.graph, a.summary
    gr = g.grains
    n_tasks = int((gr["kind"].astype(str) == "task").sum())
    assert n_tasks == summary["tasks"], ("every task is a grain", n_tasks, summary["tasks"])
    # exact critical path: an independent longest path (networkx) on the same graph
    span = int(nx.dag_longest_path_length(weighted_edge_networkx(g)))
    assert g.span == span, (g.span, span)
    path = g.critical_path
    assert int(g.nodes["duration"].to_numpy()[path].sum()) == g.span, "path weight = span"
    edges = set(zip(g.edges["src"].tolist(), g.edges["dst"].tolist()))
    assert all((u, v) in edges for u, v in zip(path[:-1].tolist(), path[1:].tolist())), \
        "the critical path follows edges"
    # time: the span fits in the run, achieved parallelism never above the threads,
    # each thread's time splits exactly into work, overhead and idle
    duration = int(trace.events["time"].max() - trace.events["time"].min())
    n_threads = threads_used(g)
    if threads is not None:
        assert n_threads <= threads, ("threads used", n_threads, threads)
    assert 0 <= s["span_ns"] <= duration, ("span within the run", s["span_ns"], duration)
    running = int(ip.achieved_profile(g)["running"].max())
    assert running <= n_threads, ("achieved parallelism", running, n_threads)
    per = td.per_thread(g)
    assert (per["work"] + per["overhead"] + per["idle"] == per["total"]).all(), per
    # every task is joined at a node that ends after it
    tasks_ = gr[gr["kind"].astype(str) == "task"]
    join = tasks_["join"].to_numpy()
    assert (join >= 0).all(), ("tasks without a join", int((join < 0).sum()))
    late = tasks_[g.nodes["end"].to_numpy()[join] < tasks_["end"].to_numpy()]
    assert late.empty, ("tasks ending after their join", late[["task_id", "end", "join"]].head())
    # every task's time sits on the threads where it ran (untied tasks move)
    ref, got = time_on_threads(trace), graph_time_on_threads(g)
    ref = ref[ref > 0]
    both = ref.index.union(got.index)
    diff = (ref.reindex(both, fill_value=0) - got.reindex(both, fill_value=0)).abs()
    # the graph clips implicit tasks at their region's end and takes a
    # fork's weight out of the fragment after it on the same thread: per
    # (task, thread) the totals agree exactly
    assert (diff == 0).all(), diff[diff != 0].head()
    moved = int((got.groupby(level="task_id").size() > 1).sum())
    return {"tasks": n_tasks, "span_ns": int(g.span), "threads": int(n_threads),
            "moved_tasks": moved, "fragments": int((g.nodes["type"] == "fragment").sum())}
