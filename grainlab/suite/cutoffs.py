"""Cutoff tuning from measured time, cross-checked by the grain graph
(cutoff_tuning.ipynb; `grainlab sweep` records the folder it reads).

A sweep runs one program at several cutoffs, each `reps` times, three ways:
alone at the chosen threads (the makespan that matters), alone on one
thread (the serial reference for the speed-up), and under the collector (a
trace, and the makespan with the instrumentation, whose ratio to the
uninstrumented one is the inflation of every time the trace holds). Rows go
to DIR/sweep.csv; traces to DIR/NAME-cCUTOFF-rREP.parquet.

The rule (`recommend`): the cutoffs whose mean makespan alone cannot be told
from the fastest one (within one standard deviation of each's repetitions),
less those whose threads spend most of their time in overhead (creating,
scheduling, synchronizing grains: > 50% in the trace); of those, the fastest.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GrainlabError, UsageError

OVERHEAD_LIMIT = 0.5        # "most of the thread time in overhead"
SWEEP_CSV = "sweep.csv"
MEASURES = ["alone_s", "serial_s", "collector_s", "speedup", "inflation", "span_ms",
            "parallelism", "overhead_fraction", "idle_fraction", "parallel_benefit_median",
            "grains"]


def expand(template: list[str], value) -> list[str]:
    """The command with every '{}' replaced by the cutoff value."""
    if not any("{}" in a for a in template):
        raise UsageError("the command has no {} where the cutoff goes")
    return [a.replace("{}", str(value)) for a in template]


def _timed(argv, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise GrainlabError(f"{' '.join(argv)} failed: {why}")
    return dt


def run_once(template, value, rep, out: Path, threads: int) -> dict:
    """One repetition at one cutoff: alone, on one thread, under the collector."""
    from ..record.launch import collector_env
    argv = expand(template, value)
    name = Path(argv[0]).name
    base = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    for k in ("OMP_TOOL", "OMP_TOOL_LIBRARIES", "GRAINLAB_OUTPUT"):
        base.pop(k, None)
    alone = _timed(argv, base)
    serial = _timed(argv, {**base, "OMP_NUM_THREADS": "1"})
    trace = out / f"{name}-c{value}-r{rep}.parquet"
    if trace.exists():
        trace.unlink()
    env = {**base, **collector_env(argv, trace.resolve(), secrets.token_hex(16), None, None)}
    under = _timed(argv, env)
    return {"cutoff": value, "rep": rep, "threads": threads, "alone_s": alone,
            "serial_s": serial, "collector_s": under, "trace": trace.name,
            "command": " ".join(argv),
            "template": " ".join([Path(template[0]).name, *template[1:]])}


def sweep(template, values, reps: int, out, threads: int = 2, say=None) -> pd.DataFrame:
    """Every cutoff `reps` times (repetition by repetition, so that a slow
    spell of the machine does not fall on one cutoff only); writes
    out/sweep.csv and returns it."""
    if reps < 1 or not values:
        raise UsageError("a sweep needs at least one cutoff and one repetition")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for rep in range(1, reps + 1):
        for v in values:
            rows.append(run_once(template, v, rep, out, threads))
            if say:
                r = rows[-1]
                say(f"cutoff {v} rep {rep}: {r['alone_s'] * 1e3:.1f} ms alone, "
                    f"{r['collector_s'] * 1e3:.1f} ms under the collector")
    df = pd.DataFrame(rows)
    df.to_csv(out / SWEEP_CSV, index=False)
    return df


def measurements(folder) -> pd.DataFrame:
    """sweep.csv of a folder joined with each trace's characterization: one
    row per cutoff and repetition, with speed-up (serial reference: the
    fastest cutoff's mean one-thread time) and inflation (under the
    collector / alone)."""
    from .characterization import characterize
    folder = Path(folder)
    path = folder / SWEEP_CSV
    if not path.is_file():
        raise GrainlabError(f"{folder}: no {SWEEP_CSV} (record the folder with `grainlab sweep`)")
    df = pd.read_csv(path)
    ch = characterize([folder / t for t in df["trace"]])
    df["span_ms"] = ch["span_ns"].to_numpy() / 1e6
    for c in ("parallelism", "overhead_fraction", "idle_fraction", "parallel_benefit_median",
              "grains", "cores"):
        df[c] = ch[c].to_numpy()
    reference = df.groupby("cutoff")["serial_s"].mean().min()
    df["speedup"] = reference / df["alone_s"]
    df["inflation"] = df["collector_s"] / df["alone_s"]
    return df


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per cutoff: mean and standard deviation (ddof=1) of every measure."""
    g = df.groupby("cutoff")[MEASURES]
    mean, sd = g.mean(), g.std(ddof=1).fillna(0.0)
    out = pd.concat({"mean": mean, "sd": sd}, axis=1)
    out.columns = [f"{m}_{s}" for s, m in out.columns]
    out["reps"] = g.size()
    return out.reset_index()


