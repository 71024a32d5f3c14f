"""Phase 5 of the builder: edges. Continuation along chains, creation from
forks, synchronization from each grain to its waiter join
(docs/graph-model.md "synchronization"; tests/reference_waiters.py states the
same rule loop by loop), dependences between sibling tasks."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as S
from .columns import (group_starts, inherit, isin_small, lexsort, lookup, pack, reindexed,
                      sorted_keys)
from .model import EDGE_TYPES
from .slots import BARRIER, FORK, JOIN, PROGRAM_END, TASKGROUP, TASKWAIT
from ..sorting import argsort

CREATION, SYNCHRONIZATION, CONTINUATION, DEPENDENCE = (
    EDGE_TYPES.index(k) for k in ("creation", "synchronization", "continuation", "dependence"))
WRITER_DEPS = (S.DEPEND_OUT, S.DEPEND_INOUT, S.DEPEND_MUTEXINOUTSET, S.DEPEND_OUT_ALL_MEMORY,
               S.DEPEND_INOUT_ALL_MEMORY)


@dataclass
class Edges:
    src: np.ndarray
    dst: np.ndarray
    type: np.ndarray          # EDGE_TYPES code
    task_waiter: np.ndarray   # per explicit task: node of its waiter join (-1)
    ctx_waiter: np.ndarray    # per owner: implicit task -> its region_end join (-1)


def make_edges(orows, owners, slots, nodes) -> Edges:
    """nodes: the slots' node ids (nodes.NodeIds, or the Nodes themselves)."""
    T, node, owner = owners.T, nodes.slot_node, slots.owner
    first, last = nodes.first_node, nodes.last_node
    idt = node.dtype                    # the graph's id dtype (nodes.node_ids)
    parts = []

    def add(src, dst, kind):
        parts.append((np.asarray(src, idt), np.asarray(dst, idt),
                      np.full(len(src), kind, np.int8)))

    # the waiters first: their task-sized scratch (a dozen columns) is gone
    # before the edge columns are made (the build's peak at 10^7 grains)
    ctx_waiter = _region_end_joins(orows, owners, slots, nodes)
    task_waiter = waiters(orows, owners, slots, node, ctx_waiter)

    same = owner[1:] == owner[:-1]
    add(node[:-1][same], node[1:][same], CONTINUATION)
    del same
    fk = np.flatnonzero((slots.type == FORK) & (slots.child >= 0))
    tgt = first[slots.child[fk]]
    add(node[fk][tgt >= 0], tgt[tgt >= 0], CREATION)
    del fk, tgt

    ok = (last[:T] >= 0) & (task_waiter >= 0)
    add(last[:T][ok], task_waiter[ok], SYNCHRONIZATION)
    imp = np.flatnonzero(owners.is_implicit)
    ok = (ctx_waiter[imp] >= 0) & (last[imp] >= 0)
    add(last[imp][ok], ctx_waiter[imp][ok], SYNCHRONIZATION)

    # a run that exec()s has one initial task per image, one after the
    # other: each image continues where the one before it ended
    init = np.flatnonzero(owners.is_initial)
    if len(init) > 1:
        f, la = first[init], last[init]
        ok = (f >= 0) & (la >= 0)
        o = argsort(f[ok])
        add(la[ok][o][:-1], f[ok][o][1:], CONTINUATION)

    dsrc, ddst = dependences(orows, owners, slots.forks)
    ok = (last[dsrc] >= 0) & (first[ddst] >= 0) & (dsrc != ddst)
    add(last[dsrc][ok], first[ddst][ok], DEPENDENCE)

    # one column at a time, each part's piece freed once joined
    src, dst, kind = (_join_column(parts, k) for k in range(3))
    if len(dsrc):   # only dependence edges can repeat an existing edge
        # the key in int64: a product of two int32 ids overflows int32
        keep = ~pd.Series(src.astype(np.int64) * nodes.N + dst).duplicated(keep="first").to_numpy()
        src, dst, kind = src[keep], dst[keep], kind[keep]
    return Edges(src=src, dst=dst, type=kind, task_waiter=task_waiter, ctx_waiter=ctx_waiter)


def _join_column(parts: list, k: int) -> np.ndarray:
    out = np.concatenate([p[k] for p in parts])
    for i, p in enumerate(parts):
        parts[i] = p[:k] + (None,) + p[k + 1:]
    return out


def _region_end_joins(orows, owners, slots, nodes) -> np.ndarray:
    """Per owner: the region_end join an implicit task ends at (-1 else)."""
    pe = slots.parallel_end_rows
    join_key, join_node = sorted_keys(*_slot_keys(slots, nodes, orows.stride, JOIN))
    q = pack(orows.owner[pe], orows.rows.grank[pe], orows.stride)
    at = np.full(len(pe), -1, np.int64)
    if len(join_key):
        i = np.minimum(np.searchsorted(join_key, q), len(join_key) - 1)
        hit = join_key[i] == q
        at[hit] = join_node[i[hit]]
    by_region = lookup(at, orows.rows.take("other", pe))
    imp = np.flatnonzero(owners.is_implicit)
    out = np.full(owners.E, -1, nodes.slot_node.dtype)
    out[imp] = reindexed(by_region, owners.ctx["region"].to_numpy(np.uint64)[imp - owners.T])
    return out


