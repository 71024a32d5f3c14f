"""The facts `grainlab info` reports about a trace, as one flat dict.

Counted from the event columns alone, batch by batch (grainlab.trace.batches): no
task, lineage or chunk tables are built, so `info` costs O(events) time, and
its memory is one batch plus the few rows kept per explicit task, parallel
region and worksharing begin (grainlab.trace.batches.Collected) whatever the number
of events and the tree's depth (a 2,000-deep tree's lineage strings alone
would take gigabytes). `info_of(trace)` counts a loaded trace's events in
batches of views; grainlab.trace.scan streams a file through the same `Facts`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as S
from .batches import Collected, fed_with_all
from .runtime_info import limitations
from ..idindex import IdIndex
from ..sorting import argsort


def info_of(trace) -> dict:
    """What `grainlab info --json` prints about a loaded trace."""
    facts = Facts()
    _, rows = fed_with_all(trace, facts)
    # load() took the DATA_ACCESS rows out of the events: count them as a scan does
    facts.events += len(trace.accesses)
    facts.counts["data_accesses"] += len(trace.accesses)
    return facts.info(rows, path=trace.path, meta=trace.meta, complete=trace.complete,
                      problems=trace.problems, counters=trace.counters,
                      row_groups=len(trace.row_group_sizes))


class Facts:
    """Counts over the batches that pass by (`feed`), then `info`."""

    def __init__(self):
        self.events = 0
        self.thread_ids = np.zeros(0, np.uint16)
        self.tsc_min = self.tsc_max = None
        self.counts = dict.fromkeys(
            ("parallel_regions", "taskwaits", "taskgroups", "barriers", "dependences",
             "flushes", "chunks", "inferred_chunks", "chunk_events", "task_creates",
             "data_accesses"), 0)
        self.iteration_sums: list = []

    def feed(self, b: dict) -> None:
        n = len(b["event"])
        if not n:
            return
        self.events += n
        code, kind = b["event"], b["kind"]
        # counts per event code and the threads seen: one O(n) pass each, no
        # sort; the conditions on `kind` are asked of the few rows of a code
        per_code = np.bincount(code, minlength=256)
        th = b["thread"]
        if th[0] == th[-1] and (th == th[0]).all():      # a row group is one thread's rows
            seen = th[:1].astype(np.uint16)
        else:
            seen = np.flatnonzero(np.bincount(th)).astype(np.uint16)
        self.thread_ids = np.union1d(self.thread_ids, seen)
        lo, hi = b["tsc"].min(), b["tsc"].max()
        self.tsc_min = lo if self.tsc_min is None else min(self.tsc_min, lo)
        self.tsc_max = hi if self.tsc_max is None else max(self.tsc_max, hi)
        sync_kind = kind[code == S.SYNC_BEGIN]
        chunks = np.flatnonzero(code == S.CHUNK)
        loop_chunks = chunks[np.isin(kind[chunks], S.DISPATCH_LOOPS)]
        c = self.counts
        c["parallel_regions"] += int(per_code[S.PARALLEL_BEGIN])
        c["taskwaits"] += int(np.count_nonzero(sync_kind == S.SYNC_TASKWAIT))
        c["taskgroups"] += int(np.count_nonzero(sync_kind == S.SYNC_TASKGROUP))
        c["barriers"] += int(np.count_nonzero(np.isin(sync_kind, S.SYNC_BARRIERS)))
        c["dependences"] += int(per_code[S.DEPENDENCE])
        c["flushes"] += int(np.count_nonzero(kind[code == S.FLUSH_BEGIN] != S.FLUSH_PAGES))
        c["chunks"] += len(loop_chunks)
        c["inferred_chunks"] += int(np.count_nonzero(b["flags"][loop_chunks] & S.CHUNK_INFERRED))
        c["chunk_events"] += int(per_code[S.CHUNK])
        c["task_creates"] += int(per_code[S.TASK_CREATE])
        c["data_accesses"] += int(per_code[S.DATA_ACCESS])
        # int64 sums wrap as one sum over the whole column would
        self.iteration_sums.append(b["count"][loop_chunks].astype(np.int64).sum())

    @property
    def threads(self) -> int:
        return int(len(self.thread_ids))

    def origin_ns(self, hz: float) -> int:
        """Time (ns) of the first event: where `info`'s times count from."""
        return 0 if self.tsc_min is None else _ns(self.tsc_min, hz)

    def info(self, rows: Collected, *, path, meta, complete, problems, counters,
                row_groups) -> dict:
        runtime = meta.get("runtime") if isinstance(meta.get("runtime"), dict) else {}
        create = rows.create
        # One row per explicit task, as tasks() keeps them: the first TASK_CREATE.
        if rows.creates_unique():
            first, index = slice(None), rows.create_index()
        else:                           # a damaged trace: the first of each id
            created_ids, first = np.unique(create["task"], return_index=True)
            index = IdIndex(created_ids)
        flags = create["kind"][first]
        implicit_ids, first_imp = np.unique(rows.implicit["task"], return_index=True)
        implicit_flags = rows.implicit["kind"][first_imp]
        hz = float(meta["clock"]["hz"])
        duration = 0
        if self.events:
            duration = _ns(self.tsc_max, hz) - _ns(self.tsc_min, hz)
        c = self.counts
        initial = rows.implicit["task"][(rows.implicit["kind"] & S.TASK_INITIAL) != 0]
        return {
            "path": str(path),
            "complete": bool(complete),
            "end_reason": str(meta.get("end_reason", "unknown")),
            "events": int(self.events),
            "threads": self.threads,
            "tasks": int(len(create["task"])),
            "implicit_tasks": int(np.count_nonzero((implicit_flags & S.TASK_INITIAL) == 0)),
            "undeferred_tasks": int(np.count_nonzero(flags & S.TASK_UNDEFERRED)),
            "final_tasks": int(np.count_nonzero(flags & S.TASK_FINAL)),
            "untied_tasks": int(np.count_nonzero(flags & S.TASK_UNTIED)),
            "tasks_with_dependences": int(np.count_nonzero(create["dependences"][first])),
            "max_task_depth": explicit_depth(index, create["other"][first], implicit_ids),
            "chunks": c["chunks"],
            "inferred_chunks": c["inferred_chunks"],
            "iterations": int(np.sum(np.array(self.iteration_sums, dtype=np.int64))),
            "loops": loop_count(rows.work),
            "parallel_regions": c["parallel_regions"],
            "region_list": region_list(rows.parallel, initial, self.origin_ns(hz), meta),
            "taskwaits": c["taskwaits"],
            "taskgroups": c["taskgroups"],
            "barriers": c["barriers"],
            "dependences": c["dependences"],
            # only when there are any: traces without keep their output
            **({"data_accesses": c["data_accesses"]} if c["data_accesses"] else {}),
            "duration_ns": int(duration),
            "row_groups": int(row_groups),
            "flushes": c["flushes"],
            "dropped_events": _int_or_none(meta.get("dropped_events")) or 0,
            "buffer_events": _int_or_none(meta.get("buffer_events")),
            "counters": list(counters),
            "unavailable_counters": [
                c.get("name") for c in _list(meta.get("counters"))
                if isinstance(c, dict) and not c.get("available", False)],
            "runtime": runtime.get("name"),
            "chunks_reported": runtime.get("chunks_reported"),
            # only in traces that have them: older traces keep their output
            **({"runtime_library": runtime["library"]} if runtime.get("library") else {}),
            **({"runtime_limitations": limitations(runtime)} if limitations(runtime) else {}),
            "command": meta.get("command"),
            # a run that exec()s: the command line of every later image, in order
            "exec_commands": [i.get("command") for i in meta["images"][1:]
                              if isinstance(i, dict)]
            if isinstance(meta.get("images"), list) else [],
            "schema_version": int(meta["schema_version"]),
            "problems": list(problems),
            **launch_facts(meta),
        }


