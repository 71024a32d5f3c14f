"""Build the fragment-level grain graph from a trace (docs/graph-model.md).

Outline, all on columns:
  1. owners: explicit tasks 0..T-1 (creation order) and contexts T..E-1
     (initial, then implicit tasks); chunks are grains but not owners;
  2. rows in per-thread order with each row's running owner and segment (events.py);
  3. *slots*: the nodes each boundary event opens in its owner's chain;
  4. every segment is credited to its owner's latest receiving slot (searchsorted);
  5. slots become nodes (team barriers merge into one node per instance);
  6. edges: continuation (chains), creation, synchronization (waiters), dependence;
  7. join weights, tables, then the critical path (critical_path.py).
Public ids are renumbered at the end: grains = tasks then chunks, then contexts.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as S
from ..identity import FIRST as FIRST_STEP, UNKNOWN as UNKNOWN_STEP
from ..identity import WORKSHARE as WORKSHARE_STEP, materialise, string_column
from ..idindex import IdIndex
from .events import counter_deltas, load_rows
from .model import EDGE_TYPES, JOIN_KINDS, NODE_TYPES, GrainGraph

FRAGMENT, FORK, JOIN, BOOKKEEPING, CHUNK = range(5)            # index NODE_TYPES
TASKWAIT, TASKGROUP, BARRIER, REGION_END, PROGRAM_END = range(5)  # index JOIN_KINDS
CREATION, SYNCHRONIZATION, CONTINUATION, DEPENDENCE = range(4)   # index EDGE_TYPES

LOOP_WORK = (S.WORK_LOOP, S.WORK_SECTIONS, S.WORK_LOOP_STATIC, S.WORK_LOOP_DYNAMIC,
             S.WORK_LOOP_GUIDED, S.WORK_LOOP_OTHER)
LOOP_DISPATCH = (S.DISPATCH_ITERATION, S.DISPATCH_SECTION, S.DISPATCH_LOOP_CHUNK)
WRITER_DEPS = (2, 3, 4, 34, 35)  # out, inout, mutexinoutset, out/inout_all_memory
I64MAX = np.iinfo(np.int64).max


def build(trace, creation_quantile: float = 0.10) -> GrainGraph:
    """The grain graph of `trace` (a grainlab.trace.Trace)."""
    return _Builder(trace, creation_quantile).run()


# -- small column helpers ----------------------------------------------------

def _group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    start = np.ones(len(sorted_keys), dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return start


def _group_ends(sorted_keys: np.ndarray) -> np.ndarray:
    end = np.ones(len(sorted_keys), dtype=bool)
    end[:-1] = sorted_keys[1:] != sorted_keys[:-1]
    return end


def _cumcount(sorted_keys: np.ndarray) -> np.ndarray:
    """0, 1, 2 ... within runs of equal keys (keys sorted)."""
    n = len(sorted_keys)
    first = np.maximum.accumulate(np.where(_group_starts(sorted_keys), np.arange(n), 0))
    return np.arange(n) - first


def _first_after(sorted_key, payload, who, after, width):
    """For each (who, after): payload of the first entry with key
    who*width + s, s > after (same `who`), else -1."""
    out = np.full(len(who), -1, dtype=np.int64)
    if not len(sorted_key) or not len(who):
        return out
    i = np.searchsorted(sorted_key, who * width + after, side="right")
    ok = i < len(sorted_key)
    ok[ok] = sorted_key[i[ok]] // width == who[ok]
    out[ok] = payload[i[ok]]
    return out


def _list_rank(parent: np.ndarray) -> np.ndarray:
    """Number of steps to the root along `parent` pointers (-1 = root), for
    every element at once, by pointer jumping (O(log depth) passes)."""
    d = np.where(parent >= 0, 1, 0).astype(np.int64)
    p = parent.copy()
    for _ in range(_max_rounds(len(p))):
        live = np.flatnonzero(p >= 0)
        if not len(live):
            return d
        q = p[live]
        d[live] += d[q]
        p[live] = p[q]
    raise _cycle()


def _max_rounds(n: int) -> int:
    """Pointer jumping halves every remaining path each pass: a forest of n
    elements needs at most ceil(log2 n) + 1 passes (+1 for the pass that sees
    the last ones done); more means a cycle."""
    return int(np.ceil(np.log2(max(n, 2)))) + 3


def _cycle():
    from ..errors import TraceError
    return TraceError("the trace's task tree has a cycle (a task is its own ancestor): "
                      "the trace is corrupt")


def _in(values: np.ndarray, codes) -> np.ndarray:
    """values in codes, for small non-negative codes (event kinds, enums): a
    table lookup, much cheaper than np.isin on tens of millions of rows."""
    codes = np.asarray(codes, dtype=np.int64)
    if values.dtype == np.uint8:            # event kinds, flags: index directly
        table = np.zeros(256, dtype=bool)
        table[codes[codes < 256]] = True
        return table[values]
    table = np.zeros(int(codes.max()) + 2, dtype=bool)
    table[codes] = True
    # clamp in the values' own dtype: no int64 copy of tens of millions of rows
    top = np.asarray(len(table) - 1).astype(values.dtype)
    return table[np.minimum(values, top)]


def _first_per_key(keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Positions (into keys) of the first occurrence of each present key, in
    increasing key order (keys are dense ints in [0, n_keys))."""
    first = np.full(n_keys, len(keys), dtype=np.int64)
    np.minimum.at(first, keys, np.arange(len(keys)))
    return first[first < len(keys)]


def _frame(columns: dict, index=None) -> pd.DataFrame:
    """DataFrame from columns without consolidating them into 2-D blocks
    (pandas would copy every same-typed column at construction)."""
    import warnings
    with warnings.catch_warnings():
        # pandas 3 deprecates copy=False (CoW makes it lazy) but still honours it
        warnings.simplefilter("ignore")
        return pd.DataFrame(columns, index=index, copy=False)


def _series(values, index) -> pd.Series:
    s = pd.Series(values, index=index)
    return s[~s.index.duplicated()]


class _Slots:
    """Columns of slots, added by kind, concatenated once."""
    DTYPES = dict(owner=np.int64, row=np.int64, sub=np.int32, type=np.int8, recv=bool,
                  child=np.int64, jkind=np.int8, grain=np.int64, shared=np.int64,
                  start=np.int64)
    DEFAULTS = dict(sub=0, recv=True, child=-1, jkind=-1, grain=-2, shared=-1)

    def __init__(self):
        self.parts = {f: [] for f in self.DTYPES}

    def add(self, n, **cols):
        for f, dt in self.DTYPES.items():
            v = cols.get(f, self.DEFAULTS.get(f))
            v = np.asarray(v, dtype=dt)
            self.parts[f].append(np.full(n, v, dtype=dt) if v.ndim == 0 else v)

    def columns(self, consume: bool = False) -> dict:
        out = {}
        for f, p in self.parts.items():
            out[f] = np.concatenate(p) if p else np.empty(0, self.DTYPES[f])
            if consume:          # free each field's parts as soon as it is joined
                self.parts[f] = []
        return out


