"""Per-thread time decomposition (seed 000, §2: work / overhead / idle).

For each thread that ran anything, over the program's wall-clock window
[first node start, last node end]:
  work      fragment and chunk durations it ran (grains and serial/team code)
  create    fork durations (task creation cost)
  schedule  book-keeping durations (obtaining loop chunks)
  sync      join durations: the runtime's latency to resume after a join became
            ready (a team join's is charged to every thread that resumes from it)
  overhead  create + schedule + sync
  idle      the rest of the window: waiting in joins, no work available
Summed over threads: OVR = (work + overhead + idle) / work, and with a reference
run (`compare`): WTI_N = Σwork_N / Σwork_1, speed-up_N = N / (OVR_N · WTI_N).
Units: ns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._graph import is_one_of

COLUMNS = ("work", "create", "schedule", "sync", "overhead", "idle", "total")


def per_thread(g) -> pd.DataFrame:
    nodes = g.nodes
    types = nodes["type"]
    thread = nodes["thread"].to_numpy(np.int64)
    dur = nodes["duration"].to_numpy(np.int64)
    start = nodes["start"].to_numpy(np.int64)
    end = nodes["end"].to_numpy(np.int64)
    threads = np.unique(thread[thread >= 0])
    if len(threads) == 0:
        return pd.DataFrame(columns=["thread", *COLUMNS])
    window = int(end.max() - start.min())

    def total_by_thread(mask, t=thread, w=dur):
        sel = mask & (t >= 0)
        s = pd.Series(w[sel]).groupby(t[sel]).sum()
        return s.reindex(threads, fill_value=0).to_numpy(np.int64)

    work = total_by_thread(is_one_of(types, "fragment", "chunk"))
    create = total_by_thread(is_one_of(types, "fork"))
    schedule = total_by_thread(is_one_of(types, "bookkeeping"))
    is_join = is_one_of(types, "join")
    # joins: charge each resuming thread (continuation successor) the join's duration
    e = g.edges
    src = e["src"].to_numpy(np.int64)
    dst = e["dst"].to_numpy(np.int64)
    cont = is_one_of(e["type"], "continuation") & is_join[src]
    sync = total_by_thread(np.ones(cont.sum(), bool), thread[dst[cont]], dur[src[cont]])
    overhead = create + schedule + sync
    idle = np.maximum(window - work - overhead, 0)
    return pd.DataFrame({"thread": threads, "work": work, "create": create,
                         "schedule": schedule, "sync": sync, "overhead": overhead,
                         "idle": idle, "total": work + overhead + idle})


def summary(g) -> dict:
    t = per_thread(g)
    tot = {c: int(t[c].sum()) for c in COLUMNS}
    tot["threads"] = int(len(t))
    tot["OVR"] = float(tot["total"] / tot["work"]) if tot["work"] > 0 else float("inf")
    return tot


def speedup_terms(summary_n: dict, summary_1: dict) -> dict:
    """WTI_N, OVR_N and the speed-up bound N / (OVR_N · WTI_N) (seed 000 §3)."""
    wti = summary_n["work"] / summary_1["work"] if summary_1["work"] > 0 else float("nan")
    ovr = summary_n["OVR"]
    n = summary_n["threads"]
    return {"WTI": float(wti), "OVR": float(ovr),
            "speedup_bound": float(n / (ovr * wti)) if ovr * wti > 0 else float("nan")}