def _slot_keys(slots, nodes, stride, slot_type):
    sel = np.flatnonzero(slots.type == slot_type)
    return pack(slots.owner[sel], slots.row[sel], stride), nodes.slot_node[sel]


def waiters(orows, owners, slots, node, ctx_waiter) -> np.ndarray:
    """Node of the join that waits for each explicit task: the parent's first
    taskwait (or barrier, for an implicit parent) after the creation, or the
    end of the innermost taskgroup open at the creation, whichever comes
    first; else the join that catches the nearest ancestor's descendants;
    else the program end."""
    T = owners.T
    owner, seq, jk = slots.owner, slots.seq, slots.jkind
    if T == 0:
        return np.full(0, -1, node.dtype)
    fk = np.flatnonzero((slots.type == FORK) & (slots.child >= 0) & (slots.child < T))
    parent = np.full(T, -1, np.int64)
    parent[slots.child[fk]] = owner[fk]
    has_parent = parent >= 0
    ctx_parent = has_parent & (parent >= T)
    isj = slots.type == JOIN

    fork_slot = np.full(T, -1, np.int64)
    fork_slot[slots.child[fk]] = fk
    n = len(owner)

    def next_join(mask, who):
        """Per task in `who`: the first `mask` slot after its fork in its
        parent's chain (-1: none). Slots are in chain order, so that is the
        first `mask` slot after the fork's, if it is still the parent's: one
        backward running minimum over the slots instead of a sort and a
        search per task (1-2 s at 7M tasks)."""
        nxt = np.where(mask, np.arange(n), n)
        nxt = np.minimum.accumulate(nxt[::-1])[::-1]
        c = np.flatnonzero(who)
        after = fork_slot[c] + 1
        cand = np.full(len(c), n, np.int64)
        inside = after < n
        cand[inside] = nxt[after[inside]]
        ok = cand < n
        ok[ok] = owner[cand[ok]] == owner[fork_slot[c[ok]]]
        out = np.full(T, -1, np.int64)
        out[c[ok]] = cand[ok]
        return out

    w = next_join(isj & ((jk == TASKWAIT) | (jk == BARRIER) | (jk == PROGRAM_END)), has_parent)
    tg = taskgroup_of_tasks(orows, owners, slots)
    use_tg = (tg >= 0) & ((w < 0) | (seq[np.maximum(tg, 0)] < seq[np.maximum(w, 0)]))
    w[use_tg] = tg[use_tg]
    wkind = np.where(w >= 0, jk[np.maximum(w, 0)], -1)
    B = next_join(isj & ((jk == BARRIER) | (jk == PROGRAM_END)), ctx_parent)
    # No barrier after the creation in the implicit task (a team of one:
    # libomp reports none at the region's end): the region's own end,
    # the region_end join its implicit tasks end in, waits for the task.
    no_barrier = np.flatnonzero(ctx_parent & (B < 0))
    if len(no_barrier):
        slot_of_node = np.full(int(node.max()) + 1, -1, np.int64)
        slot_of_node[node] = np.arange(len(node))
        end_node = ctx_waiter[parent[no_barrier]]
        B[no_barrier] = np.where(end_node >= 0, slot_of_node[np.maximum(end_node, 0)], -1)

    # catch(X): the join that waits for X's descendants their parents don't wait for
    catch = np.full(T, -1, np.int64)
    own_tg = tg >= 0
    catch[own_tg] = tg[own_tg]
    strong = ~own_tg & ((wkind == BARRIER) | (wkind == PROGRAM_END))
    catch[strong] = w[strong]
    via_ctx = ~own_tg & ~strong & ctx_parent
    catch[via_ctx] = B[via_ctx]
    catch = inherit(catch, np.where(own_tg | strong | via_ctx | ~has_parent, -1, parent))

    res = w.copy()
    m = (res < 0) & has_parent & ~ctx_parent
    res[m] = catch[parent[m]]
    m = (res < 0) & ctx_parent
    res[m] = B[m]
    pe = np.flatnonzero(isj & (jk == PROGRAM_END))
    fallback = node[pe[0]] if len(pe) else -1
    return np.where(res >= 0, node[np.maximum(res, 0)], fallback).astype(node.dtype, copy=False)


