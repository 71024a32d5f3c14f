"""Two runs of one program compared grain by grain (`grainlab compare`):
work deviation per grain and per source location, and the time
decomposition of both runs."""
from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ..errors import GrainlabError
from .report import DEFAULT_TOP, identities, identity_text, jsonable


class Comparison:
    """Run B (`b`) against reference run A (`a`), grains matched by identity.

    grains     DataFrame, one row per grain of B matched in A: identity, kind,
               location, work_a_ns, work_b_ns, work_deviation, inflated
    locations  DataFrame, one row per source location of B: grains, work_a_ns,
               work_b_ns, work_deviation, inflated (grains)
    report(top) / summary: what `grainlab compare --json` prints
    """

    def __init__(self, a, b, threshold: float):
        """a, b: the two runs' Analysis objects; threshold: work deviation
        past which a grain is inflated."""
        from ..metrics import time_decomposition, work_deviation
        self.a, self.b, self.threshold = a, b, threshold
        ga, gb = a.graph, b.graph
        self.info = work_deviation.compute(gb, ga)
        if self.info["matched"] == 0 and (len(ga.grains) or len(gb.grains)):
            raise GrainlabError(f"{b.path}: no grain matches a grain of {a.path} by identity "
                                "(different programs or inputs?)")
        gr = gb.grains
        dev = gr[work_deviation.COLUMN].to_numpy(np.float64)
        pos = work_deviation.match(ga.grains, gr, work_deviation.hashes_of(ga),
                                   work_deviation.hashes_of(gb))
        work_a = np.where(pos >= 0, ga.grains["work"].to_numpy(np.int64)[np.maximum(pos, 0)], 0)
        with np.errstate(invalid="ignore"):
            inflated = dev > threshold
        self.matched = ~np.isnan(dev)
        self.inflated = inflated
        self._graph_b = gb
        # identities: a column only when the graph has one (short identities);
        # report() makes the ones it prints on demand
        per = {"identity": gr["identity"].to_numpy()} if "identity" in gr else {}
        self.per_grain = pd.DataFrame({
            **per, "kind": gr["kind"].to_numpy(),
            "location": b.locations.to_numpy(), "work_a_ns": work_a,
            "work_b_ns": gr["work"].to_numpy(np.int64), "work_deviation": dev,
            "inflated": inflated, "on_critical_path": gr["on_critical_path"].to_numpy(bool)},
            index=gr.index)
        self.time_a = time_decomposition.decompose(ga)
        self.time_b = time_decomposition.decompose(gb)
        self.terms = time_decomposition.speedup_terms(self.time_b, self.time_a)

    @cached_property
    def grains(self) -> pd.DataFrame:
        return self.per_grain[self.matched]

    @cached_property
    def locations(self) -> pd.DataFrame:
        from ..metrics import work_deviation
        m = self.grains
        by = m.groupby("location", sort=False).agg(
            grains=("work_a_ns", "size"), work_a_ns=("work_a_ns", "sum"),
            work_b_ns=("work_b_ns", "sum"), inflated=("inflated", "sum"))
        by["work_deviation"] = work_deviation.ratio(by["work_b_ns"].to_numpy(),
                                                    by["work_a_ns"].to_numpy())
        return by.sort_values("work_b_ns", ascending=False)

    def report(self, top: int | None = DEFAULT_TOP) -> dict:
        """What `grainlab compare --json` prints; `top` None lists everything."""
        from ..metrics import work_deviation
        info, a, b = self.info, self.a, self.b
        by = self.locations if top is None else self.locations.head(top)
        pg = self.per_grain
        dev = pg["work_deviation"].to_numpy()
        work_b = pg["work_b_ns"].to_numpy()
        idx = np.flatnonzero(self.matched)
        order = idx[np.lexsort((-work_b[idx], -np.nan_to_num(dev[idx], posinf=1e300)))]
        if top is not None:
            order = order[:top]
        n = len(pg)
        inflated, crit = self.inflated, pg["on_critical_path"].to_numpy()
        return jsonable({
            "a": a.run["trace"], "b": b.run["trace"], "program": b.run["program"],
            "threads_a": self.time_a["threads"], "threads_b": self.time_b["threads"],
            "grains_a": info["grains_a"], "grains_b": info["grains_b"],
            "matched": info["matched"],
            "only_a": info["grains_a"] - info["matched"], "only_b": n - info["matched"],
            "work_a_ns": info["work_a_matched_ns"], "work_b_ns": info["work_b_matched_ns"],
            "work_deviation": float(work_deviation.ratio(
                np.array([info["work_b_matched_ns"]]), np.array([info["work_a_matched_ns"]]))[0]),
            "threshold": self.threshold,
            "inflated": {"grains": int(inflated.sum()),
                         "percent": 100.0 * int(inflated.sum()) / n if n else 0.0,
                         "on_critical_path": int((inflated & crit).sum())},
            "time_decomposition": {"a": self.time_a, "b": self.time_b, **self.terms},
            "locations": [{"location": str(k), "grains": int(r.grains),
                           "work_a_ns": int(r.work_a_ns), "work_b_ns": int(r.work_b_ns),
                           "work_deviation": float(r.work_deviation),
                           "inflated": int(r.inflated)} for k, r in by.iterrows()],
            "grains": [{"grain": int(i), "identity": identity_text(name),
                        "kind": str(pg.at[i, "kind"]), "location": str(pg.at[i, "location"]),
                        "work_a_ns": int(pg.at[i, "work_a_ns"]),
                        "work_b_ns": int(pg.at[i, "work_b_ns"]),
                        "work_deviation": float(pg.at[i, "work_deviation"])}
                       for i, name in zip(order.tolist(),
                                          identities(self._graph_b, pg.index.to_numpy()[order]))],
        })

    @cached_property
    def summary(self) -> dict:
        return self.report(DEFAULT_TOP)
