"""Per-thread event arrays and the *segments* of time they delimit.

Every event row opens a segment that lasts until the next row of the same
thread; the segment belongs to the task running on that thread after the row
(docs/graph-model.md "How each node's time is measured"). This module turns the
trace's event table into sorted numpy columns plus, per row, the running owner
and the segment's length. Everything is column operations.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..sorting import argsort, lexsort
from .columns import id_dtype, isin_small

from .. import schema as S

# Rows after which the encountering task (`task`) runs.
_RUNS_TASK = (S.TASK_SCHEDULE, S.IMPLICIT_BEGIN, S.SYNC_BEGIN, S.SYNC_END,
              S.WORK_BEGIN, S.WORK_END, S.CHUNK, S.PARALLEL_BEGIN, S.PARALLEL_END)
# Rows after which nobody runs (idle, or time the collector spends writing).
_RUNS_NOBODY = (S.IMPLICIT_END, S.THREAD_BEGIN, S.THREAD_END, S.FLUSH_BEGIN)
# Rows that do not change who runs (DEPENDENCE, TASK_DEPENDENCE, FLUSH_END).


@dataclass
class Rows:
    """Event columns in per-thread time order (index = row position `pos`)."""
    event: np.ndarray
    thread: np.ndarray
    time: np.ndarray
    kind: np.ndarray
    order: np.ndarray         # pos -> row of the trace's event table
    source: pd.DataFrame      # the trace's event table (for rarely needed columns)
    counters: dict            # name -> float64 cumulative value (ffilled per thread)
    grank: object             # global order key: pos itself unless tasks migrate (untied)
    owner_running: np.ndarray  # owner running after the row (-1: nobody)
    seg: np.ndarray           # int64 ns: the row's segment length credited to owner_running
    seg_end: np.ndarray       # int64 ns: end of that segment

    def __len__(self):
        return len(self.event)

    def take(self, column: str, pos) -> np.ndarray:
        """Values of a rarely used column (cpu, value, count, flags, codeptr) at
        row positions, without permuting the whole column."""
        return self.source[column].to_numpy()[self.order[pos]]


class _Identity:
    """Stands for arange(n) without storing it: x[idx] is idx."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        return np.asarray(idx, dtype=np.int64)


def sorted_rows(events: pd.DataFrame) -> tuple[np.ndarray, dict]:
    """Row order: by thread, each thread by time (file order breaks ties).

    Rows of one thread are written in time order except chunks the collector
    infers at WORK_END with interpolated times; those force a full sort."""
    thread = events["thread"].to_numpy()
    time = events["time"].to_numpy()
    order = _by_row_groups(events, thread)
    if order is None:
        order = argsort(thread)
    t = time[order]
    th = thread[order]
    if np.any((th[1:] == th[:-1]) & (t[1:] < t[:-1])):
        order = lexsort((time, thread))
    # kept to the build's end (Rows.order): 4 bytes a row while rows fit int32
    return order.astype(id_dtype(len(order)), copy=False)


def _by_row_groups(events: pd.DataFrame, thread: np.ndarray):
    """The stable sort of the rows by thread, from the row groups: each is
    one thread's buffer, so it is the row groups in stable thread order,
    each's rows in file order (a few thousand groups sorted instead of every
    row: at 45M rows argsort was ~1 s). None when a row group holds several
    threads' rows (a damaged trace) or there are no row groups."""
    if "row_group" not in events.columns or not len(thread):
        return None
    rg = events["row_group"].to_numpy()
    n = len(rg)
    starts = np.concatenate(([0], np.flatnonzero(rg[1:] != rg[:-1]) + 1))
    changes = np.flatnonzero(thread[1:] != thread[:-1]) + 1
    # every change of thread must fall where a row group starts
    if len(changes) and not np.isin(changes, starts, assume_unique=True).all():
        return None
    lengths = np.diff(np.append(starts, n))
    g = argsort(thread[starts])                    # stable: file order within a thread
    dt = id_dtype(n + 1)
    begin = starts[g].astype(dt)
    placed = np.cumsum(lengths[g]) - lengths[g]    # where each group goes
    order = np.repeat((begin - placed.astype(dt)), lengths[g])
    order += np.arange(n, dtype=dt)
    return order


