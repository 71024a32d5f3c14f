#!/usr/bin/env python3
"""Replay scale (issue 22, "Performance"): 10^5 and 10^6 grains replayed on
256 simulated cores, side by side. Target: <= 10 s for 10^6 grains.

Synthetic traces (`grainlab.synth.generate`, shapes fork-join and random,
cached under --cache-dir). Timed steps:
  graph     the grain graph of the trace (`grainlab.analyze(...).graph`: load,
            validate, build; not part of the target, the analysis has its own)
  prepare   the replayed DAG (grainlab.metrics.replay_graph: guard, arrays)
  replay    `predict` at 256 cores: the compiled replay (grainlab/native/replay.c)
            plus the span and burdened spans (the critical path's kernel)
  total     prepare + replay: what `grainlab predict --cores 256` adds to a graph

    .venv/bin/python benchmarks/predict_scale.py [--sizes 1e5,1e6] [--cores 256]
Figures from a shared 2-core machine are noisy: compare the two columns of
one run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET_S = 10.0


def measure(path: Path, cores: int) -> dict:
    import grainlab as gl
    from grainlab.metrics.predict import Costs, predict
    from grainlab.metrics.replay_graph import replay_graph
    t = time.perf_counter()
    g = gl.analyze(path).graph
    graph_s = time.perf_counter() - t
    t = time.perf_counter()
    rep = replay_graph(g)
    prep_s = time.perf_counter() - t
    t = time.perf_counter()
    out = predict(rep, [cores], Costs())
    replay_s = time.perf_counter() - t
    return {"grains": len(g.grains), "nodes": len(rep.w), "graph": graph_s, "prepare": prep_s,
            "replay": replay_s, "total": prep_s + replay_s, "speedup": out["speedup"][0],
            "steals": out["steals"][0]}


def main() -> int:
    from grainlab.synth import generate
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--cores", type=int, default=256)
    ap.add_argument("--shapes", default="fork-join,random")
    ap.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "grainlab-predict"))
    args = ap.parse_args()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    worst = 0.0
    for shape in args.shapes.split(","):
        rows = {}
        for n in sizes:
            path = cache / f"{shape}-{n}.parquet"
            if not path.exists():
                generate(path, shape, n, threads=2, seed=1)
            rows[n] = measure(path, args.cores)
            if n >= 1_000_000:
                worst = max(worst, rows[n]["total"])
        print(f"\n{shape}, {args.cores} simulated cores")
        print(f"{'':<10}" + "".join(f"{n:>14,}" for n in sizes))
        for key, fmt in (("grains", "{:>14,}"), ("nodes", "{:>14,}"), ("graph", "{:>13.2f}s"),
                         ("prepare", "{:>13.2f}s"), ("replay", "{:>13.2f}s"),
                         ("total", "{:>13.2f}s"), ("speedup", "{:>14.1f}"),
                         ("steals", "{:>14,}")):
            print(f"{key:<10}" + "".join(fmt.format(rows[n][key]) for n in sizes))
    if worst:
        verdict = "meets" if worst <= TARGET_S else "MISSES"
        print(f"\n10^6 grains on {args.cores} cores: {worst:.2f} s (prepare + replay), "
              f"{verdict} the target of {TARGET_S:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
