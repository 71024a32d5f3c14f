"""Consistency checks on a trace's events, all on columns, batch by batch.

Contradictions (an end without a begin, a task whose parent never exists, time
going backwards on a thread, an unknown event code) raise TraceError naming the
file, the row group and the field of the first offending row. In a trace
already known to be damaged (the run was stopped, or the collector dropped
events) they are recorded in `problems` instead, since missing rows are
expected there. Begins without ends are always problems, never errors: a run
stopped mid-way leaves them.

The checks see the events as batches in file order (grainlab.trace.batches): a
loaded trace's columns in batches of views (`validate`), or a file streamed row
groups at a time (`grainlab info`, grainlab.trace.scan), with the same answers and
the same messages either way. What they keep between batches is bounded: a
few numbers per thread and per nesting key (thread, region, implicit task),
and per explicit task its create row (grainlab.trace.batches.Collected) and, from a
second pass over the schedule rows, its first run and first switch away
(~30 bytes). Only when some task ran on two threads does a third pass read
the schedule rows of those tasks.
"""
from __future__ import annotations

import numpy as np

from .. import schema as S
from .batches import Collected, fed_with_all
from ..errors import TraceError
from ..idindex import IdIndex
from ..sorting import argsort, lexsort

# Columns the passes after the first read.
SCHEDULE_COLUMNS = ["event", "thread", "tsc", "task", "other"]


def validate(trace) -> None:
    """Check a loaded trace (grainlab.load): its event columns in batches of
    views (grainlab.trace.batches.loaded_batches)."""
    checks = Checks()
    source, rows = fed_with_all(trace, checks)
    checks.conclude(rows, source, trace.problems, damaged=not trace.complete, path=trace.path)


