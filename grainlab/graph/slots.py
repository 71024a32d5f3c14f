"""Phases 2-3 of the builder: the *slots* (future nodes) each boundary event
opens in its owner's chain, and the owner's own time credited to them.

A slot is (owner, row, sub): `row` is the global order key (`grank`) of the
event that opens it, `sub` orders several slots one event opens (a fork, then
the fragment after it). Sorted by (owner, row, sub), an owner's slots are its
chain. Only *receiving* slots (fragments, chunks, joins) take the owner's
running time; forks and shared barrier slots never do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as S
from ..errors import GrainlabError
from .columns import (ID32_LIMIT, cumcount, first_after, first_per_key, group_starts, id_dtype,
                      isin_small, lexsort, last_at_or_before, pack, sorted_keys)
from .events import counter_deltas
from .model import NODE_TYPES, JOIN_KINDS
from .owners import LOOP_WORK
from ..sorting import argsort

FRAGMENT, FORK, JOIN, BOOKKEEPING, CHUNK = (NODE_TYPES.index(t) for t in
                                            ("fragment", "fork", "join", "bookkeeping", "chunk"))
TASKWAIT, TASKGROUP, BARRIER, REGION_END, PROGRAM_END = (
    JOIN_KINDS.index(k) for k in ("taskwait", "taskgroup", "barrier", "region_end", "program_end"))


@dataclass
class OwnedRows:
    """The trace's rows in per-thread order (events.Rows) with each row's owners."""
    rows: object             # events.Rows
    owner: np.ndarray        # owner of the row's `task` (-1: none)
    other_owner: np.ndarray  # owner of the row's `other` (-1: none)
    stride: int              # packs (owner, row key): larger than every row key

    def at(self, grank_values) -> np.ndarray:
        """Row positions of global-order keys (identity unless tasks migrate)."""
        rows = self.rows
        if isinstance(rows.grank, np.ndarray):
            inv = np.empty(len(rows) + 2, dtype=np.int64)
            inv[rows.grank] = np.arange(len(rows))
            inv[len(rows):] = len(rows) - 1
            return inv[grank_values]
        return np.minimum(grank_values, len(rows) - 1)


@dataclass
class Forks:
    """Explicit task creations: the first TASK_CREATE of each task."""
    rows: np.ndarray        # row positions
    child: np.ndarray       # owner created
    parent: np.ndarray      # owner creating
    weight: np.ndarray      # int64 per owner: the fork's weight, min(gap, estimate)
    estimate: int           # creation cost estimate (ns): a quantile of the gaps


@dataclass
class Slots:
    """Slot columns in chain order (owner, row, sub), and what opened them."""
    owner: np.ndarray
    row: np.ndarray
    sub: np.ndarray
    type: np.ndarray       # NODE_TYPES code
    recv: np.ndarray       # takes the owner's running time
    child: np.ndarray      # fork: owner created (-1)
    jkind: np.ndarray      # join: JOIN_KINDS code (-1)
    grain: np.ndarray      # whose time: owner, chunk grain (E + k), or -1 (shared)
    shared: np.ndarray     # team barrier instance (-1: the owner's own slot)
    start: np.ndarray      # int64 ns
    seq: np.ndarray        # position in the owner's chain
    n_barriers: int        # team barrier instances
    forks: Forks
    parallel_end_rows: np.ndarray
    taskgroup_begin_rows: np.ndarray
    taskgroup_end_rows: np.ndarray


class _SlotParts:
    """Columns of slots, added by kind, concatenated once. A field one kind
    gives one value for all its slots is kept as that value and written
    straight into the joined column (no slot-sized array per kind).
    idt: the dtype of owner and grain ids (columns.id_dtype), which the
    owner, child, grain and shared columns take, and `row` (row keys are
    below the rows' count + 2, barrier instances below the rows' count)."""
    DEFAULTS = dict(sub=0, recv=True, child=-1, jkind=-1, grain=-2, shared=-1)

    def __init__(self, idt=np.int64):
        self.DTYPES = dict(owner=idt, row=idt, sub=np.int32, type=np.int8, recv=bool,
                           child=idt, jkind=np.int8, grain=idt, shared=idt, start=np.int64)
        self.parts = {f: [] for f in self.DTYPES}

    def add(self, n, **cols):
        for f, dt in self.DTYPES.items():
            v = np.asarray(cols.get(f, self.DEFAULTS.get(f)), dtype=dt)
            self.parts[f].append((int(n), v))

    def prepend(self, other: "_SlotParts") -> None:
        for f in self.parts:
            self.parts[f][:0] = other.parts[f]

    def columns(self, consume: bool = False, fields=None) -> dict:
        """The joined columns (of `fields`, default all); consume: each
        field's parts freed as soon as it is joined."""
        out = {}
        for f, p in self.parts.items():
            if fields is not None and f not in fields:
                continue
            col = np.empty(sum(n for n, _ in p), self.DTYPES[f])
            at = 0
            for n, v in p:
                col[at:at + n] = v
                at += n
            out[f] = col
            if consume:          # free each field's parts as soon as it is joined
                self.parts[f] = []
        return out


