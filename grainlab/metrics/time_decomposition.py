"""Per-thread time decomposition (Olivier et al., "Characterizing and
mitigating work time inflation in task parallel programs", SC 2012, §2:
work / overhead / idle).

For each thread that ran anything, over the program's wall-clock window
[first node start, last node end]:
  work      fragment and chunk durations it ran (grains and serial/team code)
  create    fork durations (task creation cost)
  schedule  book-keeping durations (obtaining loop chunks)
  sync      join durations: the runtime's latency to resume after a join became
            ready (a team join's is charged to every thread that resumes from it)
  runtime   the rest of its time while work was available: in the runtime
            between grains (finding, starting and finishing tasks, waiting in a
            join) while at least one created task had not started yet
  overhead  create + schedule + sync + runtime
  idle      the rest: time with nothing runnable (no created task waiting to
            start), and time before the thread's first / after its last node
so work + overhead + idle = threads x window exactly. A lone thread is never
idle while tasks wait for it: its time between grains is overhead. The rule is
documented in docs/metrics.md ("Time decomposition").
Summed over threads: OVR = (work + overhead + idle) / work, and with a reference
run (`compare`): WTI_N = Σwork_N / Σwork_1, speed-up_N = N / (OVR_N · WTI_N).
Units: ns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .contract import is_one_of
from .intervals import covered, union_by_group

COLUMNS = ("work", "create", "schedule", "sync", "runtime", "overhead", "idle", "total")


def per_thread(g) -> pd.DataFrame:
    nodes = g.nodes
    types = nodes["type"]
    thread = nodes["thread"].to_numpy(np.int64)
    # thread time really spent: wall weights even in a graph weighed by CPU
    # time (grainlab.metrics.preemption.weigh_cpu)
    dur = nodes["wall_duration" if "wall_duration" in nodes.columns else "duration"].to_numpy(
        np.int64)
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
    rest = np.maximum(window - work - create - schedule - sync, 0)
    idle = np.minimum(rest, _nothing_runnable(g, threads, thread, start, end))
    runtime = rest - idle
    overhead = create + schedule + sync + runtime
    return pd.DataFrame({"thread": threads, "work": work, "create": create,
                         "schedule": schedule, "sync": sync, "runtime": runtime,
                         "overhead": overhead, "idle": idle,
                         "total": work + overhead + idle})


def _nothing_runnable(g, threads, thread, start, end) -> np.ndarray:
    """Per thread: time in the window when it ran no node and no created task
    was waiting to start (so it could not have had work), plus the window
    outside its own first..last node."""
    lo, hi = int(start.min()), int(end.max())
    # ready: from a task's creation (its fork) to its first start
    nodes = g.nodes
    fork = is_one_of(nodes["type"], "fork")
    child = nodes["child"].to_numpy(np.int64)[fork]
    ok = (child >= 0) & (child < len(g.grains))
    created = start[fork][ok]
    began = g.grains["start"].to_numpy(np.int64)[child[ok]]
    _, rs, re_ = union_by_group(np.zeros(ok.sum(), np.int64), created, began)
    # per thread: the gaps between its nodes, within its own lifetime
    t_ok = thread >= 0
    gt, bs, be = union_by_group(thread[t_ok], start[t_ok], end[t_ok])
    out = np.zeros(len(threads), np.int64)
    if len(bs) == 0:
        return out + (hi - lo)
    same = gt[1:] == gt[:-1]
    gap_t, gap_a, gap_b = gt[1:][same], be[:-1][same], bs[1:][same]
    idle_gap = (gap_b - gap_a) - covered(rs, re_, gap_a, gap_b)
    per = pd.Series(idle_gap).groupby(gap_t).sum()
    first = pd.Series(bs).groupby(gt).min()
    last = pd.Series(be).groupby(gt).max()
    outside = (first - lo) + (hi - last)
    total = outside.add(per, fill_value=0)
    return total.reindex(threads, fill_value=hi - lo).to_numpy(np.int64)


def decompose(g) -> dict:
    t = per_thread(g)
    tot = {c: int(t[c].sum()) for c in COLUMNS}
    tot["threads"] = int(len(t))
    tot["OVR"] = float(tot["total"] / tot["work"]) if tot["work"] > 0 else float("inf")
    return tot


def speedup_terms(split_n: dict, split_1: dict) -> dict:
    """WTI_N, OVR_N and the speed-up bound N / (OVR_N · WTI_N) (Olivier et al., SC 2012, §3):
    Σwork_1 / T_N, the speed-up over a serial run that costs only run 1's work.
    Also the measured speed-up T_1 / T_N and OVR relative to run 1's (`OVR_relative`),
    with which (N / N_1) / (OVR_relative · WTI) = T_1 / T_N exactly (`grainlab scaling`,
    docs/metrics.md "Scaling")."""
    wti = split_n["work"] / split_1["work"] if split_1["work"] > 0 else float("nan")
    ovr = split_n["OVR"]
    n = split_n["threads"]
    t_n = split_n["total"] / n if n else float("nan")
    t_1 = split_1["total"] / split_1["threads"] if split_1.get("threads") else float("nan")
    ovr_1 = split_1.get("OVR", float("nan"))
    return {"WTI": float(wti), "OVR": float(ovr),
            "speedup_bound": float(n / (ovr * wti)) if ovr * wti > 0 else float("nan"),
            "speedup": float(t_1 / t_n) if t_n > 0 else float("nan"),
            "OVR_relative": float(ovr / ovr_1) if ovr_1 and ovr_1 == ovr_1 else float("nan")}
