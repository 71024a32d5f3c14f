#!/usr/bin/env python3
"""Do `predict --merge-below` what-ifs come true? (issue 34, item 4)

For fib, nqueens and sort (examples/): a `grainlab sweep` at 2 threads over
the cutoffs below (each cutoff timed alone REPS times, and recorded), and
REPS 1-thread recordings at the finest cutoff. From the fastest of those
1-thread traces alone, `predict --whole --merge-below D` predicts the 2-core
time of every coarser cutoff. D is the merge depth whose graph has as many
tasks as the sweep's trace at that cutoff (a depth cutoff, fib's and
nqueens', maps to itself; sort's size cutoffs to where its recursion
stops). The benchmark prints, per cutoff, the measured time alone (mean and
standard deviation of the repetitions) beside the predicted time, then the
predicted best cutoff (grainlab.suite.cutoffs.predicted_best), the measured
fastest and the sweep's recommendation (recommend), and whether the
predicted best is within one step of the measured best (the issue's
criterion).

The predicted times are the replay of a trace recorded under the collector:
they carry its overhead, so they sit above the times measured alone; what
is compared is where the minimum lies.

    .venv/bin/python benchmarks/predict_cutoffs.py [--reps 5] [--keep DIR] [--only fib,sort]
        [--runs] [--small]

--runs also fits contention from the sweep's 2-thread trace at the finest
cutoff (`predict --runs`). --keep DIR sweeps and records once, and reuses
the results there. Timed: run it on a quiet machine (docs/predict.md,
"What-ifs checked against real runs").
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grainlab import _paths  # noqa: E402

# name: (program, arguments with {} for the cutoff, cutoffs coarse -> fine)
CASES = {
    "fib": ("fib", ["32", "{}"], [2, 4, 6, 8, 10, 12, 14, 16]),
    "nqueens": ("nqueens", ["12", "{}"], [1, 2, 3, 4, 5, 6]),
    "sort": ("sort", ["4194304", "{}", "{}", "20"],
             [1048576, 262144, 65536, 16384, 4096, 1024, 256]),
}
# --small: the same shapes, seconds in all, to check that the script works (not timed)
SMALL = {
    "fib": ("fib", ["22", "{}"], [2, 4, 6, 8]),
    "nqueens": ("nqueens", ["9", "{}"], [1, 2, 3]),
    "sort": ("sort", ["262144", "{}", "{}", "20"], [65536, 16384, 4096]),
}
THREADS = 2


def cli(*args, env=None):
    r = subprocess.run([sys.executable, "-m", "grainlab.cli", *map(str, args)],
                       env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"grainlab {' '.join(map(str, args))} failed: {r.stderr.strip()}")


def finest_traces(prog, args, cutoff, reps, folder: Path) -> list[Path]:
    out = []
    for i in range(reps):
        p = folder / f"t1-r{i}.parquet"
        if not p.exists():
            cli("record", "-q", "-o", p, "--", _paths.example(prog),
                *[a.replace("{}", str(cutoff)) for a in args], env={"OMP_NUM_THREADS": "1"})
        out.append(p)
    return out


def tasks_of(a) -> int:
    return int((a.graph.grains["kind"] == "task").sum())


def one(name, reps, folder: Path, costs, with_runs: bool) -> dict:
    import numpy as np

    from grainlab.analysis.analysis import Analysis
    from grainlab.suite import cutoffs as cu
    prog, args, values = CASES[name]
    folder.mkdir(parents=True, exist_ok=True)
    sweep_dir = folder / "sweep"
    if not (sweep_dir / cu.SWEEP_CSV).is_file():
        cli("sweep", "-q", "--cutoffs", ",".join(map(str, values)), "--reps", reps,
            "--threads", THREADS, "-o", sweep_dir, "--", _paths.example(prog), *args)
    df = cu.measurements(sweep_dir)
    table = cu.summary(df).set_index("cutoff")
    rec = cu.recommend(table.reset_index())
    # the finest cutoff at 1 thread: the least inflated of `reps` recordings
    finest = values[-1]
    ones = [Analysis(p) for p in finest_traces(prog, args, finest, reps, folder)]
    base = min(ones, key=lambda a: int(a.graph.nodes["duration"].sum()))
    depth = base.graph.grains["depth"][base.graph.grains["kind"] == "task"].to_numpy(np.int64)
    cum = [int((depth <= d).sum()) for d in range(1, int(depth.max()) + 1)]
    first = df.sort_values("rep").drop_duplicates("cutoff").set_index("cutoff")["trace"]
    counts = {c: tasks_of(Analysis(sweep_dir / first[c])) for c in values}
    depths = cu.merge_depths(counts, cum)
    runs = [sweep_dir / first[finest]] if with_runs else None
    rows = []
    for c in values:
        p = base.predict([1, THREADS], costs=costs, whole=True, merge_below=depths[c], runs=runs)
        alt = p["what_if"]
        t = (alt["contention"]["predicted_ns"] if with_runs else alt["predicted_ns"])[1]
        rows.append({"cutoff": c, "depth": depths[c], "tasks": counts[c],
                     "merged_tasks": alt["tasks"], "measured_ms": 1e3 * table.at[c, "alone_s_mean"],
                     "sd_ms": 1e3 * table.at[c, "alone_s_sd"], "predicted_ms": t / 1e6})
    pred = cu.predicted_best(values, [r["predicted_ms"] for r in rows],
                             [r["merged_tasks"] for r in rows])
    fastest = rec["fastest"]
    return {"name": name, "rows": rows, "predicted_best": pred, "fastest": fastest,
            "recommended": rec["cutoff"], "steps": cu.steps_apart(values, pred, fastest),
            "trace": str(base.path)}


def main() -> int:
    from grainlab.metrics.predict import Costs
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keep", metavar="DIR", help="keep (and reuse) sweeps and traces in DIR")
    ap.add_argument("--only", help="comma-separated: fib,nqueens,sort")
    ap.add_argument("--small", action="store_true",
                    help="small inputs, to check that the script runs (not for timing)")
    ap.add_argument("--runs", action="store_true",
                    help="fit contention from the sweep's 2-thread trace at the finest cutoff")
    args = ap.parse_args()
    if args.small:
        CASES.update(SMALL)
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as tmpdir:
        root = Path(args.keep) if args.keep else Path(tmpdir)
        for name in names:
            r = one(name, args.reps, root / name, Costs(), args.runs)
            print(f"\n{name}: predicted from {r['trace']} (1 thread, finest cutoff), "
                  f"measured alone at {THREADS} threads, {args.reps} runs per cutoff")
            print(f"{'cutoff':>9} {'depth':>5} {'tasks':>8} {'measured ms':>15} "
                  f"{'predicted ms':>12} {'pred/meas':>9}")
            for x in r["rows"]:
                print(f"{x['cutoff']:>9} {x['depth']:>5} {x['tasks']:>8} "
                      f"{x['measured_ms']:>8.1f} ± {x['sd_ms']:<4.1f} {x['predicted_ms']:>12.1f} "
                      f"{x['predicted_ms'] / x['measured_ms']:>9.2f}")
            good = r["steps"] <= 1
            ok &= good
            print(f"predicted best {r['predicted_best']}, measured fastest {r['fastest']} "
                  f"(recommended {r['recommended']}): {r['steps']} step(s) apart -> "
                  f"{'within one step' if good else 'NOT within one step'}", flush=True)
    print("\nall within one step" if ok else "\nsome predicted best cutoffs are off by more "
          "than one step")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
