"""`grainlab characterize TRACE|FOLDER... [--csv|--json] [-o FILE]`: one row of
task-graph and per-grain properties per trace (grainlab.characterize;
docs/characterize.md)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ..suite.characterization import characterize
from ..errors import GrainlabError, UsageError
from ._output import Progress, align_columns

HELP = "one row of task-graph and grain properties per trace (for comparing programs)"

# The text table shows these; --csv and --json carry every column.
TEXT_COLUMNS = [("trace", "trace"), ("grains", "grains"), ("grain_work_median_ns", "work med ns"),
                ("grain_work_cv", "work cv"), ("depth_max", "depth"),
                ("join_degree_mean", "join deg"), ("span_ns", "span ns"),
                ("parallelism", "parallelism"), ("parallel_benefit_median", "benefit med"),
                ("idle_fraction", "idle")]


def add_parser(subparsers):
    p = subparsers.add_parser("characterize", help=HELP, description=HELP[0].upper() + HELP[1:]
                              + ". A folder stands for its *.parquet traces.")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files or folders of them")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV, every column")
    fmt.add_argument("--json", action="store_true", help="JSON list of rows, every column")
    p.add_argument("-o", "--output", metavar="FILE", help="write there instead of stdout")
    p.add_argument("--keep-going", action="store_true",
                   help="leave out a trace that cannot be read (one line each) instead of stopping")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_cluster_options(p)
    p.set_defaults(run=run)


def add_cluster_options(p):
    """--workers N / --scheduler ADDRESS: analyze the traces on Dask."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, metavar="N",
                   help="analyze the traces on a local Dask cluster of N worker processes "
                        "(a trace that fails is one line; the others are kept)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="analyze the traces on the Dask cluster of this scheduler "
                        "(e.g. tcp://head:8786; the traces must be on a shared file system)")


def run(args) -> int:
    progress = Progress(quiet=args.quiet)
    skipped = []

    def tell(msg):
        if msg.startswith("skipped "):
            skipped.append(msg)
            print(f"grainlab: {msg}", file=sys.stderr)
        else:
            progress(msg)
    df = characterize(list(args.traces), keep_going=args.keep_going, progress=tell,
                      workers=args.workers, scheduler=args.scheduler)
    if df.empty:
        raise GrainlabError("no trace could be read")
    if args.csv:
        text = df.to_csv(index=False)
    elif args.json:
        rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in r.items()} for r in df.to_dict(orient="records")]
        text = json.dumps(rows, indent=1, default=_plain) + "\n"
    else:
        text = _table(df)
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    else:
        sys.stdout.write(text)
    return 1 if skipped else 0


def _plain(x):
    return x.item() if hasattr(x, "item") else str(x)


def _table(df) -> str:
    cells = [[h for _, h in TEXT_COLUMNS]]
    for _, r in df.iterrows():
        line = []
        for col, _ in TEXT_COLUMNS:
            v = r[col]
            if col == "trace":
                line.append(Path(str(v)).name)
            elif isinstance(v, float):
                line.append("-" if math.isnan(v) else f"{v:.3g}")
            else:
                line.append(str(v))
        cells.append(line)
    return "\n".join(align_columns(cells, left={0})) + "\n"