class Checks:
    """Every check, fed batches (`feed`, first pass), then `conclude`d."""

    def __init__(self):
        self.rows = 0
        self.bad_code = None        # (rg, code) of the first unknown event code
        self.rg_carry = None        # (rg, first thread) of the last batch's last row group
        self.rg_mixed = None        # (rg, first thread, thread)
        self.last_tsc: dict = {}    # thread -> tsc of its last row (inferred chunks aside)
        self.backwards: dict = {}   # thread -> (rg, tsc before, tsc)
        self.pairs = [_Pair(*p) for p in PAIRS]
        self.bad_count = None       # (rg, event, count)

    # -- first pass --------------------------------------------------------
    def feed(self, b: dict) -> None:
        n = len(b["event"])
        if not n:
            return
        self.rows += n
        code = b["event"]
        if self.bad_code is None:
            bad = np.flatnonzero((code < S.THREAD_BEGIN) | (code > S.LAST_EVENT))
            if len(bad):
                self.bad_code = (int(b["rg"][bad[0]]), int(code[bad[0]]))
        self._feed_row_groups(b)
        self._feed_time(b)
        # every pair's rows from one look-up of the codes, not two
        # comparisons of the whole batch per pair
        which = _PAIR_OF[code]
        hit = np.flatnonzero(which)
        if len(hit):
            by_pair = hit[argsort(which[hit])]      # stable: file order within a pair
            bounds = np.searchsorted(which[by_pair], np.arange(1, len(self.pairs) + 2))
            for i, pair in enumerate(self.pairs):
                if bounds[i] < bounds[i + 1]:
                    pair.feed(b, by_pair[bounds[i]:bounds[i + 1]])
        if self.bad_count is None:
            bad = np.flatnonzero(b["count"] >= _COUNT_LIMIT)
            if len(bad):
                r = bad[0]
                self.bad_count = (int(b["rg"][r]), int(code[r]), int(b["count"][r]))

    def _feed_row_groups(self, b):
        """Each row group holds one thread's rows: its first row's thread."""
        rg, thread = b["rg"], b["thread"]
        # one row group per batch (the usual case): no search for where
        # row groups change
        one = rg[0] == rg[-1] and (rg == rg[0]).all()
        starts = np.zeros(1, np.int64) if one else \
            np.concatenate(([0], np.flatnonzero(rg[1:] != rg[:-1]) + 1))
        first = thread[starts]
        if self.rg_carry is not None and self.rg_carry[0] == rg[0]:
            first[0] = self.rg_carry[1]
        self.rg_carry = (int(rg[-1]), int(first[-1]))
        if self.rg_mixed is None:
            lengths = np.diff(np.append(starts, len(rg)))
            bad = np.flatnonzero(thread != np.repeat(first, lengths))
            if len(bad):
                r = bad[0]
                self.rg_mixed = (int(rg[r]), int(np.repeat(first, lengths)[r]), int(thread[r]))

    def _feed_time(self, b):
        """Time never goes backwards on a thread (inferred chunks, written at
        WORK_END with interpolated times, aside). Kept: each thread's first
        step back."""
        code = b["event"]
        inferred = (code == S.CHUNK) & ((b["flags"] & S.CHUNK_INFERRED) != 0)
        thread, tsc = b["thread"], b["tsc"]
        rows = _Everything()            # batch row of each row looked at
        if inferred.any():
            rows = np.flatnonzero(~inferred)
            if not len(rows):
                return
            thread, tsc = thread[rows], tsc[rows]
        # by thread (each thread's rows in file order); a batch of one thread's
        # row groups (the usual one) is in that order already
        if not (thread == thread[0]).all():
            order = argsort(thread)
            rows = order if isinstance(rows, _Everything) else rows[order]
            thread, tsc = thread[order], tsc[order]
        starts = np.concatenate(([0], np.flatnonzero(thread[1:] != thread[:-1]) + 1))
        ends = np.append(starts[1:], len(thread)) - 1
        if len(starts) == 1:            # one thread: no thread boundary to skip
            back = np.flatnonzero(tsc[1:] < tsc[:-1]) + 1
        else:
            back = np.flatnonzero((tsc[1:] < tsc[:-1]) & (thread[1:] == thread[:-1])) + 1
        for s, e in zip(starts.tolist(), ends.tolist()):
            t = int(thread[s])
            if t not in self.backwards:
                prev = self.last_tsc.get(t)
                if prev is not None and int(tsc[s]) < prev:
                    self.backwards[t] = (int(b["rg"][rows[s]]), prev, int(tsc[s]))
                else:
                    i = np.searchsorted(back, s)
                    if i < len(back) and back[i] <= e:
                        r = back[i]
                        self.backwards[t] = (int(b["rg"][rows[r]]), int(tsc[r - 1]),
                                             int(tsc[r]))
            self.last_tsc[t] = int(tsc[e])

    # -- the verdict -------------------------------------------------------
    def conclude(self, rows: Collected, source, problems: list, *, damaged: bool, path) -> None:
        """Say what is wrong, in the checks' order: raise TraceError at the
        first contradiction, or (damaged) append every finding to `problems`.
        `rows`: the first pass's Collected; `source(columns)`: the events in
        batches again (for the passes over the schedule rows)."""
        def contradiction(rg, field, what):
            message = f"row group {rg}, field {field}: {what}"
            if damaged:
                problems.append(message)
            else:
                raise TraceError(f"{path}: {message}")

        if self.rows == 0:
            problems.append("trace holds no events")
            return
        if self.bad_code:
            contradiction(self.bad_code[0], "event", f"unknown event code {self.bad_code[1]}")
        if self.rg_mixed:
            rg, first, thread = self.rg_mixed
            contradiction(rg, "thread", f"rows of threads {first} and {thread} in one row "
                                        "group (each row group must hold one thread's buffer)")
        if self.backwards:
            t = min(self.backwards)
            rg, before, now = self.backwards[t]
            contradiction(rg, "tsc", f"time goes backwards on thread {t} ({before} then {now})")
        for pair in self.pairs:
            pair.conclude(source, problems, contradiction)
        tasks = _Tasks(rows)
        tasks.check_references(source, contradiction)
        tasks.check_tree(contradiction)
        tasks.check_one_thread_at_a_time(source, contradiction)
        if self.bad_count:
            rg, code, count = self.bad_count
            contradiction(rg, "count", f"{S.EVENT_NAMES.get(code, 'event')} count {count} is "
                                       "not a count (negative or beyond 2^62)")


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


