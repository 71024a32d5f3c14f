"""The graph `grainlab predict` replays (docs/predict.md): the grain graph's
nodes and edges as arrays, with the guard against inflated grains applied,
and a what-if change (one location's grains k times cheaper, or subtrees
below a depth merged into their root grain).

    rep = replay_graph(g)                      # the recorded graph, guarded
    rep = replay_graph(g, scale=mask_and_k)    # what-if: some grains k x cheaper
    rep = replay_graph(g, merge_below=3)       # what-if: tasks deeper than 3 inlined

Everything per node or grain is a column operation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ..errors import UsageError
from .replay_abi import EDGES, FLAGS
from .contract import is_one_of

# A grain is capped when it is an outlier of its source location at its
# depth by this many inter-quartile ranges of log(work), among at least
# MIN_GROUP grains, and the excess is at least a time slice.
FENCE_IQR = 3.0
MIN_GROUP = 8
SLICE_NS = 1_000_000
# the kernel's edge codes (native/replay.def): anything else is OTHER
EDGE_CODES = {"continuation": EDGES["CONTINUATION"], "creation": EDGES["CREATION"]}


@dataclass
class Replay:
    """Arrays of the replayed DAG: node weights (ns), edges src -> dst with
    codes (0 continuation, 1 creation, 2 synchronization / dependence), which
    nodes start an explicit task, and what the guard did."""
    w: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    etype: np.ndarray
    task_first: np.ndarray
    own: np.ndarray                       # node runs a grain's own code (fragment/chunk)
    times: dict                           # start, end, is_join, released: a topological order
    guard: dict = field(default_factory=dict)
    grain: np.ndarray | None = None       # the grain a node belongs to (-1: none)

    @property
    def work(self) -> int:
        return int(self.w.sum())

    @property
    def tasks(self) -> int:
        return int(self.task_first.sum())

    @cached_property
    def order(self) -> np.ndarray:
        """Node ids in a topological order (by time, checked against every
        edge; igraph's sort if the times disagree)."""
        from ..graph.critical_path import topological_order
        order, _, _ = topological_order(**self.times, src=self.src, dst=self.dst)
        return np.ascontiguousarray(order, np.int64)

    @property
    def spawn(self) -> np.ndarray:
        """Forks that create an explicit task (they pay the deferral)."""
        out = np.zeros(len(self.w), bool)
        creation = self.etype == EDGES["CREATION"]
        out[self.src[creation][self.task_first[self.dst[creation]]]] = True
        return out

    @property
    def flags(self) -> np.ndarray:
        """The kernel's node flags (native/replay.def): TASK_FIRST a created
        task's first node, SPAWN a fork creating one."""
        return np.ascontiguousarray(self.task_first * FLAGS["TASK_FIRST"]
                                    + self.spawn * FLAGS["SPAWN"], np.int8)

    def stealable(self, continuations: bool) -> np.ndarray:
        """Nodes a thief can take: a created task's first node, and with
        `continuations` the parent's continuation after each fork too (what
        work-first queues, and a throttled child's parent)."""
        if not continuations:
            return self.task_first
        fork = np.zeros(len(self.w), bool)
        fork[self.src[self.etype == EDGES["CREATION"]]] = True
        after = np.zeros(len(self.w), bool)
        after[self.dst[(self.etype == EDGES["CONTINUATION"]) & fork[self.src]]] = True
        return self.task_first | after


def replay_graph(g, *, guard: str = "auto", scale=None, merge_below: int | None = None,
                 whole: bool = False, inline: bool = True) -> Replay:
    """The replayed DAG of `g`. guard: "auto" (CPU time where recorded, then
    the per-location cap), "cpu", "cap", "none". scale: (grain mask, k):
    those grains' own nodes weigh k times theirs. merge_below: tasks deeper
    than this are merged into their ancestor at this depth. inline: tasks
    known to have run undeferred are merged into their creator (`merge`).
    whole: keep the
    initial task's time before the first parallel region and after the last
    one (by default it weighs nothing: the replay times the parallel part,
    from the first region's start to the last one's end, as benchmarks time
    their kernels; the serial code in the parallel part stays)."""
    if guard not in ("auto", "cpu", "cap", "none"):
        raise UsageError(f"--guard {guard}: choose auto, cpu, cap or none")
    nodes = g.nodes
    G = len(g.grains)
    w = nodes["duration"].to_numpy(np.int64).astype(np.float64)
    own = np.asarray(is_one_of(nodes["type"], "fragment", "chunk"))
    grain = nodes["grain"].to_numpy(np.int64)
    in_grain = own & (grain >= 0) & (grain < G)
    report = {"guard": guard, "cpu_time": False, "capped_grains": 0, "capped_ns": 0}
    if guard in ("auto", "cpu"):
        w = _cpu_weights(g, w, report)
    if guard in ("auto", "cap"):
        w = _location_cap(g, w, in_grain, grain, report)
    if scale is not None:
        mask, k = scale
        hit = in_grain.copy()
        hit[in_grain] = np.asarray(mask, bool)[grain[in_grain]]
        w[hit] *= float(k)
    if not whole:
        w[_outside_regions(g)] = 0
    w = np.rint(w).astype(np.int64)
    src = g.edges["src"].to_numpy(np.int64)
    dst = g.edges["dst"].to_numpy(np.int64)
    etype = np.full(len(src), EDGES["OTHER"], np.int8)
    for name, code in EDGE_CODES.items():
        etype[np.asarray(is_one_of(g.edges["type"], name))] = code
    owner = nodes["owner"].to_numpy(np.int64)
    task_first = np.zeros(len(w), bool)
    created = dst[etype == EDGES["CREATION"]]
    task_first[created[(owner[created] >= 0) & (owner[created] < G)]] = True
    from ..graph.critical_path import node_arrays
    times = node_arrays(nodes)
    del times["duration"]
    rep = Replay(w, src, dst, etype, task_first, own, times, report,
                 np.where((grain >= 0) & (grain < G), grain, -1))
    return merge(g, rep, merge_below, inline_undeferred=inline)


def _outside_regions(g) -> np.ndarray:
    """Nodes of the initial task before its first region fork or after its
    last region's end (none when the program has no region)."""
    nodes, ctx = g.nodes, g.contexts
    out = np.zeros(len(nodes), bool)
    initial = ctx.index[(ctx["kind"] == "initial").to_numpy(bool)]
    if not len(initial):
        return out
    owner = nodes["owner"].to_numpy(np.int64)
    mine = owner == int(initial[0])
    seq = nodes["owner_seq"].to_numpy(np.int64)
    child = nodes["child"].to_numpy(np.int64)
    forks = mine & (nodes["type"] == "fork").to_numpy(bool) & (child >= len(g.grains))
    ends = mine & (nodes["join_kind"] == "region_end").to_numpy(bool)
    if not forks.any() or not ends.any():
        return out
    return mine & ((seq < seq[forks].min()) | (seq > seq[ends].max()))


def _cpu_weights(g, w, report):
    """Measured nodes weigh their CPU time where the trace has it."""
    from .preemption import node_cpu, wall_durations
    cpu = node_cpu(g)
    if cpu is None:
        return w
    wall = wall_durations(g).astype(np.float64)
    has = ~np.isnan(cpu)
    report["cpu_time"] = True
    report["off_cpu_ns"] = int((wall[has] - cpu[has]).sum())
    out = wall.copy()
    out[has] = cpu[has]
    return out


def _location_cap(g, w, in_grain, grain, report):
    """Cap every grain that is a far outlier among the grains of its source
    location (code address) at its depth: above the fence max(exp(Q3 +
    FENCE_IQR * IQR), 1.5 exp(Q3)) of their log work, by a time slice or
    more (a preempted grain). Grains of one construct at one depth of a
    recursion do alike work (one merge level of a sort, the blocks of one
    LU phase); a divide-and-conquer's big top grains are at other depths."""
    G = len(g.grains)
    if G == 0:
        return w
    work = np.bincount(grain[in_grain], weights=w[in_grain], minlength=G)[:G]
    df = pd.DataFrame({"loc": g.grains["codeptr"].to_numpy(np.uint64),
                       "depth": g.grains["depth"].to_numpy(np.int64),
                       "lw": np.log(np.maximum(work, 1.0))})
    keys = ["loc", "depth"]
    q = df.groupby(keys)["lw"].quantile([0.25, 0.75]).unstack()
    q["n"] = df.groupby(keys).size()
    at = q.reindex(pd.MultiIndex.from_frame(df[keys]))
    q1, q3, n = (at[c].to_numpy(np.float64) for c in (0.25, 0.75, "n"))
    fence = np.maximum(np.exp(q3 + FENCE_IQR * (q3 - q1)), 1.5 * np.exp(q3))
    hit = (n >= MIN_GROUP) & (work > fence) & (work - fence >= SLICE_NS)
    if not hit.any():
        return w
    factor = np.ones(G)
    factor[hit] = fence[hit] / work[hit]
    out = w.copy()
    out[in_grain] *= factor[grain[in_grain]]
    report["capped_grains"] = int(hit.sum())
    report["capped_ns"] = int((work[hit] - fence[hit]).sum())
    return out


def location_mask(locations: pd.Series, location: str) -> np.ndarray:
    """Grains at a source location given as the full text `grainlab analyze`
    prints, or its start (`fib.c:28`, `fib.c`), or the name of the function
    it is in (`heavy` for `whatif.c:24 (heavy, inlined into main, task)`)."""
    text = locations.astype(str).to_numpy()
    want = location.strip()
    for test in (lambda s: s == want, lambda s: s.startswith(want + " ") or s == want,
                 lambda s: s.startswith(want),
                 # a function: "(heavy)", "(heavy, inlined into main, task)"
                 lambda s: f"({want})" in s or f"({want}," in s or f" {want} " in s):
        hit = np.fromiter((test(s) for s in pd.unique(text)), bool)
        found = pd.unique(text)[hit]
        if len(found):
            return np.isin(text, found)
    known = ", ".join(pd.Series(text).value_counts().index[:5])
    raise UsageError(f"--what-if {location}: no grain at that location (largest: {known})")


def merge(g, rep: Replay, depth: int | None, inline_undeferred: bool = True) -> Replay:
    """Tasks run inside their creator, merged into it:

    * tasks that ran undeferred whatever the thread count (always): the
      descendants of a final task (included), and, in a trace whose teams
      had more than one thread, every task flagged undeferred (`if(0)`). A
      1-thread trace flags every task undeferred (libomp runs a team of one's
      tasks at once), so there only the included ones are known;
    * with `depth` (--merge-below): every task deeper than `depth`; their
      forks and the joins of the tasks at `depth` then weigh nothing (an
      inlined call has no creation and no synchronization).

    A merged task's nodes' weights move onto the fork that created it (or
    its merged ancestor), where it ran; edges to and from it go to that fork."""
    if depth is not None and depth < 1:
        raise UsageError("--merge-below must be >= 1 (task depth: children of an implicit task are 1)")
    G = len(g.grains)
    N = G + len(g.contexts)
    parent = np.full(N, -1, np.int64)
    parent[:G] = g.grains["parent"].to_numpy(np.int64)
    parent[(parent < 0) | (parent >= N)] = -1
    task = np.zeros(N, bool)
    task[:G] = (g.grains["kind"] == "task").to_numpy(bool)
    gdepth = np.zeros(N, np.int64)
    gdepth[:G] = g.grains["depth"].to_numpy(np.int64)
    inline = task & (parent >= 0) & _ran_inside(g, N, parent) if inline_undeferred else \
        np.zeros(N, bool)
    deep = task & (parent >= 0) & (gdepth > depth) if depth is not None else np.zeros(N, bool)
    if not (inline | deep).any():
        return rep
    root, top = _roots(parent, inline | deep)
    nodes = g.nodes
    owner = nodes["owner"].to_numpy(np.int64)
    ok = (owner >= 0) & (owner < N)
    oid = np.where(ok, owner, 0)
    child = nodes["child"].to_numpy(np.int64)
    is_fork = np.asarray(is_one_of(nodes["type"], "fork")) & (child >= 0) & (child < N)
    fork_of = np.full(N, -1, np.int64)
    fork_of[child[is_fork]] = np.flatnonzero(is_fork)
    gone = ok & (root[oid] != oid) & (fork_of[top[oid]] >= 0)   # (a fork lost: kept)
    at = np.where(gone, fork_of[top[oid]], np.arange(len(owner)))
    w = rep.w.copy()
    if depth is not None:
        free = is_fork & deep[np.clip(child, 0, N - 1)]
        free |= np.asarray(is_one_of(nodes["type"], "join")) & ok & (gdepth[oid] == depth)
        free |= gone & ~rep.own & deep[oid]         # the merged tasks' own forks and joins
        w[free] = 0
    moved = gone               # an undeferred task's runtime costs stay, in its creator
    w += np.bincount(at[moved], weights=w[moved], minlength=len(w)).astype(np.int64)
    own = rep.own.copy()
    own[at[moved]] = True
    label = {"inlined_tasks": int((inline & ~deep)[:G].sum()), "merged_tasks": int(deep[:G].sum())}
    return _drop(rep, w, own, gone, at, label)


def _ran_inside(g, N, parent) -> np.ndarray:
    """Per owner id: a task known to have run inside its creator (above)."""
    flags = np.zeros(N, np.uint64)
    flags[:len(g.grains)] = g.grains["flags"].to_numpy(np.uint64)
    final = (flags & np.uint64(0x20000000)) != 0
    out = (parent >= 0) & final[np.maximum(parent, 0)]
    ctx = g.contexts
    teams = int(ctx["team_size"].max()) if "team_size" in ctx.columns and len(ctx) else 1
    if teams > 1:
        out |= (flags & np.uint64(0x08000000)) != 0
    return out


def _roots(parent, merged):
    """Per owner: the nearest ancestor (or itself) that is not merged (its
    root), and the ancestor just below that root (itself when not merged);
    one pass per level, not per owner."""
    n = len(parent)
    root = np.arange(n)
    while True:
        up = merged[root] & (parent[root] >= 0)
        if not up.any():
            break
        root[up] = parent[root[up]]
    top = np.arange(n)
    while True:
        up = (top != root) & (parent[top] != root)
        if not up.any():
            return root, top
        top[up] = parent[top[up]]


def _drop(rep, w, own, gone, at, label) -> Replay:
    """The DAG without the merged nodes: edges to or from one go to the fork
    it ran in; the ones that end where they start are dropped."""
    src, dst = at[rep.src], at[rep.dst]
    keep = src != dst
    new_id = np.cumsum(~gone) - 1
    pair = pd.DataFrame({"s": new_id[src[keep]], "d": new_id[dst[keep]],
                         "t": rep.etype[keep]}).drop_duplicates(["s", "d"])
    return Replay(w[~gone], pair["s"].to_numpy(np.int64), pair["d"].to_numpy(np.int64),
                  pair["t"].to_numpy(np.int8), rep.task_first[~gone], own[~gone],
                  {k: np.asarray(v)[~gone] for k, v in rep.times.items()},
                  {**rep.guard, **label}, None if rep.grain is None else rep.grain[~gone])
