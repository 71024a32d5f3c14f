"""One MPI run's traces side by side, one per rank (`grainlab ranks`;
docs/cluster.md): what each rank did inside OpenMP and outside it, and how
unevenly the work is spread.

Outside OpenMP is the time between the trace's first and last event that no
top-level parallel region covers: in a hybrid program, where the MPI calls
(halo exchanges, collectives) and the serial code are. Every number is read
from the rank's analysis (`grainlab.analyze`) and trace summary; nothing is
recomputed here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GrainlabError
from .worker import start_task

COLUMNS = ["rank", "host", "trace", "threads", "duration_ns", "in_openmp_ns", "outside_openmp_ns",
           "work_ns", "span_ns", "parallelism", "overhead_ns", "idle_ns", "top_problem",
           "top_problem_percent", "top_problem_location"]


def rank_facts(analysis) -> dict:
    """The per-rank row, plus `regions` ([begin, end] ns on the host's
    real-time clock, for the rank x time figure)."""
    rep, s, meta = analysis.report(), analysis.trace.summary(), analysis.trace.meta
    td = rep["time_decomposition"]
    top = [r for r in s["region_list"] if not r["nested"] and r["duration_ns"] is not None]
    begin = np.array([r["begin_ns"] for r in top], dtype=np.int64)
    end = begin + np.array([r["duration_ns"] for r in top], dtype=np.int64)
    events = analysis.trace.events["time"]
    first = int(events.min()) if len(events) else 0
    origin = int(meta.get("clock", {}).get("start_realtime_ns") or 0) + first
    in_openmp = _covered(begin, end)
    problem, percent, where = _top_problem(rep["problems"])
    mpi = meta.get("mpi") if isinstance(meta.get("mpi"), dict) else {}
    return {
        "rank": mpi.get("rank"), "host": meta.get("host"), "trace": str(analysis.path),
        "threads": int(rep.get("threads_used", rep["cores_used"])),
        "duration_ns": int(s["duration_ns"]), "in_openmp_ns": in_openmp,
        "outside_openmp_ns": int(s["duration_ns"]) - in_openmp,
        "work_ns": int(rep["grain_work_ns"]), "span_ns": int(rep["span_ns"]),
        "parallelism": float(rep["parallelism"]), "overhead_ns": int(td["overhead"]),
        "idle_ns": int(td["idle"]), "top_problem": problem, "top_problem_percent": percent,
        "top_problem_location": where,
        "regions": np.stack([begin + origin, end + origin], axis=1).tolist(),
        "trace_begin_ns": origin, "trace_end_ns": origin + int(s["duration_ns"]),
        "program": rep["program"],
    }


def rank_one(path: str) -> dict:
    """`rank_facts` of one trace, or {"error": line}: what a Dask worker runs."""
    from ..analysis.analysis import analyze
    start_task()
    try:
        return rank_facts(analyze(path))
    except GrainlabError as e:
        return {"error": str(e)}


def _covered(begin, end) -> int:
    """Total length of the union of [begin, end) intervals."""
    if not len(begin):
        return 0
    order = np.argsort(begin, kind="stable")
    b, e = begin[order], np.maximum.accumulate(end[order])
    starts = np.maximum(b, np.concatenate([[b[0]], e[:-1]]))
    return int(np.clip(e - starts, 0, None).sum())


def _top_problem(problems: dict):
    """The problem that flags the largest share of grains, its share, and the
    location with most of those grains."""
    found = [(v["percent"], k, v) for k, v in problems.items()
             if v.get("available") and v.get("grains")]
    if not found:
        return None, 0.0, None
    percent, name, v = max(found, key=lambda t: t[0])
    where = v["locations"][0]["location"] if v.get("locations") else None
    return name, float(percent), where


def ranks_table(facts: list) -> pd.DataFrame:
    """One row per rank (COLUMNS), sorted by rank; traces without a rank are
    numbered after the ranked ones in the order given. Refuses two traces of
    one rank (two runs mixed up)."""
    df = pd.DataFrame([{k: f[k] for k in COLUMNS} for f in facts], columns=COLUMNS)
    known = df["rank"].notna()
    dup = df.loc[known, "rank"][df.loc[known, "rank"].duplicated()]
    if len(dup):
        r = int(dup.iloc[0])
        names = ", ".join(Path(t).name for t in df.loc[df["rank"] == r, "trace"])
        raise GrainlabError(f"rank {r} appears in more than one trace ({names}): "
                            "give the traces of one run")
    start = int(df.loc[known, "rank"].max()) + 1 if known.any() else 0
    df.loc[~known, "rank"] = np.arange(start, start + int((~known).sum()))
    df["rank"] = df["rank"].astype(int)
    return df.sort_values("rank", kind="stable").reset_index(drop=True)


def imbalance(table: pd.DataFrame) -> dict:
    """Across ranks: max/mean grain work and time inside OpenMP (1 = even),
    and the critical rank: the one with the most work, whom the others wait
    for at the next collective or halo exchange."""
    work = table["work_ns"].to_numpy(np.float64)
    inside = table["in_openmp_ns"].to_numpy(np.float64)
    i = int(np.argmax(work)) if len(work) else 0
    return {
        "ranks": int(len(table)),
        "work_max_over_mean": float(work.max() / work.mean()) if len(work) and work.mean() > 0
        else float("nan"),
        "in_openmp_max_over_mean": float(inside.max() / inside.mean())
        if len(inside) and inside.mean() > 0 else float("nan"),
        "critical_rank": int(table["rank"].iloc[i]) if len(table) else None,
        "outside_openmp_mean_ns": float(table["outside_openmp_ns"].mean()) if len(table) else 0.0,
    }


class Ranks:
    """The traces of one MPI run, one per rank: `table` (one row per rank,
    COLUMNS), `imbalance` (across ranks), `regions` (rank -> [begin, end] ns
    of its parallel regions on the host's real-time clock) and `failed`
    (trace -> one-line reason)."""

    def __init__(self, facts: list, failed: dict | None = None):
        if not facts:
            raise GrainlabError("no trace of the run could be read")
        self.table = ranks_table(facts)
        self.imbalance = imbalance(self.table)
        by_trace = {f["trace"]: f for f in facts}
        self.regions = {int(r): by_trace[t]["regions"] for r, t in
                        zip(self.table["rank"], self.table["trace"])}
        self.bounds = {int(r): (by_trace[t]["trace_begin_ns"], by_trace[t]["trace_end_ns"])
                       for r, t in zip(self.table["rank"], self.table["trace"])}
        self.failed = dict(failed or {})
        programs = sorted({f["program"] for f in facts})
        # An MPMD run has several programs; mixing runs up is more common.
        self.warning = (None if len(programs) == 1 else
                        f"the traces are of {len(programs)} different programs "
                        f"({'; '.join(programs[:3])}{'; ...' if len(programs) > 3 else ''}): "
                        "are they one run?")

    def report(self) -> dict:
        """What `grainlab ranks --json` prints."""
        rows = self.table.astype(object).where(self.table.notna(), None).to_dict(orient="records")
        return {"ranks": rows, "imbalance": self.imbalance,
                "failed": [{"trace": t, "error": e} for t, e in self.failed.items()]}


def ranks(traces, *, workers: int | None = None, scheduler: str | None = None,
          progress=None) -> Ranks:
    """`Ranks` of trace paths (or folders of them), analyzed here one after
    another, or on Dask (workers / scheduler: grainlab.cluster.engine)."""
    from ..suite.characterization import trace_paths
    from .engine import run_all
    paths = trace_paths(traces if isinstance(traces, (list, tuple)) else [traces])
    facts, failed = [], {}
    for path, value, error in run_all(rank_one, paths, workers=workers, scheduler=scheduler,
                                      progress=progress):
        if error is None:
            facts.append(value)
        else:
            failed[path] = error
    return Ranks(facts, failed)