class _Pair:
    """Begins and ends of one kind nest per key: the running depth of a key,
    over its rows in thread order (by thread, each thread's rows in file
    order), never goes below zero. Kept per (key, thread): the sum of its
    steps, the lowest running sum, and the row group where that first went
    below zero."""

    def __init__(self, begin, end, keys, label):
        self.begin, self.end, self.keys, self.label = begin, end, keys, label
        # the columns that order rows: the key, then the thread
        self.columns = keys if keys[0] == "thread" else keys + ("thread",)
        self.state: dict = {}       # (key..., thread) -> [total, lowest, rg below zero or -1]

    def feed(self, b, rows):
        """`rows`: the batch's rows of this pair's begin and end, in order."""
        code = b["event"]
        cols = [b[c][rows] for c in self.columns]
        if all(c[0] == c[-1] and (c == c[0]).all() for c in cols):
            # one key in the whole batch (a row group is one thread's rows;
            # its sync regions are mostly of one kind): no sort, one group
            self._feed_one(tuple(c[:1].tolist()[0] for c in cols),
                           np.where(code[rows] == self.begin, 1, -1), b["rg"][rows])
        else:
            self._feed_groups(b, rows, cols)

    def _feed_groups(self, b, rows, cols):
        """`feed` of rows of any keys (`cols`: their key columns): by key,
        each key's rows in file order."""
        code = b["event"]
        order = lexsort(cols[::-1])
        cols = [c[order] for c in cols]
        step = np.where(code[rows][order] == self.begin, 1, -1)
        rg = b["rg"][rows][order]
        new = np.zeros(len(step), bool)
        new[0] = True
        for c in cols:
            new[1:] |= c[1:] != c[:-1]
        starts = np.flatnonzero(new)
        group = np.cumsum(new) - 1
        running = np.cumsum(step)
        running -= (running - step)[starts][group]          # from 0 in each group
        keys = list(zip(*(c[starts].tolist() for c in cols)))
        carry = np.array([self.state.get(k, _NEW)[0] for k in keys], dtype=np.int64)
        depth = running + carry[group]
        lowest = np.minimum.reduceat(depth, starts)
        ends = np.append(starts[1:], len(depth)) - 1
        below = np.flatnonzero(depth < 0)
        first_below = {}
        if len(below):
            g, at = np.unique(group[below], return_index=True)
            first_below = dict(zip(g.tolist(), rg[below[at]].tolist()))
        for g, k in enumerate(keys):
            old = self.state.get(k, _NEW)
            neg = old[2] if old[2] >= 0 else first_below.get(g, -1)
            self.state[k] = [int(depth[ends[g]]), min(old[1], int(lowest[g])), neg]

    def _feed_one(self, key, step, rg):
        """`feed` of rows that all have one key: the same state as its
        general path gives for a single group."""
        depth = np.cumsum(step)
        old = self.state.get(key, _NEW)
        depth += old[0]
        neg = old[2]
        if neg < 0:
            below = np.flatnonzero(depth < 0)
            if len(below):
                neg = int(rg[below[0]])
        self.state[key] = [int(depth[-1]), min(old[1], int(depth.min())), neg]

    def conclude(self, source, problems, contradiction):
        if not self.state:
            return
        width = len(self.keys)
        keys = sorted(self.state)
        found = None
        open_count = 0
        i = 0
        while i < len(keys):
            j = i
            offset = 0
            while j < len(keys) and keys[j][:width] == keys[i][:width]:
                total, lowest, rg = self.state[keys[j]]
                if found is None and offset >= 0 and lowest + offset < 0:
                    found = (keys[j], rg if offset == 0 else
                             self._first_at(source, keys[j], -offset - 1))
                offset += total
                j += 1
            open_count += max(offset, 0)
            i = j
        if found is not None:
            key, rg = found
            what = ", ".join(f"{k} {_fmt(v)}" for k, v in zip(self.keys, key))
            contradiction(rg, "event", f"{S.EVENT_NAMES[self.end]} without a "
                                       f"{S.EVENT_NAMES[self.begin]} ({self.label} {what})")
        if open_count:
            problems.append(f"{open_count} {self.label} begin(s) without an end")

    def _first_at(self, source, key, level):
        """Row group of the first row of (key..., thread) where its own running
        sum reaches `level` (a second pass: only for an end without a begin
        on a key whose begins and ends are on several threads)."""
        columns = sorted({"event", *self.columns})
        running = 0
        for b in source(columns):
            code = b["event"]
            mask = (code == self.begin) | (code == self.end)
            for c, v in zip(self.columns, key):
                mask &= b[c] == v
            rows = np.flatnonzero(mask)
            if not len(rows):
                continue
            depth = running + np.cumsum(np.where(code[rows] == self.begin, 1, -1))
            hit = np.flatnonzero(depth <= level)
            if len(hit):
                return int(b["rg"][rows[hit[0]]])
            running = int(depth[-1])
        return -1


