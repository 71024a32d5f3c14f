"""Phase 6 of the builder: the public tables (docs/graph-model.md). Internal
ids (owners 0..E-1, chunks E..E+K-1) become public ids: grains (tasks, then
chunks) 0..G-1, then contexts G..G+C-1."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import schema as S
from ..trace import task_tree
from ..tables.identity import FIRST as FIRST_STEP, UNKNOWN as UNKNOWN_STEP
from ..tables.identity import WORKSHARE as WORKSHARE_STEP, as_column, string_column
from .columns import (I64MAX, first_after, frame, list_rank, lookup, pack, reindexed,
                      sorted_keys)
from .model import EDGE_TYPES, JOIN_KINDS, NODE_TYPES, GrainGraph
from .slots import BOOKKEEPING, CHUNK, FORK, FRAGMENT, JOIN, REGION_END


class PublicIds:
    """Internal owner/chunk ids -> public ids (tasks, chunks, contexts)."""

    def __init__(self, T: int, E: int, K: int):
        self.T, self.E, self.K = T, E, K

    def __call__(self, internal) -> np.ndarray:
        T, E, K = self.T, self.E, self.K
        x = np.asarray(internal, np.int64)
        if K == 0:
            return x
        return x + K * ((x >= T) & (x < E)) - (E - T) * (x >= E)

    def in_place(self, x: np.ndarray) -> np.ndarray:
        """The same ids, written over `x` (an int64 scratch array the caller
        gives up): two boolean masks instead of four id-sized temporaries."""
        T, E, K = self.T, self.E, self.K
        if K == 0:
            return x
        beyond = x >= E
        between = x >= T
        between &= ~beyond
        np.add(x, K, out=x, where=between)
        np.subtract(x, E - T, out=x, where=beyond)
        return x


class SlotFacts(NamedTuple):
    """What the public tables need of the rows and slots, taken before the
    build drops them: the tables are made without the builder's largest
    scratch alive (the build's peak memory)."""
    waiter: np.ndarray       # per internal grain (tasks, then chunks): its waiter join node
    loop: dict               # _loop_columns
    estimate: int            # the creation cost estimate (ns)


def slot_facts(orows, owners, chunks, slots, nodes, edges) -> SlotFacts:
    K, E = chunks.K, owners.E
    waiter = np.concatenate([edges.task_waiter, _chunk_waiters(slots, nodes, edges, K, E)]) \
        .astype(nodes.slot_node.dtype, copy=False)
    return SlotFacts(waiter=waiter, loop=_loop_columns(orows, owners, chunks, slots, nodes),
                     estimate=slots.forks.estimate)


def make_graph(trace, owners, chunks, nodes, edges, facts: SlotFacts,
               creation_quantile) -> GrainGraph:
    c, T, K, E = nodes.columns, owners.T, chunks.K, owners.E
    public = PublicIds(T, E, K)
    waiter = facts.waiter
    n_waited = np.bincount(waiter[waiter >= 0], minlength=nodes.N).astype(np.int32)
    # per grain first: it reads the internal ids, which the node table's
    # public ids then overwrite (no copy of three node-sized columns)
    per_grain = _own_node_aggregates(c, nodes, E + K, nodes.counter_names)
    node_table = frame({
        "type": pd.Categorical.from_codes(c["type"], categories=NODE_TYPES),
        "grain": public.in_place(c["grain"]), "owner": public.in_place(c["owner"]),
        "owner_seq": c["owner_seq"].astype(np.int32, copy=False),
        "thread": c["thread"], "cpu": c["cpu"],
        "start": c["start"], "end": c["end"], "duration": c["duration"],
        "child": public.in_place(c["child"]),
        "join_kind": pd.Categorical.from_codes(c["join_kind"], categories=JOIN_KINDS),
        "sync_time": c["sync_time"], "n_waited": n_waited,
    })
    for name in nodes.counter_names:
        node_table[name] = c[name]
    node_table.index.name = "node"
    edge_table = frame({"src": edges.src, "dst": edges.dst,
                        "type": pd.Categorical.from_codes(edges.type, categories=EDGE_TYPES)})
    grains, names, grain_node = _grain_table(owners, chunks, nodes, public, per_grain, waiter,
                                             n_waited, facts.loop)
    contexts = _context_table(owners, edges, public, per_grain, len(grains))
    # identity strings: a column only while they are short and few
    # (grainlab.tables.identity.as_column), else made on demand (g.identities).
    # Made on a thread (Arrow releases the GIL) while the critical path runs:
    # IdentityColumns.attach puts them in place.
    both = np.concatenate([grain_node, owners.ctx["node"].to_numpy(np.int64)])
    identity = IdentityColumns(names, both, len(grains)) if as_column(names, both) else None
    meta = dict(trace.meta)
    meta.update({"creation_cost_estimate_ns": facts.estimate,
                 "creation_quantile": creation_quantile,
                 "trace_path": str(getattr(trace, "path", ""))})
    g = GrainGraph(nodes=node_table, edges=edge_table, grains=grains, contexts=contexts,
                   meta=meta, names=names, identity_node=both)
    return g, identity


class IdentityColumns:
    """The grains' and contexts' identity strings, made on a thread."""

    def __init__(self, names, nodes, n_grains):
        import threading
        self.n_grains, self.result, self.error = n_grains, None, None
        self.thread = threading.Thread(target=self._make, args=(names, nodes), daemon=True)
        self.thread.start()

    def _make(self, names, nodes):
        try:
            self.result = names.arrow(nodes)
        except BaseException as e:      # re-raised in attach(), on the caller's thread
            self.error = e

    def attach(self, g) -> None:
        """Insert the columns where they always were (second, after kind)."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        text, G = self.result, self.n_grains
        g.grains.insert(1, "identity", string_column(text.slice(0, G)))
        g.contexts.insert(1, "identity", string_column(text.slice(G)))


def _chunk_waiters(slots, nodes, edges, K, E) -> np.ndarray:
    """A chunk's join: the first join after it in its implicit task's chain;
    with none (a team of one reports no barrier), the region end its
    implicit task ends at."""
    W = int(slots.seq.max()) + 2 if len(slots.seq) else 2
    j = np.flatnonzero((slots.type == JOIN) & (slots.jkind != REGION_END))
    jkey, jnode = sorted_keys(pack(slots.owner[j], slots.seq[j], W), nodes.slot_node[j])
    cs = np.flatnonzero(slots.type == CHUNK)
    cj = first_after(jkey, jnode, slots.owner[cs], slots.seq[cs], W)
    cj = np.where(cj >= 0, cj, edges.ctx_waiter[slots.owner[cs]])
    out = np.full(K, -1, nodes.slot_node.dtype)
    out[slots.grain[cs] - E] = cj
    return out


def _own_node_aggregates(c, nodes, size, counter_names) -> dict:
    """Per internal grain (owners + chunks): work and fragments over its own
    nodes, first start, last end, first node's thread/cpu, counters."""
    gi, typ = c["grain"], c["type"]
    mine = (gi >= 0) & ((typ == FRAGMENT) | (typ == CHUNK))
    owned = gi >= 0
    out = {"work": np.bincount(gi[mine], weights=c["duration"][mine], minlength=size).astype(np.int64),
           "n_fragments": np.bincount(gi[mine], minlength=size).astype(np.int32)}
    start = np.full(size, I64MAX, np.int64)
    np.minimum.at(start, gi[owned], c["start"][owned])
    out["start"] = np.where(start == I64MAX, -1, start)
    out["end"] = np.zeros(size, np.int64)
    np.maximum.at(out["end"], gi[owned], c["end"][owned])
    first = np.concatenate([nodes.first_node, np.full(size - len(nodes.first_node), -1, np.int64)])
    cnode = np.flatnonzero(typ == CHUNK)
    first[gi[cnode]] = cnode
    out["thread"] = np.where(first >= 0, c["thread"][np.maximum(first, 0)], -1).astype(np.int32)
    out["cpu"] = np.where(first >= 0, c["cpu"][np.maximum(first, 0)], -1).astype(np.int32)
    fork_w = np.full(size, np.nan)
    fk = np.flatnonzero((typ == FORK) & (c["child"] >= 0))
    fork_w[c["child"][fk]] = c["duration"][fk]
    out["creation_cost"] = fork_w
    for name in counter_names:
        v = np.zeros(size)
        sel = mine & ~np.isnan(c[name])
        np.add.at(v, gi[sel], c[name][sel])
        out[name] = v
    return out


def _grain_table(owners, chunks, nodes, public, per_grain, waiter, n_waited, loop):
    T, K, E = owners.T, chunks.K, owners.E
    G = T + K
    c, ex = nodes.columns, owners.explicit
    gsel = np.concatenate([np.arange(T), E + np.arange(K)])   # public grain order
    tparent = owners.of(ex["parent"].to_numpy(np.uint64))
    parent = np.concatenate([public(tparent), public(chunks.owner)]).astype(c["grain"].dtype)
    depth = np.ones(G, np.int32)
    up = np.where((tparent >= 0) & (tparent < T), tparent, -1)
    # one compiled walk up the tree (trace/task_tree.py) where built: the
    # pointer jumping of list_rank took 0.56 s at 7M tasks
    walked = task_tree.depths(up)
    depth[:T] = walked if walked is not None else list_rank(up) + 1
    flags = np.zeros(G, np.uint32)
    flags[:T] = ex["flags"].to_numpy(np.uint32)
    codeptr = np.zeros(G, np.uint64)
    codeptr[:T] = ex["codeptr"].to_numpy(np.uint64)
    grain_node = np.full(G, -1, np.int64)
    grain_node[:T] = ex["node"].to_numpy(np.int64)
    names = owners.names
    if K:
        codeptr[T:] = loop["codeptr"]
        names, grain_node[T:], (loop["loop_codes"][T:], loop["loop_names"]) = _chunk_names(
            names, owners.region_node, chunks.region, chunks.seq, loop["first_iteration"][T:])
    sync_cost = np.full(G, np.nan)
    okw = waiter >= 0
    sync_cost[okw] = c["sync_time"][waiter[okw]] / np.maximum(n_waited[waiter[okw]], 1)
    n_children = np.bincount(tparent[tparent >= 0], minlength=E)
    child_number = np.full(G, -1, np.int32)
    child_number[:T] = ex["child_index"].to_numpy()
    grains = frame({
        "kind": pd.Categorical.from_codes(np.repeat(np.int8([0, 1]), [T, K]),
                                          categories=["task", "chunk"]),
        "task_id": np.concatenate([ex["id"].to_numpy(np.uint64), np.zeros(K, np.uint64)]),
        "parent": parent, "child_number": child_number, "depth": depth,
        "codeptr": codeptr, "flags": flags,
        "undeferred": (flags & np.uint32(S.TASK_UNDEFERRED)) != 0,
        "thread": per_grain["thread"][gsel], "cpu": per_grain["cpu"][gsel],
        "start": per_grain["start"][gsel], "end": per_grain["end"][gsel],
        "work": per_grain["work"][gsel], "n_fragments": per_grain["n_fragments"][gsel],
        "n_children": np.concatenate([n_children[:T], np.zeros(K, np.int64)]).astype(np.int32),
        "creation_cost": per_grain["creation_cost"][gsel],
        "bookkeeping_cost": loop["bookkeeping_cost"],
        "join": waiter, "sync_cost": sync_cost,
        "loop": pd.Categorical.from_codes(loop["loop_codes"], categories=loop["loop_names"]),
        "loop_thread": loop["loop_thread"],
        "first_iteration": loop["first_iteration"], "iterations": loop["iterations"],
        "inferred": loop["inferred"],
    })
    for name in nodes.counter_names:
        grains[name] = per_grain[name][gsel]
    grains.index.name = "grain"
    return grains, names, grain_node


def _loop_columns(orows, owners, chunks, slots, nodes) -> dict:
    """Per grain: loop columns (first iteration, iterations, inferred, the
    loop's master thread, book-keeping cost before the chunk); tasks of a
    taskloop get their chunk's iterations."""
    T, K, E = owners.T, chunks.K, owners.E
    G = T + K
    r = orows.rows
    out = {"first_iteration": np.full(G, -1, np.int64), "iterations": np.full(G, -1, np.int64),
           "inferred": np.zeros(G, bool), "loop_thread": np.full(G, -1, np.int32),
           "bookkeeping_cost": np.full(G, np.nan),
           # loop instance per chunk as a categorical: one string per distinct
           # loop instance (its length grows with the region's depth), a code per
           # grain; tasks ""
           "loop_codes": np.zeros(G, np.int32), "loop_names": [""]}
    if K:
        ch = chunks.rows
        out["first_iteration"][T:] = r.take("value", ch).astype(np.int64)
        out["iterations"][T:] = r.take("count", ch).astype(np.int64)
        out["inferred"][T:] = (r.take("flags", ch) & S.CHUNK_INFERRED) != 0
        out["codeptr"] = r.take("codeptr", chunks.loop_row)   # a row position, not a grank
        ctx = owners.ctx
        master = ctx[owners.is_implicit[T:] & (ctx["team_index"].to_numpy() == 0)]
        mt = lookup(master["thread"].to_numpy(np.float64), master["region"].to_numpy(np.uint64))
        out["loop_thread"][T:] = reindexed(mt, chunks.region).astype(np.int32)
        # the book-keeping node right before the chunk in its implicit task's chain
        cs = np.flatnonzero(slots.type == CHUNK)
        prev = np.maximum(cs - 1, 0)
        okp = (cs >= 1) & (slots.owner[prev] == slots.owner[cs]) & \
            (slots.type[prev] == BOOKKEEPING)
        out["bookkeeping_cost"][slots.grain[cs[okp]] - E + T] = \
            nodes.columns["duration"][nodes.slot_node[prev[okp]]]
    tl = np.flatnonzero((r.event == S.CHUNK) & (r.kind == S.DISPATCH_TASKLOOP_CHUNK))
    te = orows.owner[tl]
    okt = (te >= 0) & (te < T)
    out["first_iteration"][te[okt]] = r.take("value", tl[okt]).astype(np.int64)
    out["iterations"][te[okt]] = r.take("count", tl[okt]).astype(np.int64)
    return out


def _context_table(owners, edges, public, per_grain, G) -> pd.DataFrame:
    ctx, T = owners.ctx, owners.T
    csel = np.arange(T, owners.E)
    is_init = owners.is_initial[T:]
    parent = public(owners.of(ctx["parent"].to_numpy(np.uint64))).astype(edges.ctx_waiter.dtype)
    parent[is_init] = -1
    region = owners.region_identity.reindex(ctx["region"].to_numpy(np.uint64)).to_numpy(dtype=object)
    region = np.where(is_init | pd.isna(region), "", region).astype(object)
    # where the region began (its fork's return address): a loop whose own
    # address is on the same source line is a combined `parallel for`
    region_codeptr = owners.region_codeptr.reindex(ctx["region"].to_numpy(np.uint64)) \
        .fillna(0).to_numpy(np.uint64)
    region_codeptr[is_init] = 0
    return frame({
        "kind": pd.Categorical.from_codes(np.where(is_init, 0, 1).astype(np.int8),
                                          categories=["initial", "implicit"]),
        "task_id": ctx["id"].to_numpy(np.uint64),
        "parent": parent, "region": region, "region_codeptr": region_codeptr,
        "team_index": ctx["team_index"].to_numpy(), "team_size": ctx["team_size"].to_numpy(),
        "thread": per_grain["thread"][csel],
        "start": per_grain["start"][csel], "end": per_grain["end"][csel],
        "work": per_grain["work"][csel], "join": edges.ctx_waiter[csel],
    }, index=pd.RangeIndex(G, G + owners.C, name="context"))


def _chunk_names(names, region_node, ch_region, ch_seq, first):
    """Identity nodes of worksharing chunks ("<region>.w<k>@<first>"; "?" for
    a region nobody can name) and their loop instances ("<region>.w<k>") as
    (code per chunk, categories: "" then each distinct loop string, made
    once per distinct loop instance)."""
    rnode = reindexed(region_node, ch_region)
    unknown = ~names.valid(rnode)
    if unknown.any():
        names, (q,) = names.extend([-1], UNKNOWN_STEP, 0, 0)
        rnode[unknown] = q
    pairs, inverse = np.unique(np.stack([rnode, np.asarray(ch_seq, np.int64)]), axis=1,
                               return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    names, loops = names.extend(pairs[0], WORKSHARE_STEP, pairs[1], 0)
    codes, uniques = pd.factorize(pd.Series(names.strings(loops), dtype=object))
    categories = [""] + [u for u in uniques if u != ""]
    where = {u: i for i, u in enumerate(categories)}
    code = np.array([where[u] for u in uniques], np.int32)[codes][inverse]
    names, chunks = names.extend(loops[inverse], FIRST_STEP, first, 0)
    return names, chunks, (code, categories)
