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
from .errors import UsageError

SHAPES = ("fork-join", "spine", "loop", "random")
HZ = 2e9                 # tsc = 2 * ns: exercises tick conversion, stays exact
CODE_BASE = 0x555555554000
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
    dtype = np.where(rng.random(len(task)) < 0.5, 1, 3)     # in / inout
    key = np.unique(np.stack([task, addr]), axis=1, return_index=True)[1]
    task, addr, dtype = task[key], addr[key], dtype[key]
    o = np.lexsort((addr, task))
    tree.dep_task, tree.dep_addr, tree.dep_type = task[o], addr[o], dtype[o]
    # runtime-resolved edges: the last writer before each item (a subset, as libomp)
    o = np.lexsort((task, addr))
    t, a, w = task[o], addr[o], dtype[o] == 3
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
    children_of = np.argsort(np.where(has, parent, -1), kind="stable")
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
        o = np.argsort(p, kind="stable")
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
    n = len(tree.parent)
    parent = tree.parent
    has = parent >= 0
    ndep = np.bincount(tree.dep_task, minlength=n)
    ntdep = np.bincount(tree.tdep_sink, minlength=n)
    rows_per_create = 1 + ndep + ntdep
    depth, counts, head, own, size, offset = _subtree_layout(tree, rows_per_create)
    roots = np.flatnonzero(~has)
    R = len(roots)
    thread_of_root = np.arange(R) % P
    # execution order of roots on each thread: LIFO on the producer's thread
    # (its deque), creation order for thieves (they steal the oldest)
    thread_of = np.empty(n, np.int64)
    root_of = np.where(has, -1, np.arange(n))
    for d in range(1, int(depth.max()) + 1 if n else 0):
        lv = np.flatnonzero(depth == d)
        root_of[lv] = root_of[parent[lv]]
    rindex = np.empty(n, np.int64)
    rindex[roots] = np.arange(R)
    thread_of[:] = thread_of_root[rindex[root_of]]

    ids = _Ids()
    # ids: thread 0: initial task, region, implicit 0; worker k: implicit k
    initial_id = ids.take(0)[0]
    region_id = ids.take(0)[0]
    implicit = np.empty(P, np.int64)
    implicit[0] = ids.take(0)[0]
    for k in range(1, P):
        implicit[k] = ids.take(k)[0]
    # task ids: numbered per creating thread in creation order (tasks are in
    # creation order per parent; across parents the exact order only matters
    # for uniqueness, which this keeps)
    creator = np.where(has, thread_of[np.maximum(parent, 0)], 0)
    task_id = np.empty(n, np.int64)
    for k in np.unique(creator):
        sel = np.flatnonzero(creator == k)
        task_id[sel] = ids.take(int(k), len(sel))
    codeptr_site = CODE_BASE + 0x1000 + 0x40 * tree.site

    sched_ctx = np.full(n, -1, np.int64)      # -1: the thread's implicit task
    for d in range(1, int(depth.max()) + 1 if n else 0):
        lv = np.flatnonzero(depth == d)
        p = parent[lv]
        sched_ctx[lv] = np.where(tree.waits[p], p, sched_ctx[p])

    def ctx_id(ctx, thr):
        return np.where(ctx >= 0, task_id[np.maximum(ctx, 0)], implicit[thr])

    # -- rows of all task blocks, positioned relative to their root's block start
    m = counts
    wait = tree.waits & (m > 0)
    total = int(own.sum())
    ev = np.zeros(total, np.int64)
    tk = np.zeros(total, np.int64)
    ot = np.zeros(total, np.int64)
    val = np.zeros(total, np.int64)
    knd = np.zeros(total, np.int64)
    cp = np.zeros(total, np.int64)
    gap = np.zeros(total, np.int64)
    rel = np.zeros(total, np.int64)          # position inside the root block
    rrow = np.zeros(total, np.int64)         # root of the row
    w = 0

    def put(k, pos, **c):
        nonlocal w
        sl = slice(w, w + k)
        rel[sl] = pos
        for name, arr in c.items():
            {"ev": ev, "tk": tk, "ot": ot, "val": val, "knd": knd, "cp": cp,
             "gap": gap, "rrow": rrow}[name][sl] = arr
        w += k

    allt = np.arange(n)
    thr = thread_of
    # SCHED-in: next = task, prior = scheduling context
    put(n, offset, ev=S.TASK_SCHEDULE, tk=task_id, ot=ctx_id(sched_ctx, thr),
        knd=S.STATUS_SWITCH, gap=tree.work, rrow=root_of)
    # creations (children, in creation order) with their dependence rows
    kids = np.flatnonzero(has)
    p = parent[kids]
    cstart = np.cumsum(rows_per_create[kids]) - rows_per_create[kids]
    gs = np.ones(len(kids), bool)
    gs[1:] = p[1:] != p[:-1]
    base = np.maximum.accumulate(np.where(gs, np.arange(len(kids)), 0))
    within = cstart - cstart[base]
    cpos = offset[p] + 1 + within
    last_child = np.ones(len(kids), bool)
    last_child[:-1] = p[1:] != p[:-1]
    cgap = np.full(len(kids), timing.create_ns, np.int64)
    # a non-waiting parent's last fragment follows its last creation
    cgap = np.where(last_child & ~tree.waits[p], timing.create_ns + tree.last[p], cgap)
    flags = S.TASK_EXPLICIT
    has_dep = ndep[kids] > 0
    put(len(kids), cpos, ev=S.TASK_CREATE, tk=task_id[kids], ot=task_id[p], val=has_dep.astype(np.int64),
        knd=flags, cp=codeptr_site[kids], gap=np.where(rows_per_create[kids] > 1, 0, cgap), rrow=root_of[kids])
    if len(tree.dep_task):
        dt = tree.dep_task
        k_in = np.arange(len(dt)) - (np.cumsum(ndep)[dt] - ndep[dt])
        cidx = np.searchsorted(kids, dt)
        dpos = cpos[cidx] + 1 + k_in
        lastdep = (k_in == ndep[dt] - 1) & (ntdep[dt] == 0)
        put(len(dt), dpos, ev=S.DEPENDENCE, tk=task_id[dt], val=tree.dep_addr, knd=tree.dep_type,
            gap=np.where(lastdep, cgap[cidx], 0), rrow=root_of[dt])
    if len(tree.tdep_sink):
        o = np.argsort(tree.tdep_sink, kind="stable")
        ts, tsrc = tree.tdep_sink[o], tree.tdep_source[o]
        k_in = np.arange(len(ts)) - (np.cumsum(ntdep)[ts] - ntdep[ts])
        cidx = np.searchsorted(kids, ts)
        tpos = cpos[cidx] + 1 + ndep[ts] + k_in
        put(len(ts), tpos, ev=S.TASK_DEPENDENCE, tk=task_id[ts], ot=task_id[tsrc],
            gap=np.where(k_in == ntdep[ts] - 1, cgap[cidx], 0), rrow=root_of[ts])
    crows = np.bincount(p, weights=rows_per_create[kids], minlength=n).astype(np.int64)
    wt = np.flatnonzero(wait)
    put(len(wt), offset[wt] + 1 + crows[wt], ev=S.SYNC_BEGIN, tk=task_id[wt], ot=region_id,
        knd=S.SYNC_TASKWAIT, gap=timing.schedule_ns, rrow=root_of[wt])
    put(len(wt), offset[wt] + size[wt] - 2, ev=S.SYNC_END, tk=task_id[wt], ot=region_id,
        knd=S.SYNC_TASKWAIT, gap=tree.last[wt], rrow=root_of[wt])
    # SCHED-out: next = context, prior = task, complete. Its gap is the context's
    # time before its next row (runtime / join time).
    out_pos = np.where(tree.waits, offset + size - 1, offset + own - 1)
    # leaves / non-waiting tasks with no children: their last fragment is the first
    leaf_gap = timing.schedule_ns
    put(n, out_pos, ev=S.TASK_SCHEDULE, tk=ctx_id(sched_ctx, thr), ot=task_id,
        knd=S.STATUS_COMPLETE, gap=leaf_gap, rrow=root_of)
    # a task that creates nothing and waits for nothing: first fragment is all
    # a waiting parent without children does not exist in these shapes
    assert w == total, (w, total)
    # sort rows by (root, position)
    o = np.lexsort((rel, rrow))
    blk = {"event": ev[o], "task": tk[o], "other": ot[o], "value": val[o], "count": np.zeros(total, np.int64),
           "kind": knd[o], "flags": np.zeros(total, np.int64), "codeptr": cp[o], "gap": gap[o]}
    rroot = rrow[o]
    root_size = size[roots]
    root_start = np.concatenate([[0], np.cumsum(root_size)[:-1]])   # in root index order
    return _assemble_task_trace(tree, P, timing, rng, blk, rroot, roots, root_size, root_start,
                                thread_of_root, task_id, implicit, initial_id, region_id)


