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
  grainlab predict --runs two.parquet one.parquet           # contention fitted from a 2-thread run
  grainlab predict --runs 2=1.6 one.parquet                 # ... or from a measured speed-up

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
    p.add_argument("--runs", action="append", metavar="TRACE|P=SPEEDUP",
                   help="measured runs of the same program at more threads (repeat the option, "
                        "or separate them by commas): traces (each "
                        "location's work time inflation is fitted from them), or P=SPEEDUP, "
                        "a measured speed-up at P threads (one factor for every grain); "
                        "docs/predict.md, Contention")
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
    traces, measured = split_runs(args.runs or [])
    a = Analysis(args.trace, region=args.region, progress=Progress())
    out = a.predict(cores, what_if=args.what_if, merge_below=args.merge_below, costs=costs,
                    wti=wti, guard=args.guard, whole=args.whole, runs=traces,
                    measured=measured)
    print(json.dumps(out) if args.json else render(out))
    warn_incomplete(a)
    return 0


def split_runs(items) -> tuple[list, dict]:
    """--runs items: trace paths, and P=SPEEDUP pairs ({P: speed-up})."""
    from ..errors import UsageError
    traces, measured = [], {}
    for x in [y for item in items for y in str(item).split(",") if y.strip()]:
        left, eq, right = str(x).partition("=")
        if not eq:
            traces.append(x)
            continue
        try:
            P, sp = int(left), float(right)
        except ValueError:
            P, sp = 0, 0.0
        if P < 2 or not sp > 0:
            raise UsageError(f"--runs {x}: give a trace, or P=SPEEDUP with P >= 2 threads and "
                             "the speed-up measured there (e.g. 2=1.7)")
        measured[P] = sp
    if traces and measured:
        raise UsageError("--runs: give traces or measured speed-ups, not both")
    return traces, measured


def render(r: dict) -> str:
    g = r["guard"]
    lines = [f"trace        {r['trace']}",
             f"work         {fmt_ns(r['work_ns'])}   span {fmt_ns(r['span_ns'])}   "
             f"{r.get('parallelism_name', 'parallelism')} {r['parallelism']:.3g}",
             f"burdened     span {fmt_ns(r['burdened_span_ns'])} "
             f"({r['costs']['steal_ns'] + r['costs']['defer_ns']} ns per spawn, "
             f"{r['tasks']} tasks)   burdened parallelism {r['burdened_parallelism']:.3g}",
             f"guard        {_guard(g)}", ""]
    lines[-1:-1] = _serial(r)
    lines += _table(r, r.get("what_if"))
    if r.get("what_if"):
        lines += ["", f"what-if: {r['what_if']['change']}"]
    lines += _contention(r)
    return "\n".join(lines)


def _serial(r: dict) -> list[str]:
    s = r.get("serial") or {}
    if not s.get("serial_ns"):
        return ["serial       none on the critical path (the initial task's code weighs nothing "
                "here)"]
    start = f", {fmt_ns(s['serial_start_ns'])} of it before the first parallel region" \
        if s.get("serial_start_ns") else ""
    return [f"serial       {fmt_ns(s['serial_ns'])} of the initial task on the critical path"
            f"{start}: at most {s['amdahl_speedup']:.1f}x on any number of cores (Amdahl)"]


def _contention(r: dict) -> list[str]:
    """The inflation used at each P, where it came from, and the range."""
    c, rng = r.get("contention"), r.get("range")
    out = []
    if c:
        out += ["", f"contention   fitted, {c['model']}, from {c['source']}",
                "            busy  inflation  predicted  speedup"]
        out += [f"  at {P:>3} cores {b:>5.1f} {f:>9.2f}x {fmt_ns(t):>10} {sp:>8.2f}"
                for P, b, f, t, sp in zip(r["cores"], c["concurrency"], c["inflation"],
                                          c["predicted_ns"], c["speedup"])]
        out.append(f"  other grains A = {c['default_amplitude']:.2f}")
        for f in c["locations"][:5]:
            meas = ", ".join(f"{m['inflation']:.2f}x at {m['threads']} threads "
                             f"({m['concurrency']:.1f} busy)" for m in f["measured"])
            out.append(f"  {f['location']}: A = {f['amplitude']:.2f} (measured {meas}); "
                       f"{f['inflation'][-1]:.2f}x at {r['cores'][-1]} cores")
        out += [f"  note: {n}" for n in c["notes"]]
    if rng:
        p = rng["pessimistic"]
        low = "the fitted model or the pessimistic bound, the slower" if c else \
            "the pessimistic bound"
        out += ["", f"range        speed-up from {low}, to the contention-free prediction "
                    f"({p['source']}; {p['model']}, A = {p['default_amplitude']:g}); "
                    "memory-bound code lands low in it"]
        out += [f"  at {P:>3} cores {lo:>6.2f} - {hi:<6.2f} (bound's inflation {f:.2f}x)"
                for P, (lo, hi), f in zip(r["cores"], rng["speedup"], p["inflation"])]
        out += [f"  note: {n}" for n in p["notes"]]
        if not c:
            out.append("  measured runs at more threads (--runs) fit the inflation instead")
    return out


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
