"""`grainlab suite [--size S] [--threads N] [--only NAMES] [-o DIR]`: record the
example suite (examples/suite*.tsv) and characterize it into DIR, the folder
the notebooks read (grainlab.suite; docs/characterize.md)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..suite import runner as S
from ..suite.characterization import characterize
from .characterize import add_cluster_options

HELP = "record every suite program at a size and characterize the traces into one folder"


def add_parser(subparsers):
    p = subparsers.add_parser("suite", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("--size", choices=[*S.SIZES, "all"], default="small",
                   help="input size (default small; all: the three)")
    p.add_argument("--threads", type=int, default=2, metavar="N",
                   help="OMP_NUM_THREADS for every run (default 2)")
    p.add_argument("--only", metavar="NAMES", help="comma-separated programs of the suite")
    p.add_argument("--table", action="append", metavar="FILE",
                   help="suite table(s) to use instead of examples/suite*.tsv")
    p.add_argument("-o", "--output", default="suite", metavar="DIR",
                   help="folder for the traces and characterize.csv (default suite/)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_cluster_options(p)   # the recording stays here, one program at a time
    p.set_defaults(run=run)


def run(args) -> int:
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"grainlab: {m}", file=sys.stderr,
                                                               flush=True))
    runs = S.read_tables(args.table or S.default_tables())
    only = set(args.only.split(",")) if args.only else None
    chosen = S.select(runs, args.size, only)
    out = Path(args.output)
    traces = S.record_all(chosen, out, args.threads, say)
    say(f"characterizing {len(traces)} trace(s)")
    df = characterize(traces, workers=args.workers, scheduler=args.scheduler,
                      progress=say if (args.workers or args.scheduler) else None)
    df.to_csv(out / "characterize.csv", index=False)
    say(f"wrote {len(traces)} trace(s) and {out / 'characterize.csv'}")
    return 0
