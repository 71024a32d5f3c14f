"""`grainlab analyze TRACE`: the grain graph's metrics and likely problems.

Text report: summary, problems (thresholds of thesis §5.4.3, overridable), the
source locations responsible, the critical path. `--json` prints one object.
"""
from __future__ import annotations

import argparse
import json

from .. import problems as P
from ..analysis.analysis import Analysis, jsonable
from ..analysis.report import (WHAT, WHOLE_RUN, fmt_parallelism, parallelism_numbers,
                               span_text)
from ..metrics import instantaneous_parallelism as ip
from ._output import Progress, fmt_ns, warn_incomplete

HELP = "find performance problems in a trace (metrics, problems, source locations)"
EPILOG = """\
examples:
  grainlab analyze fib.parquet
  grainlab analyze --threshold parallel_benefit=1.5 --threshold load_balance=2 fib.parquet
  grainlab analyze --config thresholds.toml --json fib.parquet | jq .problems
  grainlab analyze --region 2 app.parquet          # region 2 as `grainlab info` lists them
  grainlab analyze --region app.c:42 app.parquet   # every region at that line
  grainlab analyze --window 1.5s:3s app.parquet    # from the trace's start; units ns us ms s
  grainlab analyze --weigh cpu app.parquet         # recorded with `grainlab record --cpu-time`
  grainlab analyze --workers 2 big.parquet         # in parts (regions) on 2 Dask workers
  grainlab analyze --scheduler tcp://head:8786 big.parquet

thresholds (problem when the grain's value crosses it; docs/metrics.md):
{THRESHOLDS}
config file (TOML):  [thresholds]  parallel_benefit = 1.5
""".replace(
    "{THRESHOLDS}", "\n".join("  " + P.describe(name) for name in P.RULES))


def _threads(r) -> str:
    """"8 threads on 2 cores": cores_used is what the thresholds use."""
    t, c = r.get("threads_used", r["cores_used"]), r["cores_used"]
    text = f"{t} thread{'s' if t != 1 else ''}"
    return text if t == c else f"{text} ({c} core{'s' if c != 1 else ''})"


