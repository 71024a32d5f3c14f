"""`grainlab sweep --cutoffs 2,4,8 [--reps 3] [--threads N] -o DIR -- PROGRAM ARGS with {}`:
run a program at several cutoffs, each several times, alone, on one thread
and under the collector, into the folder cutoff_tuning.ipynb reads
(grainlab.suite.cutoffs; docs/notebooks.md)."""
from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..suite import cutoffs as C
from ._output import program_command

HELP = "time and record a program at several cutoffs, several times each (for cutoff tuning)"

EPILOG = """\
'{}' in the arguments is replaced by each cutoff (several '{}' get the same value):
  grainlab sweep --cutoffs 2,4,6,8,10,12 -o cutoffs/fib -- build/examples/fib 34 {}
  grainlab sweep --cutoffs 1024,16384,262144 -o cutoffs/sort -- build/examples/sort 2097152 {} {} 20
DIR gets sweep.csv (times per cutoff and repetition) and one trace per run."""


def add_parser(subparsers):
    p = subparsers.add_parser("sweep", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cutoffs", required=True, metavar="LIST",
                   help="comma-separated cutoff values")
    p.add_argument("--reps", type=int, default=3, metavar="N",
                   help="repetitions per cutoff (default 3)")
    p.add_argument("--threads", type=int, default=2, metavar="N",
                   help="OMP_NUM_THREADS of the timed runs (default 2)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS")
    p.set_defaults(run=run)


def run(args) -> int:
    command = program_command(args.program,
                              "no program given (grainlab sweep ... -- PROGRAM ARGS with {})")
    try:
        values = [int(v) for v in args.cutoffs.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--cutoffs {args.cutoffs}: expected integers separated by commas") \
            from None
    say = None if args.quiet else (lambda m: print(f"grainlab: {m}", file=sys.stderr, flush=True))
    C.sweep(command, values, args.reps, args.output, args.threads, say)
    if say:
        say(f"wrote {args.output}/{C.SWEEP_CSV} and {len(values) * args.reps} traces")
    return 0
