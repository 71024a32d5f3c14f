"""`grainlab krd TRACE [--json] [--domain llc|numa|core] [--compare OTHER]`:
Kernel Reuse Distance histograms (docs/locality.md)."""
from __future__ import annotations

import argparse
import json

from ..analysis.analysis import Analysis
from ..metrics.krd import CLASSES, DOMAINS

HELP = "data reuse between grains: Kernel Reuse Distance histograms"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "krd", help=HELP, description=HELP[0].upper() + HELP[1:] + " (docs/locality.md).",
        epilog="examples:\n  grainlab krd mm.parquet\n"
               "  grainlab krd --domain numa --json mm.parquet | jq .far\n"
               "  grainlab krd row.parquet --compare z.parquet\n"
               "  grainlab krd --depend-bytes 64K stencil.parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--domain", choices=DOMAINS, default="llc",
                   help="merge the accesses of the CPUs sharing a last-level cache (default), "
                        "a NUMA node or a core")
    p.add_argument("--compare", metavar="OTHER",
                   help="another trace (e.g. another schedule of the same program): both "
                        "histograms and their difference (OTHER minus TRACE)")
    p.add_argument("--depend-bytes", metavar="N",
                   help="for a trace without grain_data() annotations: each `depend` item is "
                        "a block of N bytes (K, M, G suffixes)")
    p.add_argument("--l2", type=int, metavar="BYTES", help="L2 size (close reuses; "
                   "default: the trace's topology)")
    p.add_argument("--llc", type=int, metavar="BYTES", help="last-level cache size (near "
                   "reuses; default: the trace's topology)")
    p.set_defaults(run=run)


def _of(path, args) -> dict:
    return Analysis(path).krd(args.domain, l2=args.l2, llc=args.llc,
                              depend_bytes=args.depend_bytes)


def run(args) -> int:
    mine = _of(args.trace, args)
    out = mine
    if args.compare:
        other = _of(args.compare, args)
        out = dict(mine, compare=other,
                   difference={c: other[c] - mine[c] for c in (*CLASSES, "accesses")})
    print(json.dumps(out) if args.json else render(mine, args.trace,
                                                   other if args.compare else None,
                                                   args.compare))
    return 0


def _bar(h: dict) -> str:
    n = max(h["accesses"], 1)
    return "  ".join(f"{c} {h[c]:>9} ({100 * h[c] / n:5.1f}%)" for c in CLASSES)


def render(h: dict, path, other=None, other_path=None) -> str:
    kib = lambda b: f"{b / 1024:.0f} KiB" if b < 1 << 20 else f"{b / (1 << 20):.0f} MiB"  # noqa: E731
    lines = [f"trace      {path}",
             f"domains    {len(h['domains'])} ({h['domain_kind']}); close <= L2 {kib(h['l2_bytes'])}, "
             f"near <= LLC {kib(h['llc_bytes'])}, far beyond, inf = first uses",
             f"accesses   {h['accesses']}", f"all        {_bar(h)}"]
    lines += [f"domain {d['domain']:<3} {_bar(d)}" for d in h["domains"]] if len(h["domains"]) > 1 else []
    if other is not None:
        lines += [f"compare    {other_path}: {other['accesses']} accesses",
                  f"other      {_bar(other)}",
                  "difference " + "  ".join(f"{c} {other[c] - h[c]:+d}" for c in CLASSES)]
    lines.append("HISTOGRAM (reuse distance up to, accesses)")
    peak = max((b["count"] for b in h["bins"]), default=1) or 1
    bins = h["bins"]
    first = next((i for i, b in enumerate(bins) if b["count"]), len(bins) - 1)
    for b in bins[first:]:
        up = "INF" if b["upper_bytes"] is None else kib(b["upper_bytes"]) if b["upper_bytes"] >= 1024 \
            else f"{b['upper_bytes']} B"
        lines.append(f"  {up:>9} {b['count']:>10}  {'#' * round(40 * b['count'] / peak)}")
    lines.append("SOURCE LOCATIONS (by accesses)")
    lines += [f"  {loc['location'][:44]:<44} {loc['accesses']:>8}  {_bar(loc)}"
              for loc in h["locations"][:10]]
    return "\n".join(lines)
