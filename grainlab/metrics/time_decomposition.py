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
  off_cpu   in a trace with CPU time (`record --cpu-time`): the time the
            thread was not running (preempted, or blocked) inside its own
            nodes (fragments, chunks, forks, book-keeping, its joins' whole
            own time; grainlab.metrics.preemption.node_off_cpu). Work,
            create, schedule and sync then count only their CPU time, so
            a busy machine's stolen time is neither work nor runtime overhead.
            Team barriers' off-CPU time (summed over their threads on one
            node) stays in runtime / idle. 0 without CPU time.
  idle      the rest: time with nothing runnable (no created task waiting to
            start), and time before the thread's first / after its last node
so work + overhead + off_cpu + idle = threads x window exactly. A lone thread is never
idle while tasks wait for it: its time between grains is overhead. The rule is
documented in docs/metrics.md ("Time decomposition").

The thread count N of a run is its team: the trace's `threads` (every thread
the runtime started), never fewer than the threads that ran a node. A team
thread that ran no node held its core for the whole window with nothing to do:
it is idle for the whole window (seed 001 §II: T_parallel = (T_serial / N) ·
OVR_N · WTI_N, N the cores; Olivier et al. §2 sum the time of all threads).
`decompose` is the one place that decides N; `speedup_terms` the one place that
turns two decompositions into WTI, OVR and speed-up. `compare`, `analyze` and
`scaling` (grainlab.metrics.scaling) all read them.
Summed over threads: OVR = (work + overhead + idle) / work = N · T / work, and
with a reference run: WTI_N = Σwork_N / Σwork_1, speed-up_N = N / (OVR_N · WTI_N).
Units: ns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .contract import is_one_of
from .intervals import covered, union_by_group

COLUMNS = ("work", "create", "schedule", "sync", "runtime", "overhead", "off_cpu", "idle",
           "total")


def per_thread(g) -> pd.DataFrame:
    nodes = g.nodes
    types = nodes["type"]
    thread = nodes["thread"].to_numpy()
    # thread time really spent: wall weights even in a graph weighed by CPU
    # time (grainlab.metrics.preemption.weigh_cpu)
    dur = nodes["wall_duration" if "wall_duration" in nodes.columns else "duration"].to_numpy(
        np.int64)
    start = nodes["start"].to_numpy(np.int64)
    end = nodes["end"].to_numpy(np.int64)
    if len(dur) == 0 or thread.max() < 0:
        return pd.DataFrame(columns=["thread", *COLUMNS])
    window = int(end.max() - start.min())

    # with CPU time: each node's off-CPU time is booked apart (off_cpu), the
    # categories keep the CPU part of the node weights
    from .preemption import node_off_cpu
    own_off = node_off_cpu(g)
    e = g.edges
    src = e["src"].to_numpy(np.int64)
    dst = e["dst"].to_numpy(np.int64)
    if own_off is None and _exact_in_float(dur, thread):
        threads, work, create, schedule, sync = _category_sums(types, thread, dur, src, dst,
                                                               e["type"])
        off_cpu = np.zeros(len(threads), np.int64)
    else:
        threads, work, create, schedule, sync, off_cpu = _category_sums_pandas(
            types, thread, dur, own_off, src, dst, e["type"])
    busy = work + create + schedule + sync
    off_cpu = np.minimum(off_cpu, np.maximum(window - busy, 0))
    rest = np.maximum(window - busy - off_cpu, 0)
    idle = np.minimum(rest, _nothing_runnable(g, threads, thread, start, end))
    runtime = rest - idle
    overhead = create + schedule + sync + runtime
    return pd.DataFrame({"thread": threads, "work": work, "create": create,
                         "schedule": schedule, "sync": sync, "runtime": runtime,
                         "overhead": overhead, "off_cpu": off_cpu, "idle": idle,
                         "total": work + overhead + off_cpu + idle})


def _exact_in_float(dur, thread) -> bool:
    """Sums of these int64 weights are exact in float64 (np.bincount's
    weights): every partial sum of non-negative integers is below 2^53;
    and thread ids are small enough for a dense table."""
    return (len(dur) == 0 or (int(dur.min()) >= 0 and int(dur.sum()) < 1 << 53)) \
        and int(thread.max()) < 1 << 20


def _category_sums(types, thread, dur, src, dst, edge_type):
    """(threads, work, create, schedule, sync) per thread: one np.bincount
    of (node type, thread) keys instead of a pandas groupby per category
    (at 10^7 grains: no node-sized masks, copies or factorized keys per
    category). `_exact_in_float` holds, so the sums are the int64 ones."""
    slot = thread.astype(np.intp)       # thread + 1: slot 0 is "no thread" (-1)
    slot += 1
    width = int(slot.max()) + 1
    cats = list(types.cat.categories) if isinstance(types.dtype, pd.CategoricalDtype) else None
    if cats is None:                    # hand-made graphs: strings
        cats = list(pd.unique(types.to_numpy()))
        codes = pd.Categorical(types.to_numpy(), categories=cats).codes
    else:
        codes = types.cat.codes.to_numpy()
    key = codes.astype(np.intp)
    key *= width
    key += slot
    sums = np.bincount(key, weights=dur, minlength=(len(cats) + 1) * width)
    del key
    sums = sums.reshape(-1, width).astype(np.int64)

    def of(*names):
        return sum((sums[cats.index(n)] for n in names if n in cats), np.zeros(width, np.int64))
    present = np.bincount(slot, minlength=width) > 0
    present[0] = False
    # joins: charge each resuming thread (continuation successor) the join's duration
    is_join = codes == cats.index("join") if "join" in cats else np.zeros(len(codes), bool)
    cont = is_one_of(edge_type, "continuation") & is_join[src]
    sync = np.bincount(slot[dst[cont]], weights=dur[src[cont]], minlength=width).astype(np.int64)
    keep = np.flatnonzero(present)
    return (keep - 1, of("fragment", "chunk")[keep], of("fork")[keep],
            of("bookkeeping")[keep], sync[keep])


