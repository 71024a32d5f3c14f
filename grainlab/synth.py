"""Synthetic traces in the collector's exact format (docs/trace-format.md).

Shapes:
  fork-join  fib-like recursion: a task with argument n >= 2 creates n-1 and n-2,
             then taskwait (the first N tasks of fib's task tree, breadth first);
  spine      a chain of parents, each creating `fanout` leaf siblings and the next
             spine task, then taskwait;
  loop       one parallel-for loop, schedule(dynamic, chunk): N chunks;
  random     a random task tree (random fan-out, some tasks without taskwait) with
             random `depend` items among siblings.

Events follow what libomp 19 reports (checked against real traces): the producer is
the implicit task that wins a `single`; it creates the depth-1 tasks, which are
spread round-robin over the threads; a thread runs each of its subtrees depth
first (children at the parent's taskwait, last created first as libomp's deque
does; in creation order when tasks have dependences). Workers pick their
subtrees up in the `single`'s barrier. Everything is computed on columns: rows are
laid out by subtree sizes (one pass per tree level), times by prefix sums, so
10^7 grains take seconds.

With `jitter=0` (the default) every duration is the fixed value in Timing, so a
test knows the exact work and span.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import schema as S
from .trace.dependence_waits import is_pseudo_create
from .errors import UsageError
from .sorting import argsort

SHAPES = ("fork-join", "spine", "loop", "random")
HZ = 2e9                 # tsc = 2 * ns: exercises tick conversion, stays exact
CODE_BASE = 0x555555554000
# What libomp 19 reports: a parallel region started by the runtime for its team.
PARALLEL_FLAGS = S.PARALLEL_TEAM | S.PARALLEL_INVOKER_RUNTIME
WORKSHARE_BARRIER = S.SYNC_BARRIER_IMPLICIT_WORKSHARE    # ends the single (when waiting)
REGION_BARRIER = S.SYNC_BARRIER_IMPLICIT_PARALLEL        # ends the parallel region
NEG = np.iinfo(np.int64).min // 4


@dataclass
class Timing:
    """Durations in ns (the gap after each kind of row on its thread)."""
    work_ns: int = 2000        # a task's first fragment (a leaf's whole work), a chunk
    last_ns: int = 300         # a parent's last fragment (after its taskwait)
    create_ns: int = 100       # after TASK_CREATE: the runtime's creation cost
    schedule_ns: int = 50      # runtime time after a switch, before/after a child
    sync_ns: int = 80          # from the last arrival/completion to SYNC_END
    steal_ns: int = 400        # before another thread starts a created task
    producer_ns: int = 1000    # producer's code before its first creation
    serial_ns: int = 5000      # initial task before the parallel region
    startup_ns: int = 20000    # a worker thread's start after PARALLEL_BEGIN
    bookkeeping_ns: int = 300  # loop: WORK_BEGIN to first chunk, WORK_END to barrier
    late_ns: int = 30000       # workers report their last barrier end this late
    jitter: float = 0.0        # lognormal sigma on work/last/chunk durations


@dataclass
class Tree:
    """Explicit tasks in creation order (parents before children, siblings
    contiguous in creation order). parent -1 = created by the producer."""
    parent: np.ndarray
    waits: np.ndarray           # taskwait after creating its children
    work: np.ndarray            # first fragment (ns)
    last: np.ndarray            # last fragment (ns)
    site: np.ndarray            # creation site (-> codeptr)
    fifo: bool = False          # siblings run in creation order (dependences)
    producer_waits: bool = True
    dep_task: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    dep_addr: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    dep_type: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    tdep_sink: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    tdep_source: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))


# --------------------------------------------------------------------------
# Shapes

def _durations(rng, n, base, jitter):
    if jitter <= 0 or n == 0:
        return np.full(n, base, dtype=np.int64)
    return np.maximum(1, np.rint(base * rng.lognormal(0.0, jitter, n))).astype(np.int64)


def fork_join_tree(n_tasks: int, timing: Timing, rng) -> Tree:
    """First n_tasks tasks, breadth first, of fib(m)'s task tree for the
    smallest m that has that many (fib(m) itself is the producer's call)."""
    parent_parts, arg_parts = [], []
    level_arg = np.array([0])        # placeholder: the producer's own argument
    m = 2
    while 2 * _fib(m + 1) - 2 < n_tasks:
        m += 1
    level_arg = np.array([m])
    level_idx = np.array([-1])
    total = 0
    while total < n_tasks and len(level_arg):
        has = level_arg >= 2
        par = np.repeat(level_idx[has], 2)
        arg = np.stack([level_arg[has] - 1, level_arg[has] - 2], axis=1).ravel()
        take = min(len(arg), n_tasks - total)
        par, arg = par[:take], arg[:take]
        idx = total + np.arange(take)
        parent_parts.append(par)
        arg_parts.append(arg)
        total += take
        level_arg, level_idx = arg, idx
    parent = np.concatenate(parent_parts) if parent_parts else np.empty(0, np.int64)
    arg = np.concatenate(arg_parts) if arg_parts else np.empty(0, np.int64)
    n = len(parent)
    site = np.zeros(n, np.int64)
    site[1::2] = 1                   # fib(n-1) is created first, fib(n-2) second
    return Tree(parent=parent.astype(np.int64), waits=np.ones(n, bool),
                work=_durations(rng, n, timing.work_ns, timing.jitter),
                last=_durations(rng, n, timing.last_ns, timing.jitter), site=site)


def _fib(k):
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


def spine_tree(n_tasks: int, timing: Timing, rng, length: int = 64) -> Tree:
    """A chain of `length` spine tasks; each creates its share of leaves, then
    the next spine task, then waits. The producer is the chain's head."""
    length = max(1, min(length, n_tasks))
    leaves = n_tasks - (length - 1)          # spine tasks below the producer
    per = np.full(length, leaves // length, np.int64)
    per[: leaves % length] += 1
    # level i: per[i] leaves, then spine task i+1 (if any) created last
    parent, site = [], []
    spine_prev = -1
    total = 0
    for i in range(length):                  # one step per spine level (<= length)
        k = int(per[i])
        parent.append(np.full(k, spine_prev, np.int64))
        site.append(np.zeros(k, np.int64))
        total += k
        if i + 1 < length:
            parent.append(np.array([spine_prev], np.int64))
            site.append(np.ones(1, np.int64))
            spine_prev = total
            total += 1
    parent = np.concatenate(parent)
    site = np.concatenate(site)
    n = len(parent)
    waits = site == 1
    return Tree(parent=parent, waits=waits,
                work=_durations(rng, n, timing.work_ns, timing.jitter),
                last=_durations(rng, n, timing.last_ns, timing.jitter), site=site)


def random_tree(n_tasks: int, timing: Timing, rng, threads: int = 2) -> Tree:
    """Random fan-out (0..4 children), 70% of parents wait, dependences among
    siblings below depth 1 on a few addresses per parent."""
    first = max(2 * threads, min(16, n_tasks))
    first = min(first, n_tasks)
    parent_parts = [np.full(first, -1, np.int64)]
    level = np.arange(first)
    total = first
    while total < n_tasks:
        kids = rng.integers(0, 5, len(level))
        if kids.sum() == 0:
            kids[rng.integers(0, len(level))] = 2
        par = np.repeat(level, kids)[: n_tasks - total]
        parent_parts.append(par)
        level = total + np.arange(len(par))
        total += len(par)
    parent = np.concatenate(parent_parts)
    n = len(parent)
    waits = rng.random(n) < 0.7
    tree = Tree(parent=parent, waits=waits,
                work=_durations(rng, n, timing.work_ns, max(timing.jitter, 0.5)),
                last=_durations(rng, n, timing.last_ns, max(timing.jitter, 0.5)),
                site=rng.integers(0, 4, n), fifo=True)
    # dependences: tasks below depth 1, one or two items on the parent's 3 addresses
    cand = np.flatnonzero((parent >= 0) & (rng.random(n) < 0.4))
    items = rng.integers(1, 3, len(cand))
    task = np.repeat(cand, items)
    slot = rng.integers(0, 3, len(task))
    addr = 0x7ffd00000000 + (parent[task] * 3 + slot) * 8
    dtype = np.where(rng.random(len(task)) < 0.5, S.DEPEND_IN, S.DEPEND_INOUT)
    key = np.unique(np.stack([task, addr]), axis=1, return_index=True)[1]
    task, addr, dtype = task[key], addr[key], dtype[key]
    o = np.lexsort((addr, task))
    tree.dep_task, tree.dep_addr, tree.dep_type = task[o], addr[o], dtype[o]
    # runtime-resolved edges: the last writer before each item (a subset, as libomp)
    o = np.lexsort((task, addr))
    t, a, w = task[o], addr[o], dtype[o] == S.DEPEND_INOUT
    idx = np.arange(len(t))
    lw = np.maximum.accumulate(np.where(w, idx, -1))
    prev = np.full(len(t), -1)
    prev[1:] = lw[:-1]
    same = prev >= 0
    same[same] = a[prev[same]] == a[same]
    tree.tdep_sink, tree.tdep_source = t[same], t[prev[same]]
    keep = tree.tdep_sink != tree.tdep_source
    tree.tdep_sink, tree.tdep_source = tree.tdep_sink[keep], tree.tdep_source[keep]
    return tree


# --------------------------------------------------------------------------
# Row tables

class Rows:
    """Growing per-thread row columns; `gap` is the time to the thread's next
    row, `nb` the earliest time a row may have (cross-thread causality)."""
    COLS = ("event", "task", "other", "value", "count", "kind", "flags", "codeptr", "gap", "nb")

    def __init__(self):
        self.parts = {c: [] for c in self.COLS}

    def add(self, n=1, **cols):
        for c in self.COLS:
            v = cols.get(c, NEG if c == "nb" else 0)
            arr = np.asarray(v, dtype=np.int64)
            self.parts[c].append(np.full(n, arr, np.int64) if arr.ndim == 0 else arr)
        return sum(len(p) for p in self.parts["event"]) - n  # index of the first added row

    def block(self, cols: dict):
        n = len(cols["event"])
        return self.add(n, **cols)

    def columns(self) -> dict:
        return {c: np.concatenate(p) if p else np.empty(0, np.int64) for c, p in self.parts.items()}


def _times(gap, nb):
    """t_i = max(t_{i-1} + gap_{i-1}, nb_i), by prefix sums and a running max."""
    c = np.concatenate([[0], np.cumsum(gap[:-1])]) if len(gap) else gap
    return c + np.maximum.accumulate(nb - c)


class _Ids:
    """Collector ids: (thread + 1) << 40 | n, n counting per creating thread."""

    def __init__(self):
        self.next = {}

    def take(self, thread, n=1):
        start = self.next.get(thread, 1)
        self.next[thread] = start + n
        return ((thread + 1) << 40) | (start + np.arange(n, dtype=np.int64))


def _subtree_layout(tree: Tree, rows_per_create: np.ndarray):
    """Block size and offset of every task's execution block (depth first),
    plus depth-1 roots' execution order. One pass per tree level."""
    parent = tree.parent
    n = len(parent)
    depth = np.zeros(n, np.int64)
    has = parent >= 0
    # parents come before children: depth in one pass per level
    levels = []
    frontier = np.flatnonzero(~has)
    children_of = argsort(np.where(has, parent, -1))
    counts = np.bincount(parent[has], minlength=n)
    first_child = np.concatenate([[0], np.cumsum(counts)[:-1]])
    kids_sorted = children_of[(~has).sum():]          # children grouped by parent
    while len(frontier):
        levels.append(frontier)
        c = counts[frontier]
        if c.sum() == 0:
            break
        starts = np.repeat(first_child[frontier], c) + (np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c))
        frontier = kids_sorted[starts]
        depth[frontier] = len(levels)
    crow = np.bincount(parent[has], weights=rows_per_create[has], minlength=n).astype(np.int64)
    wait_rows = np.where(tree.waits & (counts > 0), 2, 0)
    head = 1 + crow + (wait_rows // 2)       # SCHED-in, creates, SYNC_BEGIN
    own = 1 + crow + wait_rows + 1          # + SYNC_END? + SCHED-out
    size = own.copy()
    for lv in reversed(levels[1:]):          # deepest first: children are complete
        np.add.at(size, parent[lv], size[lv])
    # offsets of children inside the parent's block
    offset = np.zeros(n, np.int64)
    tail = np.where(tree.waits, head, own)   # children of a non-waiting task run after it
    for lv in levels[1:]:
        order = lv if tree.fifo else lv[::-1]
        p = parent[order]
        o = argsort(p)
        order, p = order[o], p[o]
        excl = np.cumsum(size[order]) - size[order]
        gstart = np.ones(len(order), bool)
        gstart[1:] = p[1:] != p[:-1]
        base = np.maximum.accumulate(np.where(gstart, np.arange(len(order)), 0))
        excl = excl - excl[base]
        offset[order] = offset[p] + tail[p] + excl
    return depth, counts, head, own, size, offset


def synthesize(shape: str, grains: int, threads: int = 2, seed: int = 0,
               timing: Timing | None = None, **shape_args):
    """Event columns and metadata of a synthetic trace (see write())."""
    timing = timing or Timing()
    if shape not in SHAPES:
        raise UsageError(f"unknown shape {shape!r}; choose one of {', '.join(SHAPES)}")
    if grains < 1:
        raise UsageError("--grains must be at least 1")
    if threads < 1 or threads > 4096:
        raise UsageError("--threads must be between 1 and 4096")
    rng = np.random.default_rng(seed)
    if shape == "loop":
        return _loop_trace(grains, threads, timing, rng, **shape_args)
    if shape == "fork-join":
        tree = fork_join_tree(grains, timing, rng)
    elif shape == "spine":
        tree = spine_tree(grains, timing, rng, **shape_args)
    else:
        tree = random_tree(grains, timing, rng, threads)
    return _task_trace(tree, threads, timing, rng)


# --------------------------------------------------------------------------
# Task traces

def _task_trace(tree: Tree, P: int, timing: Timing, rng):
    """Per-thread columns of a task program. Every row's place is computed
    from the block layout (root block start + offset inside it) and written
    straight into one preallocated table: no sort, one copy of each column.
    Phases: where each row goes (_task_layout), the collector's ids
    (_task_ids), the tasks' rows, each thread's prologue and epilogue, then
    the times (_task_times)."""
    lay = _task_layout(tree, P)
    ids = _task_ids(tree, lay)
    table = _Table(lay.total)
    _task_rows(table, tree, lay, ids, timing)
    marks, first_create = _producer_rows(table, lay, ids, timing)
    wmarks = _worker_rows(table, lay, ids, timing)
    time = _task_times(table, lay, timing, marks, wmarks, first_create)
    per_thread = []
    for k in range(P):
        sl = slice(lay.tstart[k], lay.tstart[k] + lay.length[k])
        d = {c: v[sl] for c, v in table.cols.items()}
        d["time"] = time[sl]
        per_thread.append(d)
    return per_thread


@dataclass
class _TaskLayout:
    """Where every row of a task program goes: each task's execution block
    (`_subtree_layout`), the threads' prologue, root blocks and epilogue."""
    P: int
    n: int
    has: np.ndarray              # explicit task created by a task (not the producer)
    ndep: np.ndarray             # dependence rows after each task's creation
    ntdep: np.ndarray            # task-dependence rows after it
    rows_per_create: np.ndarray
    counts: np.ndarray           # children
    own: np.ndarray              # rows of the task itself
    size: np.ndarray             # rows of its whole block
    offset: np.ndarray           # its block inside its root's block
    roots: np.ndarray            # depth-1 tasks (the producer's)
    root_thread: np.ndarray
    root_of: np.ndarray
    rindex: np.ndarray           # root -> its number among the roots
    sched_ctx: np.ndarray        # what a task switches from: -1 the implicit task
    thread_of: np.ndarray
    root_base: np.ndarray        # first row of each root's block
    tstart: np.ndarray           # first row of each thread
    length: np.ndarray           # rows of each thread
    epi0: int                    # the producer's epilogue rows
    epi_w: int                   # a worker's epilogue rows
    total: int
    waits: bool                  # the producer waits for its tasks (taskwait)


def _task_layout(tree: Tree, P: int) -> _TaskLayout:
    n = len(tree.parent)
    parent = tree.parent
    has = parent >= 0
    ndep = np.bincount(tree.dep_task, minlength=n)
    ntdep = np.bincount(tree.tdep_sink, minlength=n)
    rows_per_create = 1 + ndep + ntdep
    depth, counts, head, own, size, offset = _subtree_layout(tree, rows_per_create)
    roots = np.flatnonzero(~has)
    R = len(roots)
    waits = tree.producer_waits
    root_thread = np.arange(R) % P
    root_of = np.where(has, -1, np.arange(n))
    sched_ctx = np.full(n, -1, np.int64)        # -1: the thread's implicit task
    for d in range(1, int(depth.max()) + 1 if n else 0):    # one pass per tree level
        lv = np.flatnonzero(depth == d)
        p = parent[lv]
        root_of[lv] = root_of[p]
        sched_ctx[lv] = np.where(tree.waits[p], p, sched_ctx[p])
    rindex = np.empty(n, np.int64)
    rindex[roots] = np.arange(R)
    thread_of = root_thread[rindex[root_of]]

    # thread layouts: prologue, root blocks, epilogue
    pro0 = 5 + R + (1 if waits else 2)          # ... creates, SYNC_BEGIN(taskwait) | WORK_END, SYNC_BEGIN(region barrier)
    epi0 = 10 if waits else 5
    pro_w = 5
    epi_w = 5 if waits else 3
    root_size = size[roots]
    # order of roots on each thread: the producer's thread runs its own last
    # created first (its deque); thieves take the oldest first
    order = np.lexsort((np.where(root_thread == 0, -np.arange(R), np.arange(R)), root_thread))
    sizes_in_order = root_size[order]
    th_in_order = root_thread[order]
    excl = np.cumsum(sizes_in_order) - sizes_in_order
    per_thread_roots = np.bincount(root_thread, weights=root_size, minlength=P).astype(np.int64)
    first_in_thread = np.minimum(np.searchsorted(th_in_order, np.arange(P)), max(R - 1, 0))
    excl = excl - np.repeat(excl[first_in_thread], np.bincount(th_in_order, minlength=P)) \
        if R else excl
    pro = np.array([pro0] + [pro_w] * (P - 1), np.int64)
    epi = np.array([epi0] + [epi_w] * (P - 1), np.int64)
    length = pro + per_thread_roots + epi
    tstart = np.concatenate([[0], np.cumsum(length)[:-1]])
    root_base = np.empty(R, np.int64)
    root_base[order] = tstart[th_in_order] + pro[th_in_order] + excl
    return _TaskLayout(P=P, n=n, has=has, ndep=ndep, ntdep=ntdep,
                       rows_per_create=rows_per_create, counts=counts, own=own, size=size,
                       offset=offset, roots=roots, root_thread=root_thread, root_of=root_of,
                       rindex=rindex, sched_ctx=sched_ctx, thread_of=thread_of,
                       root_base=root_base, tstart=tstart, length=length, epi0=epi0,
                       epi_w=epi_w, total=int(length.sum()), waits=waits)


@dataclass
class _TaskIds:
    initial: int
    region: int
    implicit: np.ndarray         # per thread
    task: np.ndarray             # per explicit task
    site_code: np.ndarray        # codeptr of each task's creation site

    def ctx(self, ctx, thr):
        """Id of what a task switches from: its waiting parent, or the
        thread's implicit task."""
        return np.where(ctx >= 0, self.task[np.maximum(ctx, 0)], self.implicit[thr])


def _task_ids(tree: Tree, lay: _TaskLayout) -> _TaskIds:
    ids = _Ids()
    initial_id = ids.take(0)[0]
    region_id = ids.take(0)[0]
    implicit = np.empty(lay.P, np.int64)
    implicit[0] = ids.take(0)[0]
    for k in range(1, lay.P):
        implicit[k] = ids.take(k)[0]
    creator = np.where(lay.has, lay.thread_of[np.maximum(tree.parent, 0)], 0)
    task_id = np.empty(lay.n, np.int64)
    for k in np.unique(creator):                # at most one pass per thread
        sel = np.flatnonzero(creator == k)
        task_id[sel] = ids.take(int(k), len(sel))
    return _TaskIds(initial=initial_id, region=region_id, implicit=implicit, task=task_id,
                    site_code=CODE_BASE + 0x1000 + 0x40 * tree.site)


class _Table:
    """The trace's rows, preallocated: `put` writes rows at given positions,
    `gap` is the time from each row to the next on its thread."""

    def __init__(self, total: int):
        self.cols = {"event": np.zeros(total, np.uint8), "task": np.zeros(total, np.uint64),
                     "other": np.zeros(total, np.uint64), "value": np.zeros(total, np.uint64),
                     "count": np.zeros(total, np.uint64), "kind": np.zeros(total, np.uint32),
                     "flags": np.zeros(total, np.uint8), "codeptr": np.zeros(total, np.uint64)}
        self.gap = np.zeros(total, np.int64)

    def put(self, pos, event, task=0, other=0, value=0, count=0, kind=0, codeptr=0, g=0):
        cols = self.cols
        cols["event"][pos] = event
        cols["task"][pos] = task
        cols["other"][pos] = other
        cols["value"][pos] = value
        cols["count"][pos] = count
        cols["kind"][pos] = kind
        cols["codeptr"][pos] = codeptr
        self.gap[pos] = g

    def one(self, pos, *a, **k):
        self.put(np.array([pos]), *a, **k)


def _task_rows(table: _Table, tree: Tree, lay: _TaskLayout, ids: _TaskIds, timing: Timing):
    """Every explicit task's rows: switched to, its creations (with their
    dependences), its taskwait, switched away from at its completion."""
    put, parent, task_id = table.put, tree.parent, ids.task
    ndep, ntdep, rows_per_create = lay.ndep, lay.ntdep, lay.rows_per_create
    base = lay.root_base[lay.rindex[lay.root_of]] if lay.n else np.empty(0, np.int64)
    at = base + lay.offset                      # each task's first row
    put(at, S.TASK_SCHEDULE, task_id, ids.ctx(lay.sched_ctx, lay.thread_of),
        kind=S.STATUS_SWITCH, g=tree.work)
    kids = np.flatnonzero(lay.has)
    p = parent[kids]
    cstart = np.cumsum(rows_per_create[kids]) - rows_per_create[kids]
    gs = np.ones(len(kids), bool)
    gs[1:] = p[1:] != p[:-1]
    within = cstart - cstart[np.maximum.accumulate(np.where(gs, np.arange(len(kids)), 0))]
    cpos = at[p] + 1 + within
    last_child = np.ones(len(kids), bool)
    last_child[:-1] = p[1:] != p[:-1]
    cgap = np.where(last_child & ~tree.waits[p], timing.create_ns + tree.last[p], timing.create_ns)
    put(cpos, S.TASK_CREATE, task_id[kids], task_id[p], value=(ndep[kids] > 0).astype(np.int64),
        kind=S.TASK_EXPLICIT, codeptr=ids.site_code[kids],
        g=np.where(rows_per_create[kids] > 1, 0, cgap))
    if len(tree.dep_task):
        dt = tree.dep_task
        k_in = np.arange(len(dt)) - (np.cumsum(ndep)[dt] - ndep[dt])
        ci = np.searchsorted(kids, dt)
        last = (k_in == ndep[dt] - 1) & (ntdep[dt] == 0)
        put(cpos[ci] + 1 + k_in, S.DEPENDENCE, task_id[dt], value=tree.dep_addr, kind=tree.dep_type,
            g=np.where(last, cgap[ci], 0))
    if len(tree.tdep_sink):
        o = argsort(tree.tdep_sink)
        ts, tsrc = tree.tdep_sink[o], tree.tdep_source[o]
        k_in = np.arange(len(ts)) - (np.cumsum(ntdep)[ts] - ntdep[ts])
        ci = np.searchsorted(kids, ts)
        put(cpos[ci] + 1 + ndep[ts] + k_in, S.TASK_DEPENDENCE, task_id[ts], task_id[tsrc],
            g=np.where(k_in == ntdep[ts] - 1, cgap[ci], 0))
    crows = np.bincount(p, weights=rows_per_create[kids], minlength=lay.n).astype(np.int64)
    wt = np.flatnonzero(tree.waits & (lay.counts > 0))
    put(at[wt] + 1 + crows[wt], S.SYNC_BEGIN, task_id[wt], ids.region, kind=S.SYNC_TASKWAIT,
        g=timing.schedule_ns)
    put(at[wt] + lay.size[wt] - 2, S.SYNC_END, task_id[wt], ids.region, kind=S.SYNC_TASKWAIT,
        g=tree.last[wt])
    out = np.where(tree.waits, at + lay.size - 1, at + lay.own - 1)
    put(out, S.TASK_SCHEDULE, ids.ctx(lay.sched_ctx, lay.thread_of), task_id,
        kind=S.STATUS_COMPLETE, g=timing.schedule_ns)


def _producer_rows(table: _Table, lay: _TaskLayout, ids: _TaskIds, timing: Timing):
    """Thread 0's prologue (the initial task, the region, the `single` whose
    winner creates the roots) and epilogue: (row of each mark, first creation)."""
    one, P, region_id, initial_id = table.one, lay.P, ids.region, ids.initial
    code = CODE_BASE + 0x800
    t0 = lay.tstart[0]
    roots = lay.roots
    R = len(roots)
    one(t0 + 0, S.THREAD_BEGIN, kind=S.THREAD_INITIAL, g=2000)
    one(t0 + 1, S.IMPLICIT_BEGIN, initial_id, value=1, count=1, kind=S.TASK_INITIAL, g=timing.serial_ns)
    one(t0 + 2, S.PARALLEL_BEGIN, initial_id, region_id, count=P, kind=PARALLEL_FLAGS, codeptr=code, g=1000)
    one(t0 + 3, S.IMPLICIT_BEGIN, ids.implicit[0], region_id, value=0, count=P, kind=S.TASK_IMPLICIT,
        g=200)
    one(t0 + 4, S.WORK_BEGIN, ids.implicit[0], region_id, count=1, kind=S.WORK_SINGLE_EXECUTOR,
        codeptr=code + 0x10, g=timing.producer_ns)
    first_create = t0 + 5
    table.put(first_create + np.arange(R), S.TASK_CREATE, ids.task[roots], ids.implicit[0],
              kind=S.TASK_EXPLICIT, codeptr=ids.site_code[roots], g=timing.create_ns)
    q = t0 + 5 + R
    imp0 = ids.implicit[0]
    marks = {}
    e = lay.tstart[0] + lay.length[0] - lay.epi0
    if lay.waits:
        one(q, S.SYNC_BEGIN, imp0, region_id, kind=S.SYNC_TASKWAIT, g=timing.schedule_ns)
        seq = [("tw_end", S.SYNC_END, S.SYNC_TASKWAIT, timing.last_ns),
               ("work_end", S.WORK_END, S.WORK_SINGLE_EXECUTOR, 100),
               ("b8", S.SYNC_BEGIN, WORKSHARE_BARRIER, timing.schedule_ns),
               ("e8", S.SYNC_END, WORKSHARE_BARRIER, 100),
               ("b9", S.SYNC_BEGIN, REGION_BARRIER, timing.schedule_ns),
               ("e9", S.SYNC_END, REGION_BARRIER, 100)]
    else:
        one(q, S.WORK_END, imp0, region_id, count=1, kind=S.WORK_SINGLE_EXECUTOR, g=100)
        one(q + 1, S.SYNC_BEGIN, imp0, region_id, kind=REGION_BARRIER, g=timing.schedule_ns)
        marks["b9"] = q + 1
        seq = [("e9", S.SYNC_END, REGION_BARRIER, 100)]
    for name, ev, kind, g in seq:
        extra = {"count": 1} if ev == S.WORK_END else {}
        one(e, ev, imp0, region_id, kind=kind, g=g, **extra)
        marks[name] = e
        e += 1
    one(e, S.IMPLICIT_END, imp0, value=0, count=P, kind=S.TASK_IMPLICIT, g=300)
    one(e + 1, S.PARALLEL_END, initial_id, region_id, kind=PARALLEL_FLAGS, codeptr=code, g=2000)
    marks["pe"] = e + 1
    one(e + 2, S.IMPLICIT_END, initial_id, value=1, count=1, kind=S.TASK_INITIAL, g=50)
    one(e + 3, S.THREAD_END, g=0)
    return marks, first_create


def _worker_rows(table: _Table, lay: _TaskLayout, ids: _TaskIds, timing: Timing) -> list:
    """Each worker's prologue (the `single` it loses) and epilogue (the
    barriers): the rows of its barrier marks, one dict per worker."""
    one, P, region_id = table.one, lay.P, ids.region
    code = CODE_BASE + 0x800
    wmarks = []
    bkind = WORKSHARE_BARRIER if lay.waits else REGION_BARRIER
    for k in range(1, P):
        s0 = lay.tstart[k]
        impk = ids.implicit[k]
        one(s0, S.THREAD_BEGIN, kind=S.THREAD_WORKER, g=2000)
        one(s0 + 1, S.IMPLICIT_BEGIN, impk, region_id, value=k, count=P, kind=S.TASK_IMPLICIT, g=300)
        one(s0 + 2, S.WORK_BEGIN, impk, region_id, count=1, kind=S.WORK_SINGLE_OTHER,
            codeptr=code + 0x10, g=60)
        one(s0 + 3, S.WORK_END, impk, region_id, count=1, kind=S.WORK_SINGLE_OTHER, g=200)
        one(s0 + 4, S.SYNC_BEGIN, impk, region_id, kind=bkind, g=timing.schedule_ns)
        e = s0 + lay.length[k] - lay.epi_w
        m = {"wb": s0 + 4, "we": e}
        one(e, S.SYNC_END, impk, region_id, kind=bkind, g=200)
        if lay.waits:
            one(e + 1, S.SYNC_BEGIN, impk, region_id, kind=REGION_BARRIER, g=timing.schedule_ns)
            one(e + 2, S.SYNC_END, impk, region_id, kind=REGION_BARRIER, g=100)
            m["w9b"], m["w9e"] = e + 1, e + 2
            e += 2
        else:
            m["w9b"], m["w9e"] = m["wb"], m["we"]
        one(e + 1, S.IMPLICIT_END, impk, value=k, count=P, kind=S.TASK_IMPLICIT, g=300)
        one(e + 2, S.THREAD_END, g=0)
        wmarks.append(m)
    return wmarks


def _task_times(table: _Table, lay: _TaskLayout, timing: Timing, marks: dict, wmarks: list,
                first_create: int) -> np.ndarray:
    """Every row's time: per thread t_i = max(t_{i-1} + gap_{i-1}, nb_i), the
    lower bounds nb added in causal order (creations -> thieves ->
    taskwait/barriers -> region end), each thread solved again when its
    bounds change."""
    P, tstart, length, gap = lay.P, lay.tstart, lay.length, table.gap
    R = len(lay.roots)
    nb = {k: {} for k in range(P)}
    nb[0][tstart[0]] = 0
    time = np.zeros(lay.total, np.int64)

    def solve(k):
        sl = slice(tstart[k], tstart[k] + length[k])
        pos = np.array(sorted(nb[k]), np.int64)
        vals = np.array([nb[k][x] for x in sorted(nb[k])], np.int64)
        time[sl] = _times_sparse(gap[sl], pos - tstart[k], vals)

    solve(0)
    create_time = time[first_create + np.arange(R)]
    root_start_time_nb = create_time + timing.steal_ns
    par_begin = int(time[tstart[0] + 2])
    for k in range(1, P):
        nb[k][tstart[k]] = par_begin + timing.startup_ns * k
        theirs = np.flatnonzero(lay.root_thread == k)
        for pos, v in zip(lay.root_base[theirs].tolist(), root_start_time_nb[theirs].tolist()):
            nb[k][pos] = v
        solve(k)
    done = NEG
    if R:
        worker_roots = np.flatnonzero(lay.root_thread != 0)
        if len(worker_roots):
            done = int(time[lay.root_base[worker_roots] + lay.size[lay.roots][worker_roots] - 1].max())
    if lay.waits:
        nb[0][marks["tw_end"]] = done + timing.sync_ns
        solve(0)
        release8 = max([int(time[marks["b8"]])] + [int(time[m["wb"]]) for m in wmarks]) + timing.sync_ns
        nb[0][marks["e8"]] = release8
        for k, m in enumerate(wmarks, start=1):
            nb[k][m["we"]] = release8 + 50
            solve(k)
        solve(0)
    else:
        nb[0][marks["e9"]] = max(done, int(time[marks["e9"] - 1])) + timing.sync_ns
        solve(0)
    arrive9 = max([int(time[marks["b9"]])] + [int(time[m["w9b"]]) for m in wmarks])
    nb[0][marks["e9"]] = max(nb[0].get(marks["e9"], NEG), arrive9 + timing.sync_ns)
    solve(0)
    par_end = int(time[marks["pe"]])
    for k, m in enumerate(wmarks, start=1):
        nb[k][m["w9e"]] = par_end + timing.late_ns + 100 * k
        solve(k)
    return time


def _times_sparse(gap, nb_pos, nb_val):
    """_times with the lower bounds given only where they exist."""
    c = np.zeros(len(gap), np.int64)
    if len(gap) > 1:
        np.cumsum(gap[:-1], out=c[1:])
    lift = np.full(len(gap), NEG, np.int64)
    lift[nb_pos] = nb_val - c[nb_pos]
    np.maximum.accumulate(lift, out=lift)
    lift += c
    return lift


# --------------------------------------------------------------------------
# Loop trace

def _loop_trace(chunks: int, P: int, timing: Timing, rng, chunk_size: int = 4):
    ids = _Ids()
    initial_id = ids.take(0)[0]
    region_id = ids.take(0)[0]
    implicit = np.array([ids.take(k)[0] for k in range(P)], np.int64)
    dur = _durations(rng, chunks, timing.work_ns, timing.jitter)
    owner = np.arange(chunks) % P
    iterations = chunks * chunk_size
    code = CODE_BASE + 0x800
    per_thread = []
    cols_k = []
    for k in range(P):
        mine = np.flatnonzero(owner == k)
        r = Rows()
        r.add(event=S.THREAD_BEGIN, kind=S.THREAD_INITIAL if k == 0 else S.THREAD_WORKER, gap=2000)
        if k == 0:
            r.add(event=S.IMPLICIT_BEGIN, task=initial_id, value=1, count=1, kind=S.TASK_INITIAL,
                  gap=timing.serial_ns)
            r.add(event=S.PARALLEL_BEGIN, task=initial_id, other=region_id, count=P, kind=PARALLEL_FLAGS,
                  codeptr=code, gap=1000)
        r.add(event=S.IMPLICIT_BEGIN, task=implicit[k], other=region_id, value=k, count=P,
              kind=S.TASK_IMPLICIT, gap=200)
        r.add(event=S.WORK_BEGIN, task=implicit[k], other=region_id, count=iterations,
              kind=S.WORK_LOOP_DYNAMIC, codeptr=code + 0x20, gap=timing.bookkeeping_ns)
        r.add(len(mine), event=S.CHUNK, task=implicit[k], other=region_id,
                            value=mine * chunk_size, count=chunk_size, kind=S.DISPATCH_LOOP_CHUNK,
                            gap=dur[mine])
        r.add(event=S.WORK_END, task=implicit[k], other=region_id, kind=S.WORK_LOOP_DYNAMIC,
              gap=timing.bookkeeping_ns)
        b9 = r.add(event=S.SYNC_BEGIN, task=implicit[k], other=region_id, kind=REGION_BARRIER,
                   gap=timing.schedule_ns)
        e9 = r.add(event=S.SYNC_END, task=implicit[k], other=region_id, kind=REGION_BARRIER, gap=100)
        r.add(event=S.IMPLICIT_END, task=implicit[k], value=k, count=P, kind=S.TASK_IMPLICIT, gap=300)
        pe = None
        if k == 0:
            pe = r.add(event=S.PARALLEL_END, task=initial_id, other=region_id, kind=PARALLEL_FLAGS,
                       codeptr=code, gap=2000)
            r.add(event=S.IMPLICIT_END, task=initial_id, value=1, count=1, kind=S.TASK_INITIAL, gap=50)
        r.add(event=S.THREAD_END, gap=0)
        cols_k.append(dict(cols=r.columns(), b9=b9, e9=e9, pe=pe))
    c0 = cols_k[0]["cols"]
    c0["nb"][0] = 0
    t0 = _times(c0["gap"], c0["nb"])
    par_begin = t0[2]
    for k in range(1, P):
        cols_k[k]["cols"]["nb"][0] = par_begin + timing.startup_ns * k
    times = [_times(d["cols"]["gap"], d["cols"]["nb"]) for d in cols_k]
    release = max(times[k][cols_k[k]["b9"]] for k in range(P)) + timing.sync_ns
    c0["nb"][cols_k[0]["e9"]] = release
    times[0] = _times(c0["gap"], c0["nb"])
    par_end = times[0][cols_k[0]["pe"]]
    for k in range(1, P):
        c = cols_k[k]["cols"]
        c["nb"][cols_k[k]["e9"]] = par_end + timing.late_ns + 100 * k
        times[k] = _times(c["gap"], c["nb"])
    for k in range(P):
        cols_k[k]["cols"]["time"] = times[k]
        per_thread.append(cols_k[k]["cols"])
    return per_thread


# --------------------------------------------------------------------------
# Writing

def _with_flushes(cols: dict, buffer_events: int) -> list[dict]:
    """Split one thread's rows into row groups the way the collector flushes:
    each full buffer ends with FLUSH_BEGIN (count = rows in the buffer), the
    next group starts with FLUSH_END; flushes take no time here."""
    n = len(cols["event"])
    groups = []
    start = 0
    first = True
    while start < n:
        room = buffer_events - (0 if first else 1)
        stop = min(n, start + room)
        full = stop < n
        part = {c: v[start:stop] for c, v in cols.items()}
        pieces = []
        if not first:
            pieces.append(_flush_row(S.FLUSH_END, part["time"][0], 0, tuple(part)))
        pieces.append(part)
        if full:   # the flush happens just before the thread's next event
            pieces.append(_flush_row(S.FLUSH_BEGIN, cols["time"][stop], buffer_events + 1, tuple(part)))
        groups.append({c: np.concatenate([p[c] for p in pieces]) for c in part})
        start = stop
        first = False
    return groups


def _flush_row(event, time, count, keys=("event", "task", "other", "value", "count", "kind",
                                          "flags", "codeptr", "time")):
    row = {c: np.zeros(1, np.int64) for c in keys}
    row["event"][:] = event
    row["count"][:] = count
    row["time"][:] = time
    return row


def _counts(groups: list[dict]) -> dict:
    """grainlab.counts as the converter writes it (docs/trace-format.md)."""
    code = np.concatenate([g["event"] for g in groups]) if groups else np.zeros(0, np.int64)
    kind = np.concatenate([g["kind"] for g in groups]) if groups else np.zeros(0, np.int64)
    return {"events": int(len(code)),
            "threads": len({int(g["thread"][0]) for g in groups if len(g["event"])}),
            "task_creates": int((code == S.TASK_CREATE).sum()),
            "chunk_events": int((code == S.CHUNK).sum()),
            "dependence_wait_creates": int(is_pseudo_create(code, kind).sum())}


def write(path, per_thread: list[dict], threads: int, shape: str, grains: int, seed: int,
          buffer_events: int = 65536):
    """Write per-thread row columns as a grainlab trace (Parquet)."""
    groups = []
    for k, cols in enumerate(per_thread):
        for g in _with_flushes(cols, buffer_events):
            g["thread"] = np.full(len(g["event"]), k, np.int64)
            groups.append(g)
    # row groups in the order their buffers were written (by last row time)
    groups.sort(key=lambda g: (int(g["time"][-1]), int(g["thread"][0])))
    meta = {
        "grainlab.schema_version": "1",
        "grainlab.complete": "true",
        "grainlab.end_reason": "finalize",
        "grainlab.command": json.dumps(["grainlab-synth", shape, str(grains), f"seed={seed}"]),
        "grainlab.pid": "0",
        "grainlab.threads": str(threads),
        "grainlab.clock": json.dumps({"source": "tsc", "hz": HZ, "start_monotonic_ns": 0,
                                      "start_realtime_ns": 0}),
        "grainlab.counters": "[]",
        "grainlab.runtime": json.dumps({"name": "grainlab synth (libomp 19 event order)",
                                        "ompt_version": 201611, "callbacks": {},
                                        "chunks_reported": True}),
        "grainlab.topology": json.dumps({"cpus": threads, "online": list(range(threads)),
                                         "cpu_core": list(range(threads)),
                                         "cpu_package": [0] * threads, "cpu_node": [0] * threads,
                                         "numa_distances": [[10]], "caches": []}),
        "grainlab.loadmap": "[]",
        "grainlab.buffer_events": str(buffer_events),
        "grainlab.writers": "0",          # no writer thread: nothing was recorded
        "grainlab.flushes": str(len(groups)),
        "grainlab.dropped_events": "0",
        "grainlab.recorded_events": str(sum(len(g["time"]) for g in groups)),
        "grainlab.counts": json.dumps(_counts(groups)),
        "grainlab.collector": "synth",
        # tick 0 is the (synthetic) process's start: nothing ran before it
        "grainlab.process_start": json.dumps({"method": "synth", "collector_start_ns": 0,
                                              "uncertainty_ns": 0}),
        "grainlab.run_id": "null",
        "grainlab.mpi": "null",           # not a rank of an MPI run
        "grainlab.host": "null",          # run on no host
    }
    schema = S.arrow_schema(metadata=meta)
    with pq.ParquetWriter(str(path), schema, compression="zstd") as writer:
        for g in groups:
            arrays = []
            for field in schema:
                c = field.name
                if c == "tsc":
                    v = g["time"].astype(np.int64) * int(HZ / 1e9)
                elif c == "cpu":
                    v = g["thread"]
                else:
                    v = g[c]
                arrays.append(pa.array(v.astype(field.type.to_pandas_dtype()), type=field.type))
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))


def generate(path, shape: str, grains: int, threads: int = 2, seed: int = 0,
             timing: Timing | None = None, buffer_events: int = 65536, **shape_args) -> None:
    """Write a synthetic trace of `shape` with about `grains` grains to `path`."""
    per_thread = synthesize(shape, grains, threads, seed, timing, **shape_args)
    write(path, per_thread, threads, shape, grains, seed, buffer_events)