def launch_facts(meta: dict) -> dict:
    """Host, and MPI rank and world size, for traces that recorded them (older
    traces have neither: the keys are then left out)."""
    out = {}
    if isinstance(meta.get("host"), str):
        out["host"] = meta["host"]
    mpi = meta.get("mpi")
    if isinstance(mpi, dict) and isinstance(mpi.get("rank"), int):
        out["rank"] = mpi["rank"]
        out["world_size"] = mpi.get("size") if isinstance(mpi.get("size"), int) else None
    return out


def _ns(tsc, hz: float) -> int:
    """A tick count as ns, rounded as the loaded trace's `time` column is."""
    return int(np.rint(float(tsc) * (1e9 / hz)))


def region_list(parallel: dict, initial, origin: int, meta: dict) -> list:
    """Every parallel region, numbered as `analyze --region N` takes them:
    region, begin_ns (from the trace's start), duration_ns (None if it never
    ended), team, nested, location."""
    from .regions import regions_of
    t = regions_of(parallel, initial, origin, meta)
    dur = t["duration_ns"].to_numpy(np.float64)
    return [{"region": i, "begin_ns": b, "duration_ns": None if d != d else int(d),
             "team": n, "nested": x, "location": str(loc)}
            for i, b, d, n, x, loc in zip(t.index.tolist(), t["begin_ns"].tolist(), dur.tolist(),
                                          t["team"].tolist(), t["nested"].tolist(),
                                          t["location"].tolist())]


