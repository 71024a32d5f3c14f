"""One row of task-graph and per-grain properties per trace (thesis §4.5,
Table 4.4), for comparing programs, inputs and cutoffs — and the input of the
suite notebooks (PCA, clustering).

    import grainlab as gl
    df = gl.characterize(["fib-8.parquet", "fib-12.parquet"])   # or a folder

Every value is read from the analysis (`grainlab.analyze`: the same numbers
`grainlab analyze --json` prints, or columns of its `grains` frame); nothing
is recomputed here. docs/characterize.md defines each column and says which
properties stand in for the thesis's instruction counts and footprints.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GrainlabError

# Columns, in order; docs/characterize.md documents each.
COLUMNS = [
    "trace", "program", "complete", "threads", "cores",
    "grains", "tasks", "chunks",
    "grain_work_median_ns", "grain_work_p10_ns", "grain_work_p90_ns", "grain_work_cv",
    "join_degree_mean", "join_degree_max", "depth_max", "depth_mean",
    "critical_path_grains", "span_ns", "work_ns", "grain_work_ns", "parallelism",
    "ideal_parallelism_mean", "achieved_parallelism_mean",
    "parallel_benefit_median", "parallel_benefit_low_pct", "load_balance_max",
    "work_fraction", "overhead_fraction", "idle_fraction", "ovr",
    "data_bytes_median", "krd_close_share", "krd_near_share", "krd_far_share",
    "krd_inf_share", "numa_locality", "remote_bytes",
]


def trace_paths(items) -> list[Path]:
    """Traces named directly, plus the *.parquet files of any folder (sorted)."""
    out = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(q for q in p.glob("*.parquet") if q.is_file())
            if not found:
                raise GrainlabError(f"{p}: no *.parquet traces in this folder")
            out.extend(found)
        else:
            out.append(p)
    if not out:
        raise GrainlabError("no traces given")
    return out


def row(analysis) -> dict:
    """The properties of one analysed trace (a grainlab.Analysis)."""
    rep = analysis.report()
    gr = analysis.grains
    work = gr["work"].to_numpy(np.float64) if len(gr) else np.zeros(0)
    td = rep["time_decomposition"]
    total = float(td.get("total") or 0) or float("nan")
    ip = rep["instantaneous_parallelism"]
    pb = rep["problems"].get("parallel_benefit", {})
    out = {
        "trace": str(analysis.path),
        "program": rep["program"],
        "complete": bool(rep["complete"]),
        "threads": int(rep.get("threads_used", rep["cores_used"])),
        "cores": int(rep["cores_used"]),
        "grains": int(rep["grains"]),
        "tasks": int(rep["tasks"]),
        "chunks": int(rep["chunks"]),
        "grain_work_median_ns": float(np.median(work)) if len(work) else 0.0,
        "grain_work_p10_ns": float(np.percentile(work, 10)) if len(work) else 0.0,
        "grain_work_p90_ns": float(np.percentile(work, 90)) if len(work) else 0.0,
        "grain_work_cv": float(work.std() / work.mean()) if len(work) and work.mean() > 0 else 0.0,
        **_joins(analysis.graph),
        "depth_max": int(gr["depth"].max()) if len(gr) else 0,
        "depth_mean": float(gr["depth"].mean()) if len(gr) else 0.0,
        "critical_path_grains": len(rep["critical_path"]),
        "span_ns": int(rep["span_ns"]),
        "work_ns": int(rep["work_ns"]),
        "grain_work_ns": int(rep["grain_work_ns"]),
        "parallelism": float(rep["parallelism"]),
        "ideal_parallelism_mean": float(ip.get("ideal_mean", 0.0)),
        "achieved_parallelism_mean": float(ip.get("achieved_mean", 0.0)),
        "parallel_benefit_median": float(gr["parallel_benefit"].median())
        if "parallel_benefit" in gr and len(gr) else float("nan"),
        "parallel_benefit_low_pct": float(pb.get("percent", 0.0)),
        "load_balance_max": float(gr["load_balance"].max())
        if "load_balance" in gr and len(gr) else float("nan"),
        "work_fraction": td["work"] / total,
        "overhead_fraction": td["overhead"] / total,
        "idle_fraction": td["idle"] / total,
        "ovr": float(td.get("OVR", float("nan"))),
    }
    out.update(_memory(analysis, gr))
    mpi = analysis.trace.meta.get("mpi")
    if isinstance(mpi, dict) and isinstance(mpi.get("rank"), int):
        out["rank"] = mpi["rank"]       # one row per rank of an MPI run
    # counters, when the trace has them: per-grain median of each
    for col in gr.columns:
        if col.startswith("counter:"):
            out[f"{col}_median"] = float(pd.to_numeric(gr[col], errors="coerce").median())
    return out


def _memory(analysis, gr) -> dict:
    """Memory properties from the grains' data accesses (docs/locality.md):
    median annotated footprint of the grains that have one, KRD class shares
    (LLC domains, the trace's cache sizes), NUMA locality; NaN without them."""
    nan = float("nan")
    out = dict.fromkeys(("data_bytes_median", "krd_close_share", "krd_near_share",
                         "krd_far_share", "krd_inf_share", "numa_locality", "remote_bytes"), nan)
    if "data_bytes" not in gr:
        return out
    footprint = gr["data_bytes"].to_numpy()
    out["data_bytes_median"] = float(np.median(footprint[footprint > 0])) \
        if (footprint > 0).any() else nan
    try:
        h = analysis.krd()
    except GrainlabError:       # e.g. a saved analysis whose trace is gone
        h = None
    if h and h["accesses"]:
        for c in ("close", "near", "far", "inf"):
            out[f"krd_{c}_share"] = h[c] / h["accesses"]
    loc = analysis.metrics.get("numa_locality")
    if isinstance(loc, dict):
        out["numa_locality"] = loc["overall"]
        out["remote_bytes"] = float(loc["remote_bytes"])
    return out


def _joins(g) -> dict:
    """Grains and contexts synchronizing at each join node (the graph's
    synchronization edges per join): the thesis's join degree."""
    e = g.edges
    sync = e["type"].astype(str).to_numpy() == "synchronization"
    if not sync.any():
        return {"join_degree_mean": 0.0, "join_degree_max": 0}
    per_join = np.bincount(e["dst"].to_numpy()[sync])
    per_join = per_join[per_join > 0]
    return {"join_degree_mean": float(per_join.mean()), "join_degree_max": int(per_join.max())}


def characterize(traces, *, keep_going: bool = False, progress=None, workers: int | None = None,
                 scheduler: str | None = None) -> pd.DataFrame:
    """One row per trace (paths, folders, Trace or Analysis objects), columns
    COLUMNS (+ `counter:<name>_median` when counters exist, `rank` for the
    ranks of an MPI run). keep_going: a trace that cannot be read is left out
    (its error told to `progress`) instead of stopping. workers / scheduler:
    analyze the traces (paths only) on a Dask LocalCluster of that many
    worker processes, or on the cluster of that scheduler address
    (grainlab.cluster.engine); a trace that fails there is always left out
    with one line, and the rows are the same as here."""
    from ..analysis.analysis import Analysis, analyze
    items = []
    for t in traces if isinstance(traces, (list, tuple)) else [traces]:
        items.extend(trace_paths([t]) if isinstance(t, (str, Path)) else [t])
    if workers is not None or scheduler is not None:
        return _on_cluster(items, workers, scheduler, progress)
    rows = []
    for i, item in enumerate(items, 1):
        name = getattr(item, "path", item)
        if progress:
            progress(f"[{i}/{len(items)}] {Path(str(name)).name}")
        try:
            a = item if isinstance(item, Analysis) else analyze(item)
            rows.append(row(a))
        except GrainlabError as e:
            if not keep_going:
                raise
            if progress:
                progress(f"skipped {name}: {e}")
    return _frame(rows)


def characterize_one(path: str) -> dict:
    """`row` of one trace, or {"error": line}: what a Dask worker runs."""
    from ..analysis.analysis import analyze
    from ..cluster.worker import start_task
    start_task()
    try:
        return row(analyze(path))
    except GrainlabError as e:
        return {"error": str(e)}


def _on_cluster(items, workers, scheduler, progress) -> pd.DataFrame:
    from ..cluster.engine import run_all
    if not all(isinstance(i, (str, Path)) for i in items):
        raise GrainlabError("workers analyze traces by path: give paths or folders")
    rows = []
    for path, value, error in run_all(characterize_one, items, workers=workers,
                                      scheduler=scheduler, progress=progress):
        if error is None:
            rows.append(value)
        elif progress:
            progress(f"skipped {path}: {error}")
    return _frame(rows)


def _frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    extra = [c for c in df.columns if c not in COLUMNS]
    return df.reindex(columns=COLUMNS + extra)
