"""`grainlab regions TRACE [--workers N | --scheduler ADDRESS] [--json]`: one
large trace in parts: each top-level parallel region analyzed on its own (on
Dask workers with --workers), and the whole run's span composed from the
regions' spans and the serial part between them (grainlab.cluster.parts;
docs/cluster.md)."""
from __future__ import annotations

import argparse
import json

from ..cluster.parts import compose
from ._output import Progress, align_columns, fmt_ns
from .characterize import add_cluster_options

HELP = "analyze a trace's parallel regions one by one (on Dask with --workers) and compose its span"
EPILOG = """\
examples:
  grainlab regions trace.parquet
  grainlab regions --workers 4 --json trace.parquet

span = serial part + the sum of the regions' spans: the initial task runs the
regions one after another, so every path crosses each region from its fork to
its join. Each region's numbers are those of `grainlab analyze --region N`.
"""


def add_parser(subparsers):
    p = subparsers.add_parser("regions", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_cluster_options(p)
    p.set_defaults(run=run)


def run(args) -> int:
    progress = Progress(quiet=args.quiet)
    c = compose(args.trace, workers=args.workers, scheduler=args.scheduler, progress=progress)
    print(json.dumps(c) if args.json else render(c))
    return 0


def render(c: dict) -> str:
    head = ["region", "grains", "work", "span", "parallelism", "top problem", "where"]
    cells = [head] + [[str(r["region"]), str(r["grains"]), fmt_ns(r["work_ns"]),
                       fmt_ns(r["span_ns"]), f"{r['parallelism']:.2f}", r["top_problem"] or "-",
                       r["description"]] for r in c["regions"]]
    lines = align_columns(cells, left={5, 6})
    regions = sum(r["span_ns"] for r in c["regions"])
    lines += ["", f"span  {fmt_ns(c['span_ns'])} = serial part {fmt_ns(c['serial_ns'])} + "
                  f"{len(c['regions'])} region(s) {fmt_ns(regions)}"]
    return "\n".join(lines)
