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
        key_order = np.lexsort(key_cols[::-1])
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
