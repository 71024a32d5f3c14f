"""`grainlab compare A B`: work deviation of every grain of run B against the same
grain (matched by identity) in reference run A (usually 1 thread), per grain and
per source location, plus the work-time-inflation terms WTI, OVR and the
speed-up bound (Olivier et al., "Characterizing and mitigating work time
inflation in task parallel programs", SC 2012).
"""
from __future__ import annotations

import argparse
import json
import os

from .. import problems as P
from ..analysis.analysis import Analysis
from ..errors import GrainlabError, UsageError
from ._output import Progress, fmt_ns, warn_incomplete

HELP = "work deviation between two runs of the same program, grain by grain"
EPILOG = """\
examples:
  OMP_NUM_THREADS=1 grainlab record -o one.parquet -- ./build/examples/fib 25 8
  OMP_NUM_THREADS=2 grainlab record -o two.parquet -- ./build/examples/fib 25 8
  grainlab compare one.parquet two.parquet
  grainlab compare --threshold work_deviation=1.2 --json one.parquet two.parquet

work deviation = grain work in B / the same grain's work in A; problem when > 2
(work inflation; lower it with --threshold work_deviation=1.2).
"""


def add_parser(subparsers):
    p = subparsers.add_parser("compare", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="reference trace (e.g. 1 thread)")
    p.add_argument("b", help="trace to compare against it")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="override the work_deviation threshold (default 2)")
    p.add_argument("--config", metavar="FILE", help="TOML file with a [thresholds] table")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="grains and source locations to list (default 10)")
    p.add_argument("--all", action="store_true",
                   help="list every matched grain and every source location")
    p.set_defaults(run=run)


def run(args) -> int:
    th = P.thresholds(args.config, args.threshold)["work_deviation"]
    if args.top < 0:
        raise UsageError("--top must be >= 0")
    progress = Progress()
    a, b = Analysis(args.a, progress=progress), Analysis(args.b, progress=progress)
    check_same_program(a.trace, b.trace)
    progress("matching grains by identity")
    report = b.compare(a, threshold=float(th)).report(None if args.all else args.top)
    if args.json:
        print(json.dumps(report))
    else:
        print(render(report))
    warn_incomplete(a)
    warn_incomplete(b)
    return 0


def check_same_program(ta, tb):
    def exe(t):
        cmd = t.meta.get("command")
        return os.path.basename(str(cmd[0])) if isinstance(cmd, list) and cmd else None
    a, b = exe(ta), exe(tb)
    if a and b and a != b:
        raise GrainlabError(f"{ta.path} and {tb.path} are traces of different programs "
                            f"({a} vs {b}): grains can only be matched within one program")


def render(r: dict) -> str:
    td = r["time_decomposition"]
    out = [f"A (reference)  {r['a']}  ({r['threads_a']} thread(s), {r['grains_a']} grains)",
           f"B              {r['b']}  ({r['threads_b']} thread(s), {r['grains_b']} grains)",
           f"program        {r['program']}",
           f"matched        {r['matched']} grains by identity "
           f"({r['only_a']} only in A, {r['only_b']} only in B)",
           f"work           A {fmt_ns(r['work_a_ns'])}  B {fmt_ns(r['work_b_ns'])}  "
           f"deviation {r['work_deviation']:.3g}",
           f"inflated       {r['inflated']['grains']} grains ({r['inflated']['percent']:.1f}%) "
           f"with work deviation > {r['threshold']:.3g}, "
           f"{r['inflated']['on_critical_path']} on B's critical path",
           f"Olivier 2012   WTI {td['WTI']:.3g}, OVR {td['OVR']:.3g}, "
           f"speed-up bound N/(OVR*WTI) {td['speedup_bound']:.3g} (over A's work alone)",
           f"measured       speed-up T_A/T_B {td['speedup']:.3g} = (N_B/N_A)/(OVR_rel*WTI) with "
           f"OVR relative to A's {td['OVR_relative']:.3g} (grainlab scaling)",
           "", "SOURCE LOCATIONS (by work in B)",
           f"  {'location':<40} {'grains':>8} {'work A':>10} {'work B':>10} {'deviation':>9} {'inflated':>8}"]
    for loc in r["locations"]:
        out.append(f"  {loc['location']:<40} {loc['grains']:>8} {fmt_ns(loc['work_a_ns']):>10} "
                   f"{fmt_ns(loc['work_b_ns']):>10} {loc['work_deviation']:>9.3g} {loc['inflated']:>8}")
    out += ["", "GRAINS (largest work deviation first)",
            f"  {'grain':<8} {'identity':<28} {'location':<28} {'work A':>10} {'work B':>10} {'deviation':>9}"]
    for g in r["grains"]:
        out.append(f"  #{g['grain']:<7} {g['identity']:<28} {g['location']:<28} "
                   f"{fmt_ns(g['work_a_ns']):>10} {fmt_ns(g['work_b_ns']):>10} "
                   f"{g['work_deviation']:>9.3g}")
    return "\n".join(out)