def loop_count(work: dict) -> int:
    """Loop instances as loops() names them (grainlab.tables.loops): the k-th
    worksharing construct a region's implicit tasks begin is one instance
    (region, k); the k-th taskloop a task begins is one (task, k). Counted on
    the WORK_BEGIN rows only (`work`: their thread, kind, task, other columns,
    in file order), in each thread's row order."""
    if not len(work["thread"]):
        return 0
    rows = argsort(work["thread"])
    kind = work["kind"][rows]
    task = work["task"][rows]
    taskloop = kind == S.WORK_TASKLOOP
    begins = pd.DataFrame({"task": task, "taskloop": taskloop, "kind": kind})
    sequence = begins.groupby(["task", "taskloop"], sort=False).cumcount().to_numpy()
    owner = np.where(taskloop, task, work["other"][rows])
    keys = pd.DataFrame({"taskloop": taskloop, "owner": owner, "sequence": sequence,
                         "kind": kind})
    first_kind = keys.groupby(["taskloop", "owner", "sequence"], sort=False)["kind"].first()
    return int(np.count_nonzero(np.isin(first_kind.to_numpy(), S.WORK_WITH_CHUNKS)))


def explicit_depth(index: IdIndex, parents, roots) -> int:
    """Deepest nesting of explicit tasks: a task created by an implicit (or the
    initial) task has depth 1, its children 2, ... (fib with cutoff 10: 10).
    `index`: IdIndex of the explicit tasks' ids (grainlab.idindex), one per
    task; `parents`: their parents, in the same order; `roots`: implicit and
    initial task ids. Pointer jumping over parent positions: ceil(log2 n)+1
    rounds at most, ~10 bytes per task whatever the depth. A task whose chain
    reaches no known task counts for nothing (a damaged trace)."""
    n = index.n
    if not n:
        return 0
    up = index.get(parents)                         # explicit parent's position
    rooted = (up < 0) & np.isin(parents, roots)     # created by an implicit/initial task
    up = up.astype(np.int32 if n < (1 << 31) else np.int64)
    from .task_tree import walk
    found = walk(up, rooted)            # one compiled walk where built
    if found is not None and not found[0]:
        return found[1]
    return _explicit_depth_numpy(up, rooted)


def _explicit_depth_numpy(up: np.ndarray, rooted: np.ndarray) -> int:
    """`explicit_depth`'s twin over parent positions `up` (-1: none)."""
    n = len(up)
    # A chain whose top is not rooted starts from -BIG: its sum stays negative
    # (chains are shorter than BIG), so no `rooted` column rides along.
    big = 1 << 30 if n < (1 << 30) else 1 << 62
    depth = np.ones(n, dtype=np.int32 if n < (1 << 30) else np.int64)
    depth[(up < 0) & ~rooted] = -big
    del rooted
    # only the elements still below a root are visited, each pass fewer
    live = np.flatnonzero(up >= 0)
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        if not len(live):
            break
        p = up[live]
        depth[live] += depth[p]
        up[live] = up[p]
        live = live[up[live] >= 0]
    ok = (up < 0) & (depth > 0)
    return int(depth[ok].max()) if ok.any() else 0


def _int_or_none(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _list(v) -> list:
    return v if isinstance(v, list) else []