def open_slots(orows: OwnedRows, owners, chunks, creation_quantile: float,
               lane=None, creation_cost=None) -> Slots:
    """lane: an executor to make the explicit tasks' slots on meanwhile."""
    # owner and grain ids (explicit tasks, contexts, chunks) are below E + K,
    # row keys (grank) and barrier instances below the rows' count + 2
    idt = id_dtype(max(owners.E + chunks.K, len(orows.rows) + 2))
    parts, task_parts = _SlotParts(idt), _SlotParts(idt)
    forks = lane.submit(_task_slots, task_parts, orows, owners, creation_quantile,
                        creation_cost) \
        if lane else _task_slots(task_parts, orows, owners, creation_quantile, creation_cost)
    n_barriers = _wait_slots(parts, orows)
    parallel_end = _context_slots(parts, orows, owners)
    _loop_slots(parts, orows, chunks, owners.E)
    if lane:
        forks = forks.result()
    parts.prepend(task_parts)
    r, own = orows.rows, orows.owner
    is_tg = (r.kind == S.SYNC_TASKGROUP) & (own >= 0)
    tg_begin = np.flatnonzero((r.event == S.SYNC_BEGIN) & is_tg)
    tg_end = np.flatnonzero((r.event == S.SYNC_END) & is_tg)
    if len(tg_end):
        _taskgroup_joins(parts, parts.columns(), orows, tg_begin, tg_end)
    cols = _chain_order_parts(parts, orows.stride) if SCATTER_PARTS \
        else _chain_order(parts.columns(consume=True), orows.stride)
    return Slots(**cols, n_barriers=n_barriers, forks=forks, parallel_end_rows=parallel_end,
                 taskgroup_begin_rows=tg_begin, taskgroup_end_rows=tg_end)


