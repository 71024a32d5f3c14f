"""The facts `grainlab info` reports about a trace, as one flat dict."""
from __future__ import annotations

import numpy as np

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
        "max_task_depth": int(tasks["depth"].max()) if len(tasks) else 0,
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


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _list(v) -> list:
    return v if isinstance(v, list) else []