def load_rows(events: pd.DataFrame, owner_of, implicit_end_clip: np.ndarray,
              migrating: bool) -> tuple[Rows, np.ndarray, np.ndarray]:
    """Columns in per-thread order plus running owner and segments.

    owner_of(task_ids) -> owner index array (-1 unknown / 0).
    implicit_end_clip[owner]: time after which the owner's segments are idle
    (its region's PARALLEL_END for implicit tasks; int64 max otherwise).
    Returns the rows and the owner index of each row's `task` and `other`.
    """
    order = sorted_rows(events)
    col = lambda name: events[name].to_numpy()[order]  # noqa: E731
    ev = col("event")
    thread = col("thread")
    time = col("time").astype(np.int64, copy=False)   # already a permuted copy
    n = len(ev)

    # Who runs after each row, and each row's segment.
    task_owner = owner_of(col("task"))
    other_owner = owner_of(col("other"))
    if migrating:
        implicit_end_clip = _untied_end_clip(ev, time, col("kind"), other_owner,
                                             implicit_end_clip)
    first = np.ones(n, dtype=bool)
    first[1:] = thread[1:] != thread[:-1]
    owner_running, seg, seg_end = running_segments(ev, first, time, task_owner, other_owner,
                                                   implicit_end_clip)
    del first

    counters = {}
    for name in events.columns:
        if name.startswith(S.COUNTER_PREFIX):
            values = pd.Series(events[name].to_numpy(dtype=np.float64, na_value=np.nan)[order])
            counters[name] = values.groupby(thread).ffill().to_numpy()

    if migrating:
        grank = np.empty(n, dtype=np.int64)
        grank[lexsort((np.arange(n), time))] = np.arange(n)
    else:
        grank = _Identity(n)

    rows = Rows(event=ev, thread=thread, time=time, kind=col("kind"),
                order=order, source=events, counters=counters,
                grank=grank, owner_running=owner_running, seg=seg, seg_end=seg_end)
    return rows, task_owner, other_owner


def running_segments(ev, first, time, task_owner, other_owner, clip, native=None):
    """(owner running after each row (-1: nobody), its segment's length,
    its segment's end) of rows in per-thread time order; `first`: the row is
    its thread's first. A segment lasts to the thread's next row (a thread's
    last row: none), clipped at clip[owner] (implicit tasks stop at their
    region's end). The compiled kernel (grainlab/native/segments.c) when
    built, else the numpy twin; `native` forces one (tests)."""
    kernel = _running_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled running-owner kernel is not built")
    if kernel is None:
        return _running_segments_numpy(ev, first, time, task_owner, other_owner, clip)
    n = len(ev)
    c64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    ev = np.ascontiguousarray(ev, dtype=np.uint8)
    first = np.ascontiguousarray(first).view(np.uint8) if first.dtype == bool \
        else np.ascontiguousarray(first, dtype=np.uint8)
    # the owners are read as they are when int32 (the builder's id dtype
    # while ids fit): at 45M rows two int64 copies were 0.7 GB of fresh memory
    wide = not (task_owner.dtype == np.int32 and other_owner.dtype == np.int32)
    if wide:
        task_owner, other_owner = c64(task_owner), c64(other_owner)
    else:
        task_owner = np.ascontiguousarray(task_owner)
        other_owner = np.ascontiguousarray(other_owner)
    time, clip = c64(time), c64(clip)
    decides, nobody = (_event_table(codes).astype(np.uint8) for codes in
                       (_RUNS_TASK + (S.TASK_CREATE,), _RUNS_NOBODY))
    owner_running = np.empty(n, np.int64 if wide else np.int32)
    seg = np.empty(n, np.int64)
    seg_end = np.empty(n, np.int64)
    rc = kernel(n, ev.ctypes.data, first.ctypes.data, time.ctypes.data,
                task_owner.ctypes.data, other_owner.ctypes.data, int(wide), decides.ctypes.data,
                nobody.ctypes.data, S.TASK_CREATE, len(clip), clip.ctypes.data,
                owner_running.ctypes.data, seg.ctypes.data, seg_end.ctypes.data)
    if rc != 0:
        from ..errors import GrainlabError
        raise GrainlabError("running owners: an owner id out of range "
                            "(a grainlab bug: please report it with the trace)")
    return owner_running, seg, seg_end