def _task_slots(parts, orows, owners, q, creation_cost=None) -> Forks:
    """A first fragment at each explicit task's first schedule; at its
    creation, a fork in the parent (weight min(gap, estimate)), then a fragment."""
    r, own, oth = orows.rows, orows.owner, orows.other_owner
    T, E, t = owners.T, owners.E, r.time
    sc = np.flatnonzero((r.event == S.TASK_SCHEDULE) & (own >= 0) & (own < T))
    if owners.untied:
        sc = sc[argsort(r.grank[sc])]
        _migration_slots(parts, r, own, sc)
    sc = sc[first_per_key(own[sc], E)]
    parts.add(len(sc), owner=own[sc], row=r.grank[sc], type=FRAGMENT, start=t[sc])

    cr = np.flatnonzero((r.event == S.TASK_CREATE) & (own >= 0) & (oth >= 0))
    cr = np.sort(cr[first_per_key(own[cr], E)])
    child, parent = own[cr], oth[cr]
    gap = _gap_to_next_runtime_row(r, cr)
    if creation_cost is not None:       # the whole run's estimate (build's doc)
        estimate = int(creation_cost(gap))
    else:
        estimate = int(round(float(np.quantile(gap, q)))) if len(gap) else 0
    fork_w = np.minimum(gap, estimate)
    # ... and at most until the child begins (another thread may take it
    # while its creator is still in the runtime: the path creator -> child
    # would count that time twice, and a span could outgrow the run)
    begin = np.full(E, np.iinfo(np.int64).max, dtype=np.int64)
    begin[own[sc]] = t[sc]
    fork_w = np.minimum(fork_w, np.maximum(begin[child] - t[cr], 0))
    parts.add(len(cr), owner=parent, row=r.grank[cr], sub=0, type=FORK, recv=False,
              child=child, start=t[cr])
    parts.add(len(cr), owner=parent, row=r.grank[cr], sub=1, type=FRAGMENT, start=t[cr] + fork_w)
    weight = np.zeros(E, dtype=np.int64)
    weight[child] = fork_w
    return Forks(rows=cr, child=child, parent=parent, weight=weight, estimate=estimate)


def _migration_slots(parts, r, own, sc) -> None:
    """An untied task resumed on another thread than the one it last ran on
    continues in a new fragment there, so each fragment sits on the thread
    that ran it (docs/graph-model.md "Untied tasks"). The two fragments are
    consecutive in the task's chain: the path through them, and so the span,
    is the same as through one. `sc`: schedule rows into explicit tasks, in
    global time order. A task that resumes where it ran (tied tasks, every
    task at one thread, a serialized untied task's self-switches) gets no
    new fragment, so the graph's shape changes only where tasks moved."""
    s = sc[argsort(own[sc])]        # per task, in time (stable: sc is in time order)
    who, thread = own[s], r.thread[s]
    moved = np.zeros(len(s), dtype=bool)
    moved[1:] = (who[1:] == who[:-1]) & (thread[1:] != thread[:-1])
    resume = s[moved]
    parts.add(len(resume), owner=own[resume], row=r.grank[resume], type=FRAGMENT,
              start=r.time[resume])


def _gap_to_next_runtime_row(r, idx):
    """Time from each row to the next row of its thread that is not a
    DEPENDENCE / TASK_DEPENDENCE row (those belong to the creation): the
    compiled kernel (gl_gap_to_next) where built, else the numpy twin."""
    kernel = _gap_kernel()
    if kernel is None or r.event.dtype != np.uint8 or r.thread.dtype != np.uint16 \
            or r.time.dtype != np.int64:
        return _gap_numpy(r.event, r.thread, r.time, idx)
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    gap = np.empty(len(idx), np.int64)
    event, thread, time = (np.ascontiguousarray(a) for a in (r.event, r.thread, r.time))
    rc = kernel(len(event), event.ctypes.data, thread.ctypes.data, time.ctypes.data,
                len(idx), idx.ctypes.data, S.DEPENDENCE, S.TASK_DEPENDENCE, gap.ctypes.data)
    if rc != 0:
        raise GrainlabError("a task creation row outside the trace's rows "
                            "(a grainlab bug: please report it with the trace)")
    return gap


def _gap_kernel():
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_gap_to_next", [i, p, p, p, i, p, i, i, p])


def _gap_numpy(event, thread, time, idx):
    """The twin of gl_gap_to_next (a row-sized running minimum of the next
    row that is not a dependence row)."""
    n = len(event)
    dep = isin_small(event, (S.DEPENDENCE, S.TASK_DEPENDENCE))
    nxt = np.minimum.accumulate(np.where(~dep, np.arange(n), n)[::-1])[::-1]
    j = np.full(len(idx), n, dtype=np.int64)
    inside = idx + 1 < n
    j[inside] = nxt[idx[inside] + 1]
    ok = j < n
    ok[ok] = thread[j[ok]] == thread[idx[ok]]
    gap = np.zeros(len(idx), dtype=np.int64)
    gap[ok] = time[j[ok]] - time[idx[ok]]
    return np.maximum(gap, 0)