def _category_sums_pandas(types, thread, dur, own_off, src, dst, edge_type):
    """`_category_sums` by pandas groupby sums, for what it cannot do exactly:
    CPU time weights (floats) and sums past 2^53."""
    thread = thread.astype(np.int64)
    threads = np.unique(thread[thread >= 0])

    def total_by_thread(mask, t=thread, w=dur):
        sel = mask & (t >= 0)
        s = pd.Series(w[sel]).groupby(t[sel]).sum()
        return s.reindex(threads, fill_value=0).to_numpy(np.int64)

    if own_off is None:
        own_off = np.zeros(len(dur))
    own_off = np.nan_to_num(own_off)
    cpu = dur - np.minimum(own_off, dur)
    work = total_by_thread(is_one_of(types, "fragment", "chunk"), w=cpu)
    create = total_by_thread(is_one_of(types, "fork"), w=cpu)
    schedule = total_by_thread(is_one_of(types, "bookkeeping"), w=cpu)
    is_join = is_one_of(types, "join")
    cont = is_one_of(edge_type, "continuation") & is_join[src]
    sync = total_by_thread(np.ones(cont.sum(), bool), thread[dst[cont]], cpu[src[cont]])
    off_cpu = total_by_thread(np.ones(len(dur), bool), w=np.rint(own_off))
    return threads, work, create, schedule, sync, off_cpu


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
    gt, bs, be = union_by_group(thread, start, end, mask=thread >= 0)
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


def team_size(g, active: int) -> int:
    """N: the run's team (the trace's `threads`), never fewer than the
    `active` threads that ran a node, at least 1."""
    meta = getattr(g, "meta", None)
    team = meta.get("threads") if isinstance(meta, dict) else None
    return max(int(team or 0), int(active), 1)


def decompose(g) -> dict:
    """The run's totals over its N team threads (`team_size`): work, create,
    schedule, sync, runtime, overhead, idle (a team thread that ran no node
    is idle for the whole window), total = N · window; threads = N,
    threads_active (threads that ran a node), window_ns, OVR = total / work."""
    t = per_thread(g)
    tot = {c: int(t[c].sum()) for c in COLUMNS}
    nodes = g.nodes
    window = int(nodes["end"].max() - nodes["start"].min()) if len(nodes) else 0
    active = int(len(t))
    n = team_size(g, active)
    tot["idle"] += (n - active) * window
    tot["total"] += (n - active) * window
    tot["threads"] = n
    tot["threads_active"] = active
    tot["window_ns"] = window
    tot["OVR"] = float(tot["total"] / tot["work"]) if tot["work"] > 0 else float("inf")
    return tot


def terms(threads, window, work, total, base_threads, base_window, base_work, base_total) -> dict:
    """The one definition of the scaling factors of a run N against a
    reference run B (scalars or numpy arrays; every figure of `compare`,
    `analyze` with a reference, and `scaling` comes from here):

        OVR_abs      = total_N / work_N        (total_N = N · T_N)
        WTI          = work_N / work_B
        speedup      = T_B / T_N               (measured)
        speedup_bound= N / (OVR_abs · WTI)     = work_B / T_N
        OVR_relative = OVR_abs / OVR_abs_B     (1 for B itself)
        ideal        = N / N_B
        efficiency   = speedup / ideal
        identity     = ideal / (OVR_relative · WTI)  (= speedup up to rounding)
    """
    f = np.float64
    with np.errstate(divide="ignore", invalid="ignore"):
        ovr = f(total) / f(work)
        ovr_b = f(base_total) / f(base_work)
        wti = f(work) / f(base_work)
        speedup = f(base_window) / f(window)
        ideal = f(threads) / f(base_threads)
        ovr_rel = ovr / ovr_b
        return {"OVR": ovr, "WTI": wti, "speedup": speedup,
                "speedup_bound": f(threads) / (ovr * wti), "OVR_relative": ovr_rel,
                "ideal": ideal, "efficiency": speedup / ideal,
                "identity": ideal / (ovr_rel * wti)}


def speedup_terms(split_n: dict, split_1: dict) -> dict:
    """WTI_N, OVR_N and the speed-up bound N / (OVR_N · WTI_N) (Olivier et al.,
    SC 2012, §3; seed 001 §II) of two `decompose` results (run N, reference 1):
    Σwork_1 / T_N, the speed-up over a serial run that costs only run 1's work.
    Also the measured speed-up T_1 / T_N and OVR relative to run 1's
    (`OVR_relative`, what `grainlab scaling` calls `ovr`), with which
    (N / N_1) / (OVR_relative · WTI) = T_1 / T_N exactly (`terms`)."""
    t = terms(split_n["threads"], split_n["window_ns"], split_n["work"], split_n["total"],
              split_1["threads"], split_1["window_ns"], split_1["work"], split_1["total"])
    return {k: float(t[k]) for k in ("WTI", "OVR", "speedup_bound", "speedup", "OVR_relative")}
