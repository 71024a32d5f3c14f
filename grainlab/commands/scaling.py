"""`grainlab scaling RUN...`: runs of one program at several thread counts,
side by side: speed-up against the baseline (fewest threads) and why it is
not N, as Speed-up_N = N / (OVR_N · WTI_N) (docs/metrics.md "Scaling"), and
which source locations' grains inflate most (grainlab.analysis.scaling).
"""
from __future__ import annotations

import argparse
import json

from ..analysis.analysis import scaling
from ..errors import UsageError
from ._output import Progress, fmt_ns, warn_incomplete

HELP = "speed-up over runs at several thread counts, split into overhead and work inflation"
EPILOG = """\
examples:
  for n in 1 2 4; do
    OMP_NUM_THREADS=$n grainlab record -o fib-$n.parquet -- ./build/examples/fib 25 8
  done
  grainlab scaling fib-1.parquet fib-2.parquet fib-4.parquet
  grainlab scaling --json fib-*.parquet
  grainlab scaling --baseline fib-2.parquet fib-*.parquet

speed-up = T_baseline / T_N, and speed-up = (N / N_baseline) / (OVR * WTI) exactly:
  WTI = work_N / work_baseline (work time inflation: grains and serial code)
  OVR = ((N * T_N) / work_N) / ((N_b * T_b) / work_b): time of all threads per
        unit of work (overhead and idle), relative to the baseline's
The runs must be of one program and input (same command line; grains matched
by identity): a mismatch is refused.
"""


def add_parser(subparsers):
    p = subparsers.add_parser("scaling", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="traces of one program and input at several thread counts")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--baseline", metavar="RUN",
                   help="the run speed-up is measured against (default: the fewest threads)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="source locations to list (default 10)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.top < 0:
        raise UsageError("--top must be >= 0")
    if len(args.runs) < 2:
        raise UsageError(f"scaling needs two or more runs of one program (got {len(args.runs)})")
    baseline = None
    if args.baseline is not None:
        if args.baseline not in args.runs:
            raise UsageError(f"--baseline {args.baseline} is not one of the runs given")
        baseline = args.runs.index(args.baseline)
    s = scaling(args.runs, baseline=baseline, progress=Progress(quiet=args.quiet))
    report = s.report(args.top)
    print(json.dumps(report) if args.json else render(report))
    for a in s.analyses:
        warn_incomplete(a)
    return 0


def _pct(x) -> str:
    return "-" if x is None else f"{100.0 * x:.0f}%"


def _num(x, fmt=".3g") -> str:
    return "-" if x is None else format(x, fmt)


def run_table(runs: list) -> list:
    """One row per run: time, speed-up, efficiency, the time of all threads
    split into work / overhead / idle, OVR, WTI, the identity, grains matched."""
    out = [f"  {'threads':>7} {'time':>9} {'speed-up':>8} {'effic.':>6} {'work':>5} "
           f"{'ovh':>5} {'idle':>5} {'OVR':>6} {'WTI':>6} {'N/(OVR*WTI)':>11} "
           f"{'WTI grains':>10} {'grains matched':>15}"]
    for r in runs:
        mark = "*" if r["baseline"] else " "
        out.append(
            f"{mark} {r['threads']:>7} {fmt_ns(r['duration_ns']):>9} {_num(r['speedup']):>8} "
            f"{_pct(r['efficiency']):>6} {_pct(r['work_share']):>5} {_pct(r['overhead_share']):>5} "
            f"{_pct(r['idle_share']):>5} {_num(r['ovr']):>6} {_num(r['wti']):>6} "
            f"{_num(r['identity']):>11} {_num(r['wti_grains']):>10} "
            f"{str(r['matched_grains']) + '/' + str(r['grains']):>15}")
    return out