def _wait_slots(parts, orows) -> int:
    """Taskwait and barriers: a join at SYNC_BEGIN, a fragment at SYNC_END.
    The k-th barrier of every implicit task of a region is one shared slot
    instance. Returns the number of instances."""
    r, own, t = orows.rows, orows.owner, orows.rows.time
    waits = (S.SYNC_TASKWAIT,) + S.SYNC_BARRIERS
    sb = np.flatnonzero((r.event == S.SYNC_BEGIN) & isin_small(r.kind, waits) & (own >= 0))
    se = np.flatnonzero((r.event == S.SYNC_END) & isin_small(r.kind, waits) & (own >= 0))
    barrier = isin_small(r.kind[sb], S.SYNC_BARRIERS)
    shared = np.full(len(sb), -1, dtype=np.int64)
    bsb = sb[barrier]
    n_barriers = 0
    if len(bsb):
        o = lexsort((r.grank[bsb], own[bsb]))
        kth = np.empty(len(bsb), dtype=np.int64)
        kth[o] = cumcount(own[bsb][o])
        codes, uniq = pd.factorize(pd.MultiIndex.from_arrays([r.take("other", bsb), kth]))
        shared[barrier] = codes
        n_barriers = len(uniq)
    parts.add(len(sb), owner=own[sb], row=r.grank[sb], type=JOIN,
              jkind=np.where(barrier, BARRIER, TASKWAIT), shared=shared, start=t[sb])
    parts.add(len(se), owner=own[se], row=r.grank[se], type=FRAGMENT, start=t[se])
    return n_barriers


def _context_slots(parts, orows, owners) -> np.ndarray:
    """Parallel regions: a fork per implicit task, a region_end join at
    PARALLEL_END; implicit/initial task begins; the initial task ends in the
    program_end join. Returns the PARALLEL_END rows."""
    r, own, t, n, T = orows.rows, orows.owner, orows.rows.time, len(orows.rows), owners.T
    pb = np.flatnonzero((r.event == S.PARALLEL_BEGIN) & (own >= 0))
    imp = np.flatnonzero(owners.is_implicit)
    ctx_region = owners.ctx["region"].to_numpy(np.uint64)
    imp = imp[lexsort((owners.ctx["team_index"].to_numpy()[imp - T], ctx_region[imp - T]))]
    imp_region = ctx_region[imp - T]
    region = r.take("other", pb)
    lo = np.searchsorted(imp_region, region, side="left")
    cnt = np.searchsorted(imp_region, region, side="right") - lo
    rep = np.repeat(np.arange(len(pb)), cnt)
    sub = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    parts.add(len(rep), owner=own[pb][rep], row=r.grank[pb][rep], sub=sub, type=FORK,
              recv=(sub == 0), child=imp[np.repeat(lo, cnt) + sub], start=t[pb][rep])
    pe = np.flatnonzero((r.event == S.PARALLEL_END) & (own >= 0))
    parts.add(len(pe), owner=own[pe], row=r.grank[pe], sub=0, type=JOIN, recv=False,
              jkind=REGION_END, start=t[pe])
    parts.add(len(pe), owner=own[pe], row=r.grank[pe], sub=1, type=FRAGMENT, start=t[pe])

    ib = np.flatnonzero((r.event == S.IMPLICIT_BEGIN) & (own >= 0))
    ib = ib[first_per_key(own[ib], owners.E)]
    parts.add(len(ib), owner=own[ib], row=r.grank[ib], type=FRAGMENT, start=t[ib])
    ie = np.flatnonzero((r.event == S.IMPLICIT_END) & (own >= 0))
    ie = ie[owners.is_initial[own[ie]]]
    ie = ie[first_per_key(own[ie], owners.E)]
    parts.add(len(ie), owner=own[ie], row=r.grank[ie], type=JOIN, jkind=PROGRAM_END, start=t[ie])
    missing = np.setdiff1d(np.flatnonzero(owners.is_initial), own[ie])
    parts.add(len(missing), owner=missing, row=n + 1, type=JOIN, jkind=PROGRAM_END,
              start=int(t.max()) if n else 0)
    return pe


