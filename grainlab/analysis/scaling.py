"""Runs of one program at several thread counts, side by side (issue 22,
`grainlab scaling`): speed-up, and why it is not N, as
Speed-up_N = (N / N_B) / (OVR_N · WTI_N) (grainlab.metrics.scaling; docs/metrics.md
"Scaling").

    import grainlab as gl
    s = gl.scaling(["fib-1.parquet", "fib-2.parquet", "fib-4.parquet"])   # analysis.scaling
    s.runs           # DataFrame, one row per run (fewest threads first)
    s.locations      # DataFrame, one row per (source location, run): mean grain work
    s.most_inflated()   # the locations whose inflation adds the most work
    s.breakdown      # sequential-equivalent work / inflation / overhead / idle per run
    s.report()       # what `grainlab scaling --json` prints

Figures: grainlab.app.scaling_figures (breakdown_figure, speedup_figure).
"""
from __future__ import annotations

import os
from functools import cached_property

import numpy as np
import pandas as pd

from ..errors import GrainlabError, UsageError
from ..metrics import scaling as sc
from .report import DEFAULT_TOP, jsonable, program_of

RUN_KEYS = ("path", "baseline", "threads", "duration_ns", "work_ns", "overhead_ns", "idle_ns", "speedup",
            "ovr", "wti", "total_ns", "wti_grains", "grain_work_ns", "efficiency", "ideal", "ovr_abs", "inflation_ns",
            "work_share", "overhead_share", "idle_share", "identity", "identity_error",
            "threads_active", "create_ns", "schedule_ns", "sync_ns", "runtime_ns",
            "grains", "matched_grains", "tasks", "matched_tasks", "same_tasks")


class Scaling:
    """Runs of one program at several thread counts (see the module doc)."""

    def __init__(self, runs, *, baseline=None, progress=None):
        """runs: Analyses (grainlab.analysis.analysis.Analysis) of one
        program at several thread counts; `grainlab.scaling` takes paths."""
        progress = progress or (lambda _msg: None)
        runs = list(runs)
        if len(runs) < 2:
            raise UsageError(f"scaling needs two or more runs of one program (got {len(runs)})")
        # Analyses of the runs (grainlab.scaling makes them of paths and traces:
        # this module is below the pipeline, which predict reaches it from)
        self.analyses = runs
        for a in self.analyses[1:]:
            check_same_command(self.analyses[0], a)
        splits = []
        for a in self.analyses:
            g = a.graph
            progress(f"time decomposition of {a.path}")
            splits.append({"path": str(a.path), **sc.run_split(g)})
        s = pd.DataFrame(splits)
        if baseline is None:
            baseline = int(np.argmin(s["threads"].to_numpy()))
        if not 0 <= int(baseline) < len(runs):
            raise UsageError(f"baseline {baseline}: there are {len(runs)} runs")
        self.baseline = self.analyses[int(baseline)]
        progress("matching grains by identity")
        m = [sc.matches(self.baseline.graph, a.graph) for a in self.analyses]
        for a, mi in zip(self.analyses, m):
            check_same_grains(self.baseline, a, mi)
        s = pd.concat([s, pd.DataFrame(m).drop(columns=["grains_baseline", "tasks_baseline"])],
                      axis=1)
        order = np.argsort(s["threads"].to_numpy(), kind="stable")
        self.analyses = [self.analyses[i] for i in order]
        self._progress = progress
        self.runs = sc.terms(s.iloc[order].reset_index(drop=True),
                             int(np.flatnonzero(order == int(baseline))[0]))

    def __repr__(self):
        return f"<grainlab.Scaling {len(self.runs)} runs of {self.program}>"

    @property
    def program(self) -> str:
        return program_of(self.baseline.graph.meta)

    @cached_property
    def breakdown(self) -> pd.DataFrame:
        """Per run: sequential_ns (the baseline's work), inflation_ns, overhead_ns,
        idle_ns (they sum to threads x duration), Olivier et al.'s bars."""
        return sc.breakdown(self.runs)

    @cached_property
    def locations(self) -> pd.DataFrame:
        """Seed 001 Table I per source location: one row per (location, run),
        mean grain work (per iteration for loop chunks) against the baseline's
        (grainlab.metrics.scaling.location_inflation)."""
        self._progress("source locations")

        def means(a):
            gr = a.graph.grains
            return sc.location_means(gr["work"].to_numpy(), a.locations.to_numpy(), sc.units(gr))
        per_run = [means(a) for a in self.analyses]
        base = per_run[int(np.flatnonzero(self.runs["baseline"].to_numpy())[0])]
        return sc.location_inflation(base, per_run, self.runs["threads"].tolist())

    def most_inflated(self, run: int | None = None, top: int | None = DEFAULT_TOP) -> pd.DataFrame:
        """Locations by the work their inflation adds in run `run` (position
        in `runs`; default the one with the most threads)."""
        run = len(self.runs) - 1 if run is None else run
        return sc.most_inflated(self.locations, run, top)

    def report(self, top: int | None = DEFAULT_TOP) -> dict:
        """What `grainlab scaling --json` prints; `top` None lists every location."""
        runs = self.runs
        last = len(runs) - 1
        table = self.locations
        ranked = self.most_inflated(last, None)["location"].tolist()
        ranked += [x for x in dict.fromkeys(table["location"]) if x not in set(ranked)]
        ranked = ranked if top is None else ranked[:top]
        return jsonable({
            "baseline": runs.loc[runs["baseline"], "path"].iloc[0],
            "program": self.program,
            "identity": "speedup = (threads / baseline threads) / (ovr * wti)",
            "runs": [{k: r[k] for k in RUN_KEYS} for r in runs.to_dict("records")],
            "locations": _locations(table, ranked),
            "most_inflated": [
                {"path": runs.at[i, "path"], "threads": int(runs.at[i, "threads"]),
                 "locations": _location_rows(self.most_inflated(i, 3 if top is None else
                                                                min(top, 3)))}
                for i in range(len(runs)) if not runs.at[i, "baseline"]],
        })


