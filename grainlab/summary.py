"""The facts `grainlab info` reports about a trace, as one flat dict."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import schema as S


def summarize(trace) -> dict:
    ev = trace.events
    code = ev["event"].to_numpy()
    kind = ev["kind"].to_numpy()
    tasks = trace.tasks()
    explicit = tasks[tasks["kind"] == "explicit"]
    chunks = trace.chunks()
    loops = trace.loops()
    time = ev["time"].to_numpy()
    runtime = trace.meta.get("runtime") if isinstance(trace.meta.get("runtime"), dict) else {}
    sync = code == S.SYNC_BEGIN
    return {
        "path": str(trace.path),
        "complete": bool(trace.complete),
        "end_reason": str(trace.meta.get("end_reason", "unknown")),
        "events": int(len(ev)),
        "threads": int(trace.threads),
        "tasks": int(np.count_nonzero(code == S.TASK_CREATE)),
        "implicit_tasks": int(np.count_nonzero(tasks["kind"] == "implicit")),
        "undeferred_tasks": int(explicit["undeferred"].sum()),
        "final_tasks": int(explicit["final"].sum()),
        "untied_tasks": int(explicit["untied"].sum()),
        "tasks_with_dependences": int(explicit["has_dependences"].sum()),
        "max_task_depth": explicit_depth(tasks),
        "chunks": int(len(chunks)),
        "inferred_chunks": int(chunks["inferred"].sum()),
        "iterations": int(chunks["iterations"].sum()),
        "loops": int(len(loops)),
        "parallel_regions": int(np.count_nonzero(code == S.PARALLEL_BEGIN)),
        "taskwaits": int(np.count_nonzero(sync & (kind == S.SYNC_TASKWAIT))),
        "taskgroups": int(np.count_nonzero(sync & (kind == S.SYNC_TASKGROUP))),
        "barriers": int(np.count_nonzero(sync & np.isin(kind, S.SYNC_BARRIERS))),
        "dependences": int(np.count_nonzero(code == S.DEPENDENCE)),
        "duration_ns": int(time.max() - time.min()) if len(time) else 0,
        "row_groups": int(len(trace.row_group_sizes)),
        "flushes": int(np.count_nonzero(code == S.FLUSH_BEGIN)),
        "dropped_events": _int_or_none(trace.meta.get("dropped_events")) or 0,
        "buffer_events": _int_or_none(trace.meta.get("buffer_events")),
        "counters": trace.counters,
        "unavailable_counters": [
            c.get("name") for c in _list(trace.meta.get("counters"))
            if isinstance(c, dict) and not c.get("available", False)],
        "runtime": runtime.get("name"),
        "chunks_reported": runtime.get("chunks_reported"),
        "command": trace.meta.get("command"),
        "schema_version": int(trace.meta["schema_version"]),
        "problems": list(trace.problems),
    }


def explicit_depth(tasks) -> int:
    """Deepest nesting of explicit tasks: a task created by an implicit (or the
    initial) task has depth 1, its children 2, ... (fib with cutoff 10: 10).
    `tasks.depth` also counts the implicit tasks' levels: subtract, per task,
    the depth of its nearest non-explicit ancestor (pointer jumping, bounded)."""
    explicit = (tasks["kind"] == "explicit").to_numpy()
    if not explicit.any():
        return 0
    depth = tasks["depth"].to_numpy(np.int64)
    pos = pd.Index(tasks["id"].to_numpy()).get_indexer(tasks["parent"].to_numpy())
    has = pos >= 0
    parent_explicit = np.zeros(len(pos), bool)
    parent_explicit[has] = explicit[pos[has]]
    base = np.where(has & ~parent_explicit, depth[np.maximum(pos, 0)], -1)
    up = np.where(has & parent_explicit, pos, -1)
    for _ in range(int(np.ceil(np.log2(max(len(pos), 2)))) + 2):
        live = np.flatnonzero((up >= 0) & (base < 0))
        if not len(live):
            break
        p = up[live]
        done = base[p] >= 0
        base[live[done]] = base[p[done]]
        up[live[~done]] = up[p[~done]]
    ok = explicit & (base >= 0)
    return int((depth[ok] - base[ok]).max()) if ok.any() else 0


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _list(v) -> list:
    return v if isinstance(v, list) else []