def _loop_slots(parts, orows, chunks, E):
    """Loops: book-keeping at WORK_BEGIN / WORK_END; before every chunk but
    the first of its loop on that thread a zero book-keeping slot; the chunk."""
    r, own, t = orows.rows, orows.owner, orows.rows.time
    lw = np.flatnonzero(isin_small(r.event, (S.WORK_BEGIN, S.WORK_END))
                        & isin_small(r.kind, LOOP_WORK) & (own >= 0))
    parts.add(len(lw), owner=own[lw], row=r.grank[lw], type=BOOKKEEPING, start=t[lw])
    ch = chunks.rows
    key = pack(chunks.owner, chunks.loop_row, orows.stride)
    o = lexsort((r.grank[ch], key))
    later = np.ones(len(ch), dtype=bool)
    later[o] = ~group_starts(key[o])
    parts.add(int(later.sum()), owner=chunks.owner[later], row=r.grank[ch][later], sub=0,
              type=BOOKKEEPING, recv=False, start=t[ch][later])
    parts.add(len(ch), owner=chunks.owner, row=r.grank[ch], sub=1, type=CHUNK,
              grain=E + np.arange(chunks.K), start=t[ch])


def _taskgroup_joins(parts, cols, orows, tg_begin, tg_end):
    """Taskgroup end: a join from the owner's first switch-out after its last
    boundary (or from SYNC_END if it never switched out), then a fragment.
    OMPT's sync_region for a taskgroup spans its whole body; the wait start
    is not an event."""
    r, stride = orows.rows, orows.stride
    owner = orows.owner[tg_end]
    boundaries = np.sort(np.concatenate([
        pack(cols["owner"], cols["row"], stride), pack(owner, r.grank[tg_end], stride),
        pack(orows.owner[tg_begin], r.grank[tg_begin], stride)]))
    # the owner's last boundary before SYNC_END
    i = last_at_or_before(boundaries, owner, r.grank[tg_end] - 1, stride)
    last = np.where(i >= 0, boundaries[np.maximum(i, 0)] % stride, -1)
    # then its first switch-out after that, if before SYNC_END
    so = np.flatnonzero((r.event == S.TASK_SCHEDULE) & (r.kind == S.STATUS_SWITCH))
    switch_out = np.sort(pack(orows.other_owner[so], r.grank[so], stride))
    cand = first_after(switch_out, switch_out, owner, last, stride)
    found = (cand >= 0) & (cand % stride < r.grank[tg_end])
    join_row = np.where(found, cand % stride, r.grank[tg_end])
    parts.add(len(tg_end), owner=owner, row=join_row, sub=-1, type=JOIN, jkind=TASKGROUP,
              start=r.time[orows.at(join_row)])
    parts.add(len(tg_end), owner=owner, row=r.grank[tg_end], sub=0, type=FRAGMENT,
              start=r.time[tg_end])


# The slots' columns straight from the parts into chain order (a scatter per
# part) instead of joined first and then gathered: at fib 33 (45.6M slots) the
# join was 3.4 s and a whole slot table of memory. False: the former path,
# kept as the reference the tests compare with (tests/test_slot_scatter.py).
SCATTER_PARTS = True