def _location_rows(df: pd.DataFrame) -> list:
    return [{"location": str(r["location"]), "inflation": r["inflation"],
             "added_work_ns": r["added_work_ns"], "grains": int(r["grains"]),
             "units": int(r["units"]), "mean_work_ns": r["mean_work_ns"],
             "baseline_mean_work_ns": r["baseline_mean_work_ns"]}
            for r in df.to_dict("records")]


def _locations(table: pd.DataFrame, ranked: list) -> list:
    """One entry per location in `ranked` order: its baseline mean and, per run,
    grains, mean work, inflation and added work."""
    out = []
    by = {k: v for k, v in table.groupby("location", sort=False)}
    for loc in ranked:
        rows = by[loc]
        first = rows.iloc[0]
        out.append({"location": str(loc), "baseline_grains": int(first["baseline_grains"]),
                    "baseline_mean_work_ns": first["baseline_mean_work_ns"],
                    "runs": [{"threads": int(r["threads"]), "grains": int(r["grains"]),
                              "units": int(r["units"]), "work_ns": int(r["work_ns"]),
                              "mean_work_ns": r["mean_work_ns"], "inflation": r["inflation"],
                              "added_work_ns": r["added_work_ns"]}
                             for r in rows.to_dict("records")]})
    return out


def _command(a):
    cmd = a.trace.meta.get("command")
    return [str(c) for c in cmd] if isinstance(cmd, list) and cmd else None


def check_same_command(base, run):
    """Refuse a run of another program, or of the same program with other
    arguments, when both traces name their command line."""
    a, b = _command(base), _command(run)
    if a is None or b is None:
        return
    if os.path.basename(a[0]) != os.path.basename(b[0]):
        raise GrainlabError(f"{run.path} and {base.path} are runs of different programs "
                            f"({os.path.basename(b[0])} vs {os.path.basename(a[0])}): "
                            "scaling compares one program at several thread counts")
    if a[1:] != b[1:]:
        raise GrainlabError(f"{run.path} and {base.path} ran {os.path.basename(a[0])} on "
                            f"different inputs (arguments '{' '.join(b[1:])}' vs "
                            f"'{' '.join(a[1:])}'): scaling compares one input at several "
                            "thread counts")


def check_same_grains(base, run, m: dict):
    """Refuse a run none of whose grains is a grain of the baseline (by
    identity); without command lines to compare, refuse unequal task trees."""
    if m["grains"] and m["grains_baseline"] and m["matched_grains"] == 0:
        raise GrainlabError(f"no grain of {run.path} matches a grain of {base.path} by "
                            "identity: runs of different programs or inputs")
    if (_command(base) is None or _command(run) is None) and not m["same_tasks"]:
        raise GrainlabError(f"{run.path} and {base.path} have different task trees "
                            f"({m['matched_tasks']} of {m['tasks']} tasks match by identity, "
                            f"the baseline has {m['tasks_baseline']}): runs of different "
                            "programs or inputs")
