"""Contention in the replay of `grainlab predict` (docs/predict.md,
"Contention"): how much slower a grain's own code runs when c grains run at
once, measured from runs at more threads, or bounded when none are given.

The model, per source location l (a task construct or loop):

    i_l(c) = 1 + A_l * h(c),    h(c) = 1 - 1/c          (c >= 1)

i_l(1) = 1 (the 1-thread trace is the reference), the inflation grows with
the concurrency c and saturates at 1 + A_l. h is the share of a shared
resource (last-level cache, memory bandwidth, the interconnect) that the
other c - 1 of c equal sharers take: a grain whose shared-cache hits turn
into misses as co-runners evict its lines loses at most all of them, so its
inflation is bounded (Olivier et al., SC 2012, measure the bounded total,
r = 1.25-3 at 32 threads on four sockets). One parameter per location,
A_l, so one run at 2 threads fits it.

c is the mean number of cores running grains' code: grain work / duration.
In a measured run at N threads, c_N = (its grains' work) / (its duration),
and its inflation I_l,N = mean work per grain (per loop iteration) at N /
in the 1-thread trace (`grainlab scaling`'s per-location inflation). The
fit is the least-squares A_l over the runs:

    A_l = sum_N h(c_N) (I_l,N - 1) / sum_N h(c_N)^2

At P simulated cores, c_P = grain work / predicted time of the
contention-free replay (at most P), and every node of a grain at l weighs
i_l(c_P) times its trace time; the replay then runs again.

Without runs, the prediction is contention-free (A = 0) and the range's
pessimistic end is A = PESSIMISTIC_A for every grain (saturation at twice
the time). Where a stall and a cycle counter were recorded, a location's
pessimistic A is PESSIMISTIC_A times its grains' stalled share of cycles
(only the time stalled on memory can inflate); without counters every cycle
is assumed possibly stalled (share 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

PESSIMISTIC_A = 2.0       # the range's pessimistic end: grains up to 3x slower
MIN_GRAINS = 8            # a location's own fit needs this many grains in a run ...
MIN_SHARE = 0.01          # ... and this share of the grains' work
MIN_H = 1.0 - 1.0 / 1.2   # a run whose concurrency is under 1.2 fits nothing
A_RANGE = (0.0, 8.0)      # fitted amplitudes are clipped to this (no speed-up from contention)


def h(c) -> np.ndarray:
    """The saturating shape: 0 at one running grain, 1 at infinitely many."""
    c = np.maximum(np.asarray(c, np.float64), 1.0)
    return 1.0 - 1.0 / c


def inflation(A, c) -> np.ndarray:
    """i(c) = 1 + A h(c)."""
    return 1.0 + np.asarray(A, np.float64) * h(c)


def fit_amplitude(concurrency, measured) -> float | None:
    """Least-squares A of i(c) = 1 + A h(c) through the points (c_N, I_N);
    None when no point has enough concurrency to say anything."""
    x = h(np.asarray(concurrency, np.float64))
    y = np.asarray(measured, np.float64) - 1.0
    ok = np.isfinite(y) & (x >= MIN_H)
    if not ok.any():
        return None
    A = float((x[ok] * y[ok]).sum() / (x[ok] ** 2).sum())
    return float(np.clip(A, *A_RANGE))


@dataclass
class Contention:
    """Amplitudes per location (`amplitude`), `default` for the grains of
    any other location; `source` says where they came from; `fits` holds
    each fitted location's measured points; `notes` what was not used."""
    amplitude: dict = field(default_factory=dict)
    default: float = 0.0
    source: str = "none"
    fits: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    per_grain: np.ndarray | None = None   # A per grain, when counters give one

    def grain_amplitude(self, locations) -> np.ndarray:
        """A per grain, from its location's text."""
        if self.per_grain is not None:
            return self.per_grain
        loc = pd.Series(np.asarray(locations, dtype=object)).astype(str)
        return loc.map(self.amplitude).fillna(self.default).to_numpy(np.float64)

    def describe(self) -> dict:
        return {"source": self.source, "model": "i(c) = 1 + A (1 - 1/c)",
                "default_amplitude": self.default, "locations": self.fits,
                "notes": list(self.notes)}