def _chain_order_parts(parts: _SlotParts, stride: int) -> dict:
    """`_chain_order` of the parts' columns, without joining them first: the
    chain keys' order made from the joined owner, row and sub, then every
    other field's parts written to their slots' places in that order. The
    compiled kernels (grainlab/native/chain_order.c) where built, else the
    numpy twin."""
    keys = ("owner", "row", "sub")
    sl = parts.columns(consume=True, fields=keys)
    kernels = _chain_kernels()
    where = _chain_where_native(sl, stride, kernels[0]) if kernels else None
    if where is None:
        return _chain_order_parts_numpy(parts, sl, stride)
    for f in list(parts.parts):
        # the keys too are scattered, not gathered: the kernel keeps no permutation.
        # Writing them in its last pass instead measured 0.28 s less at fib 32
        # (28M slots), but holds the joined and the ordered keys, `where`, its
        # scratch at once: 36 B a slot (int32 ids) against the twin's 28 here.
        if f in keys:
            sl[f] = _scatter_parts([(len(where), sl.pop(f))], where, parts.DTYPES[f],
                                   kernels[1])
        else:
            sl[f] = _scatter_parts(parts.parts[f], where, parts.DTYPES[f], kernels[1])
            parts.parts[f] = []      # each field's parts freed as soon as it is placed
    del where
    return _chain_positions(sl)


def _scatter_parts(p, where, dtype, scatter) -> np.ndarray:
    """A column from its parts [(n, value or array)]: part i's slots at
    where[their positions] (gl_chain_scatter)."""
    out = np.empty(len(where), dtype)
    at = 0
    for m, v in p:
        v = np.ascontiguousarray(v, dtype=dtype)
        if v.size not in (1, m):
            raise GrainlabError(f"chain order: a part of {m} slots with {v.size} values "
                                "(a grainlab bug: please report it with the trace)")
        if m and scatter(m, where[at:].ctypes.data, v.ctypes.data, int(v.size == m),
                         out.ctypes.data, out.itemsize) != 0:
            raise GrainlabError(f"chain order: no scatter of {out.itemsize}-byte items "
                                "(a grainlab bug: please report it)")
        at += m
    return out


def _chain_order_parts_numpy(parts: _SlotParts, sl: dict, stride: int) -> dict:
    """_chain_order_parts's numpy twin, from the joined keys `sl`."""
    keys = ("owner", "row", "sub")
    o = _chain_permutation(sl, stride)
    n = len(o)
    for f in keys:
        sl[f] = np.take(sl[f], o)
    where = np.empty(n, id_dtype(n + 1))         # a slot's place in chain order
    where[o] = np.arange(n, dtype=where.dtype)
    del o
    for f, p in parts.parts.items():
        if f in keys:
            continue
        out = np.empty(n, parts.DTYPES[f])
        at = 0
        for m, v in p:
            out[where[at:at + m]] = v
            at += m
        parts.parts[f] = []      # each field's parts freed as soon as it is placed
        sl[f] = out
    del where
    return _chain_positions(sl)


DIGITS_MAX_SLOTS = 1 << 20


def _chain_where_native(sl: dict, stride: int, kernel):
    """Each slot's place in (owner, row, sub) order by gl_chain_order (int32),
    or None where the kernel does not apply (2^31 - 2 slots or more: its
    positions are int32; key columns of other dtypes; many slots with keys
    too sparse for one counting pass)."""
    owner, row, sub = sl["owner"], sl["row"], sl["sub"]
    n = len(owner)
    if n >= ID32_LIMIT - 1 or owner.dtype != row.dtype \
            or owner.dtype not in (np.int32, np.int64) or sub.dtype != np.int32:
        return None
    E = int(owner.max()) + 1 if n else 1
    # counting sorts over E owners and `stride` rows: the count array is cut
    # at twice the slots, so that with `where` and the kernel's `perm` it
    # holds no more than the twin's int64 key and argsort (16 B a slot).
    # Sparser keys sort in several digits, which at fib 32's 28M keys took
    # 1.35 s against 0.37 s in one and ~0.95 s for the twin's argsort: there
    # the twin runs, unless the slots are few enough for either to be quick.
    limit = max(2, min(max(E, stride), max(2 * n, 1 << 16)))
    if max(E, stride) > limit and n > DIGITS_MAX_SLOTS:
        return None
    where = np.empty(n, np.int32)
    perm = np.empty(n, np.int32)
    count = np.empty(limit, np.int32)
    owner, row, sub = (np.ascontiguousarray(a) for a in (owner, row, sub))
    rc = kernel(n, owner.ctypes.data, row.ctypes.data, sub.ctypes.data,
                int(owner.dtype == np.int64), E, int(stride), limit, where.ctypes.data,
                perm.ctypes.data, count.ctypes.data)
    if rc != 0:
        raise GrainlabError("chain order: a slot's owner or row out of range "
                            "(a grainlab bug: please report it with the trace)")
    return where


