#!/usr/bin/env python3
"""Untied tasks at many threads (issue 20 item 1): record the `<name>_untied`
example builds REPS times at each thread count (oversubscribing this machine
is the point: libomp then suspends and migrates untied tasks the most), and for
every trace check that it loads, that every task is counted (independent
formulas from tests/test_examples_a.py and _b.py), and that every invariant of
tests/invariants.py holds (exact critical path against networkx, achieved
parallelism <= threads, work + overhead + idle = each thread's total, every
task joined after it ends, each task's time per thread equal to a plain walk
over the rows). Prints one line per (program, threads) and a verdict.

    .venv/bin/python benchmarks/untied_stress.py                  # 20 x {1,2,4,8,16,32}
    .venv/bin/python benchmarks/untied_stress.py --reps 3 --threads 2,8 --programs fib,sparselu
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import grainlab as gl  # noqa: E402
from grainlab.errors import GrainlabError  # noqa: E402
from invariants import check_trace  # noqa: E402
from test_examples_a import (fft_tasks, kd_tasks, nqueens_tasks, sort_tasks,  # noqa: E402
                             sparselu_tasks, strassen_tasks)
from test_examples_b import health_tasks, uts_tasks  # noqa: E402

# program: (args, expected tasks)
CASES = {
    "fib": ((18,), 2 * 4181 - 2),
    "tree": ((5, 4), sum(4 ** d for d in range(1, 6))),
    "nqueens": ((8, 3), nqueens_tasks(8, 3)),
    "sort": ((20000, 256, 256, 8), sort_tasks(20000, 256, 256)),
    "kdcutoff": ((16384, 5, "fixed"), kd_tasks(16384, 5, True)),
    "sparselu": (("single", 16, 16), sparselu_tasks(16) + 1),
    "strassen": ((128, 32), strassen_tasks(128, 32)),
    "fft": ((16384, 256), fft_tasks(16384, 256)),
    "health": ((3, 5, 3, 3), health_tasks(3, 5, 3, 3)),
    "uts": (("deep", 300, 3), uts_tasks("deep", 300, 3)),
    "alignment": ((16, 40), 16 * 15 // 2),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", default="1,2,4,8,16,32")
    p.add_argument("--programs", default=",".join(CASES))
    p.add_argument("--keep", default="out/untied_stress",
                   help="folder where traces that break an invariant are kept")
    args = p.parse_args()
    threads = [int(x) for x in args.threads.split(",")]
    programs = args.programs.split(",")
    # deep untied trees nest task executions on the stack (DESIGN.md)
    resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    grainlab = [sys.executable, "-m", "grainlab.cli"]
    total = failed = 0
    started = time.time()
    print(f"{'program':10} {'threads':>7} {'traces':>6} {'loaded':>6} {'counted':>7} "
          f"{'invariants':>10} {'moved tasks (median)':>21}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in programs:
            prog_args, tasks = CASES[name]
            binary = REPO / "build" / "examples" / f"{name}_untied"
            for n in threads:
                ok_load = ok_count = ok_inv = 0
                moved = []
                for rep in range(args.reps):
                    out = Path(tmp) / f"{name}-{n}-{rep}.parquet"
                    env = dict(os.environ, OMP_NUM_THREADS=str(n), GRAINLAB_QUIET="1")
                    r = subprocess.run([*grainlab, "record", "-q", "-o", str(out), "--",
                                        str(binary), *map(str, prog_args)],
                                       env=env, capture_output=True, text=True)
                    total += 1
                    if r.returncode != 0:
                        failed += 1
                        print(f"  {name} {n} #{rep}: record failed: {r.stderr.strip()[:200]}")
                        continue
                    try:
                        t = gl.load(out)
                    except GrainlabError as e:
                        failed += 1
                        print(f"  {name} {n} #{rep}: not loaded: {e}")
                        continue
                    ok_load += 1
                    if t.summary()["tasks"] != tasks:
                        failed += 1
                        print(f"  {name} {n} #{rep}: {t.summary()['tasks']} tasks, not {tasks}")
                        continue
                    ok_count += 1
                    try:
                        figures = check_trace(t, tasks=tasks, threads=n)
                    except AssertionError as e:
                        failed += 1
                        kept = Path(args.keep) / out.name
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(out, kept)
                        print(f"  {name} {n} #{rep}: invariant broken: {str(e)[:300]} "
                              f"(trace kept: {kept})")
                        continue
                    ok_inv += 1
                    moved.append(figures["moved_tasks"])
                    out.unlink()
                moved.sort()
                med = moved[len(moved) // 2] if moved else "-"
                print(f"{name:10} {n:>7} {args.reps:>6} {ok_load:>6} {ok_count:>7} {ok_inv:>10} "
                      f"{med:>21}", flush=True)
    print(f"{total} traces, {total - failed} loaded, counted and sound, {failed} not "
          f"({time.time() - started:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