class _Builder:
    def __init__(self, trace, creation_quantile):
        self.trace = trace
        self.q = creation_quantile

    def run(self) -> GrainGraph:
        self._owners()
        self.rows, self.row_owner, self.other_owner = load_rows(
            self.trace.events, self.owner_of, self.clip, self.untied)
        self.span = len(self.rows) + 2
        self._chunks()
        self._slots()
        self._credit_segments()
        # per-row segment columns are no longer needed: free them before the
        # node tables are built (peak memory at 10^7 grains)
        r = self.rows
        r.seg = r.seg_end = r.owner_running = None
        self._nodes()
        for f in ("start", "own", "last_end", "sub", "recv", "counters"):
            self.sl.pop(f, None)
        self._edges()
        self._join_weights()
        g = self._tables()
        # drop the builder's scratch (rows, slots) before the critical path's own peak
        self.rows = self.sl = self.c = None
        self.row_owner = self.other_owner = None
        from .critical_path import annotate_critical_path
        annotate_critical_path(g)
        return g

    # -- 1. owners -------------------------------------------------------------
    def _owners(self):
        tasks, regions = self._task_table()
        code = tasks["kind"].cat.codes.to_numpy()
        explicit_kind = list(tasks["kind"].cat.categories).index("explicit")
        initial_kind = list(tasks["kind"].cat.categories).index("initial")
        kind = code == explicit_kind
        # only the columns the graph reads, in owner order (not a copy of the
        # whole task table: it has ~25 columns)
        ex_rows = np.flatnonzero(kind)
        ex_rows = ex_rows[np.argsort(tasks["create_ns"].to_numpy()[ex_rows], kind="stable")]
        cx_rows = np.flatnonzero(~kind)
        cx_rows = cx_rows[np.lexsort((tasks["create_ns"].to_numpy()[cx_rows],
                                      code[cx_rows] != initial_kind))]
        self.explicit = _frame({c: tasks[c].to_numpy()[ex_rows] for c in
                                ("id", "parent", "flags", "codeptr", "child_index")})
        # identities stay nodes of the task table's identity forest (task row
        # = node; grainlab.identity): strings only on demand
        self.names = tasks.attrs["names"]
        self.explicit["node"] = ex_rows
        untied = tasks["untied"].to_numpy()[ex_rows]
        self.ctx = _frame({c: tasks[c].to_numpy()[cx_rows] for c in
                           ("id", "parent", "region", "team_index", "team_size", "thread")})
        self.ctx["node"] = cx_rows
        self.ctx["kind"] = pd.Categorical.from_codes(code[cx_rows], categories=tasks["kind"].cat.categories)
        explicit, ctx = self.explicit, self.ctx
        del tasks
        self.T = T = len(explicit)
        self.C = len(ctx)
        self.E = T + self.C
        self._ids = IdIndex(np.concatenate([explicit["id"].to_numpy(np.uint64),
                                            ctx["id"].to_numpy(np.uint64)]))
        self.untied = bool(untied.any())
        ctx_kind = np.asarray(self.ctx["kind"].astype(object))
        self.is_initial = np.zeros(self.E, dtype=bool)
        self.is_initial[T:] = ctx_kind == "initial"
        self.is_implicit = np.zeros(self.E, dtype=bool)
        self.is_implicit[T:] = ctx_kind == "implicit"
        # Implicit tasks are idle after their region's PARALLEL_END.
        self.region_end = _series(regions["end_ns"].to_numpy(np.float64),
                                  regions["id"].to_numpy(np.uint64))
        ends = self.region_end.reindex(self.ctx["region"].to_numpy(np.uint64)).to_numpy()
        self.clip = np.full(self.E, I64MAX, dtype=np.int64)
        ok = self.is_implicit[T:] & np.isfinite(ends)
        # one tick before PARALLEL_END, so an implicit task's last node precedes
        # the region_end join in time order too
        self.clip[T:][ok] = ends[ok].astype(np.int64) - 1
        self.region_identity = _series(regions["identity"].to_numpy(dtype=object),
                                       regions["id"].to_numpy(np.uint64))
        self.region_node = _series(regions["identity_node"].to_numpy(np.int64),
                                   regions["id"].to_numpy(np.uint64))

    def _task_table(self):
        """trace.tasks() and trace.regions(); when the trace has not built its
        task table yet, build it without caching it on the trace, so it is freed
        once the graph has read what it needs (~0.16 GiB per 10^6 grains)."""
        from ..trace import Trace
        if isinstance(self.trace, Trace) and "_tasks" not in vars(self.trace):
            from ..lineage import build_tasks
            tasks = build_tasks(self.trace, lineage=False)
            return tasks, tasks.attrs["regions"]
        return self.trace.tasks(), self.trace.regions()

    def owner_of(self, ids) -> np.ndarray:
        """Owner index of task ids (-1 for 0 / unknown), by direct table
        look-up (grainlab.idindex)."""
        return self._ids.get(ids)

    # -- 2. chunks ---------------------------------------------------------------
    def _chunks(self):
        """Chunks: CHUNK rows (loop/section dispatch) inside a worksharing loop of
        their implicit task; their loop instance is (region, k-th worksharing
        construct of the implicit task), named like Trace.chunks()."""
        r = self.rows
        ev, span = r.event, self.span
        own = self.row_owner
        wb = np.flatnonzero((ev == S.WORK_BEGIN) & (r.kind != S.WORK_TASKLOOP) & (own >= 0))
        wb = wb[np.lexsort((r.grank[wb], own[wb]))]
        wb_seq = _series(_cumcount(own[wb]), wb)
        lw = np.flatnonzero(_in(ev, (S.WORK_BEGIN, S.WORK_END)) & _in(r.kind, LOOP_WORK)
                            & (own >= 0))
        lw_key = own[lw] * span + r.grank[lw]
        o = np.argsort(lw_key, kind="stable")
        lw, lw_key = lw[o], lw_key[o]
        ch = np.flatnonzero((ev == S.CHUNK) & _in(r.kind, LOOP_DISPATCH) & (own >= 0))
        k = np.searchsorted(lw_key, own[ch] * span + r.grank[ch], side="right") - 1
        ok = k >= 0
        ok[ok] = (own[lw[k[ok]]] == own[ch[ok]]) & (ev[lw[k[ok]]] == S.WORK_BEGIN)
        ch, loop_row = ch[ok], lw[k[ok]]
        seq = wb_seq.reindex(loop_row).to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
        region = r.take("other", loop_row)
        o = np.lexsort((r.grank[ch], r.thread[ch], seq, region))
        self.ch_rows, self.ch_loop_row = ch[o], loop_row[o]
        self.ch_seq, self.ch_region = seq[o], region[o]
        self.ch_owner = own[self.ch_rows]
        self.K = len(self.ch_rows)

    # -- 3. slots ----------------------------------------------------------------
    def _slots(self):
        r = self.rows
        ev, t, n, T = r.event, r.time, len(r), self.T
        own = self.row_owner
        oth = self.other_owner
        s = _Slots()

        # first schedule into each explicit task opens its first fragment
        sc = np.flatnonzero((ev == S.TASK_SCHEDULE) & (own >= 0) & (own < T))
        if self.untied:
            sc = sc[np.argsort(r.grank[sc], kind="stable")]
        sc = sc[_first_per_key(own[sc], self.E)]
        s.add(len(sc), owner=own[sc], row=r.grank[sc], type=FRAGMENT, start=t[sc])

        # creation: fork (weight min(gap, estimate)), then a fragment
        cr = np.flatnonzero((ev == S.TASK_CREATE) & (own >= 0) & (oth >= 0))
        cr = np.sort(cr[_first_per_key(own[cr], self.E)])
        child, parent = own[cr], oth[cr]
        gap = self._gap_to_next_runtime_row(cr)
        self.creation_estimate = int(round(float(np.quantile(gap, self.q)))) if len(gap) else 0
        fork_w = np.minimum(gap, self.creation_estimate)
        s.add(len(cr), owner=parent, row=r.grank[cr], sub=0, type=FORK, recv=False,
              child=child, start=t[cr])
        s.add(len(cr), owner=parent, row=r.grank[cr], sub=1, type=FRAGMENT, start=t[cr] + fork_w)
        self.cr_rows, self.cr_child, self.cr_parent = cr, child, parent
        self.fork_w = np.zeros(self.E, dtype=np.int64)
        self.fork_w[child] = fork_w

        # taskwait and barriers: join at SYNC_BEGIN, fragment at SYNC_END
        waits = (S.SYNC_TASKWAIT,) + S.SYNC_BARRIERS
        sb = np.flatnonzero((ev == S.SYNC_BEGIN) & _in(r.kind, waits) & (own >= 0))
        se = np.flatnonzero((ev == S.SYNC_END) & _in(r.kind, waits) & (own >= 0))
        barrier = _in(r.kind[sb], S.SYNC_BARRIERS)
        shared = np.full(len(sb), -1, dtype=np.int64)
        bsb = sb[barrier]
        self.n_barriers = 0
        if len(bsb):
            o = np.lexsort((r.grank[bsb], own[bsb]))
            kth = np.empty(len(bsb), dtype=np.int64)
            kth[o] = _cumcount(own[bsb][o])
            codes, uniq = pd.factorize(pd.MultiIndex.from_arrays([r.take("other", bsb), kth]))
            shared[barrier] = codes
            self.n_barriers = len(uniq)
        s.add(len(sb), owner=own[sb], row=r.grank[sb], type=JOIN,
              jkind=np.where(barrier, BARRIER, TASKWAIT), shared=shared, start=t[sb])
        s.add(len(se), owner=own[se], row=r.grank[se], type=FRAGMENT, start=t[se])

        # parallel regions: a fork per implicit task; region_end join at PARALLEL_END
        pb = np.flatnonzero((ev == S.PARALLEL_BEGIN) & (own >= 0))
        imp = np.flatnonzero(self.is_implicit)
        imp_region = self.ctx["region"].to_numpy(np.uint64)[imp - T]
        imp = imp[np.lexsort((self.ctx["team_index"].to_numpy()[imp - T], imp_region))]
        imp_region = self.ctx["region"].to_numpy(np.uint64)[imp - T]
        lo = np.searchsorted(imp_region, r.take("other", pb), side="left")
        cnt = np.searchsorted(imp_region, r.take("other", pb), side="right") - lo
        rep = np.repeat(np.arange(len(pb)), cnt)
        sub = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        s.add(len(rep), owner=own[pb][rep], row=r.grank[pb][rep], sub=sub, type=FORK,
              recv=(sub == 0), child=imp[np.repeat(lo, cnt) + sub], start=t[pb][rep])
        pe = np.flatnonzero((ev == S.PARALLEL_END) & (own >= 0))
        s.add(len(pe), owner=own[pe], row=r.grank[pe], sub=0, type=JOIN, recv=False,
              jkind=REGION_END, start=t[pe])
        s.add(len(pe), owner=own[pe], row=r.grank[pe], sub=1, type=FRAGMENT, start=t[pe])
        self.pe_rows = pe

        # implicit / initial task begins; the initial task ends in the program_end join
        ib = np.flatnonzero((ev == S.IMPLICIT_BEGIN) & (own >= 0))
        ib = ib[_first_per_key(own[ib], self.E)]
        s.add(len(ib), owner=own[ib], row=r.grank[ib], type=FRAGMENT, start=t[ib])
        ie = np.flatnonzero((ev == S.IMPLICIT_END) & (own >= 0))
        ie = ie[self.is_initial[own[ie]]]
        ie = ie[_first_per_key(own[ie], self.E)]
        s.add(len(ie), owner=own[ie], row=r.grank[ie], type=JOIN, jkind=PROGRAM_END, start=t[ie])
        missing = np.setdiff1d(np.flatnonzero(self.is_initial), own[ie])
        s.add(len(missing), owner=missing, row=n + 1, type=JOIN, jkind=PROGRAM_END,
              start=int(t.max()) if n else 0)

        # loops: book-keeping at WORK_BEGIN / WORK_END; before every chunk but the
        # first of its loop on that thread a zero book-keeping node; the chunk
        lw = np.flatnonzero(_in(ev, (S.WORK_BEGIN, S.WORK_END)) & _in(r.kind, LOOP_WORK)
                            & (own >= 0))
        s.add(len(lw), owner=own[lw], row=r.grank[lw], type=BOOKKEEPING, start=t[lw])
        ch = self.ch_rows
        key = self.ch_owner * self.span + self.ch_loop_row
        o = np.lexsort((r.grank[ch], key))
        later = np.ones(len(ch), dtype=bool)
        later[o] = ~_group_starts(key[o])
        s.add(int(later.sum()), owner=self.ch_owner[later], row=r.grank[ch][later], sub=0,
              type=BOOKKEEPING, recv=False, start=t[ch][later])
        s.add(len(ch), owner=self.ch_owner, row=r.grank[ch], sub=1, type=CHUNK,
              grain=self.E + np.arange(self.K), start=t[ch])

        # taskgroups (SYNC_BEGIN kind 6 is the taskgroup's start in libomp)
        self.tg_begin = np.flatnonzero((ev == S.SYNC_BEGIN) & (r.kind == S.SYNC_TASKGROUP) & (own >= 0))
        self.tg_end = np.flatnonzero((ev == S.SYNC_END) & (r.kind == S.SYNC_TASKGROUP) & (own >= 0))
        if len(self.tg_end):
            self._add_taskgroup_joins(s, s.columns())
        self.sl = self._ordered(s.columns(consume=True))

    def _gap_to_next_runtime_row(self, idx):
        """Time from each row to the next row of its thread that is not a
        DEPENDENCE / TASK_DEPENDENCE row (those belong to the creation)."""
        r = self.rows
        n = len(r)
        dep = _in(r.event, (S.DEPENDENCE, S.TASK_DEPENDENCE))
        nxt = np.minimum.accumulate(np.where(~dep, np.arange(n), n)[::-1])[::-1]
        j = np.full(len(idx), n, dtype=np.int64)
        inside = idx + 1 < n
        j[inside] = nxt[idx[inside] + 1]
        ok = j < n
        ok[ok] = r.thread[j[ok]] == r.thread[idx[ok]]
        gap = np.zeros(len(idx), dtype=np.int64)
        gap[ok] = r.time[j[ok]] - r.time[idx[ok]]
        return np.maximum(gap, 0)

    def _add_taskgroup_joins(self, s: _Slots, cols: dict):
        """Taskgroup end: a join from the owner's first switch-out after its last
        boundary (or from SYNC_END if it never switched out), then a fragment.
        OMPT's sync_region for a taskgroup spans its whole body; the wait start
        is not an event."""
        r, span = self.rows, self.span
        tge = self.tg_end
        if not len(tge):
            return
        owner = self.row_owner[tge]
        tb = self.tg_begin
        bkey = np.sort(np.concatenate([cols["owner"] * span + cols["row"], owner * span + r.grank[tge],
                                       self.row_owner[tb] * span + r.grank[tb]]))
        q = owner * span + r.grank[tge]
        i = np.searchsorted(bkey, q, side="left") - 1
        prev = bkey[np.maximum(i, 0)]
        last = np.where((i >= 0) & (prev // span == owner), prev % span, -1)
        so = np.flatnonzero((r.event == S.TASK_SCHEDULE) & (r.kind == S.STATUS_SWITCH))
        so_key = np.sort(self.other_owner[so] * span + r.grank[so])
        j = np.searchsorted(so_key, owner * span + last, side="right")
        cand = so_key[np.minimum(j, len(so_key) - 1)] if len(so_key) else np.zeros(len(tge), np.int64)
        found = (j < len(so_key)) & (cand // span == owner) & (cand % span < r.grank[tge])
        join_row = np.where(found, cand % span, r.grank[tge])
        pos = self._pos(join_row)
        s.add(len(tge), owner=owner, row=join_row, sub=-1, type=JOIN, jkind=TASKGROUP,
              start=r.time[pos])
        s.add(len(tge), owner=owner, row=r.grank[tge], sub=0, type=FRAGMENT, start=r.time[tge])

    def _pos(self, grank_values):
        """Row positions of global-order keys (identity unless tasks migrate)."""
        if not self.untied:
            return np.minimum(grank_values, len(self.rows) - 1)
        inv = np.empty(len(self.rows) + 2, dtype=np.int64)
        inv[self.rows.grank] = np.arange(len(self.rows))
        inv[len(self.rows):] = len(self.rows) - 1
        return inv[grank_values]

    def _ordered(self, sl):
        subw = int(sl["sub"].max()) + 2 if len(sl["sub"]) else 2
        key = (sl["owner"] * self.span + sl["row"]) * subw + (sl["sub"] + 1)
        if len(key) and int(sl["owner"].max()) * self.span * subw < (1 << 62):
            o = np.argsort(key)            # keys are unique
        else:
            o = np.lexsort((sl["sub"], sl["row"], sl["owner"]))
        for f in list(sl):       # one field at a time: the unsorted copy is freed at once
            sl[f] = sl[f][o]
        sl["seq"] = _cumcount(sl["owner"])
        sl["grain"] = np.where(sl["grain"] == -2, sl["owner"], sl["grain"])
        sl["grain"][sl["shared"] >= 0] = -1
        return sl

    # -- 4. segments -> slots ----------------------------------------------------
    def _credit_segments(self):
        r, sl, span = self.rows, self.sl, self.span
        recv = np.flatnonzero(sl["recv"])
        rkey = sl["owner"][recv] * span + sl["row"][recv]
        o = np.argsort(rkey, kind="stable")
        recv, rkey = recv[o], rkey[o]
        rows = np.flatnonzero((r.owner_running >= 0) & (r.seg > 0))
        who = r.owner_running[rows]
        i = np.searchsorted(rkey, who * span + r.grank[rows], side="right") - 1
        ok = i >= 0
        ok[ok] = rkey[i[ok]] // span == who[ok]
        slot, rows = recv[i[ok]], rows[ok]
        ns = len(sl["owner"])
        sl["own"] = np.bincount(slot, weights=r.seg[rows], minlength=ns).astype(np.int64)
        last_end = np.zeros(ns, dtype=np.int64)
        np.maximum.at(last_end, slot, r.seg_end[rows])
        sl["last_end"] = last_end
        self.counter_names = list(r.counters)
        sl["counters"] = {name: np.bincount(slot, weights=d[rows], minlength=ns)
                          for name, d in counter_deltas(r).items()}

    # -- 5. nodes ----------------------------------------------------------------
    def _nodes(self):
        sl = self.sl
        typ, own = sl["type"], sl["own"]
        chain = sl["shared"] < 0
        M = int(chain.sum())
        node = np.empty(len(typ), dtype=np.int64)
        node[chain] = np.arange(M)
        node[~chain] = M + sl["shared"][~chain]
        sl["node"] = node
        N = self.N = M + self.n_barriers

        w = own.copy()
        fork = typ == FORK
        cfork = np.flatnonzero(fork & (sl["child"] < self.T) & (sl["child"] >= 0))
        w[cfork] = self.fork_w[sl["child"][cfork]]
        w[cfork + 1] = np.maximum(w[cfork + 1] - w[cfork], 0)  # the fragment after it
        # implicit tasks' nodes never start after their region ends (workers
        # report the last barrier's end only when the next region starts)
        limit = self.clip[sl["owner"]]
        start = np.minimum(sl["start"], limit)
        end = np.minimum(np.maximum(start, sl["last_end"]), np.maximum(limit, start))
        end[fork] = start[fork] + w[fork]

        c = {}
        c["type"] = np.empty(N, np.int8)
        c["type"][node] = typ
        c["grain"] = np.empty(N, np.int64)
        c["grain"][node] = sl["grain"]
        c["owner"] = np.full(N, -1, np.int64)
        c["owner"][node[chain]] = sl["owner"][chain]
        c["owner_seq"] = np.full(N, -1, np.int64)
        c["owner_seq"][node[chain]] = sl["seq"][chain]
        pos = self._pos(sl["row"])
        r = self.rows
        c["thread"] = np.full(N, -1, np.int32)
        c["thread"][node[chain]] = r.thread[pos[chain]]
        c["cpu"] = np.full(N, -1, np.int32)
        c["cpu"][node[chain]] = r.take("cpu", pos[chain])
        c["child"] = np.full(N, -1, np.int64)
        c["child"][node[fork]] = sl["child"][fork]
        c["join_kind"] = np.full(N, -1, np.int8)
        isj = typ == JOIN
        c["join_kind"][node[isj]] = sl["jkind"][isj]
        for name in ("start", "end", "duration", "sync_time", "arrive"):
            c[name] = np.zeros(N, np.int64)
        c["start"][node[chain]] = start[chain]
        c["end"][node[chain]] = end[chain]
        c["duration"][node[chain]] = w[chain]
        c["sync_time"][node[chain & isj]] = own[chain & isj]
        c["arrive"][node[chain]] = start[chain]
        if (~chain).any():
            # team barriers: earliest arrival/release, last arrival, summed sync time
            sh = pd.DataFrame({"node": node[~chain], "start": start[~chain],
                               "end": end[~chain], "own": own[~chain]})
            agg = sh.groupby("node").agg(start=("start", "min"), end=("end", "min"),
                                         arrive=("start", "max"), own=("own", "sum"))
            ix = agg.index.to_numpy()
            c["start"][ix] = agg["start"].to_numpy()
            c["end"][ix] = np.maximum(agg["end"].to_numpy(), agg["start"].to_numpy())
            c["arrive"][ix] = agg["arrive"].to_numpy()
            c["sync_time"][ix] = agg["own"].to_numpy()
        for name, vals in sl["counters"].items():
            v = np.zeros(N)
            np.add.at(v, node, vals)
            v[(c["type"] == FORK) | (c["type"] == JOIN)] = np.nan
            c[name] = v
        self.c = c

        # first / last node of each owner
        owner = sl["owner"]
        st, en = _group_starts(owner), _group_ends(owner)
        self.first_node = np.full(self.E, -1, np.int64)
        self.last_node = np.full(self.E, -1, np.int64)
        self.first_node[owner[st]] = node[st]
        self.last_node[owner[en]] = node[en]

    # -- 6. edges ----------------------------------------------------------------
    def _edges(self):
        sl, T = self.sl, self.T
        node, owner = sl["node"], sl["owner"]
        parts = []

        def add(src, dst, kind):
            parts.append((np.asarray(src, np.int64), np.asarray(dst, np.int64),
                          np.full(len(src), kind, np.int8)))

        same = owner[1:] == owner[:-1]
        add(node[:-1][same], node[1:][same], CONTINUATION)

        fk = np.flatnonzero((sl["type"] == FORK) & (sl["child"] >= 0))
        tgt = self.first_node[sl["child"][fk]]
        add(node[fk][tgt >= 0], tgt[tgt >= 0], CREATION)

        # implicit tasks end at their region's region_end join
        pe = self.pe_rows
        rj = _series(self._slot_node_at(pe, JOIN), self.rows.take("other", pe))
        imp = np.flatnonzero(self.is_implicit)
        self.ctx_waiter = np.full(self.E, -1, np.int64)
        self.ctx_waiter[imp] = rj.reindex(self.ctx["region"].to_numpy(np.uint64)[imp - T]).to_numpy(
            dtype=np.float64, na_value=-1).astype(np.int64)

        self.task_waiter = self._waiters()
        last = self.last_node[:T]
        ok = (last >= 0) & (self.task_waiter >= 0)
        add(last[ok], self.task_waiter[ok], SYNCHRONIZATION)

        ok = (self.ctx_waiter[imp] >= 0) & (self.last_node[imp] >= 0)
        add(self.last_node[imp][ok], self.ctx_waiter[imp][ok], SYNCHRONIZATION)

        # a run that exec()s has one initial task per image, one after the
        # other: each image continues where the one before it ended
        init = np.flatnonzero(self.is_initial)
        if len(init) > 1:
            first, last = self.first_node[init], self.last_node[init]
            ok = (first >= 0) & (last >= 0)
            first, last = first[ok], last[ok]
            o = np.argsort(first, kind="stable")
            add(last[o][:-1], first[o][1:], CONTINUATION)

        dsrc, ddst = self._dependences()
        ok = (self.last_node[dsrc] >= 0) & (self.first_node[ddst] >= 0) & (dsrc != ddst)
        add(self.last_node[dsrc][ok], self.first_node[ddst][ok], DEPENDENCE)

        src = np.concatenate([p[0] for p in parts])
        dst = np.concatenate([p[1] for p in parts])
        kind = np.concatenate([p[2] for p in parts])
        if len(dsrc):   # only dependence edges can repeat an existing edge
            keep = ~pd.Series(src * self.N + dst).duplicated(keep="first").to_numpy()
            src, dst, kind = src[keep], dst[keep], kind[keep]
        self.e_src, self.e_dst, self.e_type = src, dst, kind

    def _slot_node_at(self, rows_pos, slot_type):
        """Node of the slot of `slot_type` that each row (of its owner) opened."""
        sl, r, span = self.sl, self.rows, self.span
        sel = np.flatnonzero(sl["type"] == slot_type)
        key = sl["owner"][sel] * span + sl["row"][sel]
        o = np.argsort(key, kind="stable")
        key, sel = key[o], sel[o]
        q = self.row_owner[rows_pos] * span + r.grank[rows_pos]
        out = np.full(len(rows_pos), -1, np.int64)
        if len(key):
            i = np.minimum(np.searchsorted(key, q), len(key) - 1)
            hit = key[i] == q
            out[hit] = sl["node"][sel[i[hit]]]
        return out

    def _waiters(self) -> np.ndarray:
        """Node of the join that waits for each explicit task (docs/graph-model.md
        "synchronization"): the parent's first taskwait (or barrier, for an
        implicit parent) after the creation, or the end of the innermost
        taskgroup open at the creation, whichever comes first; else the join
        that catches the nearest ancestor's descendants; else the program end."""
        sl, T = self.sl, self.T
        owner, seq, typ, jk, node = sl["owner"], sl["seq"], sl["type"], sl["jkind"], sl["node"]
        out = np.full(T, -1, np.int64)
        if T == 0:
            return out
        W = int(seq.max()) + 2
        fk = np.flatnonzero((typ == FORK) & (sl["child"] >= 0) & (sl["child"] < T))
        parent = np.full(T, -1, np.int64)
        fseq = np.full(T, -1, np.int64)
        parent[sl["child"][fk]] = owner[fk]
        fseq[sl["child"][fk]] = seq[fk]
        has_parent = parent >= 0
        ctx_parent = has_parent & (parent >= T)

        def joins(mask):
            j = np.flatnonzero(mask)
            key = owner[j] * W + seq[j]
            o = np.argsort(key, kind="stable")
            return key[o], j[o]

        isj = typ == JOIN
        direct = isj & ((jk == TASKWAIT) | (jk == BARRIER) | (jk == PROGRAM_END))
        dkey, dj = joins(direct)
        w = np.full(T, -1, np.int64)
        w[has_parent] = _first_after(dkey, dj, parent[has_parent], fseq[has_parent], W)
        tg = self._taskgroup_of_tasks(parent, fseq, W)
        use_tg = (tg >= 0) & ((w < 0) | (seq[np.maximum(tg, 0)] < seq[np.maximum(w, 0)]))
        w[use_tg] = tg[use_tg]
        wkind = np.where(w >= 0, jk[np.maximum(w, 0)], -1)

        bkey, bj = joins(isj & ((jk == BARRIER) | (jk == PROGRAM_END)))
        B = np.full(T, -1, np.int64)
        B[ctx_parent] = _first_after(bkey, bj, parent[ctx_parent], fseq[ctx_parent], W)
        # No barrier after the creation in the implicit task (a team of one:
        # libomp reports none at the region's end): the region's own end,
        # the region_end join its implicit tasks end in, waits for the task.
        no_barrier = np.flatnonzero(ctx_parent & (B < 0))
        if len(no_barrier):
            slot_of_node = np.full(int(node.max()) + 1, -1, np.int64)
            slot_of_node[node] = np.arange(len(node))
            end_node = self.ctx_waiter[parent[no_barrier]]
            B[no_barrier] = np.where(end_node >= 0, slot_of_node[np.maximum(end_node, 0)], -1)

        # catch(X): the join that waits for X's descendants their parents don't wait for
        catch = np.full(T, -1, np.int64)
        own_tg = tg >= 0
        catch[own_tg] = tg[own_tg]
        strong = ~own_tg & ((wkind == BARRIER) | (wkind == PROGRAM_END))
        catch[strong] = w[strong]
        via_ctx = ~own_tg & ~strong & ctx_parent
        catch[via_ctx] = B[via_ctx]
        up = np.where(own_tg | strong | via_ctx | ~has_parent, -1, parent)
        catch = self._inherit(catch, up)

        res = w.copy()
        m = (res < 0) & has_parent & ~ctx_parent
        res[m] = catch[parent[m]]
        m = (res < 0) & ctx_parent
        res[m] = B[m]
        pe = np.flatnonzero(isj & (jk == PROGRAM_END))
        fallback = node[pe[0]] if len(pe) else -1
        return np.where(res >= 0, node[np.maximum(res, 0)], fallback)

    @staticmethod
    def _inherit(value, up):
        """value[x] = value[up[x]] for every x with up[x] >= 0, transitively
        (pointer jumping: O(log depth) passes)."""
        value, up = value.copy(), up.copy()
        for _ in range(_max_rounds(len(up))):
            live = np.flatnonzero(up >= 0)
            if not len(live):
                return value
            p = up[live]
            done = up[p] < 0
            value[live[done]] = value[p[done]]
            nd = live[~done]
            # jump from the pointers as they were before this pass: clearing
            # the done ones first would cut a grandchild loose with no value
            up[nd] = up[p[~done]]
            up[live[done]] = -1
        raise _cycle()

    def _taskgroup_of_tasks(self, parent, fseq, W):
        """Slot of the taskgroup join of the innermost taskgroup of the parent
        open when each task was created (-1 if none)."""
        T, r, sl, span = self.T, self.rows, self.sl, self.span
        out = np.full(T, -1, np.int64)
        tb, te = self.tg_begin, self.tg_end
        if not len(tb) or not len(te):
            return out
        tgj = np.flatnonzero((sl["type"] == JOIN) & (sl["jkind"] == TASKGROUP))
        # taskgroup joins in the order of their SYNC_END rows (same owner order)
        jo = tgj[np.argsort(sl["owner"][tgj] * span + sl["row"][tgj], kind="stable")]
        eo = np.argsort(self.row_owner[te] * span + r.grank[te], kind="stable")
        end_slot = np.empty(len(te), np.int64)
        end_slot[eo] = jo
        fk = np.flatnonzero((sl["type"] == FORK) & (sl["child"] >= 0) & (sl["child"] < T))
        ev_owner = np.concatenate([self.row_owner[tb], self.row_owner[te], sl["owner"][fk]])
        ev_row = np.concatenate([r.grank[tb], r.grank[te], sl["row"][fk]])
        ev_step = np.concatenate([np.ones(len(tb), np.int64), -np.ones(len(te), np.int64),
                                  np.zeros(len(fk), np.int64)])
        ev_ref = np.concatenate([np.full(len(tb), -1), end_slot, sl["child"][fk]])
        o = np.lexsort((ev_row, ev_owner))
        ev_owner, ev_row, ev_step, ev_ref = ev_owner[o], ev_row[o], ev_step[o], ev_ref[o]
        level = np.cumsum(ev_step)
        base = np.maximum.accumulate(np.where(_group_starts(ev_owner), np.arange(len(o)), 0))
        level = level - level[base] + ev_step[base]  # open taskgroups after each event
        ends = np.flatnonzero(ev_step == -1)
        levels = int(max(level.max(), 0)) + 3      # nesting depth bound (small)
        L = span + 1
        ekey = (ev_owner[ends] * levels + np.clip(level[ends] + 1, 0, levels - 1)) * L + ev_row[ends]
        oe = np.argsort(ekey, kind="stable")
        ends, ekey = ends[oe], ekey[oe]
        forks = np.flatnonzero((ev_step == 0) & (level > 0))
        q = (ev_owner[forks] * levels + level[forks]) * L + ev_row[forks]
        i = np.searchsorted(ekey, q, side="right")
        ok = i < len(ekey)
        ok[ok] = ekey[i[ok]] // L == q[ok] // L
        out[ev_ref[forks[ok]]] = ev_ref[ends[i[ok]]]
        return out

    def _dependences(self):
        r = self.rows
        td = np.flatnonzero(r.event == S.TASK_DEPENDENCE)
        ds, dd = self._derived_dependences()
        src = np.concatenate([self.other_owner[td], ds])
        dst = np.concatenate([self.row_owner[td], dd])
        ok = (src >= 0) & (src < self.T) & (dst >= 0) & (dst < self.T)
        return src[ok], dst[ok]

    def _derived_dependences(self):
        """Edges implied by DEPENDENCE rows among siblings in creation order, per
        address: a reader after the last writer before it; a writer after the
        last writer and after the readers since that writer."""
        r = self.rows
        d = np.flatnonzero(r.event == S.DEPENDENCE)
        task = self.row_owner[d]
        ok = (task >= 0) & (task < self.T)
        d, task = d[ok], task[ok]
        none = (np.empty(0, np.int64), np.empty(0, np.int64))
        if not len(d):
            return none
        parent = np.full(self.E, -1, np.int64)
        parent[self.cr_child] = self.cr_parent
        created = np.full(self.E, -1, np.int64)
        created[self.cr_child] = r.grank[self.cr_rows]
        df = pd.DataFrame({"p": parent[task], "a": r.take("value", d), "c": created[task], "t": task,
                           "w": _in(r.kind[d], WRITER_DEPS)})
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

    # -- join weights --------------------------------------------------------------
    def _join_weights(self):
        """A join weighs its resume latency: the part of its sync time after it
        became ready (last arrival, and every predecessor finished)."""
        c = self.c
        ready = c["arrive"].copy()
        isj = c["type"][self.e_dst] == JOIN
        np.maximum.at(ready, self.e_dst[isj], c["end"][self.e_src[isj]])
        j = np.flatnonzero(c["type"] == JOIN)
        w = np.clip(c["end"][j] - ready[j], 0, c["sync_time"][j])
        jk = c["join_kind"][j]
        w[(jk == REGION_END) | (jk == PROGRAM_END)] = 0
        c["duration"][j] = w

    # -- 7. tables -------------------------------------------------------------
    def _public_ids(self, internal):
        """Internal owner/chunk ids -> public ids (tasks, chunks, contexts)."""
        T, E, K = self.T, self.E, self.K
        x = np.asarray(internal, np.int64)
        if K == 0:
            return x
        return x + K * ((x >= T) & (x < E)) - (E - T) * (x >= E)

    def _tables(self) -> GrainGraph:
        c, T, K, E = self.c, self.T, self.K, self.E
        G = T + K
        r, sl = self.rows, self.sl
        typ = c["type"]

        # chunks' join: the first join after the chunk in its implicit task's chain
        W = int(sl["seq"].max()) + 2 if len(sl["seq"]) else 2
        j = np.flatnonzero((sl["type"] == JOIN) & (sl["jkind"] != REGION_END))
        jkey = sl["owner"][j] * W + sl["seq"][j]
        o = np.argsort(jkey, kind="stable")
        cs = np.flatnonzero(sl["type"] == CHUNK)
        chunk_join = np.full(K, -1, np.int64)
        cj = _first_after(jkey[o], sl["node"][j[o]], sl["owner"][cs], sl["seq"][cs], W)
        # no join after it (a team of one reports no barrier): the region's end
        # its implicit task ends at
        cj = np.where(cj >= 0, cj, self.ctx_waiter[sl["owner"][cs]])
        chunk_join[sl["grain"][cs] - E] = cj
        waiter = np.concatenate([self.task_waiter, chunk_join])           # public grain order
        n_waited = np.bincount(waiter[waiter >= 0], minlength=self.N).astype(np.int32)

        nodes = _frame({
            "type": pd.Categorical.from_codes(typ, categories=NODE_TYPES),
            "grain": self._public_ids(c["grain"]),
            "owner": self._public_ids(c["owner"]),
            "owner_seq": c["owner_seq"].astype(np.int32),
            "thread": c["thread"], "cpu": c["cpu"],
            "start": c["start"], "end": c["end"], "duration": c["duration"],
            "child": self._public_ids(c["child"]),
            "join_kind": pd.Categorical.from_codes(c["join_kind"], categories=JOIN_KINDS),
            "sync_time": c["sync_time"], "n_waited": n_waited,
        })
        for name in self.counter_names:
            nodes[name] = c[name]
        nodes.index.name = "node"
        edges = _frame({"src": self.e_src, "dst": self.e_dst,
                              "type": pd.Categorical.from_codes(self.e_type, categories=EDGE_TYPES)})

        # per grain aggregates over its own nodes (internal grain ids: owners + chunks)
        gi = c["grain"]
        size = E + K
        mine = (gi >= 0) & ((typ == FRAGMENT) | (typ == CHUNK))
        work = np.bincount(gi[mine], weights=c["duration"][mine], minlength=size).astype(np.int64)
        nfrag = np.bincount(gi[mine], minlength=size).astype(np.int32)
        owned = gi >= 0
        gstart = np.full(size, I64MAX, np.int64)
        np.minimum.at(gstart, gi[owned], c["start"][owned])
        gend = np.zeros(size, np.int64)
        np.maximum.at(gend, gi[owned], c["end"][owned])
        first = np.concatenate([self.first_node, np.full(K, -1, np.int64)])
        cnode = np.flatnonzero(typ == CHUNK)
        first[gi[cnode]] = cnode
        fthread = np.where(first >= 0, c["thread"][np.maximum(first, 0)], -1).astype(np.int32)
        fcpu = np.where(first >= 0, c["cpu"][np.maximum(first, 0)], -1).astype(np.int32)
        counters = {}
        for name in self.counter_names:
            v = np.zeros(size)
            sel = mine & ~np.isnan(c[name])
            np.add.at(v, gi[sel], c[name][sel])
            counters[name] = v
        gsel = np.concatenate([np.arange(T), E + np.arange(K)])   # public grain order
        csel = np.arange(T, E)

        ex = self.explicit
        parent = np.full(G, -1, np.int64)
        tparent = self.owner_of(ex["parent"].to_numpy(np.uint64))
        parent[:T] = self._public_ids(tparent)
        parent[T:] = self._public_ids(self.ch_owner)
        depth = np.ones(G, np.int32)
        depth[:T] = _list_rank(np.where((tparent >= 0) & (tparent < T), tparent, -1)) + 1
        fork_w = np.full(size, np.nan)
        fk = np.flatnonzero((typ == FORK) & (c["child"] >= 0))
        fork_w[c["child"][fk]] = c["duration"][fk]
        flags = np.zeros(G, np.uint32)
        flags[:T] = ex["flags"].to_numpy(np.uint32)
        codeptr = np.zeros(G, np.uint64)
        codeptr[:T] = ex["codeptr"].to_numpy(np.uint64)
        names = self.names
        grain_node = np.full(G, -1, np.int64)
        grain_node[:T] = ex["node"].to_numpy(np.int64)
        first_it = np.full(G, -1, np.int64)
        iters = np.full(G, -1, np.int64)
        inferred = np.zeros(G, bool)
        # loop instance per chunk as a categorical: one string per distinct
        # loop instance (its length grows with the region's depth), a code per
        # grain; tasks ""
        loop_codes = np.zeros(G, np.int32)
        loop_names = [""]
        loop_thread = np.full(G, -1, np.int32)
        bk = np.full(G, np.nan)
        if K:
            ch = self.ch_rows
            first_it[T:] = r.take("value", ch).astype(np.int64)
            iters[T:] = r.take("count", ch).astype(np.int64)
            inferred[T:] = (r.take("flags", ch) & S.CHUNK_INFERRED) != 0
            codeptr[T:] = r.take("codeptr", self._pos(self.ch_loop_row))
            names, grain_node[T:], chunk_loop = _chunk_names(
                names, self.region_node, self.ch_region, self.ch_seq, first_it[T:])
            loop_codes[T:], loop_names = chunk_loop
            master = self.ctx[self.is_implicit[T:] & (self.ctx["team_index"].to_numpy() == 0)]
            mt = _series(master["thread"].to_numpy(np.float64), master["region"].to_numpy(np.uint64))
            loop_thread[T:] = mt.reindex(self.ch_region).to_numpy(na_value=-1).astype(np.int32)
            prev = cs - 1
            okp = (prev >= 0) & (sl["owner"][np.maximum(prev, 0)] == sl["owner"][cs]) & \
                (sl["type"][np.maximum(prev, 0)] == BOOKKEEPING)
            bk[sl["grain"][cs[okp]] - E + T] = c["duration"][sl["node"][prev[okp]]]
        tl = np.flatnonzero((r.event == S.CHUNK) & (r.kind == S.DISPATCH_TASKLOOP_CHUNK))
        te = self.row_owner[tl]
        okt = (te >= 0) & (te < T)
        first_it[te[okt]] = r.take("value", tl[okt]).astype(np.int64)
        iters[te[okt]] = r.take("count", tl[okt]).astype(np.int64)

        sync_cost = np.full(G, np.nan)
        okw = waiter >= 0
        sync_cost[okw] = c["sync_time"][waiter[okw]] / np.maximum(n_waited[waiter[okw]], 1)
        n_children = np.bincount(tparent[tparent >= 0], minlength=E)
        child_number = np.full(G, -1, np.int32)
        child_number[:T] = ex["child_index"].to_numpy()
        grains = _frame({
            "kind": pd.Categorical(np.repeat(["task", "chunk"], [T, K]), categories=["task", "chunk"]),
            "identity": None,
            "task_id": np.concatenate([ex["id"].to_numpy(np.uint64), np.zeros(K, np.uint64)]),
            "parent": parent, "child_number": child_number, "depth": depth,
            "codeptr": codeptr, "flags": flags,
            "undeferred": (flags & np.uint32(S.TASK_UNDEFERRED)) != 0,
            "thread": fthread[gsel], "cpu": fcpu[gsel],
            "start": np.where(gstart[gsel] == I64MAX, -1, gstart[gsel]), "end": gend[gsel],
            "work": work[gsel], "n_fragments": nfrag[gsel],
            "n_children": np.concatenate([n_children[:T], np.zeros(K, np.int64)]).astype(np.int32),
            "creation_cost": fork_w[gsel], "bookkeeping_cost": bk,
            "join": waiter, "sync_cost": sync_cost,
            "loop": pd.Categorical.from_codes(loop_codes, categories=loop_names),
            "loop_thread": loop_thread,
            "first_iteration": first_it, "iterations": iters, "inferred": inferred,
        })
        for name, v in counters.items():
            grains[name] = v[gsel]
        grains.index.name = "grain"

        ctx = self.ctx
        is_init = self.is_initial[T:]
        cparent = self._public_ids(self.owner_of(ctx["parent"].to_numpy(np.uint64)))
        cparent[is_init] = -1
        region = self.region_identity.reindex(ctx["region"].to_numpy(np.uint64)).to_numpy(dtype=object)
        region = np.where(is_init | pd.isna(region), "", region).astype(object)
        contexts = _frame({
            "kind": pd.Categorical(np.where(is_init, "initial", "implicit"), categories=["initial", "implicit"]),
            "identity": None,
            "task_id": ctx["id"].to_numpy(np.uint64),
            "parent": cparent, "region": region,
            "team_index": ctx["team_index"].to_numpy(), "team_size": ctx["team_size"].to_numpy(),
            "thread": fthread[csel],
            "start": np.where(gstart[csel] == I64MAX, -1, gstart[csel]), "end": gend[csel],
            "work": work[csel], "join": self.ctx_waiter[csel],
        }, index=pd.RangeIndex(G, G + self.C, name="context"))
        # identity strings: a column only while every one is short
        # or few (grainlab.identity.materialise), else made on demand
        # (g.identities)
        both = np.concatenate([grain_node, ctx["node"].to_numpy(np.int64)])
        if materialise(names, both):
            text = names.arrow(both)
            grains["identity"] = string_column(text.slice(0, G))
            contexts["identity"] = string_column(text.slice(G))
        else:
            del grains["identity"], contexts["identity"]

        meta = dict(self.trace.meta)
        meta.update({"creation_cost_estimate_ns": self.creation_estimate,
                     "creation_quantile": self.q,
                     "trace_path": str(getattr(self.trace, "path", ""))})
        return GrainGraph(nodes=nodes, edges=edges, grains=grains, contexts=contexts, meta=meta,
                          names=names, identity_node=both)


def _chunk_names(names, region_node, ch_region, ch_seq, first):
    """Identity nodes of worksharing chunks ("<region>.w<k>@<first>"; "?" for
    a region nobody can name) and their loop instances ("<region>.w<k>") as
    (code per chunk, categories: "" then each distinct loop string, made
    once per distinct loop instance)."""
    rnode = region_node.reindex(ch_region).to_numpy(dtype=np.float64, na_value=-1).astype(np.int64)
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
