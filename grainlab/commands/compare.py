"""`grainlab compare A B`: work deviation of every grain of run B against the same
grain (matched by identity) in reference run A (usually 1 thread), per grain and
per source location, plus the seed-000 terms WTI, OVR and the speed-up bound.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pandas as pd

from .. import problems as P
from ..errors import GrainlabError, UsageError
from ..metrics import time_decomposition, work_deviation
from ..symbolize import grain_locations
from ._pipeline import Progress, fmt_ns, graph_of, program_of, warn_incomplete
from .analyze import _jsonable

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
    trace_a, ga = graph_of(args.a, progress)
    trace_b, gb = graph_of(args.b, progress)
    check_same_program(trace_a, trace_b)
    progress("matching grains by identity")
    top = None if args.all else args.top
    report = compare(trace_a, ga, trace_b, gb, float(th), top)
    if args.json:
        print(json.dumps(_jsonable(report)))
    else:
        print(render(report))
    warn_incomplete(trace_a)
    warn_incomplete(trace_b)
    return 0


def check_same_program(ta, tb):
    def exe(t):
        cmd = t.meta.get("command")
        return os.path.basename(str(cmd[0])) if isinstance(cmd, list) and cmd else None
    a, b = exe(ta), exe(tb)
    if a and b and a != b:
        raise GrainlabError(f"{ta.path} and {tb.path} are traces of different programs "
                            f"({a} vs {b}): grains can only be matched within one program")


def compare(ta, ga, tb, gb, threshold: float, top) -> dict:
    """The comparison as a dict; `top` None lists every grain and location."""
    info = work_deviation.compute(gb, ga)
    if info["matched"] == 0 and (len(ga.grains) or len(gb.grains)):
        raise GrainlabError(f"{tb.path}: no grain matches a grain of {ta.path} by identity "
                            "(different programs or inputs?)")
    gr = gb.grains
    dev = gr[work_deviation.COLUMN].to_numpy(np.float64)
    matched = ~np.isnan(dev)
    pos = work_deviation.match(ga.grains, gr)
    work_a = np.where(pos >= 0, ga.grains["work"].to_numpy(np.int64)[np.maximum(pos, 0)], 0)
    work_b = gr["work"].to_numpy(np.int64)
    loc = grain_locations(gb, tb.meta).to_numpy()
    with np.errstate(invalid="ignore"):
        inflated = dev > threshold
    crit = gr["on_critical_path"].to_numpy(bool)

    sa, sb = time_decomposition.summary(ga), time_decomposition.summary(gb)
    terms = time_decomposition.speedup_terms(sb, sa)

    df = pd.DataFrame({"location": loc[matched], "a": work_a[matched], "b": work_b[matched],
                       "inflated": inflated[matched]})
    by = df.groupby("location", sort=False).agg(grains=("a", "size"), work_a_ns=("a", "sum"),
                                                 work_b_ns=("b", "sum"),
                                                 inflated=("inflated", "sum"))
    by["work_deviation"] = work_deviation.ratio(by["work_b_ns"].to_numpy(),
                                                by["work_a_ns"].to_numpy())
    by = by.sort_values("work_b_ns", ascending=False)
    if top is not None:
        by = by.head(top)
    idx = np.flatnonzero(matched)
    order = idx[np.lexsort((-work_b[idx], -np.nan_to_num(dev[idx], posinf=1e300)))]
    if top is not None:
        order = order[:top]
    n = len(gr)
    return {
        "a": str(ta.path), "b": str(tb.path), "program": program_of(tb),
        "threads_a": sa["threads"], "threads_b": sb["threads"],
        "grains_a": info["grains_a"], "grains_b": info["grains_b"], "matched": info["matched"],
        "only_a": info["grains_a"] - info["matched"], "only_b": n - info["matched"],
        "work_a_ns": info["work_a_matched_ns"], "work_b_ns": info["work_b_matched_ns"],
        "work_deviation": float(work_deviation.ratio(np.array([info["work_b_matched_ns"]]),
                                                     np.array([info["work_a_matched_ns"]]))[0]),
        "threshold": threshold,
        "inflated": {"grains": int(inflated.sum()),
                     "percent": 100.0 * int(inflated.sum()) / n if n else 0.0,
                     "on_critical_path": int((inflated & crit).sum())},
        "time_decomposition": {"a": sa, "b": sb, **terms},
        "locations": [{"location": str(k), "grains": int(r.grains), "work_a_ns": int(r.work_a_ns),
                       "work_b_ns": int(r.work_b_ns), "work_deviation": float(r.work_deviation),
                       "inflated": int(r.inflated)} for k, r in by.iterrows()],
        "grains": [{"grain": int(i), "identity": str(gr.at[i, "identity"]),
                    "kind": str(gr.at[i, "kind"]), "location": str(loc[i]),
                    "work_a_ns": int(work_a[i]), "work_b_ns": int(work_b[i]),
                    "work_deviation": float(dev[i])} for i in order.tolist()],
    }


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
           f"seed 000       WTI {td['WTI']:.3g}, OVR {td['OVR']:.3g}, "
           f"speed-up bound N/(OVR*WTI) {td['speedup_bound']:.3g}",
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
