"""Read a trace without loading it: `scan(path)` streams the file's row groups
(grainlab.trace.batches) through the same checks as `grainlab.load`
(grainlab.trace.validate) and the same counts as `Trace.summary()`
(grainlab.trace.facts), and returns what `grainlab info` prints (and `record`'s
closing line, when the converter's counts cannot stand in: `closing_counts`).
Same answers, same one-line errors, same problems in the same
order as loading the trace would give; memory is one batch of events plus a
few dozen bytes per explicit task, whatever the trace's size.

Passes over the file: one over every column (the counts, most checks, and
the rows kept per task, region and worksharing begin), one over five columns
of the schedule rows (which tasks run before they are created, switch away
before they start, or name tasks that do not exist), and a third only when a
task was seen on two threads. A trace with dependence-wait pseudo-tasks
(grainlab.trace.dependence_waits) first gets two passes that find what folding them changes.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import dependence_waits as depwait
from .. import schema as S
from .batches import Collected, file_batches, take
from ..sorting import lexsort
from .facts import Facts
from .file import open_trace, row_group_sizes, run_state
from .validate import Checks


class Scan:
    """What a streamed read of a trace found.

    path, meta (as Trace.meta), complete, problems (as a loaded Trace's),
    events, threads, tasks (explicit), chunk_events (CHUNK rows), counters
    (names); summary() is what `grainlab info --json` prints."""

    def __init__(self, path, meta, complete, problems, facts, rows, counters, row_groups):
        self.path, self.meta = path, meta
        self.complete, self.problems = complete, problems
        self._facts, self._rows = facts, rows
        self.counters, self.row_groups = counters, row_groups

    @property
    def events(self) -> int:
        return self._facts.events

    @property
    def threads(self) -> int:
        return self._facts.threads

    @property
    def tasks(self) -> int:
        return self._facts.counts["task_creates"]

    @property
    def chunk_events(self) -> int:
        return self._facts.counts["chunk_events"]

    def summary(self) -> dict:
        return self._facts.info(self._rows, path=self.path, meta=self.meta,
                                complete=self.complete, problems=self.problems,
                                counters=self.counters, row_groups=self.row_groups)


def scan(path) -> Scan:
    """Check and count the trace at `path`, streaming it (see the module's
    doc). Waits for, or converts, a spool as `grainlab.load` does; raises
    TraceError as it does."""
    path = Path(path)
    parquet, meta = open_trace(path)
    sizes = row_group_sizes(parquet)
    fold = None
    expect = _expected(meta, parquet.metadata.num_rows)
    try:
        rows, checks, facts = _first_pass(parquet, path, sizes, None, expect)
    except _PseudoTasks:
        fold = fold_plan(parquet, path, sizes)
        meta["dependence_waits"] = fold.folded
        rows, checks, facts = _first_pass(parquet, path, sizes, fold, expect)
    complete, problems = run_state(meta)
    checks.conclude(rows, lambda columns: file_batches(parquet, path, sizes, columns, fold),
                    problems, damaged=not complete, path=path)
    counters = [n[len(S.COUNTER_PREFIX):] for n in parquet.schema_arrow.names
                if n.startswith(S.COUNTER_PREFIX)]
    return Scan(path, meta, complete, problems, facts, rows, counters, len(sizes))


def closing_counts(path):
    """What `record`'s closing line prints (meta, complete, problems, events,
    threads, tasks, chunk_events): the converter's counts in the footer
    (`grainlab.counts`) when the run ended normally and no dependence wait
    needs folding (UTS, 20M events: ~0.05 s instead of a ~4.5 s scan); else
    the streamed scan, which checks the trace and finds its problems too.
    Loading the trace checks it in full either way."""
    parquet, meta = open_trace(Path(path))
    complete, problems = run_state(meta)
    c = meta.get("counts")
    keys = ("events", "threads", "task_creates", "chunk_events", "dependence_wait_creates")
    if (complete and isinstance(c, dict) and all(isinstance(c.get(k), int) for k in keys)
            and c["dependence_wait_creates"] == 0
            and c["events"] == parquet.metadata.num_rows):
        return SimpleNamespace(path=Path(path), meta=meta, complete=True, problems=problems,
                               events=c["events"], threads=c["threads"],
                               tasks=c["task_creates"], chunk_events=c["chunk_events"])
    return scan(path)


class _PseudoTasks(Exception):
    """The first pass met a dependence-wait pseudo-task: fold, then start over."""


def _expected(meta, rows: int) -> dict:
    """How many rows `Collected` will keep, as far as the footer says
    (`grainlab.counts`, written by the converter): its create columns are
    then made once at that size. The footer is a hint: a trace that holds
    more is still read in full (Collected's doc); one that says more than
    its `rows` is not believed."""
    c = meta.get("counts")
    n = c.get("task_creates") if isinstance(c, dict) else None
    return {"create": n} if isinstance(n, int) and 0 < n <= rows else {}


def _first_pass(parquet, path, sizes, fold, expect=None):
    rows, checks, facts = Collected(expect), Checks(), Facts()
    # every column: a corrupt page anywhere is an error, as when load() reads it all
    for b in file_batches(parquet, path, sizes, None, fold):
        if fold is None and depwait.is_pseudo_create(b["event"], b["kind"]).any():
            raise _PseudoTasks
        rows.feed(b)
        checks.feed(b)
        facts.feed(b)
    return rows, checks, facts


def fold_plan(parquet, path, sizes) -> depwait.FoldPlan:
    """grainlab.trace.dependence_waits's fold of a file, from the rows it looks at only:
    pseudo-task creates and wait ends (a pass), then the pseudo-tasks'
    dependence rows and the row after each wait end on its thread in (tsc,
    position) order (a second pass)."""
    columns = list(depwait.COLUMNS)

    def batches():
        return file_batches(parquet, path, sizes, columns)

    kept, pseudo = [], []
    for b in batches():
        is_create = depwait.is_pseudo_create(b["event"], b["kind"])
        mask = is_create | depwait.is_wait_end(b["event"], b["kind"])
        if mask.any():
            kept.append(take(b, mask))
            pseudo.append(b["task"][is_create])
    pseudo = np.unique(np.concatenate(pseudo))
    ends = _concat(kept)
    ends = take(ends, depwait.is_wait_end(ends["event"], ends["kind"])
                & np.isin(ends["other"], pseudo))
    best = {k: np.zeros(len(ends["pos"]), v.dtype) for k, v in ends.items()}
    best["pos"][:] = -1
    for b in batches():
        code = b["event"]
        dep = ((code == S.DEPENDENCE) | (code == S.TASK_DEPENDENCE)) & np.isin(b["task"], pseudo)
        if dep.any():
            kept.append(take(b, dep))
        row = _next_on_thread(b, ends["thread"], ends["tsc"], ends["pos"])
        has = row >= 0
        tsc, pos = b["tsc"][np.maximum(row, 0)], b["pos"][np.maximum(row, 0)]
        better = has & ((best["pos"] < 0) | (tsc < best["tsc"])
                        | ((tsc == best["tsc"]) & (pos < best["pos"])))
        for k in best:
            best[k][better] = b[k][row[better]]
    kept.append(take(best, best["pos"] >= 0))
    reduced = _concat(kept)
    _, first = np.unique(reduced["pos"], return_index=True)      # sorted by position
    return depwait.fold_plan(take(reduced, first))


def _next_on_thread(b, thread, tsc, pos) -> np.ndarray:
    """For each query (thread, tsc, pos): the batch row that follows it on its
    thread in (tsc, pos) order, or -1."""
    n, m = len(b["pos"]), len(pos)
    out = np.full(m, -1, np.int64)
    if not n or not m:
        return out
    th = np.concatenate((b["thread"], thread)).astype(np.int64)
    ts = np.concatenate((b["tsc"], tsc))
    ps = np.concatenate((b["pos"], pos))
    is_query = np.concatenate((np.zeros(n, np.int8), np.ones(m, np.int8)))
    order = lexsort((is_query, ps, ts, th))      # a query after its own row
    slot = np.where(order < n, np.arange(n + m), n + m)
    next_row = np.minimum.accumulate(slot[::-1])[::-1]           # first row slot >= i
    after = np.append(next_row[1:], n + m)
    qslots = np.flatnonzero(order >= n)
    cand = after[qslots]
    ok = cand < n + m
    q = order[qslots] - n
    rows = order[cand[ok]]
    same = b["thread"][rows] == thread[q[ok]]
    out[q[ok][same]] = rows[same]
    return out


def _concat(parts: list) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
