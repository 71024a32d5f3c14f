"""Phase 4 of the builder: slots become nodes. Each owner's own slots become
its chain's nodes 0..M-1 in chain order; the slots of one team barrier
instance merge into one shared node M + k."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as S
from .columns import group_ends, group_starts, id_dtype
from .slots import FORK, JOIN, PROGRAM_END, REGION_END


@dataclass
class NodeIds:
    """Which node each slot becomes: known from the slots alone, before any
    node time (so the edges can be made while the node columns are)."""
    slot_node: np.ndarray    # node of each slot
    first_node: np.ndarray   # per owner: first node of its chain (-1)
    last_node: np.ndarray    # per owner: last node of its chain (-1)
    M: int                   # the owners' own nodes 0..M-1, in chain order
    N: int                   # then one shared node per team barrier instance


def node_ids(slots, E: int, K: int = 0) -> NodeIds:
    """E owners, K chunks: the graph's ids (nodes, grains and contexts) take
    one dtype, int32 while they all fit (columns.id_dtype)."""
    chain = slots.shared < 0
    M = int(chain.sum())
    idt = id_dtype(max(M + slots.n_barriers, E + K))
    slot_node = np.empty(len(slots.type), dtype=idt)
    slot_node[chain] = np.arange(M)          # own slots are nodes 0..M-1, in chain order
    slot_node[~chain] = M + slots.shared[~chain]
    first_node = np.full(E, -1, idt)
    last_node = np.full(E, -1, idt)
    st, en = group_starts(slots.owner), group_ends(slots.owner)
    first_node[slots.owner[st]] = slot_node[st]
    last_node[slots.owner[en]] = slot_node[en]
    return NodeIds(slot_node=slot_node, first_node=first_node, last_node=last_node,
                   M=M, N=M + slots.n_barriers)


@dataclass
class Nodes:
    columns: dict            # node columns (type, grain, owner, ..., counters), N rows each
    slot_node: np.ndarray    # node of each slot
    first_node: np.ndarray   # per owner: first node of its chain (-1)
    last_node: np.ndarray    # per owner: last node of its chain (-1)
    counter_names: list

    @property
    def N(self) -> int:
        return len(self.columns["type"])


def make_nodes(slots, credit, orows, owners, ids: NodeIds) -> Nodes:
    """The node columns. Consumes `credit`: its slot-sized columns are freed
    as soon as they are read (the build's peak memory is here)."""
    chain = slots.shared < 0
    M, N, slot_node = ids.M, ids.N, ids.slot_node
    weight, start, end = _node_times(slots, credit, owners)
    credit.last_end = None
    fork, isj = slots.type == FORK, slots.type == JOIN
    ci = np.flatnonzero(chain)        # the own slots, in chain order: nodes 0..M-1
    pos = orows.at(np.take(slots.row, ci))
    r = orows.rows
    idt = slot_node.dtype                # the graph's id dtype (node_ids)
    c = {"type": np.empty(N, np.int8), "grain": np.empty(N, idt)}
    c["type"][slot_node] = slots.type
    c["grain"][slot_node] = slots.grain

    def chain_column(values, fill, dtype, gather=True):
        """Nodes 0..M-1 from the own slots' values (gathered straight into
        the column when the types agree), then `fill` for the shared ones."""
        col = np.empty(N, dtype)      # written once: own nodes, then the shared ones
        if not gather:
            col[:M] = values
        elif values.dtype == col.dtype:
            np.take(values, ci, out=col[:M])
        else:
            col[:M] = values[ci]
        col[M:] = fill
        return col
    c["owner"] = chain_column(slots.owner, -1, idt)
    c["owner_seq"] = chain_column(slots.seq, -1, np.int32)   # the table's type
    c["thread"] = chain_column(r.thread[pos], -1, np.int32, gather=False)
    c["cpu"] = chain_column(r.take("cpu", pos), -1, np.int32, gather=False)
    del pos
    c["child"] = np.full(N, -1, idt)
    c["child"][slot_node[fork]] = slots.child[fork]
    c["join_kind"] = np.full(N, -1, np.int8)
    c["join_kind"][slot_node[isj]] = slots.jkind[isj]
    # the team barriers' slots' times first: then each slot-sized column is
    # freed once gathered into its node column (three of 8 bytes a slot
    # fewer at once: ~70 bytes a grain off the build's peak)
    shared = (slot_node[~chain], start[~chain], end[~chain], credit.own[~chain]) \
        if N > M else None
    c["start"] = chain_column(start, 0, np.int64)
    del start
    c["end"] = chain_column(end, 0, np.int64)
    del end
    c["duration"] = chain_column(weight, 0, np.int64)
    del weight
    # a join's own time inside it; 0 for every other node
    c["sync_time"] = chain_column(credit.own, 0, np.int64)
    credit.own = None
    c["sync_time"][:M] *= np.take(isj, ci)
    c["arrive"] = c["start"].copy()
    if shared is not None:
        _merge_team_barriers(c, *shared)
    unread = _parallel_rows_unread(r, list(credit.counters))
    for name, vals in credit.counters.items():
        v = np.zeros(N)
        np.add.at(v, slot_node, vals)
        if unread[name]:
            # traces before issue 34 read no counter at PARALLEL_BEGIN/END:
            # a region's forks and end would hold what the code before them
            # did since the last reading
            v[(c["type"] == FORK) | ((c["type"] == JOIN) & (c["join_kind"] == REGION_END))] = np.nan
        c[name] = v

    return Nodes(columns=c, slot_node=slot_node, first_node=ids.first_node,
                 last_node=ids.last_node, counter_names=list(credit.counters))


def _parallel_rows_unread(r, names) -> dict:
    """Per counter: whether the trace's PARALLEL_BEGIN/END rows hold no
    reading (collectors before issue 34), though it has such rows."""
    par = np.flatnonzero((r.event == S.PARALLEL_BEGIN) | (r.event == S.PARALLEL_END))
    out = {}
    for name in names:
        if not len(par):
            out[name] = False
            continue
        raw = r.source[name].to_numpy(dtype=np.float64, na_value=np.nan)[r.order[par]]
        out[name] = bool(np.isnan(raw).all())
    return out


def _node_times(slots, credit, owners):
    """Per slot: weight (own time; a fork weighs its creation, taken from the
    fragment after it), start and end (ns)."""
    weight = credit.own.copy()
    fork = slots.type == FORK
    cfork = np.flatnonzero(fork & (slots.child < owners.T) & (slots.child >= 0))
    weight[cfork] = slots.forks.weight[slots.child[cfork]]
    weight[cfork + 1] = np.maximum(weight[cfork + 1] - weight[cfork], 0)  # the fragment after it
    _team_start_before_children(weight, slots, owners)
    # implicit tasks' nodes never start after their region ends (workers
    # report the last barrier's end only when the next region starts)
    limit = owners.clip[slots.owner]
    start = np.minimum(slots.start, limit)
    end = np.maximum(start, credit.last_end)
    np.minimum(end, np.maximum(limit, start, out=limit), out=end)
    del limit
    end[fork] = start[fork] + weight[fork]
    return weight, start, end


def _team_start_before_children(weight, slots, owners) -> None:
    """A region's forks (one per implicit task, chained in team order) weigh
    the encountering thread's time from PARALLEL_BEGIN to its own implicit
    task's begin; every path to every team member goes through the first
    fork. A worker can begin before the master does (the master is preempted
    after releasing the team), and that fork time would then be counted twice
    on the worker's path (the span of a 13 us region came out at 18 us). So
    the first fork weighs at most until the earliest team member begins."""
    rf = np.flatnonzero((slots.type == FORK) & (slots.child >= owners.T))
    if not len(rf):
        return
    first = group_starts(slots.owner)
    first_start = np.full(owners.E, np.iinfo(np.int64).max, dtype=np.int64)
    first_start[slots.owner[first]] = slots.start[first]
    begins = first_start[slots.child[rf]]
    # one region's forks are consecutive slots of one (owner, row)
    head = np.ones(len(rf), dtype=bool)
    head[1:] = (slots.owner[rf[1:]] != slots.owner[rf[:-1]]) | \
               (slots.row[rf[1:]] != slots.row[rf[:-1]])
    heads = np.flatnonzero(head)
    earliest = np.minimum.reduceat(begins, heads)
    s0 = rf[heads]
    weight[s0] = np.minimum(weight[s0], np.maximum(earliest - slots.start[s0], 0))


def _merge_team_barriers(c, node, start, end, own):
    """Team barriers: earliest arrival/release, last arrival, summed sync time."""
    sh = pd.DataFrame({"node": node, "start": start, "end": end, "own": own})
    agg = sh.groupby("node").agg(start=("start", "min"), end=("end", "min"),
                                 arrive=("start", "max"), own=("own", "sum"))
    ix = agg.index.to_numpy()
    c["start"][ix] = agg["start"].to_numpy()
    c["end"][ix] = np.maximum(agg["end"].to_numpy(), agg["start"].to_numpy())
    c["arrive"][ix] = agg["arrive"].to_numpy()
    c["sync_time"][ix] = agg["own"].to_numpy()


def join_weights(c: dict, src: np.ndarray, dst: np.ndarray) -> None:
    """A join weighs its resume latency: the part of its sync time after it
    became ready (last arrival, and every predecessor finished)."""
    ready = c["arrive"].copy()
    isj = c["type"][dst] == JOIN
    np.maximum.at(ready, dst[isj], c["end"][src[isj]])
    j = np.flatnonzero(c["type"] == JOIN)
    w = np.clip(c["end"][j] - ready[j], 0, c["sync_time"][j])
    jk = c["join_kind"][j]
    w[(jk == REGION_END) | (jk == PROGRAM_END)] = 0
    c["duration"][j] = w
