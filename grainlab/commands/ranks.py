"""`grainlab ranks TRACE|FOLDER... [--json] [--html FILE] [--workers N]`: the
traces of one MPI run side by side, one row per rank (grainlab.cluster.ranks;
docs/cluster.md)."""
from __future__ import annotations

import argparse
import json
import math
import sys

from ..cluster.ranks import ranks
from ..errors import UsageError
from ._output import Progress, align_columns, fmt_ns
from .characterize import add_cluster_options

HELP = "the traces of one MPI run side by side: per rank, and the imbalance across ranks"
EPILOG = """\
examples:
  mpirun -np 4 grainlab record -o run.%r.parquet -- ./build/examples/mpi_stencil 256 256 10 32 3
  grainlab ranks run.*.parquet
  grainlab ranks --workers 4 --json run.*.parquet
  grainlab ranks --html ranks.html run.*.parquet     # the rank x time figure

outside OpenMP: the time no parallel region covers (MPI calls, serial code).
work max/mean: 1 is even; the critical rank has the most work (the others
wait for it at the next halo exchange or collective).
"""


def add_parser(subparsers):
    p = subparsers.add_parser("ranks", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one trace per rank, or folders")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--html", metavar="FILE", help="also write the rank x time figure there")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_cluster_options(p)
    p.set_defaults(run=run)


def run(args) -> int:
    progress = Progress(quiet=args.quiet)
    r = ranks(list(args.traces), workers=args.workers, scheduler=args.scheduler,
              progress=progress)
    if r.warning:
        print(f"grainlab: warning: {r.warning}", file=sys.stderr)
    for trace, error in r.failed.items():
        print(f"grainlab: skipped {trace}: {error}", file=sys.stderr)
    if args.html:
        from ..app.rank_figures import rank_timeline
        try:
            rank_timeline(r).write_html(args.html, include_plotlyjs=True)
        except OSError as e:
            raise UsageError(f"cannot write {args.html}: {e.strerror}") from None
    print(json.dumps(_plain(r.report())) if args.json else render(r))
    return 1 if r.failed else 0


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x.item() if hasattr(x, "item") else x


def render(r) -> str:
    head = ["rank", "host", "thr", "duration", "in OpenMP", "outside", "work", "span",
            "parallelism", "idle", "top problem"]
    cells = [head]
    for _, x in r.table.iterrows():
        idle_pct = 100.0 * x["idle_ns"] / max(1, x["threads"] * x["duration_ns"])
        top = (f"{x['top_problem']} {x['top_problem_percent']:.0f}% at {x['top_problem_location']}"
               if x["top_problem"] else "-")
        cells.append([str(x["rank"]), str(x["host"] or "-"), str(x["threads"]),
                      fmt_ns(x["duration_ns"]), fmt_ns(x["in_openmp_ns"]),
                      fmt_ns(x["outside_openmp_ns"]), fmt_ns(x["work_ns"]), fmt_ns(x["span_ns"]),
                      f"{x['parallelism']:.2f}", f"{idle_pct:.0f}%", top])
    lines = align_columns(cells, left={1, 10})
    imb = r.imbalance
    lines.append("")
    lines.append(f"imbalance  work max/mean {imb['work_max_over_mean']:.2f}, in OpenMP max/mean "
                 f"{imb['in_openmp_max_over_mean']:.2f}; critical rank {imb['critical_rank']} "
                 f"(most work); mean time outside OpenMP {fmt_ns(imb['outside_openmp_mean_ns'])}")
    if r.failed:
        lines.append(f"skipped    {len(r.failed)} trace(s) that could not be read (above)")
    return "\n".join(lines)
