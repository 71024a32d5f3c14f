"""`grainlab synth`: write a synthetic trace of a chosen shape and size."""
from __future__ import annotations

import argparse
import sys
import time

from ..errors import UsageError

HELP = "write a synthetic trace (fork-join, spine, loop, random) for tests and benchmarks"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "synth", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
        epilog="examples:\n"
               "  grainlab synth --shape fork-join --grains 1000000 -o fj.parquet\n"
               "  grainlab synth --shape loop --grains 5000 --threads 4 -o loop.parquet\n"
               "  grainlab synth --shape random --grains 300 --seed 7 --jitter 0.3 -o r.parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from ..synth import SHAPES
    p.add_argument("--shape", required=True, choices=SHAPES, help="program shape")
    p.add_argument("--grains", required=True, type=int, metavar="N",
                   help="number of grains (tasks, or chunks for --shape loop)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="trace file to write")
    p.add_argument("--threads", type=int, default=2, help="threads in the team (default 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--jitter", type=float, default=0.0,
                   help="lognormal sigma on grain durations; 0 (default) = exact, fixed durations")
    p.add_argument("--work-ns", type=int, default=2000, help="a grain's work in ns (default 2000)")
    p.add_argument("--spine-length", type=int, default=64,
                   help="spine shape: number of chained parents (default 64)")
    p.add_argument("--chunk-size", type=int, default=4,
                   help="loop shape: iterations per chunk (default 4)")
    p.add_argument("--buffer-events", type=int, default=65536,
                   help="events per row group, as the collector's buffer (default 65536)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..synth import Timing, generate
    if args.jitter < 0:
        raise UsageError("--jitter must be >= 0")
    if args.work_ns < 1:
        raise UsageError("--work-ns must be >= 1")
    if args.buffer_events < 16:
        raise UsageError("--buffer-events must be >= 16")
    extra = {}
    if args.shape == "spine":
        if args.spine_length < 1:
            raise UsageError("--spine-length must be >= 1")
        extra["length"] = args.spine_length
    if args.shape == "loop":
        if args.chunk_size < 1:
            raise UsageError("--chunk-size must be >= 1")
        extra["chunk_size"] = args.chunk_size
    start = time.perf_counter()
    try:
        generate(args.output, args.shape, args.grains, threads=args.threads, seed=args.seed,
                 timing=Timing(work_ns=args.work_ns, jitter=args.jitter),
                 buffer_events=args.buffer_events, **extra)
    except OSError as e:
        raise UsageError(f"{args.output}: cannot write ({e.strerror or e})") from None
    if not args.quiet:
        print(f"grainlab: wrote {args.output} ({args.shape}, {args.grains} grains, "
              f"{args.threads} threads) in {time.perf_counter() - start:.2f} s", file=sys.stderr)
    return 0
