"""The grain graph of one analysis replayed on simulated cores (`grainlab
predict`; docs/predict.md), and its what-ifs: a location made k times
cheaper, tasks below a depth merged into their ancestor."""
from __future__ import annotations

import math

from .report import jsonable


def predict(a, cores=(1, 2, 4, 8, 16), *, what_if: str | None = None,
            merge_below: int | None = None, costs=None, wti=None,
            guard: str = "auto", whole: bool = False) -> dict:
    """Analysis.predict of the Analysis `a` (its docstring says the rest)."""
    from ..metrics.predict import predict as replay_on
    from ..metrics.replay_graph import location_mask, replay_graph
    g = a.graph
    cores = list(cores)
    a.progress(f"replaying the grain graph on {', '.join(map(str, cores))} cores")
    out = {"trace": str(a.path), "program": a.run["program"],
           **replay_on(replay_graph(g, guard=guard, whole=whole), cores, costs, wti)}
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
    rep = replay_graph(g, guard=guard, scale=scale, merge_below=merge_below, whole=whole)
    alt = replay_on(rep, cores, costs, wti)
    alt["change"] = "; ".join(change)
    alt["speedup_vs_baseline"] = [out["work_ns"] / max(t, 1) for t in alt["predicted_ns"]]
    alt["gain"] = [x / max(y, 1) for x, y in zip(out["predicted_ns"], alt["predicted_ns"])]
    out["what_if"] = alt
    return jsonable(out)


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
