#!/usr/bin/env python3
"""Make the golden inputs and outputs of `grainlab info` (tests/test_info_golden.py).

    .venv/bin/python tests/golden/make_info_golden.py --traces    # record the traces anew
    .venv/bin/python tests/golden/make_info_golden.py             # outputs of this grainlab

The traces (tests/golden/info/*.parquet) are recorded once and kept: real runs
of the examples at 1 and 2 threads, synthetic ones, a killed run, a stopped
run, an exec()ing run, counters, hand-written damaged and contradictory traces.
Each recorded trace's `grainlab.loadmap` paths are rewritten to a directory
that does not exist, so region locations do not depend on this machine's
binaries (`fib+0x1139` instead of `fib.c:12`). `expected.json` holds, per trace,
what `grainlab info` and `grainlab info --json` printed (stdout, stderr, exit
code) with the trace's path written `{TRACE}`. The outputs were first made by
the `info` that loaded the whole event table (before it streamed row groups):
rerun without --traces only when a change of the output is intended. (To
add a trace, make it, and record the outputs with the reference grainlab:
`PYTHONPATH=<its source> python tests/golden/make_info_golden.py --handmade`.)
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = HERE / "info"
sys.path.insert(0, str(REPO / "tests"))

from grainlab import _paths, schema as S  # noqa: E402
from grainlab.trace.spool import spool_of  # noqa: E402

EXAMPLES = _paths.build_dir() / "examples"
NOWHERE = "/nonexistent/grainlab-golden"


def cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "grainlab.cli", *map(str, args)],
                          capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


def rewrite(path: Path, edit_meta=None, edit_columns=None) -> None:
    """Rewrite a trace with the same row groups: loadmap paths moved to
    NOWHERE, and optional edits of the metadata and columns."""
    f = pq.ParquetFile(path)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    table = f.read()
    meta = {k.decode(): v.decode() for k, v in (f.metadata.metadata or {}).items()
            if k != b"ARROW:schema"}
    def moved(loadmap):
        for obj in loadmap:
            if isinstance(obj, dict) and obj.get("path"):
                obj["path"] = f"{NOWHERE}/{Path(obj['path']).name}"
        return loadmap
    if "grainlab.loadmap" in meta:
        meta["grainlab.loadmap"] = json.dumps(moved(json.loads(meta["grainlab.loadmap"])))
    if "grainlab.images" in meta:     # a run that exec()s: one loadmap per image
        images = json.loads(meta["grainlab.images"])
        for image in images:
            moved(image.get("loadmap") or [])
        meta["grainlab.images"] = json.dumps(images)
    if edit_meta:
        edit_meta(meta)
    if edit_columns:
        cols = {n: table.column(n).to_numpy().copy() for n in table.column_names}
        edit_columns(cols)
        table = pa.table({n: pa.array(v, type=table.schema.field(n).type)
                          for n, v in cols.items()})
    table = table.replace_schema_metadata(meta)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, table.schema) as w:
        at = 0
        for n in sizes:
            w.write_table(table.slice(at, n))
            at += n
    tmp.replace(path)


def record(name, program, *args, threads=2, extra=()):
    out = OUT / f"{name}.parquet"
    out.unlink(missing_ok=True)
    r = cli("record", "-q", "-o", out, *extra, "--", EXAMPLES / program, *args,
            env={"OMP_NUM_THREADS": str(threads)})
    assert r.returncode == 0, r.stderr
    rewrite(out)
    return out


def wait_for_spool(out, proc, size, timeout=30):
    spool = spool_of(out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if spool.exists() and spool.stat().st_size > size:
            return
        time.sleep(0.002)
    raise SystemExit(f"{spool} never grew past {size} bytes")


def killed(name):
    """SIGKILL mid-run, 64-event buffers: the converter recovers the spool."""
    out = OUT / f"{name}.parquet"
    out.unlink(missing_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
           "GRAINLAB_OUTPUT": str(out), "GRAINLAB_BUFFER_EVENTS": "64"}
    proc = subprocess.Popen([EXAMPLES / "regions", "200", "8", "2", "master"], env=env,
                            stdout=subprocess.DEVNULL)
    wait_for_spool(out, proc, 40_000)
    proc.kill()
    proc.wait(timeout=30)
    r = cli("info", out)          # converts the spool
    assert r.returncode == 0, r.stderr
    rewrite(out)


def stopped(name):
    """SIGINT to `grainlab record` mid-run: an incomplete trace."""
    out = OUT / f"{name}.parquet"
    out.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "grainlab.cli", "record", "-o", str(out), "--buffer-events",
         "64", "--", str(EXAMPLES / "regions"), "200", "8", "2", "single"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "2"})
    wait_for_spool(out, proc, 30_000)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    rewrite(out)


def synth(name, *args):
    out = OUT / f"{name}.parquet"
    r = cli("synth", *args, "-o", out, "-q")
    assert r.returncode == 0, r.stderr


def handmade():
    """Hand-written traces (tests/tracegen.py): damaged ones whose
    contradictions become problems, and contradictory complete ones."""
    from tracegen import fork_join_trace, task_id
    incomplete = {"grainlab.complete": "false", "grainlab.end_reason": "signal:SIGTERM"}

    b = fork_join_trace(children=4, threads=2)
    b.rows[0] = [r for r in b.rows[0]
                 if r["event"] not in (S.THREAD_END, S.IMPLICIT_END, S.PARALLEL_END)]
    b.write(OUT / "hand-incomplete.parquet", meta=incomplete)

    # damaged: an orphan, a schedule of a task never created, an end without
    # a begin, time going backwards, a huge count: each a problem, in order
    b = fork_join_trace(children=3, threads=2)
    b.add(1, S.TASK_CREATE, 100, task=task_id(1, 500), other=task_id(1, 999),
          kind=S.TASK_EXPLICIT)
    b.add(1, S.TASK_SCHEDULE, 101, task=task_id(1, 777), other=task_id(1, 10))
    b.add(1, S.SYNC_END, 102, task=task_id(1, 10), kind=S.SYNC_TASKWAIT)
    b.add(1, S.WORK_END, 90, kind=S.WORK_LOOP)
    b.add(1, S.CHUNK, 103, count=2**63, kind=S.DISPATCH_ITERATION)
    b.write(OUT / "hand-damaged.parquet",
            meta={**incomplete, "grainlab.dropped_events": "12"})

    b = fork_join_trace(children=3, threads=2)
    b.add(1, S.PARALLEL_END, 100, other=task_id(0, 77))
    b.write(OUT / "hand-parallel-end.parquet")
    b = fork_join_trace(children=3, threads=2)
    b.add(1, S.IMPLICIT_END, 100, task=task_id(1, 10), kind=S.TASK_IMPLICIT)
    b.add(1, S.IMPLICIT_END, 101, task=task_id(1, 10), kind=S.TASK_IMPLICIT)
    b.write(OUT / "hand-implicit-end.parquet")
    b = fork_join_trace(children=3, threads=2)
    b.add(1, 99, 100)
    b.write(OUT / "hand-event-code.parquet")
    b = fork_join_trace(children=3, threads=2)
    b.rows[0][-1]["thread"] = 1
    b.write(OUT / "hand-row-group.parquet")
    b = fork_join_trace(children=3, threads=2)
    b.add(1, S.SYNC_BEGIN, 3, kind=S.SYNC_TASKWAIT)
    b.write(OUT / "hand-time.parquet")
    b = fork_join_trace(children=3, threads=2)
    b.rows[0] = [dict(r, tsc=200) if r["event"] == S.TASK_CREATE and r["task"] ==
                 task_id(0, 101) else r for r in b.rows[0]]
    b.write(OUT / "hand-runs-early.parquet")
    # a region's begins on thread 0, two extra ends on thread 1 (each in its
    # own row group): the end without a begin is the second one
    for damaged in (False, True):
        b = fork_join_trace(children=3, threads=2)
        b.add(0, S.PARALLEL_BEGIN, 99, task=task_id(0, 1), other=task_id(0, 2), count=2)
        b.add(1, S.PARALLEL_END, 100, other=task_id(0, 2))
        b.add(1, S.SYNC_BEGIN, 101, kind=9)
        b.add(1, S.SYNC_END, 102, kind=9)
        b.add(1, S.PARALLEL_END, 103, other=task_id(0, 2))
        b.write(OUT / f"hand-cross-thread-ends{'-damaged' if damaged else ''}.parquet",
                rows_per_group=3, meta=incomplete if damaged else None)
    # thread 1 switches into a task while thread 0 runs it
    for damaged in (False, True):
        b = fork_join_trace(children=3, threads=2)
        kid, imp1 = task_id(0, 100), task_id(1, 10)
        b.add(1, S.TASK_SCHEDULE, 15, task=kid, other=imp1, kind=S.STATUS_SWITCH)
        b.add(1, S.TASK_SCHEDULE, 16, task=imp1, other=kid, kind=S.STATUS_COMPLETE)
        b.rows[1][2:2] = b.rows[1][-2:]        # thread 1's rows stay in time order
        del b.rows[1][-2:]
        b.write(OUT / f"hand-two-threads{'-damaged' if damaged else ''}.parquet",
                meta=incomplete if damaged else None)
    # a small fork-join in many row groups
    fork_join_trace(children=6, threads=3).write(OUT / "hand-row-groups.parquet",
                                                 rows_per_group=3)
    # no events at all
    b = fork_join_trace()
    b.rows = {}
    b.write(OUT / "hand-empty.parquet")


def corrupted():
    """Semantic corruptions of a real fib trace (tests/test_semantic_fuzz.py's
    kinds, and random mixes of edits with fixed seeds)."""
    base = OUT / "fib10-t2.parquet"

    def creates(c):
        cr = np.flatnonzero(c["event"] == S.TASK_CREATE)
        return cr, c["task"][cr].copy(), c["other"][cr].copy()

    def self_parent(c):
        cr, ids, _ = creates(c)
        c["other"][cr[5]] = ids[5]

    def parent_cycle(c):
        cr, ids, _ = creates(c)
        c["other"][cr[10]], c["other"][cr[11]] = ids[11], ids[10]

    def child_before_parent(c):
        cr, ids, _ = creates(c)
        c["other"][cr[3]] = ids[-1]

    def id_reused(c):
        cr, ids, _ = creates(c)
        c["task"][cr[7]] = ids[6]

    def negative_count(c):
        c["count"][np.flatnonzero(c["event"] == S.PARALLEL_BEGIN)[0]] = np.uint64(2**64 - 3)

    def switched_away_first(c):
        sched = np.flatnonzero(c["event"] == S.TASK_SCHEDULE)
        cr, ids, _ = creates(c)
        first = sched[np.flatnonzero(c["task"][sched] == ids[4])[0]]
        c["other"][first - 1 if first > 0 else first] = ids[4]
        c["event"][first - 1 if first > 0 else first] = S.TASK_SCHEDULE

    cases = [self_parent, parent_cycle, child_before_parent, id_reused, negative_count,
             switched_away_first]
    src = pq.read_table(base)
    for case in cases:
        out = OUT / f"bad-{case.__name__.replace('_', '-')}.parquet"
        out.write_bytes(base.read_bytes())
        rewrite(out, edit_columns=case)
    for seed in range(16):
        rng = np.random.default_rng(seed)

        def mix(c, rng=rng, seed=seed):
            n = len(c["event"])
            ids = c["task"][c["event"] == S.TASK_CREATE].copy()
            for _ in range(1 + seed % 4):
                what, r = rng.integers(6), int(rng.integers(n))
                if what == 0:
                    c["task"][r] = ids[rng.integers(len(ids))]
                elif what == 1:
                    c["other"][r] = ids[rng.integers(len(ids))]
                elif what == 2:
                    c["tsc"][r] = c["tsc"][r] + np.uint64(rng.integers(0, 1000))
                elif what == 3:
                    c["count"][r] = np.uint64(2**64 - 1 - int(rng.integers(100)))
                elif what == 4:
                    c["event"][r] = rng.integers(S.THREAD_BEGIN, S.FLUSH_END + 1)
                else:
                    c["kind"][r] = np.uint32(rng.integers(0, 2**31))
        for damaged in (False, True):
            out = OUT / f"fuzz{seed}{'-damaged' if damaged else ''}.parquet"
            out.write_bytes(base.read_bytes())
            rewrite(out, edit_columns=mix,
                    edit_meta=(lambda m: m.update({"grainlab.complete": "false"}))
                    if damaged else None)
    del src


def make_traces():
    OUT.mkdir(parents=True, exist_ok=True)
    for p in OUT.glob("*.parquet"):
        p.unlink()
    record_traces()
    handmade()
    corrupted()


def record_traces():
    record("fib10-t1", "fib", 10, threads=1)
    record("fib10-t2", "fib", 10, threads=2)
    record("fib12-cutoff-t2", "fib", 12, 4, threads=2)
    record("loops-t2", "loops", "all", 300)
    record("loops-t1", "loops", "all", 300, threads=1)
    record("taskloop-t2", "taskloop", 1000, 70)
    record("regions-t2", "regions", 25, 2, 0, "single")
    record("depend-if0-t2", "depend_if0", 30, 3)
    record("depend-if0-t1", "depend_if0", 12, 4, threads=1)
    record("depend-t2", "depend", 20)
    record("undeferred-t2", "undeferred", 20)
    record("taskgroup-t2", "taskgroup", 30)
    record("deeptree-t2", "deeptree", 40, 3)
    record("exec-t2", "exec_chain", 40, 3, "execv")
    record("counters-t2", "fib", 9, extra=("--counters", "task-clock,page-faults,PAPI_TOT_CYC"))
    record("tinybuffer-t2", "fib", 9, extra=("--buffer-events", "64"))
    killed("killed-t2")
    stopped("stopped-t2")
    synth("synth-fork-join", "--shape", "fork-join", "--grains", 300)
    synth("synth-spine", "--shape", "spine", "--grains", 400, "--spine-length", 50,
          "--buffer-events", 100)
    synth("synth-loop", "--shape", "loop", "--grains", 200, "--threads", 3)
    synth("synth-random", "--shape", "random", "--grains", 300, "--seed", 7, "--jitter", 0.3)


def make_expected():
    expected = {}
    with tempfile.TemporaryDirectory() as tmp:
        for trace in sorted(OUT.glob("*.parquet")):
            # run on a copy: info never writes, but a spool-less copy is what a test sees
            copy = Path(tmp) / trace.name
            copy.write_bytes(trace.read_bytes())
            runs = {}
            for mode, extra in (("text", []), ("json", ["--json"])):
                r = cli("info", *extra, copy)
                runs[mode] = {"code": r.returncode,
                              "stdout": r.stdout.replace(str(copy), "{TRACE}"),
                              "stderr": r.stderr.replace(str(copy), "{TRACE}")}
                assert "Traceback" not in r.stderr, (trace, r.stderr)
            expected[trace.stem] = runs
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"{len(expected)} traces -> {OUT / 'expected.json'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", action="store_true", help="record the traces anew")
    ap.add_argument("--handmade", action="store_true",
                    help="write the hand-made traces (tests/tracegen.py) anew")
    args = ap.parse_args()
    if args.traces:
        make_traces()
    elif args.handmade:
        handmade()
    make_expected()


if __name__ == "__main__":
    main()
