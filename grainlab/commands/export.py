"""`grainlab export TRACE --graphml OUT | --perfetto OUT [--reduced]`: the grain
graph as GraphML (yEd, Cytoscape) or as a Perfetto / Chrome trace (JSON)."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..errors import GrainlabError, UsageError

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
    outputs = [Path(p) for p in (args.graphml, args.perfetto) if p]
    for out in outputs:
        _check_writable(out)

    progress = _Progress(quiet=args.quiet)
    g = load_graph(args.trace, metrics=not args.no_metrics, progress=progress)
    if args.graphml:
        with progress.step(f"writing {args.graphml}"):
            from ..export import write_graphml
            info = _atomic(Path(args.graphml), lambda p: write_graphml(g, p, reduced=args.reduced))
        print(f"{args.graphml}: GraphML{' (reduced)' if args.reduced else ''}, "
              f"{info['nodes']} nodes, {info['edges']} edges, {_mb(info['bytes'])}")
    if args.perfetto:
        with progress.step(f"writing {args.perfetto}"):
            from ..export import write_perfetto
            info = _atomic(Path(args.perfetto), lambda p: write_perfetto(g, p))
        print(f"{args.perfetto}: trace-event JSON, {info['grain_slices']} grain slices, "
              f"{info['slices']} slices, {info['flows']} flows, {_mb(info['bytes'])}")
    return 0


def load_graph(path, metrics=True, progress=None):
    """Trace -> grain graph (with metric columns when grainlab.metrics exists)."""
    progress = progress or _Progress(quiet=True)
    from ..trace import load
    with progress.step("loading trace"):
        trace = load(path)
    if not trace.complete:
        print(f"grainlab: warning: {trace.path} is incomplete: "
              + "; ".join(trace.problems), file=sys.stderr)
    with progress.step("building grain graph"):
        g = trace.graph()
    _add_source_locations(g, trace)
    if metrics:
        try:
            from ..metrics import compute_all
        except ImportError:
            compute_all = None
        if compute_all is not None:
            with progress.step("computing metrics"):
                compute_all(g)
    return g


def _add_source_locations(g, trace) -> None:
    """`source` column (file:line (function)) from the code addresses, for labels."""
    if "source" in g.grains.columns:
        return
    try:
        from ..symbolize import grain_locations
    except ImportError:
        return
    g.grains["source"] = grain_locations(g, trace.meta).to_numpy()


def _check_writable(out: Path) -> None:
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise UsageError(f"{out}: is a directory")
    if not parent.is_dir():
        raise UsageError(f"{out}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{out}: directory {parent} is not writable")


def _atomic(out: Path, write):
    """Write to a temporary file next to `out` and rename: no half-written
    export is left behind by an error or ^C."""
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        info = write(tmp)
        os.replace(tmp, out)
    except OSError as e:
        raise GrainlabError(f"{out}: cannot write ({e.strerror or e})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return info


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


class _Progress:
    """One stderr line per step that took long enough to notice."""

    def __init__(self, quiet: bool):
        self.quiet = quiet or not sys.stderr.isatty()

    def step(self, what: str):
        progress = self

        class _Step:
            def __enter__(self):
                self.t0 = time.perf_counter()
                if not progress.quiet:
                    print(f"grainlab: {what}...", file=sys.stderr, flush=True)

            def __exit__(self, *exc):
                dt = time.perf_counter() - self.t0
                if not progress.quiet and exc[0] is None and dt >= 1.0:
                    print(f"grainlab: {what}: {dt:.1f} s", file=sys.stderr, flush=True)
        return _Step()
