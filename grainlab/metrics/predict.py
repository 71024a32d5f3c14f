"""How a program will scale: the grain graph replayed on P simulated cores
(`grainlab predict`, docs/predict.md).

    from grainlab.metrics.predict import Costs, predict
    out = predict(replay_graph(g), cores=[1, 2, 4, 8, 16], costs=Costs())
    out["speedup"], out["predicted_ns"], out["span_ns"], out["burdened_span_ns"]

The replay is a greedy work-stealing list scheduler over the node DAG
(grainlab/native/replay.c, loaded with ctypes like the critical path's
kernel). Without the compiled kernel, a Python replay of the same rules runs
graphs of up to PYTHON_LIMIT nodes (tests compare the two); bigger graphs
ask for the build.
"""
from __future__ import annotations

import ctypes
import heapq
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import GrainlabError, UsageError
from .replay_abi import COSTS, EDGES, FLAGS, STATS

PYTHON_LIMIT = 50_000
SEED = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


@dataclass
class Costs:
    """Runtime costs the 1-thread trace cannot show (ns), added when P > 1.
    steal: a thief's time from choosing a victim to starting the stolen node;
    defer: what deferring a task adds on its creator (allocation for the
    queue, the push); lock: how long a steal or a push holds a deque's lock
    (steals from one deque, and the owner's pushes, are that far apart);
    deque_cap: tasks a core's deque holds before a new one runs at once on
    its creator (libomp's throttling: 256; 0: no limit). Defaults and
    where each is paid: docs/predict.md, "The model"."""
    steal_ns: int = 1500
    defer_ns: int = 400
    lock_ns: int = 300
    work_first: bool = False
    deque_cap: int = 256

    def check(self):
        for k, v in asdict(self).items():
            if k != "work_first" and (not np.isfinite(v) or v < 0):
                raise UsageError(f"{k.replace('_ns', '')} cost must be >= 0 ns (got {v})")
        return self