_NEW = (0, 0, -1)
# event code -> 1 + index in PAIRS of the pair it begins or ends (0: none)
_PAIR_OF = np.zeros(256, np.uint8)
for _i, (_begin, _end, *_) in enumerate(PAIRS):
    _PAIR_OF[[_begin, _end]] = _i + 1


class _Everything:
    """Stands for arange(n) without making it: x[i] is i."""

    def __getitem__(self, i):
        return i


class _Tasks:
    """The checks on explicit tasks: references, tree, one thread at a time."""

    def __init__(self, rows: Collected):
        c = rows.create
        self.task, self.parent, self.tsc, self.rg = c["task"], c["other"], c["tsc"], c["rg"]
        self.index = rows.create_index()
        self.unique = rows.creates_unique
        self.implicit = IdIndex(rows.implicit["task"])
        self.n = len(self.task)
        self.lo = self.hi = None

    def parent_positions(self) -> np.ndarray:
        """Each task's parent's position among the created tasks (-1: not
        one of them). Not kept: at 10^8 tasks it would sit beside the
        schedule pass's columns (0.5 GB more at the peak)."""
        # int32 while positions fit: half the bytes per task
        return self.index.get(self.parent, dtype=np.int32 if self.n < (1 << 31) else np.int64)

    def check_references(self, source, contradiction):
        created = self.task
        if self.n and not self.unique():
            by_id = argsort(created)        # rare: say which one
            created_sorted = created[by_id]
            dup = np.flatnonzero(created_sorted[1:] == created_sorted[:-1])
            contradiction(int(self.rg[by_id[dup[0] + 1]]), "task",
                          f"task {_fmt(created_sorted[dup[0]])} created twice")
        root = np.flatnonzero(self.parent_positions() < 0)
        orphan = root[~self.implicit.contains(self.parent[root])]
        if len(orphan):
            r = orphan[0]
            contradiction(int(self.rg[r]), "other",
                          f"task {_fmt(created[r])} created by parent task "
                          f"{_fmt(self.parent[r])} that never exists in the trace")
        found = self._schedules(source)
        for field in ("task", "other"):
            if found[field] is not None:
                rg, value = found[field]
                contradiction(rg, field, f"TASK_SCHEDULE names task {_fmt(value)} "
                                         "that is never created")
                break
        # An explicit task must be created before it first runs, and must run
        # before it is switched away from.
        if self.n and found["schedules"]:
            # (compared as float64, a buffer at a time: no task-sized copy)
            early = np.flatnonzero(self.first_run < self.tsc)
            if len(early):
                r = early[np.argmin(created[early])]
                contradiction(int(self.rg[r]), "tsc", f"task {_fmt(created[r])} runs before "
                                                      "it is created")
            bad = np.flatnonzero(self.first_stop < self.first_run)
            if len(bad):
                victim = bad[np.argmin(created[bad])]
                contradiction(int(self.stop_rg[victim]), "other",
                              f"task {_fmt(created[victim])} is switched away from before "
                              "it ever starts (an end without a begin)")
        del self.first_run, self.first_stop, self.stop_rg

    def _schedules(self, source) -> dict:
        """Second pass, over the TASK_SCHEDULE rows: the first row naming an
        unknown task (field `task`, then `other`); per explicit task its first
        run, its first switch away (and that row's row group), and the lowest
        and highest thread it was seen on."""
        n = self.n
        self.first_run = np.full(n, np.inf)
        self.first_stop = np.full(n, np.inf)
        self.stop_rg = np.full(n, -1, np.int32)
        # lowest and highest thread: a task never seen keeps lo > hi
        self.lo = np.full(n, np.iinfo(np.uint16).max, np.uint16)
        self.hi = np.zeros(n, np.uint16)
        found = {"task": None, "other": None, "schedules": 0}
        kernel = _schedule_kernel(self.index)
        for b in source(SCHEDULE_COLUMNS + ["rg"]):
            if kernel is not None and _schedule_batch_native(kernel, self, b, found):
                continue
            self._schedule_batch(b, found)
        return found

    def _schedule_batch(self, b, found) -> None:
        """One batch of `_schedules`, numpy's way: the twin of the compiled
        pass (grainlab/native/schedules.c), and the path of batches or
        indexes that kernel does not take."""
        n = self.n
        sched = np.flatnonzero(b["event"] == S.TASK_SCHEDULE)
        if not len(sched):
            return
        found["schedules"] += len(sched)
        rg = b["rg"][sched]
        into, away = self.index.get(b["task"][sched]), self.index.get(b["other"][sched])
        for field, pos in (("task", into), ("other", away)):
            if found[field] is None:
                ids = b[field][sched]
                # the implicit tasks are looked up only for ids not created
                unknown = np.flatnonzero((ids != 0) & (pos < 0))
                unknown = unknown[~self.implicit.contains(ids[unknown])]
                if len(unknown):
                    found[field] = (int(rg[unknown[0]]), ids[unknown[0]])
        if not n:
            return
        tsc = b["tsc"][sched].astype(np.float64)
        thread = b["thread"][sched]
        i, o = into >= 0, away >= 0
        np.minimum.at(self.first_run, into[i], tsc[i])
        np.minimum.at(self.first_stop, away[o], tsc[o])
        p, first = np.unique(away[o], return_index=True)
        unset = self.stop_rg[p] < 0
        self.stop_rg[p[unset]] = rg[o][first[unset]]
        for pos, m in ((into, i), (away, o)):
            np.minimum.at(self.lo, pos[m], thread[m])
            np.maximum.at(self.hi, pos[m], thread[m])

    def check_tree(self, contradiction):
        """The explicit tasks' parent pointers form a forest (a cycle would make
        every walk up the tree endless), and a parent exists before its child:
        a task creates children only while it runs."""
        if not self.n:
            return
        task, parent, tsc = self.task, self.parent, self.tsc
        up = self.parent_positions()    # -1: an implicit or initial task (a root)
        has = up >= 0
        late = np.flatnonzero(has & (tsc[np.where(has, up, 0)] > tsc))
        if len(late):
            r = late[0]
            contradiction(int(self.rg[r]), "other", f"task {_fmt(task[r])} is created before "
                                                    f"its parent {_fmt(parent[r])}")
        if _has_cycle(up):
            # A member of a cycle: the parent-before-child check above catches every
            # cycle whose times are consistent; name the task that is its own
            # ancestor when the times were forged too.
            me = np.flatnonzero(up == np.arange(len(up)))
            r = me[0] if len(me) else np.flatnonzero(has)[0]
            contradiction(int(self.rg[r]), "other",
                          "the task tree has a cycle (a task is its own ancestor)")

    def check_one_thread_at_a_time(self, source, contradiction):
        """An explicit task runs on one thread at a time: between a switch into it
        (TASK_SCHEDULE next) and the switch away from it no other switch into
        it may come. Only a task seen on two threads can run on two at once: a
        tied task (the usual case) never moves, so a third pass reads the
        schedule rows of moved tasks only, and only if there are any.

        What is switched away from is what the thread last switched to, read
        from the thread's own schedule rows (`SwitchedFrom`): libomp's prior
        can be stale for untied tasks (docs/trace-format.md, "Untied tasks")."""
        if not self.n or self.lo is None:
            return
        moved = self.hi > self.lo
        if not moved.any():
            return
        parts = {"into": [], "away": []}
        threads = SwitchedFrom()
        for b in source(SCHEDULE_COLUMNS + ["rg"]):
            sched = np.flatnonzero(b["event"] == S.TASK_SCHEDULE)
            if not len(sched):
                continue
            into_ids, away_ids = b["task"][sched], threads.away(b["thread"][sched],
                                                                b["task"][sched],
                                                                b["other"][sched])
            for name, ids in (("into", into_ids), ("away", away_ids)):
                pos = self.index.get(ids)
                keep = np.flatnonzero(pos >= 0)
                keep = keep[moved[pos[keep]]]
                rows = sched[keep]
                parts[name].append((pos[keep], b["tsc"][rows], b["rg"][rows], ids[keep]))
        if not parts["into"]:
            return
        into = [np.concatenate(c) for c in zip(*parts["into"])]
        away = [np.concatenate(c) for c in zip(*parts["away"])]
        who, when, rg, task = (np.concatenate((a, b)) for a, b in zip(into, away))
        step = np.concatenate([np.ones(len(into[0]), np.int64), -np.ones(len(away[0]), np.int64)])
        order = lexsort((step, when, who))      # per task, in time; ends first at a tie
        who, step = who[order], step[order]
        first = np.ones(len(who), bool)
        first[1:] = who[1:] != who[:-1]
        running = np.cumsum(step)
        base = (running - step)[first]
        running = running - base[np.cumsum(first) - 1]
        twice = np.flatnonzero(running > 1)
        if len(twice):
            r = order[twice[0]]
            contradiction(int(rg[r]), "task", f"task {_fmt(task[r])} runs on two threads at "
                                              "once (switched to again before it was switched "
                                              "away from)")


