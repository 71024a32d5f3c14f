"""Phase 1 of the builder: who owns time (owners), and the loop chunks."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as S
from ..idindex import IdIndex
from ..sorting import argsort
from ..tables.tasks import IMPLICIT, INITIAL, KINDS, TaskParts
from .columns import (I64MAX, cumcount, frame, id_dtype, isin_small, last_at_or_before,
                      lexsort, lookup, pack, reindexed)

LOOP_WORK = (S.WORK_LOOP, S.WORK_SECTIONS, S.WORK_LOOP_STATIC, S.WORK_LOOP_DYNAMIC,
             S.WORK_LOOP_GUIDED, S.WORK_LOOP_OTHER)
LOOP_DISPATCH = (S.DISPATCH_ITERATION, S.DISPATCH_SECTION, S.DISPATCH_LOOP_CHUNK)


@dataclass
class Owners:
    """Explicit tasks are owners 0..T-1 (creation order), contexts T..E-1
    (initial tasks, then implicit tasks by region and team index)."""
    explicit: pd.DataFrame   # id, parent, flags, codeptr, child_index, node (identity)
    ctx: pd.DataFrame        # id, parent, region, team_index, team_size, thread, node, kind
    names: object            # identity forest (grainlab.tables.identity.Names)
    ids: IdIndex             # task id -> owner
    untied: bool             # some task may migrate between threads
    is_initial: np.ndarray   # bool per owner
    is_implicit: np.ndarray  # bool per owner
    clip: np.ndarray         # int64 per owner: implicit tasks stop one tick before PARALLEL_END
    region_identity: pd.Series  # region id -> identity string
    region_node: pd.Series      # region id -> identity forest node
    region_codeptr: pd.Series   # region id -> code address of its PARALLEL_BEGIN

    @property
    def T(self) -> int:
        return len(self.explicit)

    @property
    def C(self) -> int:
        return len(self.ctx)

    @property
    def E(self) -> int:
        return len(self.explicit) + len(self.ctx)

    def of(self, ids) -> np.ndarray:
        """Owner of task ids (-1 for 0 / unknown), by direct table look-up."""
        return self.ids.get(ids)

    def of_rows(self, ids) -> np.ndarray:
        """`of` in the graph's id dtype (columns.id_dtype): the owners of
        every row's task and other, two row-sized columns the build keeps
        to its end, at 4 bytes a row instead of 8 while the ids fit."""
        return self.ids.get(ids, id_dtype(self.E))


def find_owners(trace) -> Owners:
    tasks, regions, names = trace.task_tables(lean=True)
    parts = tasks if isinstance(tasks, TaskParts) else TaskParts.of_frame(tasks)
    cx, ex = parts.ctx, parts.explicit
    C, T = len(cx["id"]), len(ex["id"])
    E = C + T
    # owners: explicit tasks in creation order, then contexts (initial tasks,
    # then implicit ones by creation); their task rows are their identity
    # nodes. Only the columns the graph reads (not a copy of the whole task
    # table: it has ~25 columns), and none gathered when the rows are in
    # order already (as the lean build hands them).
    create_ns = ex.get("create_ns")     # none: in creation order already
    ex_order = None if create_ns is None or not np.any(create_ns[1:] < create_ns[:-1]) \
        else argsort(create_ns)

    def take(column, order):
        return column if order is None else column[order]
    # kept to the build's end: positions narrow while they fit (a sibling's
    # rank and a task row are below the tasks' count)
    small = id_dtype(E + 1)
    if parts.ex_rows is None and ex_order is None:
        ex_rows = None
        node = np.arange(C, E, dtype=small)
    else:
        ex_rows = take(np.arange(C, E) if parts.ex_rows is None else parts.ex_rows, ex_order)
        node = ex_rows.astype(small)
    code = cx["kind"]
    cx_order = lexsort((cx["create_ns"], code != INITIAL))
    cx_rows = cx_order if parts.ctx_rows is None else parts.ctx_rows[cx_order]
    explicit = frame({
        **{c: take(ex[c], ex_order) for c in ("id", "parent", "flags", "codeptr")},
        "child_index": take(ex["child_index"], ex_order).astype(small),
        "node": node})   # identity: task row = node of the identity forest
    ctx = frame({c: cx[c][cx_order] for c in
                 ("id", "parent", "region", "team_index", "team_size", "thread")})
    ctx["node"] = cx_rows
    ctx_code = code[cx_order]
    ctx["kind"] = pd.Categorical.from_codes(ctx_code, categories=KINDS)
    is_initial = np.zeros(E, dtype=bool)
    is_initial[T:] = ctx_code == INITIAL
    is_implicit = np.zeros(E, dtype=bool)
    is_implicit[T:] = ctx_code == IMPLICIT
    region_ids = regions["id"].to_numpy(np.uint64)
    # Implicit tasks are idle after their region's PARALLEL_END: one tick
    # before it, so an implicit task's last node precedes the region_end join
    # in time order too
    ends = lookup(regions["end_ns"].to_numpy(np.float64), region_ids) \
        .reindex(ctx["region"].to_numpy(np.uint64)).to_numpy()
    clip = np.full(E, I64MAX, dtype=np.int64)
    ok = is_implicit[T:] & np.isfinite(ends)
    clip[T:][ok] = ends[ok].astype(np.int64) - 1
    if parts.index is not None and parts.index.unique:
        # the table's index of the ids, renumbered to owners (no second build)
        ids = parts.index.permuted(np.concatenate([
            np.arange(C, E) if ex_rows is None else ex_rows, cx_rows]))
    else:
        ids = IdIndex(np.concatenate([explicit["id"].to_numpy(np.uint64),
                                      ctx["id"].to_numpy(np.uint64)]))
    return Owners(
        explicit=explicit, ctx=ctx, names=names, ids=ids,
        untied=bool(((ex["flags"] & np.uint32(S.TASK_UNTIED)) != 0).any()),
        is_initial=is_initial, is_implicit=is_implicit, clip=clip,
        region_identity=lookup(regions["identity"].to_numpy(dtype=object), region_ids),
        region_node=lookup(regions["identity_node"].to_numpy(np.int64), region_ids),
        region_codeptr=lookup(regions["codeptr"].to_numpy(np.uint64), region_ids))


@dataclass
class Chunks:
    """Worksharing chunks (CHUNK rows inside a loop of their implicit task),
    ordered by loop instance (region, k-th worksharing construct), thread, time."""
    rows: np.ndarray       # row position of each CHUNK
    loop_row: np.ndarray   # row position of its loop's WORK_BEGIN
    seq: np.ndarray        # k: the loop's ordinal among the implicit task's worksharing constructs
    region: np.ndarray     # parallel region id (uint64)
    owner: np.ndarray      # the implicit task that ran it

    @property
    def K(self) -> int:
        return len(self.rows)


def find_chunks(rows, row_owner: np.ndarray, stride: int) -> Chunks:
    ev, own = rows.event, row_owner
    wb = np.flatnonzero((ev == S.WORK_BEGIN) & (rows.kind != S.WORK_TASKLOOP) & (own >= 0))
    wb = wb[lexsort((rows.grank[wb], own[wb]))]
    wb_seq = lookup(cumcount(own[wb]), wb)
    lw = np.flatnonzero(isin_small(ev, (S.WORK_BEGIN, S.WORK_END))
                        & isin_small(rows.kind, LOOP_WORK) & (own >= 0))
    lw_key = pack(own[lw], rows.grank[lw], stride)
    o = argsort(lw_key)
    lw, lw_key = lw[o], lw_key[o]
    ch = np.flatnonzero((ev == S.CHUNK) & isin_small(rows.kind, LOOP_DISPATCH) & (own >= 0))
    # the loop a chunk is in: the owner's latest WORK_BEGIN/END before it, a begin
    k = last_at_or_before(lw_key, own[ch], rows.grank[ch], stride)
    ok = k >= 0
    ok[ok] = ev[lw[k[ok]]] == S.WORK_BEGIN
    ch, loop_row = ch[ok], lw[k[ok]]
    seq = reindexed(wb_seq, loop_row)
    region = rows.take("other", loop_row)
    o = lexsort((rows.grank[ch], rows.thread[ch], seq, region))
    return Chunks(rows=ch[o], loop_row=loop_row[o], seq=seq[o], region=region[o],
                  owner=own[ch[o]])