def parse_cores(text) -> list[int]:
    """"1,2,4,16" -> [1, 2, 4, 16] (sorted, unique, each >= 1)."""
    try:
        cores = sorted({int(x) for x in str(text).split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--cores {text}: give core counts separated by commas, e.g. 1,2,4,8") from None
    if not cores or cores[0] < 1 or cores[-1] > 1 << 20:
        raise UsageError(f"--cores {text}: each core count must be between 1 and 1048576")
    return cores


def predict(rep, cores, costs: Costs | None = None, wti=None) -> dict:
    """Predicted time, speed-up and bounds for each core count of `cores`.
    wti: work time inflation, a number or callable(P) -> factor (>= 1 slows
    the grains' own code at P cores) or -> one factor per node of `rep`
    (the contention model, grainlab.metrics.contention); None: 1."""
    costs = (costs or Costs()).check()
    work, span = rep.work, _span(rep, rep.w)
    burdened = _span(rep, rep.w + rep.task_first * costs.steal_ns + rep.spawn * costs.defer_ns)
    rows = [_at(rep, P, costs, wti, span) for P in cores]
    pred = np.array([r["predicted_ns"] for r in rows], dtype=np.float64)
    return {"cores": list(cores), "speedup": (work / np.maximum(pred, 1)).tolist(),
            "predicted_ns": [int(x) for x in pred], "work_ns": work, "span_ns": span,
            "burdened_span_ns": burdened, "parallelism": work / max(span, 1),
            "burdened_parallelism": work / max(burdened, 1),
            "work_over_p_ns": [-(-work // P) for P in cores],
            "lower_bound_ns": [r["lower_ns"] for r in rows],
            "upper_bound_ns": [r["upper_ns"] for r in rows],
            "speedup_upper": [work / max(r["lower_ns"], 1) for r in rows],
            "speedup_lower": [work / max(r["upper_ns"], 1) for r in rows],
            "steals": [r["steals"] for r in rows], "overhead_ns": [r["overhead_ns"] for r in rows],
            "wti": [r["wti"] for r in rows], "tasks": rep.tasks, "nodes": len(rep.w),
            "costs": asdict(costs), "guard": rep.guard}


def _at(rep, P: int, costs: Costs, wti, span: int) -> dict:
    """One core count: the replay, and its bounds. Lower: max(work/P, span).
    Upper (Brent's, with the costs): (work + the replay's overheads)/P + the
    span where every node also waits the most its start can: a stolen node
    a steal and every other core's steal ahead of it at one deque, a fork
    creating a task the deferral and the same wait for its deque's lock."""
    f = 1.0 if P == 1 or wti is None else (wti(P) if callable(wti) else wti)
    f = float(f) if np.ndim(f) == 0 else np.asarray(f, np.float64)   # or one factor per node
    same = np.ndim(f) == 0 and f == 1.0
    w = rep.w if same else np.where(rep.own, np.rint(rep.w * f), rep.w).astype(np.int64)
    stats = replay(rep, w, P, costs if P > 1 else Costs(0, 0, 0, costs.work_first, 0))
    wp = int(w.sum())
    queue = 0 if P == 1 else costs.lock_ns * (P - 1)
    stolen = rep.stealable(costs.work_first or costs.deque_cap > 0)
    extra = stolen * (costs.steal_ns + queue) + rep.spawn * (costs.defer_ns + queue) if P > 1 else 0
    if np.ndim(f):         # per node: the grains' own work's mean factor
        f = float(w[rep.own].sum() / max(int(rep.w[rep.own].sum()), 1))
    return {"predicted_ns": stats["makespan"], "wti": f, "steals": stats["steals"],
            "overhead_ns": stats["overhead"],
            "lower_ns": max(-(-wp // P), span if same else _span(rep, w)),
            "upper_ns": -(-(wp + stats["overhead"]) // P) + _span(rep, w + extra)}


def _span(rep, w) -> int:
    """The longest node-weighted path (the critical path's kernel), in the
    replayed graph's topological order (found once per graph)."""
    from ..graph.critical_path import span_in_order
    return span_in_order(rep.order, w, rep.src, rep.dst)


def replay(rep, w, P: int, costs: Costs) -> dict:
    """{makespan, steals, overhead} of replaying `rep` with weights `w` on P cores."""
    off, adj, et = _csr(len(w), rep.src, rep.dst, rep.etype)
    indeg = np.bincount(rep.dst, minlength=len(w)).astype(np.int64)
    kernel = _kernel()
    if kernel is None:
        if len(w) > PYTHON_LIMIT:
            raise GrainlabError(
                f"predicting {len(w)} nodes needs the compiled replay kernel "
                "(build grainlab: cmake --build build); without it only graphs of up to "
                f"{PYTHON_LIMIT} nodes are replayed")
        return replay_python(w, off, adj, et, rep.flags, indeg, P, costs)
    stats = np.zeros(len(STATS), np.int64)
    cost = cost_vector(costs)
    w = np.ascontiguousarray(w, np.int64)
    tf = rep.flags
    rc = kernel(len(w), w.ctypes.data, off.ctypes.data, adj.ctypes.data, et.ctypes.data,
                tf.ctypes.data, indeg.ctypes.data, P, int(costs.work_first), cost.ctypes.data,
                stats.ctypes.data)
    if rc == -1:
        raise MemoryError("the replay's scratch arrays")
    if rc != 0:
        raise GrainlabError("the replayed graph is not a DAG (a grainlab bug: please report it)")
    return {name: int(stats[i]) for i, name in enumerate(STATS)}


def cost_vector(costs: Costs) -> np.ndarray:
    """gl_replay's cost vector: Costs' fields in replay.def's order (COSTS)."""
    return np.array([getattr(costs, name) for name in COSTS], np.int64)


def _csr(n, src, dst, etype):
    """Out-edges grouped by source (stable: in edge order)."""
    order = np.argsort(src, kind="stable")
    off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=off[1:])
    return (off, np.ascontiguousarray(dst[order], np.int64),
            np.ascontiguousarray(etype[order], np.int8))


def _kernel():
    """gl_replay from the compiled kernels, or None (not built, or GRAINLAB_NATIVE=0)."""
    from .._paths import graph_kernel
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    return graph_kernel("gl_replay", [i64, p, p, p, p, p, p, i32, i32, p, p])


class _Sim:
    """The kernel's state, in Python (replay_python)."""

    def __init__(self, w, off, adj, et, tf, indeg, P, costs):
        self.w, self.off, self.adj, self.et, self.tf = w, off, adj, et, tf
        self.indeg, self.P, self.c = indeg.copy(), P, costs
        self.heap, self.seq = [], 0
        self.dq = [[] for _ in range(P)]      # bottom = end
        self.running = [-1] * P
        self.throttled = [False] * P
        self.lock_free = [0] * P
        self.idle, self.nonempty, self.rng = [], [], SEED
        self.done = self.makespan = self.steals = self.overhead = 0

    def event(self, t, core, kind):
        heapq.heappush(self.heap, (t, self.seq, core, kind))
        self.seq += 1

    def push(self, c, v, t):
        self.dq[c].append(v)
        if c not in self.nonempty:
            self.nonempty.append(c)
        if self.idle:
            self.event(t, self.idle.pop(), 1)

    def take(self, c, top):
        v = self.dq[c].pop(0 if top else -1)
        if not self.dq[c]:
            i = self.nonempty.index(c)
            self.nonempty[i] = self.nonempty[-1]
            self.nonempty.pop()
        return v

    def start(self, c, v, t):
        at = t
        spawn = bool(self.tf[v] & FLAGS["SPAWN"])
        self.throttled[c] = spawn and 0 < self.c.deque_cap <= len(self.dq[c])
        if self.P > 1 and spawn and not self.throttled[c]:
            at = max(at, self.lock_free[c])
            self.lock_free[c] = at + self.c.lock_ns
            at += self.c.defer_ns
        self.overhead += at - t
        self.running[c] = v
        self.event(at + int(self.w[v]), c, 0)

    def find_work(self, c, t):
        if self.dq[c]:
            return self.start(c, self.take(c, False), t)
        if not self.nonempty:
            self.running[c] = -1
            self.idle.append(c)
            return
        x = self.rng
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        self.rng = x
        victim = self.nonempty[x % len(self.nonempty)]
        v = self.take(victim, True)
        at = max(t, self.lock_free[victim])
        self.lock_free[victim] = at + self.c.lock_ns
        self.steals += 1
        self.overhead += at + self.c.steal_ns - t
        self.start(c, v, at + self.c.steal_ns)

    def finish(self, c, v, t):
        best, rank = -1, 99
        self.done += 1
        self.makespan = max(self.makespan, t)
        for e in range(self.off[v], self.off[v + 1]):
            d = int(self.adj[e])
            self.indeg[d] -= 1
            if self.indeg[d]:
                continue
            et = self.et[e]
            creation = et == EDGES["CREATION"]
            r = 1 if et == EDGES["OTHER"] else (0 if creation == bool(self.c.work_first) else 2)
            if creation and self.throttled[c]:
                r = -1
            if r < rank:
                if best >= 0:
                    self.push(c, best, t)
                best, rank = d, r
            else:
                self.push(c, d, t)
        if best >= 0:
            return self.start(c, best, t)
        self.find_work(c, t)


def replay_python(w, off, adj, et, tf, indeg, P, costs) -> dict:
    """The kernel's replay in Python, for small graphs (same rules, same
    random victims: the same result)."""
    s = _Sim(w, off, adj, et, tf, indeg, P, costs)
    for v in np.flatnonzero(s.indeg == 0):
        s.push(0, int(v), 0)
    s.idle = list(range(P - 1, 0, -1))      # core 1 is woken first, as in the kernel
    s.find_work(0, 0)
    while s.heap:
        t, _, c, kind = heapq.heappop(s.heap)
        if kind == 0:
            s.finish(c, s.running[c], t)
        elif s.running[c] < 0:
            s.find_work(c, t)
    if s.done != len(w):
        raise GrainlabError("the replayed graph is not a DAG (a grainlab bug: please report it)")
    return {"makespan": s.makespan, "steals": s.steals, "overhead": s.overhead}


def wti_model(text):
    """A work-time-inflation model from `--wti`: a number (every P > 1), or
    the JSON `grainlab scaling --json` prints (runs with "threads" and
    "wti"): interpolated in log P between its thread counts, held beyond
    them. Returns a float or callable(P) -> factor."""
    import json
    from pathlib import Path
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = None
    if value is not None:
        if not np.isfinite(value) or value <= 0:
            raise UsageError(f"--wti {text}: a factor must be > 0 (1 = no inflation)")
        return value
    try:
        runs = json.loads(Path(text).read_text())["runs"]
        pts = sorted((int(r["threads"]), float(r["wti"])) for r in runs
                     if r.get("wti") is not None)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--wti {text}: not a number, nor a readable `grainlab scaling --json` "
                         f"file ({type(e).__name__})") from None
    if not pts:
        raise UsageError(f"--wti {text}: the file has no run with a wti")
    x = np.log2([p for p, _ in pts])
    y = np.array([f for _, f in pts])
    return lambda P: float(np.interp(np.log2(P), x, y))
