"""`grainlab predict TRACE`: how the program will scale, from its grain graph
replayed on simulated cores (docs/predict.md)."""
from __future__ import annotations

import argparse
import json

from ..analysis.analysis import Analysis
from ._output import Progress, fmt_ns, warn_incomplete

HELP = "predict the speed-up on P cores by replaying the grain graph"
EPILOG = """\
examples:
  OMP_NUM_THREADS=1 grainlab record -o one.parquet -- ./build/examples/fib 25 8
  grainlab predict one.parquet
  grainlab predict --cores 1,2,4,8,16,32,64 --json one.parquet
  grainlab predict --what-if "fib.c:32=0.5" one.parquet     # those grains 2x cheaper
  grainlab predict --merge-below 6 one.parquet              # a cutoff at depth 6

Record at 1 thread (no other program busy); the replay adds the runtime's
costs a 1-thread run never paid (--steal-ns, --defer-ns, --lock-ns).
"""


def add_parser(subparsers):
    from ..metrics.predict import Costs
    d = Costs()
    p = subparsers.add_parser("predict", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace to replay (best recorded at 1 thread)")
    p.add_argument("--cores", default="1,2,4,8,16", metavar="P,P,...",
                   help="core counts to predict (default 1,2,4,8,16)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--what-if", metavar="LOCATION=k",
                   help="also replay with that source location's grains k times their time")
    p.add_argument("--merge-below", type=int, metavar="DEPTH",
                   help="also replay with tasks deeper than DEPTH merged into their root grain")
    p.add_argument("--wti", metavar="FACTOR|FILE",
                   help="work time inflation at P > 1: a factor, or `grainlab scaling --json` output")
    p.add_argument("--guard", default="auto", choices=("auto", "cpu", "cap", "none"),
                   help="against preempted grains: CPU time where recorded and a per-location "
                        "cap (auto, default), one of them, or none")
    p.add_argument("--whole", action="store_true",
                   help="time the whole program, serial code before the first parallel region "
                        "and after the last included (default: from the first region's start "
                        "to the last one's end)")
    p.add_argument("--region", metavar="N|LOCATION", help="replay one parallel region only")
    p.add_argument("--steal-ns", type=int, default=d.steal_ns, help=f"cost of a steal (default {d.steal_ns})")
    p.add_argument("--defer-ns", type=int, default=d.defer_ns,
                   help=f"cost of deferring a task (default {d.defer_ns})")
    p.add_argument("--lock-ns", type=int, default=d.lock_ns,
                   help=f"steals from one deque at least this far apart (default {d.lock_ns})")
    p.add_argument("--deque-cap", type=int, default=d.deque_cap,
                   help="tasks a deque holds before the creator runs a new one itself "
                        f"(default {d.deque_cap}, libomp's; 0: no limit)")
    p.add_argument("--work-first", action="store_true",
                   help="a creating core runs the child first (Cilk), not the parent (libomp)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..metrics.predict import Costs, parse_cores, wti_model
    cores = parse_cores(args.cores)
    costs = Costs(args.steal_ns, args.defer_ns, args.lock_ns, args.work_first,
                  args.deque_cap).check()
    wti = None if args.wti is None else wti_model(args.wti)
    a = Analysis(args.trace, region=args.region, progress=Progress())
    out = a.predict(cores, what_if=args.what_if, merge_below=args.merge_below, costs=costs,
                    wti=wti, guard=args.guard, whole=args.whole)
    print(json.dumps(out) if args.json else render(out))
    warn_incomplete(a)
    return 0


def render(r: dict) -> str:
    g = r["guard"]
    lines = [f"trace        {r['trace']}",
             f"work         {fmt_ns(r['work_ns'])}   span {fmt_ns(r['span_ns'])}   "
             f"parallelism {r['parallelism']:.1f}",
             f"burdened     span {fmt_ns(r['burdened_span_ns'])} "
             f"({r['costs']['steal_ns'] + r['costs']['defer_ns']} ns per spawn, "
             f"{r['tasks']} tasks)   parallelism {r['burdened_parallelism']:.1f}",
             f"guard        {_guard(g)}", ""]
    lines += _table(r, r.get("what_if"))
    if r.get("what_if"):
        lines += ["", f"what-if: {r['what_if']['change']}"]
    return "\n".join(lines)


def _guard(g: dict) -> str:
    cpu = "CPU time" if g.get("cpu_time") else "wall time (no CPU time recorded)"
    capped = f", {g['capped_grains']} grains capped ({fmt_ns(g['capped_ns'])})" \
        if g.get("capped_grains") else ", no grain capped"
    return f"{g['guard']}: {cpu}{capped}"


def _table(r: dict, alt: dict | None) -> list[str]:
    head = f"{'cores':>6} {'predicted':>11} {'speedup':>8} {'work/P':>11} {'span':>11} " \
           f"{'burdened':>11} {'speedup range':>15}"
    if alt:
        head += f" {'what-if':>11} {'speedup':>8} {'gain':>6}"
    out = [head]
    for i, P in enumerate(r["cores"]):
        row = (f"{P:>6} {fmt_ns(r['predicted_ns'][i]):>11} {r['speedup'][i]:>8.2f} "
               f"{fmt_ns(r['work_over_p_ns'][i]):>11} {fmt_ns(r['span_ns']):>11} "
               f"{fmt_ns(r['burdened_span_ns']):>11} "
               f"{r['speedup_lower'][i]:>6.2f} - {r['speedup_upper'][i]:<6.2f}")
        if alt:
            row += (f" {fmt_ns(alt['predicted_ns'][i]):>11} {alt['speedup_vs_baseline'][i]:>8.2f}"
                    f" {alt['gain'][i]:>5.2f}x")
        out.append(row)
    return out
