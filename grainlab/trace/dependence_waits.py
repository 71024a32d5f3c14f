"""Dependence waits: the taskwait pseudo-tasks libomp reports, folded away.

When a task has `depend` clauses and cannot be deferred (`if(0)`, or a
`taskwait depend(...)`), libomp first waits for the task's predecessors and
reports that wait through OMPT as a task of its own: a TASK_CREATE with the
`ompt_task_taskwait` flag, the dependences (DEPENDENCE / TASK_DEPENDENCE
rows) on it, and a single TASK_SCHEDULE that ends it with status
`taskwait_complete` — it is never switched to. It is not a task of the
program: counting it would break exact task counts, and a task that ends
without ever starting is not something the grain graph can hold.

Fold it into what the program wrote:
- `if(0)` with `depend`: the undeferred task created right after the wait, by
  the same parent on the same thread, is the task the dependences belong to:
  its DEPENDENCE and TASK_DEPENDENCE rows are moved onto it (so the graph has
  the predecessors -> task edges, and later siblings see its addresses);
- `taskwait depend(...)` (no task follows): the dependence rows are dropped
  and the wait stays time of the waiting task (a limitation, said in
  docs/trace-format.md).
The pseudo-task's own TASK_CREATE and TASK_SCHEDULE rows are dropped.
Columnar: a few sorts and searches, whatever the number of waits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as S
from ..sorting import argsort, lexsort

# Columns the fold reads.
COLUMNS = ("event", "kind", "task", "other", "thread", "tsc", "value")


@dataclass
class FoldPlan:
    """What folding the dependence waits does to a trace, by row position
    (`pos`): rows dropped, rows whose `task` becomes another task (the
    dependences moved onto the undeferred task), create rows whose `value`
    (has dependences) changes. Positions sorted."""
    folded: int
    drop: np.ndarray
    task_pos: np.ndarray
    task_value: np.ndarray
    value_pos: np.ndarray
    value_value: np.ndarray

    def apply(self, batch: dict) -> dict:
        """The batch (grainlab.trace.batches) as it is once folded."""
        pos = batch["pos"]
        if not len(pos):
            return batch
        for column, at, values in (("task", self.task_pos, self.task_value),
                                   ("value", self.value_pos, self.value_value)):
            where, hit = _find(at, pos)
            if len(hit) and column in batch:
                col = batch[column].copy()
                col[hit] = values[where]
                batch = {**batch, column: col}
        _, dropped = _find(self.drop, pos)
        if len(dropped):
            keep = np.ones(len(pos), bool)
            keep[dropped] = False
            batch = {k: v[keep] for k, v in batch.items()}
        return batch


def _find(sorted_pos: np.ndarray, pos: np.ndarray):
    """(index into sorted_pos, index into pos) of the positions in both."""
    i = np.searchsorted(sorted_pos, pos)
    ok = i < len(sorted_pos)
    ok[ok] = sorted_pos[i[ok]] == pos[ok]
    hit = np.flatnonzero(ok)
    return i[hit], hit


def is_pseudo_create(code, kind) -> np.ndarray:
    """Rows that create a dependence-wait pseudo-task."""
    out = code == S.TASK_CREATE
    rows = np.flatnonzero(out)
    out[rows] = (kind[rows].astype(np.uint64) & S.TASK_TASKWAIT) != 0
    return out


def is_wait_end(code, kind) -> np.ndarray:
    """TASK_SCHEDULE rows that can end a dependence wait."""
    return (code == S.TASK_SCHEDULE) & (kind == S.STATUS_TASKWAIT_COMPLETE)


def fold_dependence_waits(events: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """(events without pseudo-tasks, how many were folded)."""
    code, kind = events["event"].to_numpy(), events["kind"].to_numpy()
    # the usual trace has none: asked a slice at a time, so that answering
    # makes no row-sized temporaries (nor `pos`) beside the loaded columns
    step = 1 << 20
    if not any(is_pseudo_create(code[i:i + step], kind[i:i + step]).any()
               for i in range(0, len(code), step)):
        return events, 0
    cols = {c: events[c].to_numpy() for c in COLUMNS}
    cols["pos"] = np.arange(len(events), dtype=np.int64)
    plan = fold_plan(cols)
    if plan is None:
        return events, 0
    out = events
    if len(plan.task_pos) or len(plan.value_pos):
        out = events.copy()
        task = out["task"].to_numpy().copy()
        task[plan.task_pos] = plan.task_value
        out["task"] = task
        value = out["value"].to_numpy().copy()
        value[plan.value_pos] = plan.value_value
        out["value"] = value
    keep = np.ones(len(events), bool)
    keep[plan.drop] = False
    return out[keep].reset_index(drop=True), plan.folded


def fold_plan(ev: dict) -> FoldPlan | None:
    """The fold of the rows `ev` (COLUMNS and `pos`, in file order), or None
    when they create no pseudo-task. `ev` may be the whole trace, or only the
    rows the fold looks at (grainlab.trace.scan streams a file that way): every
    pseudo-task create, every schedule row that can end a wait, the dependence
    rows of pseudo-tasks, and, for each wait end, the row that follows it on
    its thread in (tsc, position) order."""
    code, kind = ev["event"], ev["kind"]
    create = np.flatnonzero(is_pseudo_create(code, kind))
    if len(create) == 0:
        return None
    task, other, thread, tsc = ev["task"], ev["other"], ev["thread"], ev["tsc"]
    pos = ev["pos"]
    pseudo = task[create]
    order = argsort(pseudo)
    pseudo_sorted = pseudo[order]

    def pseudo_pos(ids):
        """Position of each id in `pseudo` (−1 when it is not a pseudo-task)."""
        i = np.searchsorted(pseudo_sorted, ids)
        i = np.minimum(i, len(pseudo_sorted) - 1)
        return np.where(pseudo_sorted[i] == ids, order[i], -1)

    # The schedule row that ends each wait: prior (`other`) = the pseudo-task.
    sched = np.flatnonzero(is_wait_end(code, kind))
    sched_of = pseudo_pos(other[sched])
    sched = sched[sched_of >= 0]
    sched_of = sched_of[sched_of >= 0]
    end_row = np.full(len(create), -1, np.int64)
    end_row[sched_of] = sched

    # The task the wait was for: the row right after the wait's end on the
    # same thread (time order) is an undeferred TASK_CREATE by the same parent.
    by_thread = lexsort((np.arange(len(code)), tsc, thread))
    rank = np.empty(len(code), np.int64)
    rank[by_thread] = np.arange(len(code))
    target = np.full(len(create), 0, dtype=task.dtype)
    has_end = end_row >= 0
    nxt_rank = rank[end_row[has_end]] + 1
    ok = nxt_rank < len(code)
    nxt = np.full(len(nxt_rank), -1, np.int64)
    nxt[ok] = by_thread[nxt_rank[ok]]
    valid = nxt >= 0
    follows = np.zeros(len(nxt), bool)
    cand = nxt[valid]
    follows[valid] = ((code[cand] == S.TASK_CREATE)
                      & ((kind[cand].astype(np.uint64) & S.TASK_UNDEFERRED) != 0)
                      & ((kind[cand].astype(np.uint64) & S.TASK_TASKWAIT) == 0)
                      & (other[cand] == other[create[has_end]][valid])
                      & (thread[cand] == thread[end_row[has_end]][valid]))
    tgt = np.zeros(len(nxt), dtype=task.dtype)
    tgt[follows] = task[nxt[follows]]
    target[np.flatnonzero(has_end)] = tgt

    # Dependence rows of a pseudo-task: onto its task, or dropped.
    dep = np.flatnonzero((code == S.DEPENDENCE) | (code == S.TASK_DEPENDENCE))
    dep_of = pseudo_pos(task[dep])
    moved = dep[dep_of >= 0]
    new_owner = target[dep_of[dep_of >= 0]]
    drop = np.zeros(len(code), bool)
    drop[create] = True
    drop[end_row[has_end]] = True
    drop[moved[new_owner == 0]] = True
    keep_moved = new_owner != 0
    none = np.zeros(0, np.int64)
    task_pos, task_value, value_pos, value_value = none, task[:0], none, ev["value"][:0]
    if follows.any():
        # the task now has the dependences: its create row says so (`value`)
        task_pos, task_value = pos[moved[keep_moved]], new_owner[keep_moved]
        value_pos = pos[nxt[follows]]
        value_value = ev["value"][create[np.flatnonzero(has_end)[follows]]]
    return FoldPlan(int(len(create)), np.sort(pos[drop]), *_sorted(task_pos, task_value),
                    *_sorted(value_pos, value_value))


def _sorted(at, values):
    """Positions sorted (the last assignment of a position wins, as it does
    when the values are assigned to a column in this order)."""
    at = np.asarray(at, np.int64)
    rev = np.arange(len(at))[::-1]
    uniq, first_in_rev = np.unique(at[::-1], return_index=True)
    return uniq, np.asarray(values)[rev[first_in_rev]]
