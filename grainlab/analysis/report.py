"""The report of one analysis: what `grainlab analyze --json` prints, the
problems and per-location tables, and the pieces they are made of (columns
in, plain dicts out). Reads what the analysis computed; computes no metric.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import problems as P
from ..metrics.registry import label
from ..units import fmt_ns

DEFAULT_TOP = 10


def report(a, top: int = DEFAULT_TOP) -> dict:
    """What `grainlab analyze --json --top N` prints (JSON-able), of the
    Analysis `a`."""
    g, summary, run = a.graph, a.metrics, a.run
    found = a.found(top)
    th = a.resolved_thresholds
    r = {
        "trace": run["trace"],
        "program": run["program"],
        "complete": run["complete"],
        "selection": run.get("selection"),
        **{k: summary[k] for k in ("grains", "tasks", "chunks", "work_ns", "grain_work_ns",
                                   "span_ns", "parallelism", "critical_path",
                                   "cores_used", "threads_used")},
        "parallel_part": summary.get("parallel_part"),
        "thresholds": th,
        "problems": found,
        "instantaneous_parallelism": summary["instantaneous_parallelism"],
        "time_decomposition": summary["time_decomposition"],
        "memory_hierarchy_utilization": summary["memory_hierarchy_utilization"],
        "numa_locality": summary.get("numa_locality", "not computed"),
        "scatter_distance": summary["scatter_distance"],
        "locations": top_locations(g.grains, a.locations, found, th, top),
        "critical_path_grains": critical_grains(g, a.locations, summary["critical_path"], top),
        "critical_path_time": path_time(g, summary["critical_path_time"]),
        "serial": summary["serial"],
        "weights": a.weigh,
        "preemption": a.preemption(found),
    }
    r["span_parts"] = dict(span_parts(r))
    return jsonable(r)


def problems_frame(a, top: int = DEFAULT_TOP) -> pd.DataFrame:
    """One row per problem metric of the Analysis `a` (Analysis.problems)."""
    return pd.DataFrame.from_dict(a.found(top), orient="index").rename_axis("metric")


def by_location(a) -> pd.DataFrame:
    """One row per source location of the Analysis `a` (Analysis.by_location)."""
    rows = top_locations(a.graph.grains, a.locations, a.found(0), a.resolved_thresholds, None)
    if not rows:
        return pd.DataFrame(columns=["grains", "work_ns", "work_percent"]).rename_axis(
            "location")
    flat = [{"location": r["location"], "grains": r["grains"], "work_ns": r["work_ns"],
             "work_percent": r["work_percent"],
             **{f"{k}_percent": v for k, v in r["problem_percent"].items()}} for r in rows]
    return pd.DataFrame(flat).set_index("location")


def html(a) -> str:
    """The Analysis `a` in a Jupyter cell: its headline and problems."""
    s = a.summary
    head = (f"<b>{_esc(s['program'])}</b> ({_esc(s['trace'])})<br>"
            f"{s['grains']} grains ({s['tasks']} tasks, {s['chunks']} chunks), "
            f"span {s['span_ns']} ns, "
            + ", ".join(f"{name} {fmt_parallelism(v)}" for name, v in parallelism_numbers(s)))
    cols = ["threshold", "direction", "available", "grains", "percent", "on_critical_path"]
    return head + problems_frame(a)[cols].to_html(float_format=lambda v: f"{v:.3g}")


def top_locations(gr, locations, found, th, top) -> list:
    """Every source location with its grains and work, and the % of its grains
    flagged by each available problem (thesis Fig. 5.8), by work: the first
    `top` of them (None: all)."""
    if len(gr) == 0:
        return []
    codes, names = P.location_codes(locations)
    df = pd.DataFrame({"location": codes, "work": gr["work"].to_numpy(np.int64)})
    for name, res in found.items():
        if res["available"]:
            df[name] = P.flagged(gr, name, th)
    flags = [c for c in df.columns if c in P.RULES]
    by = df.groupby("location", sort=False).agg(
        grains=("work", "size"), work_ns=("work", "sum"), **{f: (f, "mean") for f in flags})
    by = by.sort_values("work_ns", ascending=False)
    if top is not None:
        by = by.head(top)
    total = max(int(gr["work"].sum()), 1)
    return [{"location": str(names[code]), "grains": int(r["grains"]), "work_ns": int(r["work_ns"]),
             "work_percent": 100.0 * float(r["work_ns"]) / total,
             "problem_percent": {f: 100.0 * float(r[f]) for f in flags}}
            for code, r in by.iterrows()]




def critical_grains(g, locations, path, top) -> list:
    """The first `top` grains of the critical path (identities made for
    those grains only)."""
    gr = g.grains
    ids = np.asarray(path, np.int64)[:top] if top else np.zeros(0, np.int64)
    locations = pd.Series(locations).iloc[ids].to_numpy(dtype=object) if len(ids) else []
    names = identities(g, ids)
    return [{"grain": int(i), "kind": str(gr.at[i, "kind"]), "identity": identity_text(name),
             "location": str(where), "work_ns": int(gr.at[i, "work"])}
            for i, where, name in zip(ids.tolist(), locations, names)]


# The parallelism numbers: one name each, shown by that name wherever it is
# shown (analyze's text and JSON keys, the app's header, Summary and Scaling
# views, predict): `parallelism` is the whole run's, `parallel_part` the
# parallel part's (grainlab.metrics.work.parallel_part).
WHOLE_RUN = "parallelism of the whole run"
PARALLEL_PART = label("parallel_part").lower()      # "parallelism of the parallel part"
WHAT = {WHOLE_RUN: "work / span from the program's start to its exit",
        PARALLEL_PART: "work / span from the first parallel region's start to the last one's "
                       "end: the serial start and end left out"}


def parallelism_numbers(report: dict) -> list:
    """[(name, value)] of the parallelism numbers the analysis computed: the
    whole run's (metric `parallelism`) and the parallel part's (metric
    `parallel_part`, when computed)."""
    out = [(WHOLE_RUN, float(report["parallelism"]))]
    if report.get("parallel_part"):
        out.append((PARALLEL_PART, float(report["parallel_part"]["parallelism"])))
    return out


def fmt_parallelism(value: float) -> str:
    """A parallelism as every view prints it (3 significant digits)."""
    return f"{value:.3g}"


def span_parts(report: dict) -> list:
    """[(part, ns)]: what the span is made of, from the metrics' split of the
    critical path (metrics.work.critical_path_time) and the serial part: the
    serial start (the initial task's code before the first parallel region),
    serial code in the parallel part (starting and ending regions, code between
    them), the serial end (after the last region), team
    code (implicit tasks: creating tasks, waiting), grains (their fragments,
    chunks and task creation), the grains' join waits (taskwait / taskgroup),
    team barriers. The parts add up to the span."""
    pt = report["critical_path_time"]
    serial = report.get("serial") or {}
    initial = sum(c["ns"] for c in pt["contexts"] if c["kind"] == "initial")
    start = min(int(serial.get("serial_start_ns") or 0), initial)
    end = min(int(serial.get("serial_end_ns") or 0), initial - start)
    return [("serial start", start), ("serial code in the parallel part", initial - start - end),
            ("serial end", end), ("team code", pt["contexts_ns"] - initial),
            ("grains", pt["grains_ns"]), ("grains' join waits", pt["joins_ns"]),
            ("team barriers", pt["barriers_ns"])]


def span_text(report: dict) -> str:
    """The span's parts in words, e.g. "serial start 2.7 ms (93%), team code
    131 us (4.5%), grains 0 ns (0%)": every part that is not 0, and the
    grains always."""
    span = max(int(report["span_ns"]), 1)
    return ", ".join(f"{name} {fmt_ns(ns)} ({fmt_share(100.0 * ns / span)})"
                     for name, ns in span_parts(report) if ns or name == "grains")


def fmt_share(percent: float) -> str:
    """A percentage that never rounds a part down to 0% (or up to 100%)."""
    if 0 < percent < 0.1:
        return "<0.1%"
    if 99.9 < percent < 100:
        return ">99.9%"
    return f"{percent:.0f}%" if percent >= 10 or percent == 0 else f"{percent:.1f}%"


def path_time(g, split: dict) -> dict:
    """The metrics' span split (metrics.work.critical_path_time) with each
    context's identity."""
    ctx = split["contexts"]
    names = identities(g, [c["context"] for c in ctx]) if ctx else []
    return {**split, "contexts": [{**c, "identity": identity_text(n)} for c, n in zip(ctx, names)]}


def identities(g, ids) -> list:
    """Identity strings of grain ids, made on demand (GrainGraph.identities);
    from the identity column for graph-like objects without one."""
    if hasattr(g, "identities"):
        return list(g.identities(ids))
    col = g.grains["identity"]
    return [None if pd.isna(v) else v for v in col.loc[np.asarray(ids, np.int64)]]


def identity_text(identity) -> str:
    """An identity as the reports always printed it (str(NaN) for none)."""
    return "nan" if identity is None else str(identity)


def program_of(meta: dict) -> str:
    """The run's command line, from trace metadata."""
    cmd = meta.get("command")
    if isinstance(cmd, list) and cmd:
        return " ".join(map(str, cmd))
    return str(cmd or "?")


def jsonable(x):
    """Plain JSON types: numpy scalars unwrapped, non-finite floats -> None."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x


def _esc(s) -> str:
    import html as h
    return h.escape(str(s))
