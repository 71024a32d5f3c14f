"""Data accesses: what each grain touched (docs/locality.md).

Two sources:
- DATA_ACCESS rows, written by the collector for each `grain_data()`
  annotation (collector/include/graincollect.h). `load()` takes them out of
  the event table (`split_accesses`: the graph and the checks never see
  them) and keeps them as `Trace.accesses`;
- `depend` items (DEPENDENCE rows) given a size by `--depend-bytes N`
  (`from_dependences`): block-based codes use one block size. A dependence is
  declared when the task is created; the task touches the data when it runs,
  so the access is timed at the task's first start (its first TASK_SCHEDULE
  as `next`), on the thread and CPU that started it.

The access table, one row per access in no particular order:
  thread (uint16), cpu (uint16), time (int64 ns), task (uint64), codeptr
  (uint64: the annotation's code address; for dependences the task's
  creation), base (uint64), bytes (uint64), mode (uint8: 1 in, 2 out, 3
  inout), node (int16: NUMA node of the block's pages, -1 unknown).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as S
from ..errors import UsageError

ACCESS_COLUMNS = ("thread", "cpu", "time", "task", "codeptr", "base", "bytes", "mode", "node")

# DEPENDENCE `kind` -> access mode (mutexinoutset, inoutset: inout; the
# others: doacross source/sink and *_all_memory carry no block).
_DEP_MODE = {1: S.GRAIN_IN, 2: S.GRAIN_OUT, 3: S.GRAIN_INOUT, 4: S.GRAIN_INOUT, 7: S.GRAIN_INOUT}


def empty_accesses() -> pd.DataFrame:
    return pd.DataFrame({
        "thread": np.zeros(0, np.uint16), "cpu": np.zeros(0, np.uint16),
        "time": np.zeros(0, np.int64), "task": np.zeros(0, np.uint64),
        "codeptr": np.zeros(0, np.uint64), "base": np.zeros(0, np.uint64),
        "bytes": np.zeros(0, np.uint64), "mode": np.zeros(0, np.uint8),
        "node": np.zeros(0, np.int16)})


def split_accesses(events: pd.DataFrame, sizes: np.ndarray):
    """(events without DATA_ACCESS rows, their row-group sizes, access table).
    A trace without them (every trace before the annotation existed) comes
    back unchanged, with an empty table."""
    code = events["event"].to_numpy()
    # a slice at a time: no row-sized mask for the usual trace, which has none
    step = 1 << 20
    if not any((code[i:i + step] == S.DATA_ACCESS).any() for i in range(0, len(code), step)):
        return events, sizes, empty_accesses()
    is_data = code == S.DATA_ACCESS
    rows = events[is_data]
    other = rows["other"].to_numpy()
    accesses = pd.DataFrame({
        "thread": rows["thread"].to_numpy(), "cpu": rows["cpu"].to_numpy(),
        "time": rows["time"].to_numpy(), "task": rows["task"].to_numpy(),
        "codeptr": rows["codeptr"].to_numpy(), "base": rows["value"].to_numpy(),
        "bytes": rows["count"].to_numpy(), "mode": rows["kind"].to_numpy().astype(np.uint8),
        "node": np.where(other > 0, other.astype(np.int64) - 1, -1).astype(np.int16)})
    kept = events[~is_data].reset_index(drop=True)
    sizes = np.bincount(kept["row_group"].to_numpy(), minlength=len(sizes)).astype(np.int64)
    return kept, sizes, accesses


def parse_depend_bytes(text) -> int:
    """`--depend-bytes N`: a positive whole number of bytes (suffixes K, M, G
    for KiB, MiB, GiB). Anything else: UsageError, one line."""
    s = str(text).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    digits = s[:-1] if scale > 1 else s
    if not digits.isdigit() or int(digits) * scale <= 0 or int(digits) * scale >= 1 << 62:
        raise UsageError(f"--depend-bytes: {text!r} is not a size in bytes "
                         "(a positive whole number, optionally with K, M or G)")
    return int(digits) * scale


def from_dependences(events: pd.DataFrame, nbytes: int) -> pd.DataFrame:
    """Accesses made of the trace's DEPENDENCE rows, each `nbytes` long,
    timed at its task's first start. Tasks that never started are left out."""
    ev = events["event"].to_numpy()
    dep = np.flatnonzero(ev == S.DEPENDENCE)
    mode_of = np.zeros(256, np.uint8)
    for k, m in _DEP_MODE.items():
        mode_of[k] = m
    kind = events["kind"].to_numpy()[dep]
    dep = dep[mode_of[np.minimum(kind, 255)] > 0]
    if not len(dep):
        return empty_accesses()
    starts = _first_starts(events)
    create = _creations(events)
    task = events["task"].to_numpy()[dep]
    at = np.searchsorted(starts["task"], task)
    at_ok = np.minimum(at, max(len(starts["task"]) - 1, 0))
    ok = (at < len(starts["task"])) & (starts["task"][at_ok] == task) if len(starts["task"]) else np.zeros(len(dep), bool)
    dep, task, at = dep[ok], task[ok], at[ok]
    ci = np.searchsorted(create["task"], task)
    ci = np.minimum(ci, max(len(create["task"]) - 1, 0))
    codeptr = np.where(create["task"][ci] == task, create["codeptr"][ci], 0) if len(ci) else ci
    return pd.DataFrame({
        "thread": starts["thread"][at], "cpu": starts["cpu"][at], "time": starts["time"][at],
        "task": task, "codeptr": codeptr.astype(np.uint64),
        "base": events["value"].to_numpy()[dep], "bytes": np.full(len(dep), nbytes, np.uint64),
        "mode": mode_of[np.minimum(events["kind"].to_numpy()[dep], 255)],
        "node": np.full(len(dep), -1, np.int16)})


def _first_starts(events) -> dict:
    """Per task (sorted ids): thread, cpu and time of its first TASK_SCHEDULE as next."""
    ev = events["event"].to_numpy()
    rows = np.flatnonzero(ev == S.TASK_SCHEDULE)
    time = events["time"].to_numpy()[rows]
    task = events["task"].to_numpy()[rows]
    order = np.lexsort((time, task))
    rows, task = rows[order], task[order]
    first = np.ones(len(task), bool)
    first[1:] = task[1:] != task[:-1]
    rows, task = rows[first], task[first]
    return {"task": task, "thread": events["thread"].to_numpy()[rows],
            "cpu": events["cpu"].to_numpy()[rows], "time": events["time"].to_numpy()[rows]}


def _creations(events) -> dict:
    ev = events["event"].to_numpy()
    rows = np.flatnonzero(ev == S.TASK_CREATE)
    task = events["task"].to_numpy()[rows]
    order = np.argsort(task, kind="stable")
    return {"task": task[order], "codeptr": events["codeptr"].to_numpy()[rows][order]}