def taskgroup_of_tasks(orows, owners, slots) -> np.ndarray:
    """Slot of the taskgroup join of the innermost taskgroup of the parent
    open when each task was created (-1 if none)."""
    T, r, stride = owners.T, orows.rows, orows.stride
    out = np.full(T, -1, np.int64)
    tb, te = slots.taskgroup_begin_rows, slots.taskgroup_end_rows
    if not len(tb) or not len(te):
        return out
    # taskgroup joins in the order of their SYNC_END rows (same owner order)
    tgj = np.flatnonzero((slots.type == JOIN) & (slots.jkind == TASKGROUP))
    jo = tgj[argsort(pack(slots.owner[tgj], slots.row[tgj], stride))]
    eo = argsort(pack(orows.owner[te], r.grank[te], stride))
    end_slot = np.empty(len(te), np.int64)
    end_slot[eo] = jo
    # the owner's taskgroup begins (+1), ends (-1) and forks (0), in chain order
    fk = np.flatnonzero((slots.type == FORK) & (slots.child >= 0) & (slots.child < T))
    ev_owner = np.concatenate([orows.owner[tb], orows.owner[te], slots.owner[fk]])
    ev_row = np.concatenate([r.grank[tb], r.grank[te], slots.row[fk]])
    ev_step = np.concatenate([np.ones(len(tb), np.int64), -np.ones(len(te), np.int64),
                              np.zeros(len(fk), np.int64)])
    ev_ref = np.concatenate([np.full(len(tb), -1), end_slot, slots.child[fk]])
    o = lexsort((ev_row, ev_owner))
    ev_owner, ev_row, ev_step, ev_ref = ev_owner[o], ev_row[o], ev_step[o], ev_ref[o]
    level = np.cumsum(ev_step)
    base = np.maximum.accumulate(np.where(group_starts(ev_owner), np.arange(len(o)), 0))
    level = level - level[base] + ev_step[base]  # open taskgroups after each event
    # a fork at level L belongs to the first end at level L - 1 after it
    ends = np.flatnonzero(ev_step == -1)
    levels = int(max(level.max(), 0)) + 3      # nesting depth bound (small)
    L = stride + 1
    ekey, ends = sorted_keys(pack(pack(ev_owner[ends], np.clip(level[ends] + 1, 0, levels - 1),
                                       levels), ev_row[ends], L), ends)
    forks = np.flatnonzero((ev_step == 0) & (level > 0))
    q = pack(pack(ev_owner[forks], level[forks], levels), ev_row[forks], L)
    i = np.searchsorted(ekey, q, side="right")
    ok = i < len(ekey)
    ok[ok] = ekey[i[ok]] // L == q[ok] // L
    out[ev_ref[forks[ok]]] = ev_ref[ends[i[ok]]]
    return out


def dependences(orows, owners, forks):
    """(source, sink) owner pairs: TASK_DEPENDENCE rows plus those implied by
    DEPENDENCE rows."""
    r = orows.rows
    td = np.flatnonzero(r.event == S.TASK_DEPENDENCE)
    ds, dd = _derived_dependences(orows, owners, forks)
    src = np.concatenate([orows.other_owner[td], ds])
    dst = np.concatenate([orows.owner[td], dd])
    ok = (src >= 0) & (src < owners.T) & (dst >= 0) & (dst < owners.T)
    return src[ok], dst[ok]


def _derived_dependences(orows, owners, forks):
    """Edges implied by DEPENDENCE rows among siblings in creation order, per
    address: a reader after the last writer before it; a writer after the
    last writer and after the readers since that writer."""
    r = orows.rows
    d = np.flatnonzero(r.event == S.DEPENDENCE)
    task = orows.owner[d]
    ok = (task >= 0) & (task < owners.T)
    d, task = d[ok], task[ok]
    if not len(d):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    parent = np.full(owners.E, -1, np.int64)
    parent[forks.child] = forks.parent
    created = np.full(owners.E, -1, np.int64)
    created[forks.child] = r.grank[forks.rows]
    df = pd.DataFrame({"p": parent[task], "a": r.take("value", d), "c": created[task], "t": task,
                       "w": isin_small(r.kind[d], WRITER_DEPS)})
    df = df.sort_values(["p", "a", "c", "w"], kind="stable") \
        .drop_duplicates(["t", "a"], keep="last")
    p, a, t, w = (df[k].to_numpy() for k in ("p", "a", "t", "w"))
    n = len(df)
    idx = np.arange(n)
    gs = np.ones(n, bool)
    gs[1:] = (p[1:] != p[:-1]) | (a[1:] != a[:-1])
    gstart = np.maximum.accumulate(np.where(gs, idx, 0))
    gid = np.cumsum(gs) - 1
    last_w = np.maximum.accumulate(np.where(w, idx, -1))
    prev_w = np.full(n, -1, np.int64)
    prev_w[1:] = last_w[:-1]
    prev_w[prev_w < gstart] = -1
    # a writer right after readers depends on them (below), and through them
    # on the previous writer: keep only the direct writer -> writer edges
    has = (prev_w >= 0) & (~w | (prev_w == idx - 1))
    s1, d1 = t[prev_w[has]], t[has]
    nxt_w = np.minimum.accumulate(np.where(w, idx, n)[::-1])[::-1]
    after = np.full(n, n, np.int64)
    after[:-1] = nxt_w[1:]
    rd = np.flatnonzero(~w)
    tgt = after[rd]
    ok = tgt < n
    ok[ok] = gid[tgt[ok]] == gid[rd[ok]]
    return np.concatenate([s1, t[rd[ok]]]), np.concatenate([d1, t[tgt[ok]]])
