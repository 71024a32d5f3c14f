#!/usr/bin/env python3
"""Many traces: `grainlab characterize` of N traces one after another, against
the same on a Dask LocalCluster (`--workers W`), side by side in one run
(issue 26, "What must hold").

    .venv/bin/python benchmarks/many_traces.py                  # 32 traces of ~10^6 events, 2 workers
    .venv/bin/python benchmarks/many_traces.py --traces 8 --grains 50000

Traces are synthetic fork-join runs (`grainlab synth`, 4 events per grain:
250,000 grains is about 10^6 events), a different seed each, cached under
--cache-dir so a rerun measures only the analysis. Each mode runs the real
command line in a fresh process; the time includes Python's start-up and,
with workers, starting the cluster. The two CSV outputs must be identical:
the script says so, or exits 1.

On a machine of C cores, W workers can at best divide the analysis time by
min(W, C, N); each worker holds one trace's analysis in memory at a time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def grainlab(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "grainlab.cli", *map(str, args)],
                          capture_output=True, text=True, env=env)


def traces(n: int, grains: int, cache: Path) -> list[Path]:
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for seed in range(n):
        p = cache / f"forkjoin-{grains}-s{seed}.parquet"
        if not p.exists():
            res = grainlab("synth", "--shape", "fork-join", "--grains", grains, "--jitter", "0.5",
                           "--seed", seed, "-q", "-o", p)
            if res.returncode:
                sys.exit(f"synth failed: {res.stderr.strip()}")
        out.append(p)
    return out


def timed(args) -> tuple[float, str]:
    t0 = time.monotonic()
    res = grainlab("characterize", "-q", "--csv", *args)
    dt = time.monotonic() - t0
    if res.returncode:
        sys.exit(f"characterize {' '.join(map(str, args[:2]))} failed: {res.stderr.strip()}")
    return dt, res.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=32)
    ap.add_argument("--grains", type=int, default=250_000, help="grains per trace (x4 events)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache-dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "grainlab-bench-many")
    a = ap.parse_args()
    paths = traces(a.traces, a.grains, a.cache_dir)
    mb = sum(p.stat().st_size for p in paths) / 2**20
    print(f"{len(paths)} traces of {a.grains} grains (~{4 * a.grains:,} events), {mb:.0f} MiB, "
          f"{os.cpu_count()} cores")
    seq_s, seq_csv = timed(paths)
    par_s, par_csv = timed(["--workers", a.workers, *paths])
    print(f"{'mode':<24}{'seconds':>10}{'per trace':>12}{'speed-up':>10}")
    print(f"{'sequential':<24}{seq_s:>10.1f}{seq_s / len(paths):>12.2f}{1.0:>10.2f}")
    print(f"{f'dask --workers {a.workers}':<24}{par_s:>10.1f}{par_s / len(paths):>12.2f}"
          f"{seq_s / par_s:>10.2f}")
    same = seq_csv == par_csv
    print(f"same rows: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
