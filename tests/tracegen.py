"""Write small grainlab traces by hand, following docs/trace-format.md, for
unit tests of the reader's validation (real traces come from the collector)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from grainlab import schema as S

HZ = 1e9  # 1 tick = 1 ns keeps expected times obvious


def task_id(thread: int, n: int) -> int:
    return (thread + 1) << 40 | n


class TraceBuilder:
    """Collect rows per thread; write each thread's rows as row groups."""

    def __init__(self):
        self.rows: dict[int, list[dict]] = {}
        self.meta = {
            "grainlab.schema_version": "1",
            "grainlab.complete": "true",
            "grainlab.end_reason": "finalize",
            "grainlab.command": json.dumps(["./synthetic"]),
            "grainlab.pid": "1",
            "grainlab.clock": json.dumps({"source": "tsc", "hz": HZ,
                                          "start_monotonic_ns": 0,
                                          "start_realtime_ns": 0}),
            "grainlab.counters": "[]",
            "grainlab.runtime": json.dumps({"name": "synthetic", "ompt_version": 1,
                                            "callbacks": {}, "chunks_reported": True}),
            "grainlab.buffer_events": "65536",
        }

    def add(self, thread, event, tsc, task=0, other=0, value=0, count=0, kind=0,
            flags=0, codeptr=0, cpu=0):
        self.rows.setdefault(thread, []).append(dict(
            event=event, thread=thread, cpu=cpu, tsc=tsc, task=task, other=other,
            codeptr=codeptr, value=value, count=count, kind=kind, flags=flags))
        return self

    def table(self, thread_rows, schema=None):
        schema = schema or S.arrow_schema()
        return pa.table({f.name: pa.array([r[f.name] for r in thread_rows], type=f.type)
                         for f in schema}, schema=schema)

    def write(self, path, rows_per_group=None, meta=None):
        metadata = dict(self.meta)
        metadata.update(meta or {})
        schema = S.arrow_schema(metadata={k: v for k, v in metadata.items() if v is not None})
        with pq.ParquetWriter(path, schema) as writer:
            for thread in sorted(self.rows):
                rows = self.rows[thread]
                step = rows_per_group or len(rows)
                for i in range(0, len(rows), step):
                    writer.write_table(self.table(rows[i:i + step], schema))
        return path


def team_region(b: TraceBuilder, threads=2):
    """The initial task (thread 0, at 2) begins a parallel region at 3 whose
    `threads` implicit tasks all begin at 5. Returns (init, region, implicit ids)."""
    init, region = task_id(0, 1), task_id(0, 2)
    implicit = [task_id(t, 10) for t in range(threads)]
    b.add(0, S.THREAD_BEGIN, 1, kind=1)
    b.add(0, S.IMPLICIT_BEGIN, 2, task=init, kind=S.TASK_INITIAL, count=1)
    b.add(0, S.PARALLEL_BEGIN, 3, task=init, other=region, count=threads)
    for th in range(1, threads):
        b.add(th, S.THREAD_BEGIN, 4, kind=2)
    for th in range(threads):
        b.add(th, S.IMPLICIT_BEGIN, 5, task=implicit[th], other=region, value=th,
              count=threads, kind=S.TASK_IMPLICIT)
    return init, region, implicit


def team_region_end(b: TraceBuilder, init, region, t, threads=2):
    """The region ends at t (PARALLEL_END), the workers' threads at t + 1, the
    initial task at t + 2 and its thread at t + 3."""
    b.add(0, S.PARALLEL_END, t, task=init, other=region)
    for th in range(1, threads):
        b.add(th, S.THREAD_END, t + 1)
    b.add(0, S.IMPLICIT_END, t + 2, task=init, kind=S.TASK_INITIAL, count=1)
    b.add(0, S.THREAD_END, t + 3)


def fork_join_trace(children=3, threads=2) -> TraceBuilder:
    """Initial task -> one parallel region of `threads` implicit tasks; the
    implicit task of thread 0 creates `children` tasks and waits for them."""
    b = TraceBuilder()
    init, region, implicit = team_region(b, threads)
    t = 10
    kids = [task_id(0, 100 + c) for c in range(children)]
    for kid in kids:
        b.add(0, S.TASK_CREATE, t, task=kid, other=implicit[0], kind=S.TASK_EXPLICIT)
        t += 1
    b.add(0, S.SYNC_BEGIN, t, task=implicit[0], other=region, kind=S.SYNC_TASKWAIT)
    t += 1
    for kid in kids:
        b.add(0, S.TASK_SCHEDULE, t, task=kid, other=implicit[0], kind=S.STATUS_SWITCH)
        b.add(0, S.TASK_SCHEDULE, t + 5, task=implicit[0], other=kid,
              kind=S.STATUS_COMPLETE)
        t += 10
    b.add(0, S.SYNC_END, t, task=implicit[0], other=region, kind=S.SYNC_TASKWAIT)
    t += 1
    for th in range(threads):
        b.add(th, S.SYNC_BEGIN, t, task=implicit[th], other=region, kind=9)
        b.add(th, S.SYNC_END, t + 1, task=implicit[th], other=region, kind=9)
        b.add(th, S.IMPLICIT_END, t + 2, task=implicit[th], value=th, count=threads,
              kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, t + 3, threads)
    return b