def _chain_kernels():
    """(gl_chain_order, gl_chain_scatter) from the compiled kernels, or None
    (not built, or GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    order = graph_kernel("gl_chain_order", [i, p, p, p, i, i, i, i, p, p, p])
    scatter = graph_kernel("gl_chain_scatter", [i, p, p, i, p, i])
    return (order, scatter) if order is not None and scatter is not None else None


def _chain_permutation(sl: dict, stride: int) -> np.ndarray:
    """The order of slots by (owner, row, sub)."""
    subw = int(sl["sub"].max()) + 2 if len(sl["sub"]) else 2
    if len(sl["owner"]) and int(sl["owner"].max()) * stride * subw < (1 << 62):
        # ((owner * stride + row) * subw + sub + 1, made in one int64 array
        # (pack and the arithmetic made six: 1.7 s at 45M slots, faulting)
        key = sl["owner"].astype(np.int64)
        key *= stride
        key += sl["row"]
        key *= subw
        key += sl["sub"]
        key += 1
        return np.argsort(key)         # keys are unique: any sort will do
    return lexsort((sl["sub"], sl["row"], sl["owner"]))


def _chain_positions(sl: dict) -> dict:
    """Chain positions, and grain defaults, of slot columns in chain order."""
    # int32, the type of g.nodes' owner_seq it becomes (a chain of 2^31 nodes
    # would not fit the node ids either)
    # (counted in int64 past 2^31 slots: the positions counted from must fit)
    wide = np.int32 if len(sl["owner"]) < (1 << 31) else np.int64
    sl["seq"] = cumcount(sl["owner"], wide).astype(np.int32, copy=False)
    sl["grain"] = np.where(sl["grain"] == -2, sl["owner"], sl["grain"])
    sl["grain"][sl["shared"] >= 0] = -1
    return sl


def _chain_order(sl: dict, stride: int) -> dict:
    """Slots sorted by (owner, row, sub), with their chain positions; a slot's
    grain defaults to its owner, shared barrier slots belong to no grain."""
    o = _chain_permutation(sl, stride)
    # one field at a time, into the buffer the previous field of the same
    # type left: one spare column per type instead of a fresh one per field
    spare: dict = {}
    for f in list(sl):
        a = sl[f]
        out = spare.pop(a.dtype.str, None)
        if out is None:
            out = np.empty_like(a)
        np.take(a, o, out=out)
        sl[f] = out
        spare[a.dtype.str] = a
    del spare
    return _chain_positions(sl)


@dataclass
class Credit:
    """Per slot: the owner's own running time in it, when its last segment
    ended, and counter deltas over that time."""
    own: np.ndarray
    last_end: np.ndarray
    counters: dict           # name -> float64 per slot


def credit_segments(orows: OwnedRows, slots: Slots) -> Credit:
    """Every segment goes to its running owner's latest receiving slot."""
    r = orows.rows
    grank = r.grank if isinstance(r.grank, np.ndarray) else None
    slot_of_row, own, last_end = segment_credit(r.owner_running, grank, r.seg, r.seg_end,
                                                slots.owner, slots.row, slots.recv)
    deltas = counter_deltas(r)
    counters = {}
    if deltas:
        rows = np.flatnonzero(slot_of_row >= 0)
        slot = slot_of_row[rows]
        counters = {name: np.bincount(slot, weights=d[rows], minlength=len(slots.owner))
                    for name, d in deltas.items()}
    return Credit(own=own, last_end=last_end, counters=counters)


