"""Consistency checks on a loaded trace's events, all on columns.

Contradictions (an end without a begin, a task whose parent never exists, time
going backwards on a thread, an unknown event code) raise TraceError naming the
file, the row group and the field of the first offending row. In a trace
already known to be damaged (the run was stopped, or the collector dropped
events) they are recorded in `trace.problems` instead, since missing rows are
expected there. Begins without ends are always problems, never errors: a run
stopped mid-way leaves them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import schema as S
from .sorting import lexsort
from .errors import TraceError
from .idindex import IdIndex


def validate(trace) -> None:
    ev = trace.events
    damaged = not trace.complete

    def contradiction(row: int, field: str, what: str):
        rg = int(ev["row_group"].iat[row])
        message = f"row group {rg}, field {field}: {what}"
        if damaged:
            trace.problems.append(message)
        else:
            raise TraceError(f"{trace.path}: {message}")

    if len(ev) == 0:
        trace.problems.append("trace holds no events")
        return
    _check_event_codes(ev, contradiction)
    _check_row_group_threads(ev, trace.row_group_sizes, contradiction)
    order = thread_order(ev)
    _check_time_order(ev, order, contradiction)
    _check_pairs(ev, order, trace.problems, contradiction)
    _check_task_references(ev, contradiction)
    _check_task_tree(ev, contradiction)
    _check_one_thread_at_a_time(ev, contradiction)
    _check_counts(ev, contradiction)


def thread_order(ev: pd.DataFrame) -> np.ndarray:
    """Row positions sorted by thread, each thread's rows in file order
    (= that thread's time order: its row groups are written in order)."""
    return np.argsort(ev["thread"].to_numpy(), kind="stable")


def _check_event_codes(ev, contradiction):
    code = ev["event"].to_numpy()
    bad = np.flatnonzero((code < S.THREAD_BEGIN) | (code > S.FLUSH_END))
    if len(bad):
        contradiction(bad[0], "event", f"unknown event code {code[bad[0]]}")


def _check_row_group_threads(ev, sizes, contradiction):
    thread = ev["thread"].to_numpy()
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    first = np.repeat(thread[starts[sizes > 0]], sizes[sizes > 0])
    bad = np.flatnonzero(thread != first)
    if len(bad):
        contradiction(bad[0], "thread",
                      f"rows of threads {first[bad[0]]} and {thread[bad[0]]} in one "
                      "row group (each row group must hold one thread's buffer)")


def _check_time_order(ev, order, contradiction):
    # Inferred chunks are written at WORK_END with interpolated times: skip them.
    inferred = ((ev["event"].to_numpy() == S.CHUNK)
                & ((ev["flags"].to_numpy() & S.CHUNK_INFERRED) != 0))
    rows = order[~inferred[order]]
    tsc = ev["tsc"].to_numpy()[rows]
    thread = ev["thread"].to_numpy()[rows]
    back = np.flatnonzero((tsc[1:] < tsc[:-1]) & (thread[1:] == thread[:-1]))
    if len(back):
        row = rows[back[0] + 1]
        contradiction(row, "tsc",
                      f"time goes backwards on thread {thread[back[0] + 1]} "
                      f"({tsc[back[0]]} then {tsc[back[0] + 1]})")


# (begin event, end event, key columns, what is paired) — keys identify one
# nesting stack; a stack's depth must never go below zero.
PAIRS = (
    (S.THREAD_BEGIN, S.THREAD_END, ("thread",), "thread"),
    (S.PARALLEL_BEGIN, S.PARALLEL_END, ("other",), "parallel region"),
    (S.IMPLICIT_BEGIN, S.IMPLICIT_END, ("task",), "implicit task"),
    (S.SYNC_BEGIN, S.SYNC_END, ("thread", "kind"), "sync region"),
    (S.WORK_BEGIN, S.WORK_END, ("thread",), "worksharing construct"),
    (S.FLUSH_BEGIN, S.FLUSH_END, ("thread",), "flush"),
)


def _check_pairs(ev, order, problems, contradiction):
    code = ev["event"].to_numpy()
    for begin, end, keys, label in PAIRS:
        rows = order[np.isin(code[order], (begin, end))]
        if len(rows) == 0:
            continue
        key_cols = [ev[k].to_numpy()[rows] for k in keys]
        # Group rows by key; np.lexsort is stable, so each key's rows keep
        # their thread time order.
        key_order = lexsort(key_cols[::-1])
        step = np.where(code[rows] == begin, 1, -1)[key_order]
        # new_key[i]: row i starts another key's run.
        new_key = np.zeros(len(step), dtype=bool)
        new_key[0] = True
        for col in key_cols:
            col = col[key_order]
            new_key[1:] |= col[1:] != col[:-1]
        depth = np.cumsum(step)
        group = np.cumsum(new_key) - 1
        base = (depth - step)[new_key]  # running total before each group
        depth = depth - base[group]     # nesting depth within the key
        negative = np.flatnonzero(depth < 0)
        if len(negative):
            row = rows[key_order[negative[0]]]
            contradiction(row, "event",
                          f"{S.EVENT_NAMES[end]} without a {S.EVENT_NAMES[begin]} "
                          f"({label} {_describe(ev, row, keys)})")
        last = np.append(new_key[1:], True)
        open_count = int(np.clip(depth[last], 0, None).sum())
        if open_count:
            problems.append(f"{open_count} {label} begin(s) without an end")


def _describe(ev, row, keys):
    return ", ".join(f"{k} {_fmt(ev[k].iat[row])}" for k in keys)


def _fmt(v):
    v = int(v)
    return hex(v) if v > 0xFFFF else str(v)


def _check_task_references(ev, contradiction):
    code = ev["event"].to_numpy()
    task = ev["task"].to_numpy()
    other = ev["other"].to_numpy()
    tsc = ev["tsc"].to_numpy()
    create = np.flatnonzero(code == S.TASK_CREATE)
    implicit = np.flatnonzero(code == S.IMPLICIT_BEGIN)
    created = task[create]
    # Direct id -> position table (grainlab.idindex): O(1) membership for tens
    # of millions of ids.
    by_created = IdIndex(created)
    if len(create) and not (by_created.get(created) == np.arange(len(create))).all():
        by_id = np.argsort(created, kind="stable")        # rare: say which one
        created_sorted = created[by_id]
        dup = np.flatnonzero(created_sorted[1:] == created_sorted[:-1])
        contradiction(create[by_id[dup[0] + 1]], "task",
                      f"task {_fmt(created_sorted[dup[0]])} created twice")
    known = IdIndex(np.concatenate((created, task[implicit])))

    parent = other[create]
    orphan = np.flatnonzero(~known.contains(parent))
    if len(orphan):
        row = create[orphan[0]]
        contradiction(row, "other",
                      f"task {_fmt(task[row])} created by parent task "
                      f"{_fmt(parent[orphan[0]])} that never exists in the trace")

    sched = np.flatnonzero(code == S.TASK_SCHEDULE)
    for field, ids in (("task", task[sched]), ("other", other[sched])):
        unknown = np.flatnonzero((ids != 0) & ~known.contains(ids))
        if len(unknown):
            row = sched[unknown[0]]
            contradiction(row, field,
                          f"TASK_SCHEDULE names task {_fmt(ids[unknown[0]])} "
                          "that is never created")
            break

    # An explicit task must be created before it first runs, and must run
    # before it is switched away from.
    if len(create) and len(sched):
        created_tsc = tsc[create].astype(np.float64)
        sched_tsc = tsc[sched].astype(np.float64)
        first_run = _first_time_per_task(by_created, task[sched], sched_tsc)
        first_stop = _first_time_per_task(by_created, other[sched], sched_tsc)
        early = np.flatnonzero(first_run < created_tsc)
        if len(early):
            row = create[early[np.argmin(created[early])]]
            contradiction(row, "tsc", f"task {_fmt(task[row])} runs before it is created")
        bad = np.flatnonzero(first_stop < first_run)
        if len(bad):
            victim = created[bad[np.argmin(created[bad])]]
            row = sched[np.flatnonzero(other[sched] == victim)[0]]
            contradiction(row, "other",
                          f"task {_fmt(victim)} is switched away from before it "
                          "ever starts (an end without a begin)")


def _first_time_per_task(index, ids, tsc) -> np.ndarray:
    """Earliest tsc at which each task of `index` appears in ids (inf if never)."""
    first = np.full(index.n, np.inf)
    pos = index.get(ids)
    hit = pos >= 0
    np.minimum.at(first, pos[hit], tsc[hit])
    return first


def _check_task_tree(ev, contradiction):
    """The explicit tasks' parent pointers form a forest (a cycle would make
    every walk up the tree endless), and a parent exists before its child:
    a task creates children only while it runs."""
    code = ev["event"].to_numpy()
    create = np.flatnonzero(code == S.TASK_CREATE)
    if not len(create):
        return
    task, parent = ev["task"].to_numpy()[create], ev["other"].to_numpy()[create]
    tsc = ev["tsc"].to_numpy()[create]
    index = IdIndex(task)
    up = index.get(parent)                  # -1: an implicit or initial task (a root)
    explicit_parent = np.flatnonzero(up >= 0)
    late = explicit_parent[tsc[up[explicit_parent]] > tsc[explicit_parent]]
    if len(late):
        row = create[late[0]]
        contradiction(row, "other", f"task {_fmt(task[late[0]])} is created before its "
                                    f"parent {_fmt(parent[late[0]])}")
    from .graph.columns import list_rank as _list_rank    # bounded pointer jumping
    from .errors import TraceError
    try:
        _list_rank(np.where(up >= 0, up, -1).astype(np.int64))
    except TraceError:
        # A member of a cycle: the parent-before-child check above catches every
        # cycle whose times are consistent; name the task that is its own
        # ancestor when the times were forged too.
        me = np.flatnonzero(up == np.arange(len(up)))
        row = create[me[0]] if len(me) else create[explicit_parent[0]]
        contradiction(row, "other", "the task tree has a cycle (a task is its own ancestor)")


def _check_one_thread_at_a_time(ev, contradiction):
    """An explicit task runs on one thread at a time: between a switch into it
    (TASK_SCHEDULE next) and the switch away from it (prior) no other switch
    into it may come."""
    code = ev["event"].to_numpy()
    create = np.flatnonzero(code == S.TASK_CREATE)
    sched = np.flatnonzero(code == S.TASK_SCHEDULE)
    if not len(create) or not len(sched):
        return
    index = IdIndex(ev["task"].to_numpy()[create])
    task, other, tsc = (ev[c].to_numpy()[sched] for c in ("task", "other", "tsc"))
    thread = ev["thread"].to_numpy()[sched]
    into, away = index.get(task), index.get(other)
    # Only a task seen on two threads can run on two at once: a tied task (the
    # usual case) never moves, so this leaves almost nothing to sort.
    seen = np.concatenate([into[into >= 0], away[away >= 0]])
    on = np.concatenate([thread[into >= 0], thread[away >= 0]]).astype(np.int64)
    lo = np.full(index.n, np.iinfo(np.int64).max)
    hi = np.full(index.n, -1)
    np.minimum.at(lo, seen, on)
    np.maximum.at(hi, seen, on)
    moved = hi > lo
    if not moved.any():
        return
    into = np.where((into >= 0) & moved[np.maximum(into, 0)], into, -1)
    away = np.where((away >= 0) & moved[np.maximum(away, 0)], away, -1)
    who = np.concatenate([into[into >= 0], away[away >= 0]])
    when = np.concatenate([tsc[into >= 0], tsc[away >= 0]])
    step = np.concatenate([np.ones(int((into >= 0).sum()), np.int64),
                           -np.ones(int((away >= 0).sum()), np.int64)])
    rows = np.concatenate([sched[into >= 0], sched[away >= 0]])
    order = lexsort((step, when, who))      # per task, in time; ends first at a tie
    who, step, rows = who[order], step[order], rows[order]
    first = np.ones(len(who), bool)
    first[1:] = who[1:] != who[:-1]
    running = np.cumsum(step)
    base = (running - step)[first]
    running = running - base[np.cumsum(first) - 1]
    twice = np.flatnonzero(running > 1)
    if len(twice):
        row = rows[twice[0]]
        contradiction(row, "task", f"task {_fmt(ev['task'].iat[row])} runs on two threads "
                                   "at once (switched to again before it was switched away from)")


# Counts (iterations, team sizes, dependences) are far below 2^62; above it
# they are garbage, or negative numbers written as unsigned.
_COUNT_LIMIT = np.uint64(1) << np.uint64(62)


def _check_counts(ev, contradiction):
    count = ev["count"].to_numpy()
    bad = np.flatnonzero(count >= _COUNT_LIMIT)
    if len(bad):
        row = bad[0]
        contradiction(row, "count", f"{S.EVENT_NAMES.get(int(ev['event'].iat[row]), 'event')} "
                                    f"count {int(count[row])} is not a count (negative or "
                                    "beyond 2^62)")