def add_parser(subparsers):
    p = subparsers.add_parser("analyze", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="override a problem threshold (repeatable; VALUE may be 'auto' "
                        "for instantaneous_parallelism and scatter)")
    p.add_argument("--config", metavar="FILE", help="TOML file with a [thresholds] table")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="source locations and critical-path grains to list (default 10)")
    p.add_argument("--interval", default="median", metavar="CHOICE",
                   help="instantaneous parallelism interval: median (default), min, gap, "
                        "or a length in ns")
    p.add_argument("--region", metavar="N|LOCATION",
                   help="analyze one parallel region only: its number in `grainlab info`, "
                        "or a source location (file:line, file or function) for every "
                        "region there")
    p.add_argument("--weigh", choices=("wall", "cpu"), default="wall",
                   help="what a grain weighs: its wall-clock time (default), or the time its "
                        "thread really ran, as if no thread had been preempted (the critical "
                        "path, span and parallelism then on CPU time; needs a trace recorded "
                        "with `grainlab record --cpu-time`)")
    p.add_argument("--window", metavar="T0:T1",
                   help="analyze only this time window from the trace's start "
                        "(e.g. 120ms:300ms; units ns, us, ms, s, default ms; a side may "
                        "be empty)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="analyze the trace in parts (its top-level parallel regions and the "
                        "serial part, each read from its own row groups) on a Dask "
                        "LocalCluster of N workers, and compose them (docs/cluster.md)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="the same on an existing Dask cluster (tcp://host:8786)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..errors import UsageError
    th = P.thresholds(args.config, args.threshold)      # bad flags fail before loading
    interval = _interval(args.interval, UsageError)
    if args.top < 0:
        raise UsageError("--top must be >= 0")
    if args.workers is not None or args.scheduler is not None:
        return _run_parts(args, th, interval, UsageError)
    if args.region is None and args.window is None:     # a part is smaller: not judged
        _check_memory(args.trace)
    a = Analysis(args.trace, thresholds=th, interval=interval, region=args.region,
                 window=args.window, weigh=args.weigh, progress=Progress())
    report = a.report(args.top)
    if args.json:
        print(json.dumps(report))
    else:
        print(render(report))
    warn_incomplete(a)
    return 0


def _run_parts(args, th, interval, UsageError) -> int:
    """--workers / --scheduler: grainlab.cluster.split (docs/cluster.md)."""
    if args.region is not None or args.window is not None or args.weigh != "wall":
        raise UsageError("--workers/--scheduler analyze the whole run in parts: "
                         "not with --region, --window or --weigh cpu")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be >= 1")
    from ..cluster.split import analyze_split
    r = analyze_split(args.trace, workers=args.workers, scheduler=args.scheduler,
                      thresholds=th, interval=interval, progress=Progress(), top=args.top)
    r.pop("all_locations", None)
    if args.json:
        print(json.dumps(jsonable(r)))
        return 0
    out = [f"trace        {r['trace']}  (in {r['parts']} parts: {r['regions']} regions "
           "and the serial part)", "", "SUMMARY",
           f"  grains       {r['grains']} ({r['tasks']} tasks, {r['chunks']} chunks) "
           f"on {_threads(r)}",
           f"  work         {fmt_ns(r['work_ns'])} (grains {fmt_ns(r['grain_work_ns'])})",
           f"  span         {fmt_ns(r['span_ns'])}  (critical path: "
           f"{len(r['critical_path'])} grains)",
           f"  {WHOLE_RUN} {fmt_parallelism(r['parallelism'])} ({WHAT[WHOLE_RUN]})",
           f"  inst. par.   interval {fmt_ns(r['instantaneous_parallelism']['interval_ns'])} "
           f"({r['instantaneous_parallelism']['interval_choice']})",
           "", "PROBLEMS", f"  {'metric':<32} {'threshold':>11} {'grains':>8} {'%':>7} "
                           f"{'on crit.':>8}  {'work':>9}"]
    for name, p in r["problems"].items():
        if not p["available"]:
            out.append(f"  {name:<32} {'':>11} {'n/a':>8}")
            continue
        out.append(f"  {name:<32} {p['direction'] + ' ' + format(p['threshold'], '.3g'):>11} "
                   f"{p['grains']:>8} {_pct(p['percent']):>7} {p['on_critical_path']:>8}  "
                   f"{fmt_ns(p['work_ns']):>9}")
    out += ["", "LOCATIONS (by work)"]
    for loc in r["locations"]:
        out.append(f"  {loc['work_percent']:5.1f}%  {loc['grains']:>8} grains  {loc['location']}")
    print("\n".join(out))
    return 0


def _interval(text, UsageError):
    if text in ip.CHOICES:
        return text
    try:
        value = int(float(text))
    except ValueError:
        raise UsageError(f"--interval {text!r}: expected median, min, gap or ns") from None
    if value <= 0:
        raise UsageError("--interval must be a positive number of ns")
    return value


# ---------------------------------------------------------------------------
# text report

def _pct(p: float) -> str:
    """A percentage that never rounds a few grains down to 0%."""
    return "<0.1%" if 0 < p < 0.1 else f"{p:.1f}%"


def render(r: dict) -> str:
    ipx = r["instantaneous_parallelism"]
    td = r["time_decomposition"]
    out = [f"trace        {r['trace']}{'' if r['complete'] else '  (INCOMPLETE)'}",
           f"program      {r['program']}",
           *([f"part         {r['selection']['description']}"] if r.get("selection") else []),
           "",
           "SUMMARY",
           f"  grains       {r['grains']} ({r['tasks']} tasks, {r['chunks']} chunks) "
           f"on {_threads(r)}",
           f"  work         {fmt_ns(r['work_ns'])} (grains {fmt_ns(r['grain_work_ns'])})",
           f"  span         {fmt_ns(r['span_ns'])}: {span_text(r)}  (critical path: "
           f"{len(r['critical_path'])} grains)",
           *[f"  {name} {fmt_parallelism(v)} ({WHAT[name]})"
             for name, v in parallelism_numbers(r)],
           *_amdahl(r),
           *_cpu_lines(r),
           f"  inst. par.   interval {fmt_ns(ipx['interval_ns'])} ({ipx['interval_choice']}): "
           f"ideal mean {ipx['ideal_mean']:.3g}, min {ipx['ideal_min']}; "
           f"achieved mean {ipx['achieved_mean']:.3g}, max {ipx['achieved_max']}",
           ]
    if ipx.get("note"):
        out.append(f"               note: {ipx['note']}")
    if td.get("total"):
        pct = {k: 100.0 * td[k] / td["total"] for k in ("work", "overhead", "idle")}
        off = (f"off the CPU {100.0 * td['off_cpu'] / td['total']:.1f}%, "
               if td.get("off_cpu") else "")
        out.append(f"  thread time  work {pct['work']:.1f}%, overhead {pct['overhead']:.1f}% "
                   f"(create {fmt_ns(td['create'])}, schedule {fmt_ns(td['schedule'])}, "
                   f"sync {fmt_ns(td['sync'])}), {off}idle {pct['idle']:.1f}%; OVR {td['OVR']:.3g}")
    out += ["", "PROBLEMS", f"  {'metric':<32} {'threshold':>11} {'grains':>8} {'%':>7} "
                                f"{'on crit.':>8}  {'work':>9}"]
    for name, p in r["problems"].items():
        th = f"{p['direction']} {p['threshold']:.3g}"
        if not p["available"]:
            why = ("needs a reference run: grainlab compare" if name == "work_deviation"
                   else r["preemption"]["reason"] if name == "preempted"
                   else r["numa_locality"] if name == "numa_locality"
                   else r["memory_hierarchy_utilization"])
            out.append(f"  {name:<32} {th:>11}   unavailable ({why})")
            continue
        out.append(f"  {name:<32} {th:>11} {p['grains']:>8} {_pct(p['percent']):>7} "
                   f"{p['on_critical_path']:>8}  {fmt_ns(p['work_ns']):>9}")
        if p.get("floor"):
            out.append(f"      (and {p['floor']['column']} >= {fmt_ns(p['floor']['value'])})")
        for loc in p["locations"][:3]:
            out.append(f"      {loc['location']}: {loc['grains']} grain(s) "
                       f"({_pct(loc['of_location_grains'])} of its grains), {fmt_ns(loc['work_ns'])}")
    out += ["", "SOURCE LOCATIONS (by work)"]
    for loc in r["locations"]:
        flagged = ", ".join(f"{k} {_pct(v)}" for k, v in loc["problem_percent"].items() if v > 0)
        out.append(f"  {loc['location']:<40} {loc['grains']:>8} grains {fmt_ns(loc['work_ns']):>10} "
                   f"({loc['work_percent']:.1f}%)" + (f"  flagged: {flagged}" if flagged else ""))
    out += ["", f"CRITICAL PATH (first {len(r['critical_path_grains'])} of "
                f"{len(r['critical_path'])} grains, in path order)"]
    for c in r["critical_path_grains"]:
        out.append(f"  #{c['grain']:<8} {c['kind']:<5} {c['identity']:<24} {c['location']:<32} "
                   f"{fmt_ns(c['work_ns'])}")
    pt = r["critical_path_time"]
    outside = [f"{c['kind']} task {c['identity']} {fmt_ns(c['ns'])}" for c in pt["contexts"][:3]]
    if pt["barriers_ns"]:
        outside.append(f"team barriers {fmt_ns(pt['barriers_ns'])}")
    if outside:
        out.append(f"  outside grains ({fmt_ns(pt['contexts_ns'] + pt['barriers_ns'])}): "
                   + ", ".join(outside))
    if pt.get("joins_ns"):
        out.append(f"  grains' join waits (taskwait / taskgroup end): {fmt_ns(pt['joins_ns'])}")
    note = _preempted_path_note(r)
    if note:
        out.append(note)
    return "\n".join(out)


def _cpu_lines(r: dict) -> list:
    """The summary's CPU-time lines, when the trace has CPU time."""
    pre = r.get("preemption") or {}
    if not pre.get("available"):
        return []
    wall, cpu, off = pre["grain_wall_ns"], pre["grain_cpu_ns"], pre["grain_off_cpu_ns"]
    pct = 100.0 * off / wall if wall > 0 else 0.0
    lines = [f"  cpu time     grains ran {fmt_ns(cpu)}, off the CPU {fmt_ns(off)} "
             f"({pct:.1f}% of their wall time); {pre['preempted_grains']} preempted"]
    if pre.get("wall"):
        w = pre["wall"]
        lines.append(f"  weights      CPU time (--weigh cpu); on wall time: work "
                     f"{fmt_ns(w['work_ns'])}, span {fmt_ns(w['span_ns'])}, "
                     f"parallelism of the whole run on wall time {w['parallelism']:.3g}")
    return lines


def _preempted_path_note(r: dict) -> str:
    """Said when the critical path runs through preempted grains."""
    pre = r.get("preemption") or {}
    cp = pre.get("critical_path") if pre.get("available") else None
    if not cp or not cp["preempted_grains"]:
        return ""
    n = cp["preempted_grains"]
    text = (f"  note: the critical path runs through {n} preempted grain{'s' if n != 1 else ''}: "
            f"its threads were off the CPU {fmt_ns(cp['off_cpu_ns'])} of its "
            f"{fmt_ns(cp['wall_ns'])} wall time")
    if pre.get("weights") != "cpu":
        text += (" (a busy machine?); rerun on a quieter one, or weigh grains by CPU time: "
                 f"grainlab analyze --weigh cpu {r['trace']}")
    return text


def _amdahl(r: dict) -> list:
    """The serial part, when it caps the speed-up (Amdahl) below AMDAHL_NOTED."""
    from ..analysis.prediction import AMDAHL_NOTED
    s = r.get("serial") or {}
    bound = s.get("amdahl_speedup")
    if not bound or bound >= AMDAHL_NOTED:
        return []
    start = s.get("serial_start_ns") or 0
    where = (f", {fmt_ns(start)} of it the serial start before the first parallel region"
             if start else "")
    return [f"  serial       {fmt_ns(s['serial_ns'])} of the initial task on the critical path"
            f"{where}: at most {bound:.1f}x on any number of cores (Amdahl: work / serial)"]


def _check_memory(trace, serve: bool = False) -> None:
    """A whole run that cannot fit in memory is refused before it is loaded
    (grainlab/memory_check.py); a file that is no trace is left to the
    analysis, which says what is wrong with it."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from ..memory_check import check_fits
    try:
        events = pq.ParquetFile(str(trace)).metadata.num_rows
    except Exception:       # noqa: BLE001 - not a readable Parquet file: the load says why
        return
    check_fits(Path(trace).name, events, serve=serve)
