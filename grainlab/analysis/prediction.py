"""The grain graph of one analysis replayed on simulated cores (`grainlab
predict`; docs/predict.md), and its what-ifs: a location made k times
cheaper, tasks below a depth merged into their ancestor; and contention:
the grains' inflation fitted from measured runs at more threads, or bounded
(grainlab.metrics.contention)."""
from __future__ import annotations

import math

import numpy as np

from ..metrics.work import serial_part
from .report import PARALLEL_PART, WHOLE_RUN, jsonable


def predict(a, cores=(1, 2, 4, 8, 16), *, what_if: str | None = None,
            merge_below: int | None = None, costs=None, wti=None,
            guard: str = "auto", whole: bool = False, runs=None, measured=None,
            contention=None) -> dict:
    """Analysis.predict of the Analysis `a` (its docstring says the rest)."""
    from ..errors import UsageError
    from ..metrics.predict import predict as replay_on
    from ..metrics.replay_graph import location_mask, replay_graph
    g = a.graph
    cores = list(cores)
    if wti is not None and (runs or measured or contention is not None):
        raise UsageError("give either --wti or measured runs (--runs), not both")
    a.progress(f"replaying the grain graph on {', '.join(map(str, cores))} cores")
    rep = replay_graph(g, guard=guard, whole=whole)
    out = {"trace": str(a.path), "program": a.run["program"],
           **replay_on(rep, cores, costs, wti)}
    fitted = contention if contention is not None else \
        _fitted(a, rep, costs, runs, measured)
    out["serial"] = serial_part(g, out["work_ns"], whole)
    # which parallelism work / span is: the same words wherever it is shown
    # (analysis.report's names); the analysis's number of that name unless
    # the guard weighed nodes otherwise (CPU time, capped grains)
    out["part"] = "whole run" if whole else "parallel part"
    done = out.get("guard") or {}       # what the guard did
    out["parallelism_name"] = (WHOLE_RUN if whole else PARALLEL_PART) + (
        " as replayed (guarded)" if done.get("cpu_time") or done.get("capped_grains") else "")
    if wti is None:
        _contend(a, rep, out, costs, fitted)
    if what_if is None and merge_below is None:
        return jsonable(out)
    scale, change = None, []
    if what_if is not None:
        location, k = _what_if(what_if)
        mask = location_mask(a.locations, location)
        scale = (mask, k)
        change.append(f"{int(mask.sum())} grains at {location} x{k:g}")
    if merge_below is not None:
        change.append(f"tasks deeper than {merge_below} merged into their root grain")
    rep2 = replay_graph(g, guard=guard, scale=scale, merge_below=merge_below, whole=whole)
    alt = replay_on(rep2, cores, costs, wti)
    if wti is None and fitted is not None:
        _contend(a, rep2, alt, costs, fitted, bound=False)
    alt["change"] = "; ".join(change)
    alt["speedup_vs_baseline"] = [out["work_ns"] / max(t, 1) for t in _best(alt)]
    alt["gain"] = [x / max(y, 1) for x, y in zip(_best(out), _best(alt))]
    out["what_if"] = alt
    return jsonable(out)


def _best(r: dict) -> list:
    """The prediction to act on: with measured contention, the contended one."""
    c = r.get("contention")
    return c["predicted_ns"] if c and c.get("fitted") else r["predicted_ns"]


def _fitted(a, rep, costs, runs, measured):
    """The contention model from measured runs (traces at more threads), or
    from measured speed-ups {P: speed-up} (times only); None without either."""
    from ..metrics import contention as ct
    if runs:
        from .scaling import Scaling
        a.progress("fitting contention from the measured runs")
        return ct.from_scaling(Scaling([a, *runs], baseline=0, progress=a.progress))
    if measured:
        from ..metrics.predict import predict as replay_on
        (P, speedup), = sorted(measured.items())[-1:]
        cf = replay_on(rep, [int(P)], costs)
        c = ct.concurrency(ct.grain_work(rep), cf["predicted_ns"][0], P)
        return ct.from_speedup(int(P), float(speedup), cf["speedup"][0], c)
    return None


def _contend(a, rep, out: dict, costs, fitted, bound: bool = True):
    """Adds "contention" (the replay with the fitted model) and "range"
    (contention-free to the pessimistic bound, or to the fitted model if
    that is slower) to `out`, the contention-free replay of `rep`."""
    from ..metrics import contention as ct
    from ..metrics.predict import predict as replay_on
    cores = out["cores"]
    gw = ct.grain_work(rep)
    conc = [ct.concurrency(gw, t, P) for P, t in zip(cores, out["predicted_ns"])]
    locations = a.locations.to_numpy() if rep.grain is not None and (rep.grain >= 0).any() \
        else np.zeros(0, object)

    def replayed(model):
        amp = model.grain_amplitude(locations)
        at = dict(zip(cores, conc))
        r = replay_on(rep, cores, costs, lambda P: ct.node_factors(rep, amp, at[P]))
        return {"predicted_ns": r["predicted_ns"], "speedup": r["speedup"],
                "inflation": r["wti"], "concurrency": conc, **model.describe()}

    if fitted is not None:
        c = replayed(fitted)
        c["fitted"] = True
        for f in c["locations"]:
            f["inflation"] = [float(ct.inflation(f["amplitude"], x)) for x in conc]
        out["contention"] = c
    if not bound:
        return
    pess = replayed(ct.pessimistic(a.graph))
    slow = [max(x, y) for x, y in zip(pess["predicted_ns"], _best(out))]
    out["range"] = {"predicted_ns": [[min(out["predicted_ns"][i], _best(out)[i]), slow[i]]
                                     for i in range(len(cores))],
                    "speedup": [[out["work_ns"] / max(s, 1), out["work_ns"] / max(f, 1)]
                                for f, s in zip(out["predicted_ns"], slow)],
                    "pessimistic": pess}


AMDAHL_NOTED = 100.0     # analyze names the serial part when it caps the speed-up below this


def _what_if(text: str) -> tuple[str, float]:
    """"fib.c:28=0.5" -> ("fib.c:28", 0.5)."""
    from ..errors import UsageError
    location, _, k = str(text).rpartition("=")
    try:
        factor = float(k)
    except ValueError:
        factor = -1.0
    if not location.strip() or not math.isfinite(factor) or factor < 0:
        raise UsageError(f"--what-if {text}: give LOCATION=k with k >= 0, e.g. fib.c:28=0.5")
    return location.strip(), factor
