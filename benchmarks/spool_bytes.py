#!/usr/bin/env python3
"""Spool encodings side by side (issue 7 item 4): the same program recorded
with raw spool blocks (GRAINLAB_SPOOL_ENCODING=raw, 56 bytes an event) and
with compact ones (the default), for fib with a task per call at two sizes
and fib with a good cutoff:

  spool MB, B/event   the spool the run leaves (GRAINLAB_CONVERT=no), and its
                      bytes per event (block headers included)
  app s, x app        the application's wall time under the collector with
                      conversion off, and relative to the app alone
  cpu s               its CPU time (user + sys: the writer thread's encoding
                      and the kernel's copying of the spool into the page cache)
  ready s, x app      wall time until the Parquet trace is ready
                      (GRAINLAB_CONVERT=wait: the run waits for its converter)

Every configuration runs --reps times, interleaved (app, raw, compact, raw
wait, compact wait, app, ...) so drift in the machine's load hits all alike;
medians are printed. Ratios are medians over repetitions of (time / the app's
time in the same repetition).

    .venv/bin/python benchmarks/spool_bytes.py [--reps 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grainlab import _paths  # noqa: E402
from grainlab.trace.spool import spool_of  # noqa: E402

ENCODINGS = ("raw", "compact")
HEADER = struct.Struct("<8sIIIIIIQQ")
BLOCK = struct.Struct("<IIIIQQIIQ")
BLOCK_MAGIC, TRAILER_MAGIC = 0x4B4C4247, 0x52544C47


def run(argv, env):
    """Wall seconds and CPU seconds (user + sys, the program and the children
    it waited for) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"spool_bytes: {' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def environment(threads, trace=None, encoding=None, convert="no", buffer_events=65536):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAINLAB_", "OMP_TOOL"))}
    env["OMP_NUM_THREADS"] = str(threads)
    if encoding:
        env.update(OMP_TOOL_LIBRARIES=str(_paths.collector_library()),
                   GRAINLAB_OUTPUT=str(trace), GRAINLAB_QUIET="1",
                   GRAINLAB_BUFFER_EVENTS=str(buffer_events), GRAINLAB_CONVERT=convert,
                   GRAINLAB_SPOOL_ENCODING=encoding)
    return env


def spool_events(spool: Path) -> int:
    """Rows in a spool's blocks, from the block headers alone."""
    size, events = spool.stat().st_size, 0
    with open(spool, "rb") as f:
        off = HEADER.unpack(f.read(HEADER.size))[2]
        while off < size:
            f.seek(off)
            head = f.read(BLOCK.size)
            magic = struct.unpack_from("<I", head)[0]
            if magic == BLOCK_MAGIC:
                fields = BLOCK.unpack(head)
                events += fields[2]
                off += BLOCK.size + fields[8]
            elif magic == TRAILER_MAGIC:
                off += 32 + struct.unpack_from("<I", head, 8)[0]
            elif head[:8] == b"GLSPOOL\n":
                off += HEADER.unpack_from(head)[2]
            else:
                sys.exit(f"spool_bytes: cannot read {spool} at byte {off}")
    return events


def measure(argv, reps, threads, tmp):
    r = {"app": []}
    for enc in ENCODINGS:
        r[enc] = {"wall": [], "cpu": [], "ready": [], "spool": 0, "events": 0}
    for _ in range(reps):
        r["app"].append(run(argv, environment(threads))[0])
        for enc in ENCODINGS:
            trace = tmp / f"{enc}.parquet"
            wall, cpu = run(argv, environment(threads, trace, enc))
            spool = spool_of(trace)
            r[enc]["wall"].append(wall)
            r[enc]["cpu"].append(cpu)
            r[enc]["spool"] = spool.stat().st_size
            r[enc]["events"] = spool_events(spool)
            spool.unlink()
        for enc in ENCODINGS:
            trace = tmp / f"{enc}-ready.parquet"
            wall, _ = run(argv, environment(threads, trace, enc, convert="wait"))
            if not trace.exists() or spool_of(trace).exists():
                sys.exit(f"spool_bytes: {trace} was not converted")
            r[enc]["ready"].append(wall)
            trace.unlink()
    return r


def paired(r, enc, key):
    return statistics.median(t / a for t, a in zip(r[enc][key], r["app"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workloads", default="27;30;39 12",
                    help="fib arguments, ';'-separated (default: a task per call at 27 "
                         "and 30, and the good cutoff 39 12)")
    args = ap.parse_args()
    fib = str(_paths.example("fib"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="grainlab-spool-bytes-") as d:
        for w in args.workloads.split(";"):
            rows.append((f"fib {w}", measure([fib, *w.split()], args.reps, args.threads,
                                             Path(d))))
    print(f"threads={args.threads} reps={args.reps} (medians); x app = median over reps of "
          "time / the app's time in the same rep; load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    head = (f"{'workload':<12}{'encoding':<9}{'events':>10}{'spool MB':>10}{'B/event':>9}"
            f"{'app s':>8}{'x app':>7}{'cpu s':>7}{'ready s':>9}{'x app':>7}")
    print(head)
    print("-" * len(head))
    for label, r in rows:
        app = statistics.median(r["app"])
        print(f"{label:<12}{'(alone)':<9}{'':>10}{'':>10}{'':>9}{app:>8.3f}{1:>7.2f}")
        for enc in ENCODINGS:
            x = r[enc]
            bpe = x["spool"] / x["events"] if x["events"] else float("nan")
            print(f"{'':<12}{enc:<9}{x['events']:>10}{x['spool'] / 1e6:>10.1f}{bpe:>9.2f}"
                  f"{statistics.median(x['wall']):>8.3f}{paired(r, enc, 'wall'):>7.2f}"
                  f"{statistics.median(x['cpu']):>7.2f}{statistics.median(x['ready']):>9.3f}"
                  f"{paired(r, enc, 'ready'):>7.2f}")
    print()
    for label, r in rows:
        raw, compact = r["raw"], r["compact"]
        print(f"{label}: spool {raw['spool'] / max(compact['spool'], 1):.1f}x smaller "
              f"({raw['spool'] / max(raw['events'], 1):.1f} -> "
              f"{compact['spool'] / max(compact['events'], 1):.2f} B/event); app under the "
              f"collector {paired(r, 'raw', 'wall'):.2f}x -> {paired(r, 'compact', 'wall'):.2f}x; "
              f"until the trace is ready {paired(r, 'raw', 'ready'):.2f}x -> "
              f"{paired(r, 'compact', 'ready'):.2f}x")


if __name__ == "__main__":
    main()