def segment_credit(owner_running, grank, seg, seg_end, slot_owner, slot_row, recv,
                   native: bool | None = None):
    """(slot of each row, own time per slot, last segment end per slot): each
    row's segment (seg > 0, owner_running >= 0) goes to the last receiving
    slot (`recv`) of its owner opened at or before the row (slot_row <=
    grank[row]; grank None: the row's position); -1 where there is none.
    Slots are in chain order (sorted by owner, then row). The compiled kernel
    (grainlab/native/segments.c) when built, else the numpy twin; `native`
    forces one (tests)."""
    n, ns = len(owner_running), len(slot_owner)
    kernel = _credit_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled credit kernel is not built")
    if kernel is None:
        return _segment_credit_numpy(owner_running, grank, seg, seg_end, slot_owner,
                                     slot_row, recv)
    E = int(max(int(slot_owner.max()) if ns else -1,
                int(owner_running.max()) if n else -1)) + 1
    rs = np.flatnonzero(recv)
    # each owner's receiving slots, [bounds[o], bounds[o + 1]): slots are in
    # chain order, so counts and their running sum (a searchsorted of every
    # owner took ~1 s at 7M owners)
    bounds = np.zeros(E + 1, np.int64)
    np.cumsum(np.bincount(slot_owner[rs], minlength=E), out=bounds[1:])
    c64 = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
    # the running owner as the rows keep it (int32 while ids fit), else int64
    owner_wide = owner_running.dtype != np.int32
    owner_running = c64(owner_running) if owner_wide else np.ascontiguousarray(owner_running)
    seg, seg_end = c64(seg), c64(seg_end)
    grank = None if grank is None else c64(grank)
    rrow = c64(slot_row[rs])
    slot_of_row = np.empty(n, np.int64)
    own = np.zeros(ns, np.int64)
    last_end = np.zeros(ns, np.int64)
    cursor = np.empty(max(E, 1), np.int64)
    rc = kernel(n, owner_running.ctypes.data, int(owner_wide),
                None if grank is None else grank.ctypes.data,
                seg.ctypes.data, seg_end.ctypes.data, E, bounds[:-1].ctypes.data,
                bounds[1:].ctypes.data, rrow.ctypes.data, rs.ctypes.data, ns,
                slot_of_row.ctypes.data, own.ctypes.data, last_end.ctypes.data,
                cursor.ctypes.data)
    if rc != 0:
        raise GrainlabError("segment credit: an owner or slot id out of range "
                            "(a grainlab bug: please report it with the trace)")
    return slot_of_row, own, last_end


def _segment_credit_numpy(owner_running, grank, seg, seg_end, slot_owner, slot_row, recv):
    """segment_credit's numpy twin: one sort of packed (owner, row) keys, one
    searchsorted per row."""
    n, ns = len(owner_running), len(slot_owner)
    stride = n + 2 if grank is None else max(n, int(grank.max()) + 1 if n else 0) + 2
    if ns:
        stride = max(stride, int(slot_row.max()) + 2)
    recv = np.flatnonzero(recv)
    rkey, recv = sorted_keys(pack(slot_owner[recv], slot_row[recv], stride), recv)
    rows = np.flatnonzero((owner_running >= 0) & (seg > 0))
    g = rows if grank is None else grank[rows]
    i = last_at_or_before(rkey, owner_running[rows], g, stride)
    ok = i >= 0
    slot, rows = recv[i[ok]], rows[ok]
    slot_of_row = np.full(n, -1, np.int64)
    slot_of_row[rows] = slot
    own = np.bincount(slot, weights=seg[rows], minlength=ns).astype(np.int64)
    last_end = np.zeros(ns, dtype=np.int64)
    np.maximum.at(last_end, slot, seg_end[rows])
    return slot_of_row, own, last_end


def _credit_kernel():
    """gl_credit_segments from the compiled kernels, or None (not built, or
    GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_credit_segments", [i, p, i, p, p, p, i, p, p, p, p, i, p, p, p, p])