def recommend(table: pd.DataFrame, overhead_limit: float = OVERHEAD_LIMIT) -> dict:
    """The cutoff to use from a `summary` table (see the module's doc).
    `cutoff` is None when every cutoff swept is overhead-bound: then the
    sweep should go on towards larger grains, and nothing is recommended."""
    t = table.set_index("cutoff")
    best = t["alone_s_mean"].idxmin()
    tie = t["alone_s_mean"] <= t.loc[best, "alone_s_mean"] + t.loc[best, "alone_s_sd"] + \
        t["alone_s_sd"]
    light = t["overhead_fraction_mean"] <= overhead_limit
    pool = t[tie & light]
    fallback = pool.empty
    if fallback:
        pool = t[light]
    choice = pool["alone_s_mean"].idxmin() if len(pool) else None
    return {"cutoff": None if choice is None else _plain(choice), "fastest": _plain(best),
            "indistinguishable": [_plain(c) for c in t.index[tie]],
            "overhead_bound": [_plain(c) for c in t.index[~light]],
            "fallback": bool(fallback)}


def grain_graph_choice(table: pd.DataFrame, cores: int, slack: float = 2.0):
    """What the grain graph alone would pick (the old rule, for the
    cross-check): parallelism of the whole run >= slack x cores, then the least
    overhead; else the most parallel."""
    t = table.set_index("cutoff")
    enough = t[t["parallelism_mean"] >= slack * cores]
    if len(enough):
        return _plain(enough["overhead_fraction_mean"].idxmin())
    return _plain(t["parallelism_mean"].idxmax())


def _plain(x):
    return x.item() if isinstance(x, np.generic) else x


