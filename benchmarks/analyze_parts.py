"""One big multi-region trace: the single-process analysis against the parts
path (grainlab.cluster.split, `grainlab analyze --workers N`) here and on 1
and 2 Dask workers, side by side, and the composed results checked equal.

    .venv/bin/python benchmarks/analyze_parts.py                 # records regions 40 x 25000 tasks
    .venv/bin/python benchmarks/analyze_parts.py --regions 80 --tasks 125000   # ~10^7 grains
    .venv/bin/python benchmarks/analyze_parts.py --trace big.parquet --workers 1,2

The trace is recorded from build/examples/regions (REGIONS consecutive
parallel regions, TASKS empty tasks each) at 2 threads unless --trace is
given. Times are wall-clock seconds of the whole command (a LocalCluster's
start-up included: about 2-5 s); on a busy machine they say little.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def record(regions: int, tasks: int, out: Path) -> Path:
    exe = ROOT / "build" / "examples" / "regions"
    env = dict(os.environ, OMP_NUM_THREADS="2")
    subprocess.run([str(ROOT / ".venv" / "bin" / "grainlab"), "record", "-o", str(out), "--",
                    str(exe), str(regions), str(tasks), "0"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="an existing trace (else one is recorded)")
    ap.add_argument("--regions", type=int, default=40)
    ap.add_argument("--tasks", type=int, default=25000, help="tasks per region")
    ap.add_argument("--workers", default="1,2", help="Dask worker counts (default 1,2)")
    ap.add_argument("--no-single", action="store_true", help="skip the single-process run")
    args = ap.parse_args(argv)
    import grainlab as gl
    from grainlab.cluster.split import analyze_split
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.trace) if args.trace else record(args.regions, args.tasks,
                                                          Path(tmp) / "regions.parquet")
        rows = []
        whole = None
        if not args.no_single:
            t = time.perf_counter()
            whole = gl.analyze(path).report()
            rows.append(("single process", time.perf_counter() - t, whole["span_ns"]))
        t = time.perf_counter()
        here = analyze_split(path)
        rows.append(("parts, here", time.perf_counter() - t, here["span_ns"]))
        for w in [int(x) for x in args.workers.split(",") if x]:
            t = time.perf_counter()
            there = analyze_split(path, workers=w)
            rows.append((f"parts, {w} Dask worker(s)", time.perf_counter() - t,
                         there["span_ns"]))
        grains = here["grains"]
        print(f"trace {path}: {grains} grains, {here['regions']} regions")
        print(f"{'path':<28} {'seconds':>8} {'grains/s':>12} {'span_ns':>14}")
        for name, sec, span in rows:
            print(f"{name:<28} {sec:8.2f} {grains / sec:12.0f} {span:14d}")
        spans = {span for _, _, span in rows}
        if whole is not None and (here["work_ns"] != whole["work_ns"] or len(spans) != 1):
            print("MISMATCH: the parts' work or span differ from the single process",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
