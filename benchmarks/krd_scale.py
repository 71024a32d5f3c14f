#!/usr/bin/env python3
"""KRD benchmark (issue 23, "Performance"): the stack-distance computation of
`grainlab krd` on 10^6 and 10^7 synthetic accesses side by side, and what one
grain_data() annotation costs with and without the collector.

    .venv/bin/python benchmarks/krd_scale.py                  # 1e6 1e7, annotation cost
    .venv/bin/python benchmarks/krd_scale.py --sizes 1e6 --calls 200000

Accesses: two CPUs of one LLC (one stream) and two NUMA nodes (two streams),
blocks of 4 KiB drawn from 2^18 distinct blocks, half as sweeps over a
window, half at random, so the distances span every bin; 4 threads pinned
one per CPU, rows in a trace's order (row groups of 65,536 per thread). Timed:
`grainlab.metrics.krd.reuse` (sort by domain and time, block numbering, the
Fenwick-tree kernel) then `summary` (histograms per domain and location),
best of --repeat, wall seconds and the process's CPU seconds (on a busy
machine the CPU time is what the computation costs; numpy's sorts and the
kernel are single-threaded). Target: 10^7 accesses <= 10 s on the 2-core
machine.

Annotation cost: benchmarks/grain_data_cost.c (compiled here with clang-19),
N calls inside one task, ns per call: compiled out (-DGRAIN_DATA_DISABLE,
the loop alone), no tool (OMP_TOOL_LIBRARIES unset),
the empty tool (libgrainempty.so: libomp finds no control_tool callback),
the collector, the collector with GRAINLAB_PAGES=1 (move_pages once per
uncached page). Figures taken on a shared machine are noisy: the lead
re-runs them on a quiet one. Never fails a build.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grainlab.metrics import krd as K  # noqa: E402

TOPOLOGY = {"cpus": 4, "cpu_core": [0, 1, 0, 1], "cpu_package": [0, 0, 1, 1],
            "cpu_node": [0, 0, 1, 1],
            "caches": [{"level": 2, "type": "Unified", "size": 1 << 20, "shared_cpus": [0]},
                       {"level": 3, "type": "Unified", "size": 32 << 20,
                        "shared_cpus": [0, 1]}]}


def accesses(n: int, seed: int = 1) -> pd.DataFrame:
    """n accesses of 4 threads, each on its own CPU, in the order a trace
    holds them: per thread in time order, in blocks of 65,536 rows (the
    collector's row groups), the threads' blocks interleaved."""
    rng = np.random.default_rng(seed)
    nblocks = 1 << 18
    i = np.arange(n)
    sweep = (i * 7) % 4096 + (i // 65536) * 512
    block = np.where(rng.random(n) < 0.5, sweep % nblocks, rng.integers(0, nblocks, n))
    thread = i % 4
    group = (i // 4) // 65536
    order = np.lexsort((i, thread, group))       # file order: row groups per thread
    block, thread = block[order], thread[order]
    time = (i * 10)[order]
    return pd.DataFrame({
        "thread": thread.astype(np.uint16), "cpu": thread.astype(np.uint16),
        "time": time.astype(np.int64), "task": (time // 30).astype(np.uint64),
        "codeptr": (0x1000 + block % 3).astype(np.uint64),
        "base": (0x10000000 + block * 4096).astype(np.uint64),
        "bytes": np.full(n, 4096, np.uint64), "mode": np.ones(n, np.uint8),
        "node": np.full(n, -1, np.int16)})


def time_krd(n: int, repeat: int) -> dict:
    acc = accesses(n)
    out = {}
    for domain in ("llc", "numa"):
        best = best_cpu = float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            r = K.reuse(acc, TOPOLOGY, domain)
            h = K.summary(r)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        out[domain] = (best, h["inf"], h["far"], best_cpu)
    return out


def annotation_cost(calls: int) -> dict:
    cc = shutil.which("clang-19")
    lib = ROOT / "build" / "lib"
    if not cc or not (lib / "libgraincollect.so").is_file():
        return {"error": "needs clang-19 and the build (build/lib)"}
    tmp = Path(tempfile.mkdtemp(prefix="grain_data_cost-"))
    exe = tmp / "grain_data_cost"
    for out, extra in ((exe, []), (tmp / "compiled_out", ["-DGRAIN_DATA_DISABLE"])):
        subprocess.run([cc, "-O2", "-fopenmp", "-I", str(ROOT / "collector/include"), *extra,
                        str(ROOT / "benchmarks/grain_data_cost.c"), "-o", str(out),
                        "-L/usr/lib/llvm-19/lib", "-Wl,-rpath,/usr/lib/llvm-19/lib"], check=True)
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_TOOL_LIBRARIES", "GRAINLAB_PAGES")}
    runs = {"compiled out (-DGRAIN_DATA_DISABLE)": {}, "no tool": {}, "empty tool": {"OMP_TOOL_LIBRARIES": str(lib / "libgrainempty.so")},
            "collector": {"OMP_TOOL_LIBRARIES": str(lib / "libgraincollect.so")},
            "collector, GRAINLAB_PAGES=1": {"OMP_TOOL_LIBRARIES": str(lib / "libgraincollect.so"),
                                            "GRAINLAB_PAGES": "1"}}
    out = {}
    for name, extra in runs.items():
        env = dict(base, GRAINLAB_OUTPUT=str(tmp / "t.parquet"), GRAINLAB_QUIET="1",
                   GRAINLAB_CONVERT="no", **extra)
        best = float("inf")
        for _ in range(3):
            prog = tmp / "compiled_out" if name.startswith("compiled out") else exe
            text = subprocess.run([str(prog), str(calls)], env=env, check=True,
                                  capture_output=True, text=True).stdout
            best = min(best, float(text.split()[-1]))
            for spool in tmp.glob("*.spool"):
                spool.unlink()
        out[name] = best
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2_000_000)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    print(f"{'accesses':>10} {'llc s':>8} {'(cpu s)':>8} {'numa s':>8} {'(cpu s)':>8} "
          f"{'inf':>9} {'far':>9}")
    verdict = []
    for n in sizes:
        t = time_krd(n, args.repeat)
        print(f"{n:>10} {t['llc'][0]:>8.2f} {t['llc'][3]:>8.2f} {t['numa'][0]:>8.2f} "
              f"{t['numa'][3]:>8.2f} {t['llc'][1]:>9} {t['llc'][2]:>9}", flush=True)
        if n == 10 ** 7:
            verdict.append(f"10^7 accesses: {t['llc'][0]:.2f} s "
                           f"({'meets' if t['llc'][0] <= 10 else 'MISSES'} the 10 s target)")
    cost = annotation_cost(args.calls)
    print("grain_data() cost, ns per call (best of 3, "
          f"{args.calls} calls in one task):")
    for name, ns in cost.items():
        print(f"  {name:<30} {ns}")
    for line in verdict:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
