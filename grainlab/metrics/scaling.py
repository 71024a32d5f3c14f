"""Scaling of one program over runs at several thread counts (issue 22):
why it did not speed up as expected.

Olivier et al., "Characterizing and mitigating work time inflation in task
parallel programs" (SC 2012, §2) split the time of all threads into work,
overhead and idle; the Kernel Reuse Distance paper (seed 001, §II) writes the
speed-up at N cores as

    Speed-up_N = N / (OVR_N · WTI_N).

Per run, over its window [first node start, last node end] of length T_N and
its N threads (the team's threads: the trace's `threads`, at least those that
ran a node; a thread that ran none is idle for the whole window):

    total_N  = N · T_N = work_N + overhead_N + idle_N   (time_decomposition)
    OVR*_N   = total_N / work_N                         (absolute non-work factor)

Against a baseline run B (N_B threads, usually 1):

    speedup_N = T_B / T_N
    WTI_N     = work_N / work_B
    OVR_N     = OVR*_N / OVR*_B
    => (N / N_B) / (OVR_N · WTI_N) = (N / N_B) · (work_N N_B T_B) / (N T_N work_N)
                                   = T_B / T_N = speedup_N

an identity (exact up to float rounding) for any baseline; with a 1-thread
baseline it is Speed-up_N = N / (OVR_N · WTI_N). OVR is relative to the
baseline's because a 1-thread parallel run already pays task creation and
scheduling (OVR*_B > 1); the paper's T_serial has none. docs/metrics.md
("Scaling") has the derivation.

Per source location (seed 001, Table I): mean grain work at N against the
baseline's, and the work that inflation adds there, (mean_N - mean_B) · grains_N.
A loop's chunks are counted per iteration (its chunking changes with the
thread count: one chunk of 1000 iterations at 1 thread, 1000 chunks of one
at 2), a task per grain.
Units: ns. Everything is columns: one row per run, one row per (location, run).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import time_decomposition as td
from . import work_deviation as wd

PARTS = ("create", "schedule", "sync", "runtime")


def run_split(g) -> dict:
    """One run's totals (time_decomposition.decompose: its N is the team):
    threads N, duration_ns T_N, work_ns (grains and serial code), grain_work_ns
    (grains only), overhead_ns (and its create/schedule/sync/runtime parts),
    idle_ns, total_ns = N · T_N, threads_active (threads that ran a node)."""
    d = td.decompose(g)
    return {"threads": d["threads"], "threads_active": d["threads_active"],
            "duration_ns": d["window_ns"], "work_ns": d["work"],
            "grain_work_ns": int(g.grains["work"].sum()), "overhead_ns": d["overhead"],
            "idle_ns": d["idle"], "total_ns": d["total"], **{f"{p}_ns": d[p] for p in PARTS}}


def terms(splits: pd.DataFrame, baseline: int = 0) -> pd.DataFrame:
    """`splits`: one row per run (the dicts of `run_split`); row `baseline`
    (position) is B. Adds speedup, efficiency, ovr_abs, ovr, wti (all from
    time_decomposition.terms, the definition `compare` uses too), the
    decomposition's shares of total_ns (work/overhead/idle_share), wti_grains
    (WTI of the grains' work alone, without serial code), inflation_ns
    (work_N - work_B), and `identity` = (N/N_B) / (ovr · wti) with its relative
    error against speedup."""
    s = splits.copy()
    b = s.iloc[baseline]
    col = {c: s[c].to_numpy(np.int64) for c in ("threads", "duration_ns", "work_ns", "total_ns")}
    t = td.terms(col["threads"], col["duration_ns"], col["work_ns"], col["total_ns"],
                 int(b["threads"]), int(b["duration_ns"]), int(b["work_ns"]), int(b["total_ns"]))
    total = col["total_ns"].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s["speedup"] = t["speedup"]
        s["ideal"] = t["ideal"]
        s["efficiency"] = t["efficiency"]
        s["ovr_abs"] = t["OVR"]
        s["ovr"] = t["OVR_relative"]
        s["wti"] = t["WTI"]
        s["wti_grains"] = s["grain_work_ns"].to_numpy(np.float64) / float(b["grain_work_ns"])
        for part in ("work", "overhead", "idle"):
            s[f"{part}_share"] = s[f"{part}_ns"].to_numpy(np.float64) / total
        s["identity"] = t["identity"]
        s["identity_error"] = s["identity"] / s["speedup"] - 1.0
    s["inflation_ns"] = s["work_ns"] - int(b["work_ns"])
    s["baseline"] = np.arange(len(s)) == baseline
    return s


def breakdown(runs: pd.DataFrame) -> pd.DataFrame:
    """Olivier et al.'s bars (SC 2012 Fig. 2/4): the time of all threads per
    run as sequential-equivalent work (the baseline's work) + work time
    inflation (may be negative) + overhead + idle = N · T_N."""
    base = int(runs.loc[runs["baseline"], "work_ns"].iloc[0])
    return pd.DataFrame({"threads": runs["threads"].to_numpy(),
                         "sequential_ns": np.full(len(runs), base, np.int64),
                         "inflation_ns": runs["work_ns"].to_numpy(np.int64) - base,
                         "overhead_ns": runs["overhead_ns"].to_numpy(np.int64),
                         "idle_ns": runs["idle_ns"].to_numpy(np.int64)}, index=runs.index)


def matches(g_base, g_run) -> dict:
    """How the run's grains match the baseline's by identity (kind + task
    lineage / loop instance and first iteration): grains of each, matched
    grains, and the same for tasks alone (`same_tasks`: both task trees equal)."""
    gb, gr = g_base.grains, g_run.grains
    pos = wd.match(gb, gr, wd.hashes_of(g_base), wd.hashes_of(g_run))
    task_b = np.asarray(gb["kind"] == "task")
    task_r = np.asarray(gr["kind"] == "task")
    matched_tasks = int(((pos >= 0) & task_r).sum())
    return {"grains_baseline": int(len(gb)), "grains": int(len(gr)),
            "matched_grains": int((pos >= 0).sum()),
            "tasks_baseline": int(task_b.sum()), "tasks": int(task_r.sum()),
            "matched_tasks": matched_tasks,
            "same_tasks": bool(matched_tasks == task_b.sum() == task_r.sum())}


def units(grains: pd.DataFrame) -> np.ndarray:
    """What a grain's work is per: 1 for a task, its iterations for a loop
    chunk (a loop's chunks change with the thread count and schedule; its
    iterations do not)."""
    chunk = np.asarray(grains["kind"] == "chunk")
    it = grains["iterations"].to_numpy(np.int64) if "iterations" in grains else \
        np.ones(len(grains), np.int64)
    return np.where(chunk, np.maximum(it, 1), 1)


def location_means(work, locations, unit=None) -> pd.DataFrame:
    """Per source location: grains, units (grains, or loop iterations: `units`),
    work_ns, and mean_work_ns = work per unit (per grain for tasks, per
    iteration for loop chunks)."""
    work = np.asarray(work, np.int64)
    df = pd.DataFrame({"location": np.asarray(locations, dtype=object), "work": work,
                       "unit": np.ones(len(work), np.int64) if unit is None else
                       np.asarray(unit, np.int64)})
    by = df.groupby("location", sort=False).agg(grains=("work", "size"), units=("unit", "sum"),
                                                 work_ns=("work", "sum"))
    by["mean_work_ns"] = by["work_ns"] / by["units"]
    return by


def location_inflation(base: pd.DataFrame, runs: list, threads: list) -> pd.DataFrame:
    """Seed 001 Table I per source location. `base`, `runs`: `location_means`
    of the baseline and of each run (with its thread count in `threads`).
    One row per (location, run): threads, grains, units, mean_work_ns,
    baseline_grains, baseline_mean_work_ns, inflation = mean / baseline mean
    (NaN for a location the baseline does not have), added_work_ns =
    (mean - baseline mean) · units: the work inflation adds there (for a
    task tree or loop equal to the baseline's, work_N - work_B there)."""
    rows = []
    for i, (r, n) in enumerate(zip(runs, threads)):
        b = base.reindex(r.index)
        rows.append(pd.DataFrame({
            "location": r.index.to_numpy(dtype=object), "run": i, "threads": n,
            "grains": r["grains"].to_numpy(np.int64), "units": r["units"].to_numpy(np.int64),
            "work_ns": r["work_ns"].to_numpy(np.int64),
            "mean_work_ns": r["mean_work_ns"].to_numpy(np.float64),
            "baseline_grains": b["grains"].fillna(0).to_numpy(np.int64),
            "baseline_mean_work_ns": b["mean_work_ns"].to_numpy(np.float64)}))
    out = pd.concat(rows, ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["inflation"] = out["mean_work_ns"] / out["baseline_mean_work_ns"]
    out["added_work_ns"] = (out["mean_work_ns"] - out["baseline_mean_work_ns"]) * out["units"]
    return out


def most_inflated(table: pd.DataFrame, run: int, top: int | None = None) -> pd.DataFrame:
    """The locations whose inflation adds the most work in run `run` (its
    position; rows of `location_inflation`, largest added work first)."""
    at = table[(table["run"] == run) & table["added_work_ns"].notna()]
    at = at.sort_values(["added_work_ns", "inflation"], ascending=False, kind="stable")
    return at if top is None else at.head(top)
