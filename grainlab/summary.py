"""The facts `grainlab info` reports about a trace, as one flat dict."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import schema as S


def summarize(trace) -> dict:
    """Counted from the event columns alone: no task, lineage or chunk tables
    are built, so `info` costs O(events) time and a few bytes per event and
    per task whatever the tree's depth (a 2,000-deep tree's lineage strings
    alone would take gigabytes)."""
    ev = trace.events
    code = ev["event"].to_numpy()
    kind = ev["kind"].to_numpy()
    tsc = ev["tsc"].to_numpy()
    runtime = trace.meta.get("runtime") if isinstance(trace.meta.get("runtime"), dict) else {}
    sync = code == S.SYNC_BEGIN
    create = np.flatnonzero(code == S.TASK_CREATE)
    task = ev["task"].to_numpy()
    # One row per explicit task, as tasks() keeps them: the first TASK_CREATE.
    created_ids, first = np.unique(task[create], return_index=True)
    create_first = create[first]
    flags = kind[create_first]
    implicit = np.flatnonzero(code == S.IMPLICIT_BEGIN)
    implicit_ids, first_imp = np.unique(task[implicit], return_index=True)
    implicit_flags = kind[implicit[first_imp]]
    chunk = (code == S.CHUNK) & np.isin(kind, S.DISPATCH_LOOPS)
    hz = float(trace.meta["clock"]["hz"])
    duration = 0
    if len(tsc):
        lo, hi = (int(np.rint(float(t) * (1e9 / hz))) for t in (tsc.min(), tsc.max()))
        duration = hi - lo
    return {
        "path": str(trace.path),
        "complete": bool(trace.complete),
        "end_reason": str(trace.meta.get("end_reason", "unknown")),
        "events": int(len(ev)),
        "threads": int(trace.threads),
        "tasks": int(len(create)),
        "implicit_tasks": int(np.count_nonzero((implicit_flags & S.TASK_INITIAL) == 0)),
        "undeferred_tasks": int(np.count_nonzero(flags & S.TASK_UNDEFERRED)),
        "final_tasks": int(np.count_nonzero(flags & S.TASK_FINAL)),
        "untied_tasks": int(np.count_nonzero(flags & S.TASK_UNTIED)),
        "tasks_with_dependences": int(np.count_nonzero(ev["value"].to_numpy()[create_first])),
        "max_task_depth": explicit_depth(
            created_ids, ev["other"].to_numpy()[create_first], implicit_ids),
        "chunks": int(np.count_nonzero(chunk)),
        "inferred_chunks": int(np.count_nonzero(ev["flags"].to_numpy()[chunk] & S.CHUNK_INFERRED)),
        "iterations": int(ev["count"].to_numpy()[chunk].astype(np.int64).sum()),
        "loops": loop_count(ev, code),
        "parallel_regions": int(np.count_nonzero(code == S.PARALLEL_BEGIN)),
        "region_list": region_list(trace),
        "taskwaits": int(np.count_nonzero(sync & (kind == S.SYNC_TASKWAIT))),
        "taskgroups": int(np.count_nonzero(sync & (kind == S.SYNC_TASKGROUP))),
        "barriers": int(np.count_nonzero(sync & np.isin(kind, S.SYNC_BARRIERS))),
        "dependences": int(np.count_nonzero(code == S.DEPENDENCE)),
        "duration_ns": int(duration),
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
        # a run that exec()s: the command line of every later image, in order
        "exec_commands": [i.get("command") for i in trace.meta["images"][1:]
                          if isinstance(i, dict)]
        if isinstance(trace.meta.get("images"), list) else [],
        "schema_version": int(trace.meta["schema_version"]),
        "problems": list(trace.problems),
    }


def region_list(trace) -> list:
    """Every parallel region, numbered as `analyze --region N` takes them:
    region, begin_ns (from the trace's start), duration_ns (None if it never
    ended), team, nested, location."""
    from .regions import region_table
    t = region_table(trace)
    dur = t["duration_ns"].to_numpy(np.float64)
    return [{"region": i, "begin_ns": b, "duration_ns": None if d != d else int(d),
             "team": n, "nested": x, "location": str(loc)}
            for i, b, d, n, x, loc in zip(t.index.tolist(), t["begin_ns"].tolist(), dur.tolist(),
                                          t["team"].tolist(), t["nested"].tolist(),
                                          t["location"].tolist())]


def loop_count(ev, code) -> int:
    """Loop instances as loops() names them (grainlab.chunks): the k-th
    worksharing construct a region's implicit tasks begin is one instance
    (region, k); the k-th taskloop a task begins is one (task, k). Counted on
    the WORK_BEGIN rows only, in each thread's row order."""
    rows = np.flatnonzero(code == S.WORK_BEGIN)
    if not len(rows):
        return 0
    rows = rows[np.argsort(ev["thread"].to_numpy()[rows], kind="stable")]
    kind = ev["kind"].to_numpy()[rows]
    task = ev["task"].to_numpy()[rows]
    taskloop = kind == S.WORK_TASKLOOP
    begins = pd.DataFrame({"task": task, "taskloop": taskloop, "kind": kind})
    sequence = begins.groupby(["task", "taskloop"], sort=False).cumcount().to_numpy()
    owner = np.where(taskloop, task, ev["other"].to_numpy()[rows])
    keys = pd.DataFrame({"taskloop": taskloop, "owner": owner, "sequence": sequence,
                         "kind": kind})
    first_kind = keys.groupby(["taskloop", "owner", "sequence"], sort=False)["kind"].first()
    return int(np.count_nonzero(np.isin(first_kind.to_numpy(), S.WORK_WITH_CHUNKS)))


def explicit_depth(ids, parents, roots) -> int:
    """Deepest nesting of explicit tasks: a task created by an implicit (or the
    initial) task has depth 1, its children 2, ... (fib with cutoff 10: 10).
    `ids`/`parents`: one per explicit task; `roots`: implicit and initial task
    ids. Pointer jumping over parent positions: ceil(log2 n)+1 rounds at most,
    a few integers per task whatever the depth. A task whose chain reaches no
    known task counts for nothing (a damaged trace)."""
    n = len(ids)
    if not n:
        return 0
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    at = np.searchsorted(sorted_ids, parents)
    at = np.minimum(at, n - 1)
    found = sorted_ids[at] == parents
    up = np.where(found, order[at], -1)           # explicit parent's position
    rooted = ~found & np.isin(parents, roots)     # created by an implicit/initial task
    depth = np.ones(n, dtype=np.int64)
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        live = np.flatnonzero(up >= 0)
        if not len(live):
            break
        p = up[live]
        depth[live] += depth[p]
        rooted[live] = rooted[p]
        up[live] = up[p]
    ok = rooted & (up < 0)
    return int(depth[ok].max()) if ok.any() else 0


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _list(v) -> list:
    return v if isinstance(v, list) else []
