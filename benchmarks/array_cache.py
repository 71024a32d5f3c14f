#!/usr/bin/env python3
"""The array cache (grainlab/array_cache.py) on and off, side by side.

    .venv/bin/python benchmarks/array_cache.py                  # fib 33 (1e7 grains), 2 reps
    .venv/bin/python benchmarks/array_cache.py --trace T.parquet --reps 3

Runs `grainlab analyze --json TRACE` as fresh processes with
GRAINLAB_ARRAY_CACHE=0 and =1, interleaved (off, on, off, on, ...: fresh
memory costs differ over time on these VMs, so the two settings take turns),
and prints per run wall s, user and system CPU s (system: mostly page
faults), minor faults and peak RSS, then each setting's median. The trace
(default: the 1e7 trace of benchmarks/analyze_scale.py, recorded there if
missing) must have >= 8M events, or the command line takes the small memory
profile and installs no cache: GRAINLAB_MEMORY_PROFILE=large is set for both
settings so a smaller trace compares the same thing. A benchmark, not a test:
exit 0 unless a run failed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT = Path("/tmp/grainlab-bench-scale/fib33.parquet")


def run_wait4(trace: Path, cache: bool) -> dict:
    """One `grainlab analyze --json`: its wall s and its own rusage (wait4)."""
    env = dict(os.environ, GRAINLAB_ARRAY_CACHE="1" if cache else "0",
               GRAINLAB_MEMORY_PROFILE="large")
    t0 = time.perf_counter()
    p = subprocess.Popen([str(REPO / ".venv/bin/grainlab"), "analyze", "--json", str(trace)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        sys.exit(f"array_cache: analyze exited {p.returncode} (cache={'on' if cache else 'off'})")
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime,
            "faults": usage.ru_minflt, "peak_gib": usage.ru_maxrss / 2 ** 20}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    if not args.trace.exists():
        if args.trace != DEFAULT:
            sys.exit(f"array_cache: no trace {args.trace}")
        subprocess.run([sys.executable, str(REPO / "benchmarks/analyze_scale.py"),
                        "--sizes", "1e7", "--workers", ""], check=True,
                       stdout=subprocess.DEVNULL)
    print(f"array_cache: {args.trace}, {args.reps} rep(s) each, interleaved; "
          f"load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'cache':6} {'wall s':>7} {'user s':>7} {'sys s':>7} {'faults':>10} {'peak GiB':>9}")
    results = {False: [], True: []}
    for _ in range(args.reps):
        for cache in (False, True):
            r = run_wait4(args.trace, cache)
            results[cache].append(r)
            print(f"{'on' if cache else 'off':6} {r['wall']:7.1f} {r['user']:7.1f} "
                  f"{r['sys']:7.1f} {r['faults']:10,d} {r['peak_gib']:9.2f}", flush=True)
    print("median:")
    for cache in (False, True):
        rs = results[cache]
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"{'on' if cache else 'off':6} {med['wall']:7.1f} {med['user']:7.1f} "
              f"{med['sys']:7.1f} {int(med['faults']):10,d} {med['peak_gib']:9.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
