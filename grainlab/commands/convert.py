"""`grainlab convert SPOOL [-o TRACE]`: turn a spool into a trace by hand.

The collector converts its spool itself when the run ends (or, with
GRAINLAB_CONVERT=no, leaves it); `grainlab.load` converts a spool a killed run
left behind. This command does the same on demand, e.g. to write the trace
elsewhere.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from ..trace.spool import SUFFIX, convert, wait_until_unlocked
from ..trace.trace import load

HELP = "convert a collector spool (TRACE.spool) into a Parquet trace"


def add_parser(subparsers):
    p = subparsers.add_parser("convert", help=HELP, description=HELP[0].upper() + HELP[1:] + ".")
    p.add_argument("spool", metavar="SPOOL", help="the spool file (e.g. fib.parquet.spool)")
    p.add_argument("-o", "--output", metavar="TRACE", default=None,
                   help="trace to write (default: SPOOL without .spool)")
    p.set_defaults(run=run)


def run(args) -> int:
    spool = Path(args.spool)
    if not spool.is_file():
        raise UsageError(f"convert: {spool}: no such file")
    if args.output:
        out = Path(args.output)
    elif spool.name.endswith(SUFFIX):
        out = spool.with_name(spool.name[: -len(SUFFIX)])
    else:
        raise UsageError(f"convert: {spool} does not end in {SUFFIX}: give -o TRACE")
    wait_until_unlocked(spool, out)
    convert(spool, out)  # TraceError -> one line
    trace = load(out)
    state = "complete" if trace.complete else "incomplete: " + "; ".join(trace.problems)
    print(f"grainlab: wrote {out} ({len(trace.events)} events, {state})", file=sys.stderr)
    return 0