def explain(rec: dict, table: pd.DataFrame, cores: int) -> str:
    """The recommendation in words, every number read from the table;
    `cores`: the threads the timed runs had."""
    t = table.set_index("cutoff")
    c, f = rec["cutoff"], rec["fastest"]

    def ms(cut, col="alone_s"):
        return (f"{1e3 * t.loc[cut, col + '_mean']:.1f} ± {1e3 * t.loc[cut, col + '_sd']:.1f} ms")
    lines = [f"- **Fastest alone**: cutoff {f}, {ms(f)} over {int(t.loc[f, 'reps'])} runs "
             f"(speed-up {t.loc[f, 'speedup_mean']:.2f} over the best one-thread run). "
             f"Within one standard deviation of it: {', '.join(map(str, rec['indistinguishable']))}."]
    bound = rec["overhead_bound"]
    lines.append("- **Overhead-bound** (more than half of the thread time in overhead in the "
                 "trace): " + (", ".join(f"{b} ({100 * t.loc[b, 'overhead_fraction_mean']:.0f}%)"
                                         for b in bound) if bound else "none") + ".")
    if c is None:
        least = _plain(t["overhead_fraction_mean"].idxmin())
        lines.append(f"- **No recommendation**: every cutoff swept is overhead-bound (the least, "
                     f"{least}, has {100 * t.loc[least, 'overhead_fraction_mean']:.0f}% of thread "
                     "time in overhead): sweep on towards larger grains.")
    else:
        why = ("the fastest of those that are both as fast as the fastest and not overhead-bound"
               if not rec["fallback"] else "no cutoff as fast as the fastest is free of "
               "overhead-bound threads: the fastest of those that are")
        lines.append(f"- **Recommended: cutoff {c}**, {why}: {ms(c)} alone, "
                     f"{ms(c, 'collector_s')} under the collector; "
                     f"{100 * t.loc[c, 'overhead_fraction_mean']:.0f}% of thread time in overhead, "
                     f"median parallel benefit {t.loc[c, 'parallel_benefit_median_mean']:.2g}, "
                     f"parallelism of the whole run {t.loc[c, 'parallelism_mean']:.3g} for {cores} threads.")
    infl = t["inflation_mean"]
    lines.append(f"- **Instrumentation**: under the collector the runs took {infl.min():.2f}× "
                 f"(cutoff {_plain(infl.idxmin())}) to {infl.max():.2f}× (cutoff "
                 f"{_plain(infl.idxmax())}) as long as alone; the trace's work, and the "
                 "parallelism computed from it, are inflated by up to that much where grains "
                 "are many and small, which is why the choice is made from times measured alone.")
    g = grain_graph_choice(table, cores)
    lines.append(f"- **Cross-check**: the grain graph alone (parallelism of the whole run ≥ 2 × {cores} "
                 f"threads, then the least overhead) picks cutoff {g}: "
                 + ("it agrees." if g == c else
                    f"it disagrees; cutoff {g} runs in {ms(g)} alone"
                    + (f" and has {100 * t.loc[g, 'overhead_fraction_mean']:.0f}% of thread time "
                       "in overhead." if g in rec["overhead_bound"] else ".")))
    return "\n".join(lines)


# -- the grain graph's prediction of each cutoff (benchmarks/predict_cutoffs.py)

PREDICTED_TIE = 0.02        # predicted times this close count as equal


def predicted_best(values, predicted_ns, tasks=None, tie: float = PREDICTED_TIE):
    """The cutoff `predict --merge-below` says to use: the fastest predicted
    time; among those within `tie` (relative) of it, the one with the fewest
    tasks (coarser grains: less exposed to the runtime's costs the replay
    may underestimate), then the first in `values`' order."""
    t = np.asarray(predicted_ns, np.float64)
    if not len(t):
        raise UsageError("no cutoff to choose from")
    n = np.zeros(len(t)) if tasks is None else np.asarray(tasks, np.float64)
    near = np.flatnonzero(t <= t.min() * (1.0 + tie))
    pick = near[np.lexsort((near, n[near]))[0]]
    return _plain(np.asarray(values, dtype=object)[pick])


def steps_apart(values, a, b) -> int:
    """How many steps of the sweep (cutoffs in sorted order) separate a and b."""
    order = sorted(values)
    return abs(order.index(a) - order.index(b))


def merge_depths(tasks_at_cutoff: dict, tasks_to_depth) -> dict:
    """{cutoff: depth}: the --merge-below depth whose graph has the task
    count closest (in log) to the trace recorded at that cutoff.
    tasks_to_depth: the finest trace's tasks at depth <= D, for D = 1, 2, ...
    (a depth cutoff maps to itself; a size cutoff, as sort's, to the depth
    at which the recursion stops creating tasks)."""
    cum = np.asarray(tasks_to_depth, np.float64)
    out = {}
    for c, k in tasks_at_cutoff.items():
        d = np.abs(np.log(np.maximum(cum, 1)) - np.log(max(float(k), 1.0)))
        out[c] = int(np.argmin(d)) + 1
    return out