class SwitchedFrom:
    """What each TASK_SCHEDULE row really switches away from: the task its
    thread last switched to (the thread's previous schedule row's next), not
    always the prior that libomp reports. The two differ only for untied
    tasks (kmp_tasking.cpp; docs/trace-format.md, "Untied tasks"):

    - At each task scheduling point of an untied task X, clang's code calls
      __kmpc_omp_task on X itself: libomp reports X's switch back to the task
      that scheduled it (prior X, next that task), then queues X. When X
      cannot be queued (it is serialized: it was run at once because a deque
      was full, or its team is serial) libomp runs X again at once on the
      same thread, with the thread's current task, still X, as the prior: a
      *self-switch* (prior == next == X) whose real prior is the task X had
      just switched back to.
    - A part of an untied task ends silently unless its thread is the last
      to drop the task's reference count: the thread that does (possibly
      another one, later) reports the completion, with prior X, though X ran
      its last part elsewhere; the thread that ran it just goes on with its
      next switch (prior: its own current task).

    A thread's first schedule row (nothing known before it) keeps libomp's
    prior, unless it is a self-switch: X can be the prior of a self-switch
    only on a thread that was seen to run X, so there it switches from
    nothing (a task resumed there while it runs elsewhere is then caught). Batches come in file order and each thread's rows in its time
    order; the last next of each thread is carried from batch to batch."""

    def __init__(self):
        self.last: dict = {}      # thread -> its last schedule row's next (task id)

    def away(self, thread, into, prior) -> np.ndarray:
        n = len(thread)
        if not n:
            return np.asarray(prior)
        order = argsort(thread)                 # stable: each thread's rows in order
        th = thread[order]
        first = np.ones(n, bool)
        first[1:] = th[1:] != th[:-1]
        prev = np.empty(n, into.dtype)
        prev[1:] = into[order][:-1]
        starts = np.flatnonzero(first)
        prev[starts] = [self.last.get(int(t), 0) for t in th[starts].tolist()]
        away = np.empty(n, into.dtype)
        away[order] = prev
        # a row group holds one thread's buffer: the last row of a thread in
        # this batch is its last in file order
        ends = np.append(starts[1:], n) - 1
        for t, v in zip(th[ends].tolist(), into[order][ends].tolist()):
            self.last[t] = v
        # nothing known before: libomp's prior, except for a self-switch,
        # whose prior is only ever the task the thread already ran
        return np.where(away == 0, np.where(into == prior, 0, prior), away)