def _assemble_task_trace(tree, P, timing, rng, blk, rroot, roots, root_size, root_start,
                         thread_of_root, task_id, implicit, initial_id, region_id):
    R = len(roots)
    producer_waits = tree.producer_waits
    per_thread = []
    rindex_of_task = np.full(len(tree.parent), -1, np.int64)
    rindex_of_task[roots] = np.arange(R)
    rr = rindex_of_task[rroot]          # root index of each block row (rows sorted by root)
    code = CODE_BASE + 0x800
    # thread 0 ------------------------------------------------------------
    t0 = Rows()
    t0.add(event=S.THREAD_BEGIN, kind=1, gap=2000)
    t0.add(event=S.IMPLICIT_BEGIN, task=initial_id, value=1, count=1, kind=S.TASK_INITIAL, gap=timing.serial_ns)
    t0.add(event=S.PARALLEL_BEGIN, task=initial_id, other=region_id, count=P, kind=0x80000002,
           codeptr=code, gap=1000)
    t0.add(event=S.IMPLICIT_BEGIN, task=implicit[0], other=region_id, value=0, count=P,
           kind=S.TASK_IMPLICIT, gap=200)
    t0.add(event=S.WORK_BEGIN, task=implicit[0], other=region_id, count=1, kind=S.WORK_SINGLE_EXECUTOR,
           codeptr=code + 0x10, gap=timing.producer_ns)
    first_create = t0.add(R, event=S.TASK_CREATE, task=task_id[roots], other=implicit[0],
                          kind=S.TASK_EXPLICIT, codeptr=CODE_BASE + 0x1000 + 0x40 * tree.site[roots],
                          gap=timing.create_ns)
    # thread 0's own roots: run in its taskwait (or barrier), last created first
    mine = np.flatnonzero(thread_of_root == 0)[::-1]
    if producer_waits:
        t0.add(event=S.SYNC_BEGIN, task=implicit[0], other=region_id, kind=S.SYNC_TASKWAIT,
               gap=timing.schedule_ns)
        own_start = _add_root_blocks(t0, blk, rr, mine, root_start, root_size)
        tw_end = t0.add(event=S.SYNC_END, task=implicit[0], other=region_id, kind=S.SYNC_TASKWAIT,
                        gap=timing.last_ns)
        t0.add(event=S.WORK_END, task=implicit[0], other=region_id, count=1, kind=S.WORK_SINGLE_EXECUTOR, gap=100)
        b8 = t0.add(event=S.SYNC_BEGIN, task=implicit[0], other=region_id, kind=8, gap=timing.schedule_ns)
        e8 = t0.add(event=S.SYNC_END, task=implicit[0], other=region_id, kind=8, gap=100)
        b9 = t0.add(event=S.SYNC_BEGIN, task=implicit[0], other=region_id, kind=9, gap=timing.schedule_ns)
    else:
        t0.add(event=S.WORK_END, task=implicit[0], other=region_id, count=1, kind=S.WORK_SINGLE_EXECUTOR, gap=100)
        b8 = e8 = tw_end = None
        b9 = t0.add(event=S.SYNC_BEGIN, task=implicit[0], other=region_id, kind=9, gap=timing.schedule_ns)
        own_start = _add_root_blocks(t0, blk, rr, mine, root_start, root_size)
    e9 = t0.add(event=S.SYNC_END, task=implicit[0], other=region_id, kind=9, gap=100)
    t0.add(event=S.IMPLICIT_END, task=implicit[0], value=0, count=P, kind=S.TASK_IMPLICIT, gap=300)
    pe = t0.add(event=S.PARALLEL_END, task=initial_id, other=region_id, kind=0x80000002, codeptr=code, gap=2000)
    t0.add(event=S.IMPLICIT_END, task=initial_id, value=1, count=1, kind=S.TASK_INITIAL, gap=50)
    t0.add(event=S.THREAD_END, gap=0)
    c0 = t0.columns()
    per_thread.append(c0)

    # workers --------------------------------------------------------------
    workers = []
    for k in range(1, P):
        tk = Rows()
        tk.add(event=S.THREAD_BEGIN, kind=2, gap=2000)
        tk.add(event=S.IMPLICIT_BEGIN, task=implicit[k], other=region_id, value=k, count=P,
               kind=S.TASK_IMPLICIT, gap=300)
        tk.add(event=S.WORK_BEGIN, task=implicit[k], other=region_id, count=1, kind=S.WORK_SINGLE_OTHER,
               codeptr=code + 0x10, gap=60)
        tk.add(event=S.WORK_END, task=implicit[k], other=region_id, count=1, kind=S.WORK_SINGLE_OTHER, gap=200)
        barrier_kind = 8 if producer_waits else 9
        wb = tk.add(event=S.SYNC_BEGIN, task=implicit[k], other=region_id, kind=barrier_kind,
                    gap=timing.schedule_ns)
        theirs = np.flatnonzero(thread_of_root == k)           # oldest first
        starts = _add_root_blocks(tk, blk, rr, theirs, root_start, root_size)
        we = tk.add(event=S.SYNC_END, task=implicit[k], other=region_id, kind=barrier_kind, gap=200)
        if producer_waits:
            w9b = tk.add(event=S.SYNC_BEGIN, task=implicit[k], other=region_id, kind=9, gap=timing.schedule_ns)
            w9e = tk.add(event=S.SYNC_END, task=implicit[k], other=region_id, kind=9, gap=100)
        else:
            w9b, w9e = wb, we
        tk.add(event=S.IMPLICIT_END, task=implicit[k], value=k, count=P, kind=S.TASK_IMPLICIT, gap=300)
        tk.add(event=S.THREAD_END, gap=0)
        workers.append(dict(cols=tk.columns(), theirs=theirs, starts=starts, wb=wb, we=we,
                            w9b=w9b, w9e=w9e, first=0))

    # times, resolving cross-thread causality in order -----------------------
    nb0 = c0["nb"]
    nb0[0] = 0
    time0 = _times(c0["gap"], nb0)
    create_time = time0[first_create + np.arange(R)]
    par_begin = time0[2]
    for k, wk in enumerate(workers, start=1):
        c = wk["cols"]
        c["nb"][0] = par_begin + timing.startup_ns * k
        # a thief starts a root after its creation (+ steal latency)
        c["nb"][wk["starts"]] = create_time[wk["theirs"]] + timing.steal_ns
        wk["time"] = _times(c["gap"], c["nb"])
    # all roots done -> producer's taskwait / the barrier can end
    def root_end(times, starts, theirs):
        ends = times[starts + root_size[theirs] - 1] if len(theirs) else np.empty(0, np.int64)
        return int(ends.max()) if len(ends) else NEG
    done_workers = max([root_end(wk["time"], wk["starts"], wk["theirs"]) for wk in workers] + [NEG])
    if producer_waits:
        nb0[tw_end] = done_workers + timing.sync_ns
        time0 = _times(c0["gap"], nb0)
        release8 = max([time0[b8]] + [wk["time"][wk["wb"]] for wk in workers]) + timing.sync_ns
        nb0[e8] = release8
        for wk in workers:
            wk["cols"]["nb"][wk["we"]] = release8 + 50
            wk["time"] = _times(wk["cols"]["gap"], wk["cols"]["nb"])
        time0 = _times(c0["gap"], nb0)
    else:
        time0 = _times(c0["gap"], nb0)
        nb0[e9] = max(done_workers, time0[e9 - 1]) + timing.sync_ns
        time0 = _times(c0["gap"], nb0)
    arrive9 = max([time0[b9]] + [wk["time"][wk["w9b"]] for wk in workers])
    nb0[e9] = max(nb0[e9], arrive9 + timing.sync_ns)
    time0 = _times(c0["gap"], nb0)
    par_end = time0[pe]
    for k, wk in enumerate(workers, start=1):
        wk["cols"]["nb"][wk["w9e"]] = par_end + timing.late_ns + 100 * k
        wk["time"] = _times(wk["cols"]["gap"], wk["cols"]["nb"])
    c0["time"] = time0
    for wk in workers:
        wk["cols"]["time"] = wk["time"]
        per_thread.append(wk["cols"])
    return per_thread