def _event_table(codes) -> np.ndarray:
    table = np.zeros(256, dtype=bool)
    table[list(codes)] = True
    return table


def _running_segments_numpy(ev, first, time, task_owner, other_owner, clip):
    """running_segments' numpy twin: marks, a forward fill by cumsum, then
    the segments."""
    n = len(ev)
    decides = _event_table(_RUNS_TASK + (S.TASK_CREATE,))[ev]
    nobody = _event_table(_RUNS_NOBODY)[ev]
    owner_row = np.where(ev == S.TASK_CREATE, other_owner, task_owner)
    owner_row[nobody | (first & ~decides)] = -1
    marks = decides | nobody | first
    # each row's latest mark at or before it (a thread's first row is one)
    latest = np.cumsum(marks, dtype=np.int64)
    latest -= 1
    owner_running = owner_row[np.flatnonzero(marks)[latest]] if n else owner_row
    # the kernel's type: int32 when both owner columns are, else int64
    wide = not (task_owner.dtype == np.int32 and other_owner.dtype == np.int32)
    owner_running = owner_running.astype(np.int64 if wide else np.int32, copy=False)
    del latest
    # Segment from this row to the thread's next row, clipped at the region end
    # for implicit tasks (libomp reports workers' last barrier end late).
    next_time = np.empty_like(time)
    next_time[:-1] = time[1:]
    if n:
        next_time[-1] = time[-1]
    last_of_thread = np.ones(n, dtype=bool)
    last_of_thread[:-1] = first[1:]
    next_time[last_of_thread] = time[last_of_thread]
    seg_end = next_time
    # one gather: owner -1 (nobody runs) takes the appended "no clip"
    clip = np.append(np.asarray(clip, dtype=np.int64),
                     np.iinfo(np.int64).max)[owner_running]
    seg_end = np.minimum(seg_end, clip, out=clip)
    seg = np.subtract(seg_end, time)
    np.maximum(seg, 0, out=seg)
    seg[owner_running < 0] = 0
    return owner_running, seg, seg_end


def _running_kernel():
    """gl_running_segments from the compiled kernels, or None (not built, or
    GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_running_segments", [i, p, p, p, p, p, i, p, p, i, i, p, p, p, p])


def _untied_end_clip(ev, time, kind, other_owner, clip) -> np.ndarray:
    """Explicit tasks run no later than their completion is reported. For a
    tied task that is where its last segment ends anyway. An untied task's
    last part can end silently on one thread while another thread, the last
    to drop the task's reference, reports the completion (libomp's
    __kmp_task_finish; docs/trace-format.md "Untied tasks"): the silent
    thread's time until its next row is then runtime, not the task's."""
    done = np.flatnonzero((ev == S.TASK_SCHEDULE) & isin_small(kind, S.STATUS_FINISHED)
                          & (other_owner >= 0))
    if not len(done):
        return clip
    clip = np.array(clip, dtype=np.int64, copy=True)
    np.minimum.at(clip, other_owner[done], time[done])
    return clip


def counter_deltas(rows: Rows) -> dict:
    """Per row: counter increase over its segment (next row's value minus this
    row's, within a thread; 0 at a thread's last row)."""
    out = {}
    thread = rows.thread
    same = np.zeros(len(thread), dtype=bool)
    same[:-1] = thread[1:] == thread[:-1]
    for name, values in rows.counters.items():
        d = np.zeros(len(values))
        d[:-1] = values[1:] - values[:-1]
        d[~same] = 0.0
        out[name] = d
    return out
