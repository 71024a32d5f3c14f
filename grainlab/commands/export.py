"""`grainlab export TRACE --graphml OUT | --perfetto OUT [--reduced]`: the grain
graph as GraphML (yEd, Cytoscape) or as a Perfetto / Chrome trace (JSON)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..analysis.analysis import Analysis
from ..errors import GrainlabError, UsageError
from ..outpath import resolve_output, temporary_beside
from ._output import Progress, warn_incomplete

HELP = "export the grain graph as GraphML (yEd, Cytoscape) or Perfetto JSON"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "export", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
        epilog="examples:\n"
               "  grainlab export fib.parquet --graphml fib.graphml\n"
               "  grainlab export fib.parquet --graphml fib.graphml --reduced\n"
               "  grainlab export fib.parquet --perfetto fib.json   "
               "# open in https://ui.perfetto.dev\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--graphml", metavar="OUT", help="write the grain graph as GraphML")
    p.add_argument("--perfetto", metavar="OUT",
                   help="write a Chrome trace-event JSON file (threads, grains, flows)")
    p.add_argument("--reduced", action="store_true",
                   help="GraphML of the reduced graph (fragments, forks and "
                        "book-keeping grouped; for display of large graphs)")
    p.add_argument("--no-metrics", action="store_true",
                   help="skip computing metrics (export graph columns only)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run)


def run(args) -> int:
    if not args.graphml and not args.perfetto:
        raise UsageError("export: give --graphml OUT and/or --perfetto OUT")
    if args.reduced and not args.graphml:
        raise UsageError("export: --reduced applies to --graphml only")
    for out in (args.graphml, args.perfetto):
        if out:
            resolve_output(out, "the export")      # before the long analysis

    progress = Progress(quiet=args.quiet)
    g = graph_for_export(Analysis(args.trace, progress=progress), metrics=not args.no_metrics)
    if args.graphml:
        progress(f"writing {args.graphml}")
        from ..export import write_graphml
        info = _atomic(Path(args.graphml), lambda p: write_graphml(g, p, reduced=args.reduced))
        print(f"{args.graphml}: GraphML{' (reduced)' if args.reduced else ''}, "
              f"{info['nodes']} nodes, {info['edges']} edges, {_mb(info['bytes'])}")
    if args.perfetto:
        progress(f"writing {args.perfetto}")
        from ..export import write_perfetto
        info = _atomic(Path(args.perfetto), lambda p: write_perfetto(g, p))
        print(f"{args.perfetto}: trace-event JSON, {info['grain_slices']} grain slices, "
              f"{info['slices']} slices, {info['flows']} flows, {_mb(info['bytes'])}")
    return 0


def graph_for_export(a, metrics=True):
    """The analysis's grain graph with a `source` column (file:line (function))
    for labels and, unless `metrics` is False, every metric column."""
    g = a.graph
    g.grains["source"] = a.locations.to_numpy()   # before the metrics: column order as ever
    if metrics:
        g = a.graph_with_metrics
    warn_incomplete(a)
    return g


def _atomic(out: Path, write):
    """Write to a temporary file next to `out` and rename: no half-written
    export is left behind by an error or ^C."""
    target = resolve_output(out, "the export")      # links followed, regular files only
    tmp = temporary_beside(target)
    try:
        info = write(tmp)
        os.replace(tmp, target)
    except OSError as e:
        raise GrainlabError(f"{out}: cannot write ({e.strerror or e})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return info


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"