def _add_root_blocks(rows: Rows, blk, rr, which_roots, root_start, root_size):
    """Append the blocks of the given roots (in that order); returns the row
    index (within `rows`) where each block starts."""
    base = sum(len(p) for p in rows.parts["event"])
    if not len(which_roots):
        return np.empty(0, np.int64)
    lens = root_size[which_roots]
    idx = _ranges(root_start[which_roots], lens)
    rows.block({c: blk[c][idx] for c in ("event", "task", "other", "value", "count", "kind",
                                          "flags", "codeptr", "gap")} | {"nb": np.full(len(idx), NEG)})
    starts = base + np.concatenate([[0], np.cumsum(lens)[:-1]])
    return starts


def _ranges(starts, lens):
    """Concatenated aranges [s, s+l) for each (s, l)."""
    total = int(lens.sum())
    off = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return off + np.arange(total)


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
        r.add(event=S.THREAD_BEGIN, kind=1 if k == 0 else 2, gap=2000)
        if k == 0:
            r.add(event=S.IMPLICIT_BEGIN, task=initial_id, value=1, count=1, kind=S.TASK_INITIAL,
                  gap=timing.serial_ns)
            r.add(event=S.PARALLEL_BEGIN, task=initial_id, other=region_id, count=P, kind=0x80000002,
                  codeptr=code, gap=1000)
        r.add(event=S.IMPLICIT_BEGIN, task=implicit[k], other=region_id, value=k, count=P,
              kind=S.TASK_IMPLICIT, gap=200)
        r.add(event=S.WORK_BEGIN, task=implicit[k], other=region_id, count=iterations,
              kind=S.WORK_LOOP_DYNAMIC, codeptr=code + 0x20, gap=timing.bookkeeping_ns)
        first_chunk = r.add(len(mine), event=S.CHUNK, task=implicit[k], other=region_id,
                            value=mine * chunk_size, count=chunk_size, kind=S.DISPATCH_LOOP_CHUNK,
                            gap=dur[mine])
        r.add(event=S.WORK_END, task=implicit[k], other=region_id, kind=S.WORK_LOOP_DYNAMIC,
              gap=timing.bookkeeping_ns)
        b9 = r.add(event=S.SYNC_BEGIN, task=implicit[k], other=region_id, kind=9, gap=timing.schedule_ns)
        e9 = r.add(event=S.SYNC_END, task=implicit[k], other=region_id, kind=9, gap=100)
        r.add(event=S.IMPLICIT_END, task=implicit[k], value=k, count=P, kind=S.TASK_IMPLICIT, gap=300)
        pe = None
        if k == 0:
            pe = r.add(event=S.PARALLEL_END, task=initial_id, other=region_id, kind=0x80000002,
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

ARROW_TYPES = {"event": pa.uint8(), "thread": pa.uint16(), "cpu": pa.uint16(), "tsc": pa.uint64(),
               "task": pa.uint64(), "other": pa.uint64(), "codeptr": pa.uint64(), "value": pa.uint64(),
               "count": pa.uint64(), "kind": pa.uint32(), "flags": pa.uint8()}
NUMPY_TYPES = {"event": np.uint8, "thread": np.uint16, "cpu": np.uint16, "tsc": np.uint64,
               "task": np.uint64, "other": np.uint64, "codeptr": np.uint64, "value": np.uint64,
               "count": np.uint64, "kind": np.uint32, "flags": np.uint8}


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
            pieces.append(_flush_row(S.FLUSH_END, part["time"][0], 0))
        pieces.append(part)
        if full:   # the flush happens just before the thread's next event
            pieces.append(_flush_row(S.FLUSH_BEGIN, cols["time"][stop], buffer_events + 1))
        groups.append({c: np.concatenate([p[c] for p in pieces]) for c in part})
        start = stop
        first = False
    return groups


def _flush_row(event, time, count):
    row = {c: np.zeros(1, np.int64) for c in ("event", "task", "other", "value", "count", "kind",
                                              "flags", "codeptr", "gap", "nb", "time")}
    row["event"][:] = event
    row["count"][:] = count
    row["time"][:] = time
    return row


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
    schema = pa.schema([(c, t, False) for c, t in ARROW_TYPES.items()])
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
        "grainlab.flushes": str(len(groups)),
        "grainlab.dropped_events": "0",
        "grainlab.collector": "synth",
    }
    schema = schema.with_metadata(meta)
    with pq.ParquetWriter(str(path), schema, compression="zstd") as writer:
        for g in groups:
            arrays = []
            for c, t in ARROW_TYPES.items():
                if c == "tsc":
                    v = (g["time"].astype(np.int64) * int(HZ / 1e9)).astype(np.uint64)
                elif c == "cpu":
                    v = g["thread"].astype(np.uint16)
                else:
                    v = g[c].astype(NUMPY_TYPES[c])
                arrays.append(pa.array(v, type=t))
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))


def generate(path, shape: str, grains: int, threads: int = 2, seed: int = 0,
             timing: Timing | None = None, buffer_events: int = 65536, **shape_args) -> None:
    """Write a synthetic trace of `shape` with about `grains` grains to `path`."""
    per_thread = synthesize(shape, grains, threads, seed, timing, **shape_args)
    write(path, per_thread, threads, shape, grains, seed, buffer_events)
