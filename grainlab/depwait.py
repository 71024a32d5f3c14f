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

import numpy as np
import pandas as pd

from . import schema as S
from .sorting import lexsort


def fold_dependence_waits(events: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """(events without pseudo-tasks, how many were folded)."""
    code = events["event"].to_numpy()
    kind = events["kind"].to_numpy()
    create = np.flatnonzero((code == S.TASK_CREATE)
                            & ((kind.astype(np.uint64) & S.TASK_TASKWAIT) != 0))
    if len(create) == 0:
        return events, 0
    task = events["task"].to_numpy()
    other = events["other"].to_numpy()
    thread = events["thread"].to_numpy()
    tsc = events["tsc"].to_numpy()
    pseudo = task[create]
    order = np.argsort(pseudo, kind="stable")
    pseudo_sorted = pseudo[order]

    def pseudo_pos(ids):
        """Position of each id in `pseudo` (−1 when it is not a pseudo-task)."""
        i = np.searchsorted(pseudo_sorted, ids)
        i = np.minimum(i, len(pseudo_sorted) - 1)
        return np.where(pseudo_sorted[i] == ids, order[i], -1)

    # The schedule row that ends each wait: prior (`other`) = the pseudo-task.
    sched = np.flatnonzero((code == S.TASK_SCHEDULE)
                           & (kind == S.STATUS_TASKWAIT_COMPLETE))
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
    out = events
    if follows.any():
        out = events.copy()
        new_task = task.copy()
        new_task[moved[keep_moved]] = new_owner[keep_moved]
        out["task"] = new_task
        # the task now has the dependences: its create row says so (`value`)
        value = out["value"].to_numpy().copy()
        value[nxt[follows]] = value[create[np.flatnonzero(has_end)[follows]]]
        out["value"] = value
    out = out[~drop].reset_index(drop=True)
    return out, int(len(create))
