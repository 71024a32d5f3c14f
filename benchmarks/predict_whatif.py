#!/usr/bin/env python3
"""Does `predict --what-if LOC=k` come true? (issue 34, item 4)

examples/whatif takes its two task kinds' costs as arguments, so the change a
what-if describes can also be made for real: `whatif N 2500 10000` with
`--what-if heavy=0.5` should take what `whatif N 2500 5000` takes. For each
case below: REPS 1-thread recordings of the baseline (the fastest replay is
used, as predict_accuracy does), `predict --whole --cores 2` with and without
the what-if, and the baseline and the changed program timed alone at 2
threads, REPS times each, interleaved (best of them). Printed side by side:
measured and predicted time of the baseline and of the change, the measured
and predicted gain (baseline / change), and the error of the predicted gain.

    .venv/bin/python benchmarks/predict_whatif.py [--reps 5] [--n 20000]

Timed: run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grainlab import _paths  # noqa: E402

# (label, what-if, baseline costs, changed costs): costs are LIGHT HEAVY rounds
CASES = [
    ("heavy 2x cheaper", "heavy=0.5", (2500, 10000), (2500, 5000)),
    ("heavy 2x dearer", "heavy=2", (2500, 10000), (2500, 20000)),
    ("light 4x cheaper", "light=0.25", (10000, 10000), (2500, 10000)),
]
THREADS = 2


def timed(args) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS)}
    t0 = time.perf_counter()
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000, help="tasks of each kind (default 20000)")
    o = ap.parse_args(argv)
    import grainlab as gl
    prog = str(_paths.example("whatif"))
    print(f"whatif {o.n} at {THREADS} threads, best of {o.reps}; predicted: predict --whole "
          f"from the fastest of {o.reps} 1-thread recordings")
    print(f"{'case':<18} {'measured':>9} {'predicted':>9} {'measured':>9} {'predicted':>9} "
          f"{'gain':>6} {'predicted':>9} {'error':>7}")
    print(f"{'':<18} {'baseline':>9} {'baseline':>9} {'change':>9} {'what-if':>9} "
          f"{'':>6} {'gain':>9} {'':>7}")
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, what_if, base, change in CASES:
            best = None
            for r in range(o.reps):
                path = Path(tmp) / f"{label.replace(' ', '_')}-{r}.parquet"
                subprocess.run([sys.executable, "-m", "grainlab.cli", "record", "-q", "-o",
                                str(path), "--", prog, str(o.n), *map(str, base)],
                               env={**os.environ, "OMP_NUM_THREADS": "1",
                                    "PYTHONPATH": str(REPO)}, check=True,
                               stdout=subprocess.DEVNULL)
                p = gl.analyze(path).predict([THREADS], what_if=what_if, whole=True)
                if best is None or p["predicted_ns"][0] < best["predicted_ns"][0]:
                    best = p
            t_base, t_change = [], []
            for _ in range(o.reps):          # interleaved: noise hits both alike
                t_base.append(timed([prog, str(o.n), *map(str, base)]))
                t_change.append(timed([prog, str(o.n), *map(str, change)]))
            mb, mc = min(t_base), min(t_change)
            pb, pc = best["predicted_ns"][0] / 1e9, best["what_if"]["predicted_ns"][0] / 1e9
            gain, pgain = mb / mc, pb / pc
            err = pgain / gain - 1
            errors.append(abs(err))
            print(f"{label:<18} {mb * 1e3:>7.1f}ms {pb * 1e3:>7.1f}ms {mc * 1e3:>7.1f}ms "
                  f"{pc * 1e3:>7.1f}ms {gain:>6.2f} {pgain:>9.2f} {100 * err:>+6.1f}%")
    errors.sort()
    print(f"median |error| of the predicted gain: {100 * errors[len(errors) // 2]:.1f}%, "
          f"max {100 * errors[-1]:.1f}%")


if __name__ == "__main__":
    main()