_SCHEDULE_DTYPES = {"event": np.uint8, "task": np.uint64, "other": np.uint64,
                    "tsc": np.uint64, "thread": np.uint16, "rg": np.int32}


def _schedule_kernel(index):
    """gl_schedule_pass (grainlab/native/schedules.c), or None: not built,
    GRAINLAB_NATIVE=0, or an index without a direct table (hand-made ids)."""
    if index.table_args() is None:
        return None
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_schedule_pass", [i, p, i, p, p, p, p, p, i, p, p, i, p, i,
                                             p, p, p, p, p, i, p, p, p], restype=None)


def _schedule_batch_native(kernel, tasks, b, found) -> bool:
    """One batch of `_Tasks._schedules` through the compiled pass; False
    (nothing done) when a column is not of the file's dtype."""
    cols = {c: b[c] for c in _SCHEDULE_DTYPES}
    if any(v.dtype != _SCHEDULE_DTYPES[c] or not v.flags.c_contiguous
           for c, v in cols.items()):
        return False
    n = len(cols["event"])
    want = int(found["task"] is None) | (int(found["other"] is None) << 1)
    unknown = {f: np.empty(n if want & bit else 0, np.int64)
               for f, bit in (("task", 1), ("other", 2))}
    counts = np.zeros(3, np.int64)
    kernel(n, cols["event"].ctypes.data, S.TASK_SCHEDULE, cols["task"].ctypes.data,
           cols["other"].ctypes.data, cols["tsc"].ctypes.data, cols["thread"].ctypes.data,
           cols["rg"].ctypes.data, *tasks.index.table_args(), tasks.first_run.ctypes.data,
           tasks.first_stop.ctypes.data, tasks.stop_rg.ctypes.data, tasks.lo.ctypes.data,
           tasks.hi.ctypes.data, want, unknown["task"].ctypes.data,
           unknown["other"].ctypes.data, counts.ctypes.data)
    found["schedules"] += int(counts[0])
    for k, field in ((1, "task"), (2, "other")):
        if found[field] is None and counts[k]:
            rows = unknown[field][:counts[k]]
            ids = cols[field][rows]
            # the implicit (and initial) tasks are not in the created tasks' index
            rows = rows[~tasks.implicit.contains(ids)]
            if len(rows):
                found[field] = (int(cols["rg"][rows[0]]), cols[field][rows[0]])
    return True


def _has_cycle(up: np.ndarray) -> bool:
    """Whether following `up` (parent position, -1 = root) from some element
    never ends: one compiled walk (grainlab/trace/task_tree.py) where built."""
    from .task_tree import walk
    found = walk(up)
    return found[0] if found is not None else _has_cycle_numpy(up)


def _has_cycle_numpy(up: np.ndarray) -> bool:
    """`_has_cycle`'s twin: pointer jumping halves every remaining path each pass, so a
    forest of n elements is done after ceil(log2 n) + 1 passes (+2 to spare)."""
    p = up.copy()
    live = np.flatnonzero(p >= 0)
    for _ in range(int(np.ceil(np.log2(max(len(p), 2)))) + 3):
        if not len(live):
            return False
        p[live] = p[p[live]]
        live = live[p[live] >= 0]       # only those still below a root, each pass fewer
    return True


def _fmt(v):
    v = int(v)
    return hex(v) if v > 0xFFFF else str(v)


# Counts (iterations, team sizes, dependences) are far below 2^62; above it
# they are garbage, or negative numbers written as unsigned.
_COUNT_LIMIT = np.uint64(1) << np.uint64(62)