def overhead_table(runs: list) -> list:
    out = [f"  {'threads':>7} {'work':>9} {'inflation':>10} {'overhead':>9} {'create':>9} "
           f"{'schedule':>9} {'sync':>9} {'runtime':>9} {'idle':>9}"]
    for r in runs:
        out.append(f"  {r['threads']:>7} {fmt_ns(r['work_ns']):>9} "
                   f"{fmt_ns(r['inflation_ns']):>10} {fmt_ns(r['overhead_ns']):>9} "
                   f"{fmt_ns(r['create_ns']):>9} {fmt_ns(r['schedule_ns']):>9} "
                   f"{fmt_ns(r['sync_ns']):>9} {fmt_ns(r['runtime_ns']):>9} "
                   f"{fmt_ns(r['idle_ns']):>9}")
    return out


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def location_table(r: dict) -> list:
    runs = r["runs"]
    head = f"  {'location':<44} {'base mean':>10}" + "".join(
        f" {'mean@' + str(x['threads']):>10} {'x':>6}" for x in runs[1:])
    out = [head]
    for loc in r["locations"]:
        per = loc["runs"][1:] if len(loc["runs"]) == len(runs) else loc["runs"]
        cells = "".join(f" {fmt_ns(p['mean_work_ns']):>10} {_num(p['inflation']):>6}"
                        for p in per)
        base = loc["baseline_mean_work_ns"]
        out.append(f"  {_short(loc['location'], 44):<44} "
                   f"{'-' if base is None else fmt_ns(base):>10}"
                   + cells)
    return out


def verdict(x: dict) -> str:
    """One line per run: speed-up against the ideal, and which factor costs it
    more (efficiency = 1 / (OVR * WTI): the larger of OVR and WTI)."""
    head = (f"  {x['threads']} threads: speed-up {_num(x['speedup'])} of {_num(x['ideal'], 'g')} "
            f"({_pct(x['efficiency'])})")
    ovr, wti = x["ovr"], x["wti"]
    if ovr is None or wti is None:
        return head
    if max(ovr, wti) <= 1.0:
        return head + f": no loss (OVR {ovr:.3g}, WTI {wti:.3g})"
    if ovr >= wti:
        return (head + f": lost mostly to overhead and idle, OVR {ovr:.3g} (overhead "
                f"{_pct(x['overhead_share'])}, idle {_pct(x['idle_share'])} of all threads' "
                f"time); WTI {wti:.3g}")
    return (head + f": lost mostly to work time inflation, WTI {wti:.3g} (grains alone "
            f"{_num(x['wti_grains'])}); OVR {ovr:.3g}")


def render(r: dict) -> str:
    runs = r["runs"]
    base = next(x for x in runs if x["baseline"])
    errors = [abs(x["identity_error"]) for x in runs if x["identity_error"] is not None]
    worst = max(errors) if errors else float("nan")
    out = [f"program        {r['program']}",
           f"baseline       {r['baseline']}  ({base['threads']} thread(s), marked *)",
           f"identity       speed-up = (N/N_baseline) / (OVR*WTI), largest relative error "
           f"{worst:.1g}",
           *[verdict(x) for x in runs if not x["baseline"]],
           "", "RUNS (time of all threads = N x time: work / overhead / idle shares)",
           *run_table(runs),
           "", "TIME OF ALL THREADS", *overhead_table(runs)]
    notes = [f"  {x['path']}: {x['matched_tasks']} of {x['tasks']} tasks match the "
             f"baseline's {base['tasks']} by identity (schedule-dependent task tree?): "
             "WTI includes the different work" for x in runs if not x["same_tasks"]]
    if notes:
        out += ["", "NOTE", *notes]
    out += ["", "SOURCE LOCATIONS: mean work per task (per iteration for loops) against the "
            "baseline's, x = inflation; by work added at the most threads", *location_table(r)]
    for m in r["most_inflated"]:
        top = [loc for loc in m["locations"] if (loc["added_work_ns"] or 0) > 0]
        if top:
            w = top[0]
            out.append(f"inflates most at {m['threads']} threads: {w['location']} "
                       f"({_num(w['inflation'])}x, +{fmt_ns(w['added_work_ns'])} of work over "
                       f"{w['grains']} grains)")
        else:
            out.append(f"at {m['threads']} threads no location's grains inflate")
    return "\n".join(out)