def from_scaling(s, locations_of_trace=None) -> Contention:
    """The model fitted from a `grainlab.Scaling` whose baseline is the
    1-thread trace being predicted and whose other runs are at more threads."""
    runs = s.runs
    other = [i for i in range(len(runs)) if not runs.at[i, "baseline"]]
    conc = {i: concurrency(runs.at[i, "grain_work_ns"], runs.at[i, "duration_ns"],
                           runs.at[i, "threads"]) for i in other}
    # every grain together: the default for locations with too little to fit
    wti = [float(runs.at[i, "grain_work_ns"]) / max(float(runs.loc[runs["baseline"],
                                                                    "grain_work_ns"].iloc[0]), 1.0)
           for i in other]
    A0 = fit_amplitude([conc[i] for i in other], wti)
    table = s.locations
    fits, amp = [], {}
    for loc, rows in table.groupby("location", sort=False):
        rows = rows[rows["run"].isin(other) & np.isfinite(rows["inflation"])]
        total = runs.loc[rows["run"], "grain_work_ns"].to_numpy(np.float64)
        good = rows[(rows["grains"].to_numpy() >= MIN_GRAINS)
                    & (rows["baseline_grains"].to_numpy() >= MIN_GRAINS)
                    & (rows["work_ns"].to_numpy(np.float64) >= MIN_SHARE * total)]
        if not len(good):
            continue
        c = [conc[int(r)] for r in good["run"]]
        A = fit_amplitude(c, good["inflation"].to_numpy(np.float64))
        if A is None:
            continue
        amp[str(loc)] = A
        fits.append({"location": str(loc), "amplitude": A,
                     "measured": [{"threads": int(r["threads"]), "concurrency": cc,
                                   "inflation": float(r["inflation"]), "grains": int(r["grains"])}
                                  for r, cc in zip(good.to_dict("records"), c)]})
    fits.sort(key=lambda f: -abs(f["amplitude"]))
    paths = ", ".join(f"{runs.at[i, 'path']} ({int(runs.at[i, 'threads'])} threads, "
                      f"{conc[i]:.2f} cores busy)" for i in other)
    notes = []
    if A0 is None:
        notes.append("no run kept more than 1.2 cores busy on average: nothing fitted")
    return Contention(amp, 0.0 if A0 is None else A0, f"runs: {paths}", fits, notes)


def from_speedup(P: int, measured: float, predicted: float, concurrency_P: float) -> Contention:
    """One amplitude for every grain from a measured speed-up at P threads
    (a run with its time only, no trace): the contention-free replay
    predicted `predicted` there, so the grains took predicted / measured
    times as long at the replay's concurrency."""
    A = fit_amplitude([concurrency_P], [predicted / measured])
    notes = [] if A is not None else [f"the replay keeps under 1.2 cores busy at {P}: "
                                      "nothing fitted"]
    return Contention({}, 0.0 if A is None else A,
                      f"measured speed-up {measured:.3g} at {P} threads (time only: one factor "
                      f"for every grain)", [], notes)


def pessimistic(g) -> Contention:
    """The range's pessimistic end: PESSIMISTIC_A for every grain, or
    PESSIMISTIC_A times each grain's stalled share of cycles where a stall
    and a cycle counter were recorded (per grain, through its location's
    mean share)."""
    from .memory_hierarchy import CYCLE_COUNTERS, STALL_COUNTERS, _first_present
    gr = g.grains
    stall, cycles = _first_present(gr, STALL_COUNTERS), _first_present(gr, CYCLE_COUNTERS)
    if stall is None or cycles is None:
        return Contention({}, PESSIMISTIC_A, f"bound: grains up to {1 + PESSIMISTIC_A:g}x "
                          "slower at saturation",
                          notes=["no stall and cycle counters recorded: every grain is assumed "
                                 "possibly memory-bound"])
    s = gr[stall].to_numpy(np.float64)
    c = gr[cycles].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.clip(np.where(c > 0, s / c, 1.0), 0.0, 1.0)
    share = np.where(np.isfinite(share), share, 1.0)
    return Contention({}, PESSIMISTIC_A, f"bound: grains' stalled cycles ({stall} / {cycles}) "
                      f"up to {1 + PESSIMISTIC_A:g}x slower at saturation",
                      notes=[f"memory-bound share from {stall} / {cycles} per grain"],
                      per_grain=PESSIMISTIC_A * share)


def concurrency(grain_work_ns, duration_ns, threads) -> float:
    """Mean cores running grains' code: grain work / duration, 1..threads."""
    c = float(grain_work_ns) / max(float(duration_ns), 1.0)
    return float(min(max(c, 1.0), max(float(threads), 1.0)))


def node_factors(rep, grain_amplitude: np.ndarray, c: float) -> np.ndarray:
    """Per node of the replayed graph: i(c) for a grain's own nodes (by its
    grain's amplitude), 1 elsewhere (serial code, runtime nodes)."""
    f = np.ones(len(rep.w))
    g = rep.grain
    mine = rep.own & (g >= 0) & (g < len(grain_amplitude))
    f[mine] = inflation(grain_amplitude[g[mine]], c)
    return f


def grain_work(rep) -> int:
    """The grains' own work in the replayed graph."""
    g = rep.grain
    return int(rep.w[rep.own & (g >= 0)].sum())
