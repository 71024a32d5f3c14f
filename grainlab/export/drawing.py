"""The grain graph drawn as the thesis draws it (§5.4.1, Fig. 5.3): one layout
shared by the web app (grainlab.app) and the static export
(grainlab.export.svg).

- Every owner (task, chunk, initial or implicit task) has a column; columns
  are the task tree in pre-order, so a task's children sit right of it,
  local to their parent's context, a loop's chunks side by side right of
  the implicit task that ran them, and a subtree never interleaves with
  another (edges do not cross subtrees).
- Time flows down. In *DAG time* (the default) a node starts where its
  predecessors end in the DAG (`earliest_finish - duration`) and is as long
  as its weight, so there are no gaps from waiting and lengths read as
  grain sizes; in *wall-clock* time nodes sit at their recorded times.
- Items are the drawn elements: fragment, chunk (rectangles), fork, join,
  bookkeeping (shapes), and summary: a collapsed subtree (DAGViz-style),
  drawn as one node with its grains, work, span and worst problem, which
  expands on request. Edges: creation, synchronization, continuation
  (and dependence), between items; `critical` where on the critical path.
- Reductions (`fragments`, `forks`, `bookkeeping`, as `GrainGraph.reduce`)
  group nodes of the shown owners into one item each, keeping the members'
  count and summed weight.

Everything is column arithmetic over owners and nodes; only what is shown
is grouped and aggregated, so a collapsed view of 10^6 grains costs a few
passes over the node table.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..graph.model import NODE_TYPES
from ..graph.reduce import group_codes
from ..metrics.contract import is_one_of
from .palette import (CHUNK_FILL, CONTEXT_COLOR, DIMMED, KIND_COLORS, SEVERITY_COLORS,
                      SEVERITY_STEPS, severity_class)
from .tree import tree

OWNER_BUDGET = 400       # owners (grains + contexts) shown before collapsing deeper levels
NODE_BUDGET = 5_000       # nodes shown before collapsing deeper levels
BOOKKEEPING_BUDGET = 1_000  # book-keeping nodes shown one by one before grouping them per thread
SIBLING_PAGE = 200         # children of an expanded node shown per page
FAN_MIN = 16               # leaf siblings from which a fan is packed into lanes
LANE_ROUNDS = 64           # lanes packed greedily; the rest of a huge fan one column each
BREAK_MIN = 0.15           # a stretch of runtime alone longer than this share of the rest
BREAK_FLOOR = 0.01         # (the rest: at least this share of the shown time) is cut out
                           # of the time axis ...
BREAK_SHOW = 0.04          # ... and drawn this share of the rest of the time long,
BREAKS_SHOW = 0.12         # all of them together at most this share

# Colours and severity classes: grainlab.export.palette (one place for every view).


@dataclass
class Drawing:
    """What to draw. items (index = item id): kind, grain (owner id whose
    column it is: grain id < n_grains, else context; -1 for a summary),
    x (column), y0, y1 (ns from the top), weight (ns, summed over members),
    n_members, critical, sev (problem severity 0..1 of the grain; NaN where
    none applies), label, and for summaries: token (to expand it),
    n_grains, work (ns), span (ns, its drawn extent); fan: the packed fan
    (run of leaf siblings packed into lanes) it is in (-1: none). edges:
    src, dst (item ids), type, critical, count (graph edges it stands for),
    ys, yd (ns: where it leaves its source and meets its destination),
    bundled (count > 1: a fan's creation or synchronization edges, or the
    edges between two grouped items)."""
    items: pd.DataFrame
    edges: pd.DataFrame
    mode: str
    n_columns: int
    n_grains: int
    collapsed_depth: int | None
    window: tuple = (0, 1)   # (y0, y1) ns: the grains' extent, what a view shows first
    extra: dict = field(default_factory=dict)

    def counts(self) -> dict:
        return self.items["kind"].value_counts().to_dict()


class GrainLayout:
    """Per-trace preparation (once): the tree, each node's column owner and
    times, each owner's extent. `draw(...)` then lays out one view."""

    def __init__(self, g, key: np.ndarray | None = None):
        gr, cx = g.grains, g.contexts
        self.g = g
        self.n_grains = G = len(gr)
        parent = np.r_[gr["parent"].to_numpy(np.int64), cx["parent"].to_numpy(np.int64)]
        M = self.n_owners = len(parent)
        parent = np.where((parent >= 0) & (parent < M), parent, -1)
        if key is None:
            key = np.r_[gr["start"].to_numpy(np.int64), cx["start"].to_numpy(np.int64)]
        self.tree = tree(parent, _idle_members_first(key, parent, cx, G))
        self.by_pos = self.tree.by_pos
        nodes = g.nodes
        self.n_nodes = len(nodes)
        # node types as int8 codes: `typ[idx]` gives the names of the shown
        # nodes only (an object array of every node's name was 8 bytes a node)
        self.typ = Coded(_type_codes(nodes["type"]).astype(np.int8),
                         np.asarray(NODE_TYPES, dtype=object))
        self.owner = nodes["owner"].to_numpy()      # ids (int32 while they fit): compared only
        self.col = _columns(g, self.tree.pos)
        dur = nodes["duration"].to_numpy(np.int64)
        ef = nodes["earliest_finish"].to_numpy(np.int64)
        start, end = nodes["start"].to_numpy(np.int64), nodes["end"].to_numpy(np.int64)
        self.origin = int(start.min()) if len(start) else 0
        # each view's (top, bottom) per node; the differences are made for
        # the nodes a view shows, not kept for all (3 x 8 bytes a node)
        self.y = {"dag": (Less(ef, dur), ef),
                  "wall": (Less(start, self.origin), Less(end, self.origin))}
        self.duration = dur
        self.node_critical = nodes["on_critical_path"].to_numpy(bool)
        e = g.edges
        # the graph's own id dtype (int32 while ids fit): indices only, never
        # arithmetic, so no int64 copy (2 x 8 bytes an edge)
        self.e_src, self.e_dst = e["src"].to_numpy(), e["dst"].to_numpy()
        self.e_type = _codes_and_names(e["type"])
        self.e_critical = e["on_critical_path"].to_numpy(bool)
        self.nodes_per_owner = np.bincount(self.col, minlength=M)
        self.owner_extent = {m: _owner_extent(self.col, *(Less.whole(y) for y in self.y[m]), M)
                             for m in self.y}
        work = np.r_[gr["work"].to_numpy(np.int64), cx["work"].to_numpy(np.int64)]
        is_grain = np.arange(M) < G
        crit = np.zeros(M, bool)
        crit[self.col[self.node_critical]] = True
        bp = self.by_pos
        # prefix sums in pre-order: a subtree's total is a difference
        self.cum_grains = np.r_[0, np.cumsum(is_grain[bp])]
        self.cum_work = np.r_[0, np.cumsum(work[bp])]
        self.crit_pos = crit[bp]
        self.labels = _chunk_labels(gr)
        self.is_chunk = np.r_[is_one_of(gr["kind"], "chunk"), np.zeros(M - G, bool)]

    # -- what is shown ------------------------------------------------------
    def auto_depth(self, mode: str = "dag") -> int | None:
        """Deepest tree level D such that everything down to D fits the
        budgets (None: the whole graph fits: its nodes, and its owners once
        fans are packed into lanes, as many columns as the budget allows)."""
        t = self.tree
        if self.n_nodes <= NODE_BUDGET and (self.n_owners <= OWNER_BUDGET or self._columns_all(
                mode) <= OWNER_BUDGET):
            return None
        per_depth = np.bincount(t.depth)
        nodes_depth = np.bincount(t.depth, weights=self.nodes_per_owner)
        ok = (np.cumsum(per_depth) <= OWNER_BUDGET) & (np.cumsum(nodes_depth) <= NODE_BUDGET)
        return max(int(np.flatnonzero(ok)[-1]) if ok.any() else 0, 0)

    def intervals(self, depth, expand=()):
        """Shown summaries as pre-order intervals [a, b) (sorted, disjoint) with
        their tokens; and the mask of owners shown as themselves."""
        t, M = self.tree, self.n_owners
        expanded, pages = _parse_tokens(expand, M)
        starts, ends, toks = [], [], []
        if depth is not None:
            expanded |= self._flat_parents(depth)
            cand = (t.depth >= depth) & (t.size > 1) & ~expanded
            ids = np.flatnonzero(cand)
            starts.append(t.pos[ids])
            ends.append(t.pos[ids] + t.size[ids])
            toks.append(ids)                       # "c<id>": the subtree of <id>
            # children of expanded nodes below the cut: a page at a time
            par = t.parent
            deep = (par >= 0) & (t.depth > depth)
            limit = SIBLING_PAGE * (1 + pages)
            over = deep & (t.sib_rank == limit[np.maximum(par, 0)]) & expanded[np.maximum(par, 0)]
            ids = np.flatnonzero(over)
            p = par[ids]
            starts.append(t.pos[ids])
            ends.append(t.pos[p] + t.size[p])
            toks.append(-1 - p)                    # "m<id>": more children of <id>
        a = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        b = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        tok = np.concatenate(toks) if toks else np.zeros(0, np.int64)
        # a page of siblings that starts at a collapsed child: the page wins
        order = np.lexsort((-b, a))
        first = np.r_[True, a[order][1:] != a[order][:-1]] if len(a) else np.zeros(0, bool)
        a, b, tok = a[order][first], b[order][first], tok[order][first]
        cov = np.zeros(M + 1, np.int64)
        np.add.at(cov, a, 1)
        np.add.at(cov, b, -1)
        cov = np.cumsum(cov)[:M]
        top = cov[a] == 1 if len(a) else np.zeros(0, bool)
        # a collapsed node inside another interval is not shown (covered
        # twice at its start); the interval of its own is covered once
        order = np.argsort(a[top], kind="stable")
        a, b, tok = a[top][order], b[top][order], tok[top][order]
        tok = np.where(tok >= 0, np.char.add("c", tok.astype(str)),
                       np.char.add("m", (-1 - tok).astype(str))) if len(tok) \
            else np.zeros(0, str)
        shown = cov == 0                       # by position
        return a, b, tok, shown[t.pos]

    def _flat_parents(self, depth) -> np.ndarray:
        """Owners at the cut whose children are all leaves (an implicit task
        and its loop chunks, a task and its leaf tasks): shown open, a page
        of children each, when those pages fit the budget, rather than as
        one summary that says nothing about them."""
        t = self.tree
        nchild = np.bincount(t.parent[t.parent >= 0], minlength=self.n_owners)
        flat = (t.depth == depth) & (t.size > 1) & (t.size - 1 == nchild)
        shown = int((t.depth <= depth).sum()) + int(np.minimum(nchild[flat], SIBLING_PAGE).sum())
        return flat if shown <= 2 * OWNER_BUDGET else np.zeros(self.n_owners, bool)

    def draw(self, mode: str = "dag", expand=(), depth="auto", fragments=False,
             forks=False, bookkeeping=False, severity=None) -> Drawing:
        """Lay out one view. depth: "auto" (collapse below the budgets), None
        (nothing collapsed) or a tree level to collapse below."""
        if depth == "auto":
            depth = self.auto_depth(mode)
        a, b, tok, own_shown = self.intervals(depth, expand)
        col_of, fan_of = self._packed_columns(mode, own_shown, a, b)
        show_node = own_shown[self.col]
        idx = np.flatnonzero(show_node)
        # owners with long chains (a loop's book-keeping between its chunks):
        # the book-keeping grouped per thread, everything grouped beyond
        auto = not bookkeeping and (len(idx) > NODE_BUDGET or int(
            (self.typ[idx] == "bookkeeping").sum()) > BOOKKEEPING_BUDGET)
        bookkeeping = bookkeeping or auto
        if len(idx) > 4 * NODE_BUDGET and not (fragments and forks):
            fragments = forks = auto = True
        codes = group_codes(self.typ[idx], self.owner[idx], fragments, forks, bookkeeping) \
            if (fragments or forks or bookkeeping) else np.arange(len(idx))
        items = self._items(mode, idx, codes, col_of)
        summ = self._summaries(mode, a, b, tok, col_of)
        items["fan"] = fan_of[items["grain"].to_numpy(np.int64)]
        summ["fan"] = fan_of[self.by_pos[a]] if len(a) else np.zeros(0, np.int64)
        K = len(items)
        item_of = np.full(self.n_nodes, -1, np.int64)
        item_of[idx] = codes
        hidden = np.flatnonzero(~show_node)
        if len(hidden):
            p = self.tree.pos[self.col[hidden]]
            item_of[hidden] = K + np.searchsorted(a, p, side="right") - 1
        items = pd.concat([items, summ], ignore_index=True)
        edges = _bundle_fans(self._edges(item_of, mode), items)
        window = _window(items, self.n_grains)
        d = Drawing(items=items, edges=edges, mode=mode,
                    n_columns=int(col_of.max()) + 1 if len(col_of) else 0,
                    n_grains=self.n_grains, collapsed_depth=depth, window=window,
                    extra={"auto_reduced": auto, "breaks": _time_breaks(items, window, self.n_grains)})
        return self.colour(d, severity)

    def colour(self, d: Drawing, severity) -> Drawing:
        """The drawing with every element's severity (`sev`) for a problem:
        the grain's for its fragments and chunks, the worst of its grains'
        for a summary. A new threshold recolours a laid-out drawing."""
        items = d.items.copy()
        items["sev"] = _item_severity(items, severity, self.n_grains)
        summ = np.flatnonzero(items["kind"].to_numpy() == "summary")
        if severity is not None and len(summ):
            a = items["pos0"].to_numpy()[summ].astype(np.int64)
            b = items["pos1"].to_numpy()[summ].astype(np.int64)
            sev = items["sev"].to_numpy().copy()
            sev[summ] = self._worst(severity, a, b)
            items["sev"] = sev
        return Drawing(items=items, edges=d.edges, mode=d.mode, n_columns=d.n_columns,
                       n_grains=d.n_grains, collapsed_depth=d.collapsed_depth, window=d.window,
                       extra=d.extra)

    def _worst(self, severity, a, b) -> np.ndarray:
        """Worst severity among the grains of each interval [a, b)."""
        sev = np.r_[np.asarray(severity, np.float64)[:self.n_grains],
                    np.zeros(self.n_owners - self.n_grains)]
        idx = np.empty(2 * len(a), np.int64)
        idx[0::2], idx[1::2] = a, b
        return np.maximum.reduceat(np.r_[sev[self.by_pos], 0.0], idx)[0::2]

    def _columns_all(self, mode) -> int:
        """Columns of the whole graph drawn (nothing collapsed)."""
        none = np.zeros(0, np.int64)
        col, _ = self._packed_columns(mode, np.ones(self.n_owners, bool), none, none)
        return int(col.max()) + 1 if len(col) else 0

    # -- columns: the tree in pre-order, fans packed into lanes -------------
    def _packed_columns(self, mode, own_shown, a, b):
        """Column of every shown owner and summary's first owner, and its fan
        (-1: not in a packed fan). Columns follow the tree in pre-order; a run
        of FAN_MIN or more consecutive leaf columns of one parent (a loop's
        chunks on one thread, the tasks a single producer creates) is packed
        into lanes: intervals of time that do not overlap share a column (a
        thread's loop chunks always, however few).
        In DAG time a thread's chunks chain through its book-keeping and a
        task that depends on another starts where it ends, so a fan is as wide
        as its parallelism, not its size, and dependence chains run down."""
        t, M, bp = self.tree, self.n_owners, self.by_pos
        P = np.sort(np.r_[t.pos[own_shown], a])          # a column unit per position
        owner = bp[P]
        lo, hi = self.owner_extent[mode]
        y0, y1 = lo[owner].astype(np.float64), hi[owner].astype(np.float64)
        summ = np.isin(P, a)
        if summ.any():                                  # a summary spans its subtree
            s0, s1 = _interval_extent(lo, hi, bp, a, b)
            y0[summ], y1[summ] = s0, s1
        nxt = np.r_[P[1:], M]
        leaf = summ | (nxt >= P + t.size[owner])
        par = t.parent[owner]
        new_run = np.r_[True, ~leaf[:-1] | (par[1:] != par[:-1])] | ~leaf
        run = np.cumsum(new_run) - 1
        size = np.bincount(run)
        # a thread's chunks always (its loop timeline), other fans from FAN_MIN
        chunks = np.bincount(run, weights=self.is_chunk[owner] & ~summ, minlength=len(size))
        packed = leaf & ((size[run] >= FAN_MIN) | ((chunks[run] == size[run]) & (size[run] > 1)))
        lane = np.full(len(P), -1, np.int64)
        if packed.any():
            lane[packed] = _lanes(run[packed], y0[packed], y1[packed])
        n_lanes = np.zeros(len(size), np.int64)
        np.maximum.at(n_lanes, run[packed], lane[packed] + 1)
        first = np.flatnonzero(new_run)[run]             # the run's first unit
        rank = np.arange(len(P)) - first
        width = np.where(packed, rank < n_lanes[run], 1).astype(np.int64)
        before = np.cumsum(width) - width
        col = np.where(packed, before[first] + lane, before)
        col_of = np.zeros(M, np.int64)
        col_of[owner] = col
        fan_of = np.full(M, -1, np.int64)
        fan_of[owner[packed]] = run[packed]
        return col_of, fan_of

    # -- items and edges ------------------------------------------------------
    def _items(self, mode, idx, codes, col_of) -> pd.DataFrame:
        y0, y1 = self.y[mode]
        col = self.col[idx]
        f = pd.DataFrame({"code": codes, "kind": self.typ[idx], "grain": col,
                          "y0": y0[idx], "y1": y1[idx], "weight": self.duration[idx],
                          "critical": self.node_critical[idx]})
        it = f.groupby("code", sort=True).agg(
            kind=("kind", "first"), grain=("grain", "first"), y0=("y0", "min"),
            y1=("y1", "max"), weight=("weight", "sum"), n_members=("weight", "size"),
            critical=("critical", "any")).reset_index(drop=True)
        it["x"] = col_of[it["grain"].to_numpy(np.int64)]
        gid = it["grain"].to_numpy(np.int64)
        lab = np.full(len(it), "", dtype=object)
        chunk = (it["kind"].to_numpy() == "chunk") & (gid < self.n_grains)
        lab[chunk] = self.labels[gid[chunk]]
        it["label"] = lab
        return it

    def _summaries(self, mode, a, b, tok, col_of) -> pd.DataFrame:
        lo, hi = self.owner_extent[mode]
        bp = self.by_pos
        n = len(a)
        if n:
            idx = np.empty(2 * n, np.int64)
            idx[0::2], idx[1::2] = a, b
            y0, y1 = _interval_extent(lo, hi, bp, a, b)
            crit = np.logical_or.reduceat(np.r_[self.crit_pos, False], idx)[0::2]
        else:
            y0 = y1 = np.zeros(0, np.int64)
            crit = np.zeros(0, bool)
        ng = self.cum_grains[b] - self.cum_grains[a]
        work = self.cum_work[b] - self.cum_work[a]
        x = col_of[bp[a]] if n else np.zeros(0, np.int64)
        lab = np.char.add(ng.astype(str), " grains") if n else np.zeros(0, str)
        return pd.DataFrame({
            "kind": "summary", "grain": -1, "y0": y0, "y1": y1, "weight": work,
            "n_members": b - a, "critical": crit, "x": x, "label": lab.astype(object),
            "token": tok.astype(object), "n_grains": ng, "work": work, "span": y1 - y0,
            "pos0": a, "pos1": b})

    def _edges(self, item_of, mode) -> pd.DataFrame:
        """Graph edges between different items, merged per (src, dst, type).
        ys, yd: the times its end nodes meet (the source node's end, the
        destination's start), so an edge leaves a grouped item (a thread's
        book-keeping, a task's fragments) where its member does, not at the
        group's bottom."""
        s, d = item_of[self.e_src], item_of[self.e_dst]
        keep = (s != d) & (s >= 0) & (d >= 0)
        codes, names = self.e_type
        y0, y1 = self.y[mode]
        e = pd.DataFrame({"src": s[keep], "dst": d[keep], "type": codes[keep],
                          "critical": self.e_critical[keep],
                          "ys": y1[self.e_src[keep]], "yd": y0[self.e_dst[keep]]})
        e = e.groupby(["src", "dst", "type"], sort=True).agg(
            critical=("critical", "any"), count=("critical", "size"),
            ys=("ys", "min"), yd=("yd", "min")).reset_index()
        e["type"] = names[e["type"].to_numpy()]
        e["bundled"] = e["count"] > 1          # grouped items: one edge per pair, counted
        return e


def _interval_extent(lo, hi, bp, a, b):
    """Earliest top and latest bottom of the owners in each pre-order
    interval [a, b) (a collapsed subtree)."""
    idx = np.empty(2 * len(a), np.int64)
    idx[0::2], idx[1::2] = a, b
    y0 = np.minimum.reduceat(np.r_[lo[bp], 0], idx)[0::2]
    y1 = np.maximum.reduceat(np.r_[hi[bp], 0], idx)[0::2]
    return y0, y1


def _lanes(run, y0, y1) -> np.ndarray:
    """Lane of every interval [y0, y1) within its run, no two overlapping
    intervals of one run in one lane. Greedy, a round per lane (not per
    interval): each round every run takes the chain that starts at its
    earliest unplaced interval and goes on with the first unplaced one that
    starts where the previous ends or later, all chains found at once by
    pointer doubling. Past LANE_ROUNDS lanes, what is left gets a lane each."""
    n = len(run)
    order = np.lexsort((y1, y0, run))
    # times as ranks: (run, time) becomes one sortable integer key
    _, rk = np.unique(np.r_[y0, y1], return_inverse=True)
    r0, r1, R = rk[:n][order], rk[n:][order], np.asarray(run)[order]
    span = 2 * n + 1
    lane = np.full(n, -1, np.int64)
    left = np.arange(n)                       # unplaced, in (run, y0) order
    for k in range(LANE_ROUNDS):
        if not len(left):
            return lane
        rr, m = R[left], len(left)
        nxt = np.searchsorted(rr * span + r0[left], rr * span + r1[left], side="left")
        nxt = np.minimum(np.maximum(nxt, np.arange(1, m + 1)), m)
        nxt = np.where(rr[np.minimum(nxt, m - 1)] == rr, nxt, m)   # same run only
        on = _reachable(nxt, np.flatnonzero(np.r_[True, rr[1:] != rr[:-1]]), m)
        lane[order[left[on]]] = k
        left = left[~on]
    rr = R[left]
    first = np.maximum.accumulate(np.where(np.r_[True, rr[1:] != rr[:-1]],
                                           np.arange(len(left)), 0))
    lane[order[left]] = LANE_ROUNDS + np.arange(len(left)) - first
    return lane


def _reachable(nxt, heads, m) -> np.ndarray:
    """Mask of the nodes 0..m-1 on the chains that start at `heads` and
    follow `nxt` (m: the end), by pointer doubling: log2(m) passes."""
    jump = np.r_[nxt, m]
    on = np.zeros(m + 1, bool)
    on[heads] = True
    count = -1
    while on.sum() != count:
        count = on.sum()
        on[jump[np.flatnonzero(on)]] = True      # nodes 2^k steps further
        jump = jump[jump]
    return on[:m]


def _bundle_fans(e: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Creation edges into a packed fan drawn as one edge (from the first
    fork to the fan's first grain), synchronization edges out of it as one
    per join (from the fan's last grain to it), with the count they stand
    for; unless on the critical path, which stays drawn edge by edge. A
    single producer's 200 tasks then draw two edges, not two wedges of 200;
    dependence and continuation edges are all kept."""
    fan = items["fan"].to_numpy(np.int64)
    s, d = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
    typ, crit = e["type"].to_numpy().astype(str), e["critical"].to_numpy(bool)
    cre = (typ == "creation") & ~crit & (fan[d] >= 0) & (fan[s] != fan[d])
    syn = (typ == "synchronization") & ~crit & (fan[s] >= 0) & (fan[s] != fan[d])
    if not (cre | syn).any():
        return e
    c = e[cre].assign(key=fan[d[cre]])
    c = _first_by(c, "ys", "src", ascending=True).join(
        _first_by(c, "yd", "dst", ascending=True), on="key")
    y = e[syn].assign(key=fan[s[syn]] * (len(items) + 1) + d[syn])
    y = _first_by(y, "ys", "src", ascending=False).join(
        _first_by(y, "yd", "dst", ascending=True), on="key")
    out = pd.concat([c, y]).reset_index(drop=True)
    out["bundled"] = out["count"] > 1
    return pd.concat([e[~(cre | syn)], out[e.columns]], ignore_index=True)


def _first_by(part: pd.DataFrame, time: str, end: str, ascending: bool) -> pd.DataFrame:
    """Per bundle (`key`): the end item (`end`) and time of its earliest (or
    latest) edge; the bundle's type and count with the source end."""
    first = part.sort_values(time, ascending=ascending, kind="stable").groupby("key")
    if end == "src":
        return first.agg(src=("src", "first"), ys=("ys", "first"), type=("type", "first"),
                         critical=("critical", "any"), count=("count", "sum"))
    return first.agg(dst=("dst", "first"), yd=("yd", "first"))


def _window(items: pd.DataFrame, G: int) -> tuple:
    """The grains' extent, with a margin: the serial code before and after
    the parallel part (often most of a short run) would squeeze it."""
    y0, y1 = items["y0"].to_numpy(np.float64), items["y1"].to_numpy(np.float64)
    if not len(items):
        return (0.0, 1.0)
    kind = items["kind"].to_numpy().astype(str)
    gid = items["grain"].to_numpy(np.int64)
    m = (np.isin(kind, ["fragment", "chunk"]) & (gid >= 0) & (gid < G)) | (kind == "summary")
    lo, hi = (y0[m].min(), y1[m].max()) if m.any() else (y0.min(), y1.max())
    pad = max(hi - lo, 1.0) * 0.04
    return (max(lo - pad, float(y0.min())), min(hi + pad, float(y1.max())))


def _time_breaks(items: pd.DataFrame, window, G: int) -> np.ndarray:
    """Stretches of the shown time, [t0, t1) ns as rows, in which nothing or
    one element at a time is drawn and that element is no grain's own work:
    a join or book-keeping that took long (a 12 ms taskwait), a collapsed
    subtree running long after the rest, serial code. Those longer than
    BREAK_MIN of the time the rest takes are cut short (`time_map`) and
    marked, so one such stretch does not leave the rest a strip at the top.
    A grain alone keeps its length: a long serial grain is what the picture
    must show."""
    lo, hi = window
    a, b, ok = _runtime_alone(items, window, G)
    span = max(hi - lo, 1.0)
    busy = span - float((b - a)[ok].sum())
    cut = ok & (b - a > BREAK_MIN * max(busy, BREAK_FLOOR * span))
    return np.c_[a[cut], b[cut]]


def _runtime_alone(items: pd.DataFrame, window, G: int) -> tuple:
    """The shown time as consecutive stretches [a, b) and whether each shows
    nothing, or one element at a time that is no grain's own work (`ok`):
    a sweep over the items' ends, counting the items drawn and summing
    their ids (the sum is the id when one is drawn)."""
    lo, hi = window
    if not len(items):
        return np.zeros(0), np.zeros(0), np.zeros(0, bool)
    y0, y1 = items["y0"].to_numpy(np.float64), items["y1"].to_numpy(np.float64)
    m = np.flatnonzero(y1 > y0)
    kind = items["kind"].to_numpy().astype(str)
    gid = items["grain"].to_numpy(np.int64)
    work = np.isin(kind, ["fragment", "chunk"]) & (gid >= 0) & (gid < G)
    t = np.clip(np.r_[y0[m], y1[m], lo, hi], lo, hi)
    step = np.r_[np.ones(len(m)), -np.ones(len(m)), 0, 0]
    order = np.argsort(t, kind="stable")
    t = t[order]
    drawn = np.cumsum(step[order])[:-1]                       # on [t[i], t[i+1])
    who = np.cumsum((np.r_[m, m, 0, 0] * step)[order])[:-1]
    one = np.clip(np.round(who).astype(np.int64), 0, len(items) - 1)
    ok = (drawn < 0.5) | ((np.abs(drawn - 1) < 0.5) & ~work[one])
    keep = np.diff(t) > 0                              # instants do not end a stretch
    t0, t1, ok = t[:-1][keep], t[1:][keep], ok[keep]
    if not len(ok):
        return t0, t1, ok
    run = np.cumsum(np.r_[True, ok[1:] != ok[:-1]])
    return (pd.Series(t0).groupby(run).min().to_numpy(),
            pd.Series(t1).groupby(run).max().to_numpy(),
            pd.Series(ok).groupby(run).first().to_numpy())


def time_map(d: Drawing) -> tuple:
    """Knots (real ns, drawn ns) of the drawing's time axis: the identity but
    for its breaks, each drawn BREAK_SHOW of the unbroken time long (all
    together at most BREAKS_SHOW of it): `np.interp(t, *time_map(d))`;
    slope 1 beyond the window."""
    lo, hi = d.window
    br = np.asarray(d.extra.get("breaks", np.zeros((0, 2))), np.float64).reshape(-1, 2)
    far = 1e18
    real = np.r_[lo - far, lo, br.ravel(), hi, hi + far]
    seg = np.diff(real)
    kept = (hi - lo) - float((br[:, 1] - br[:, 0]).sum())
    # each BREAK_SHOW of the rest, all together at most BREAKS_SHOW
    show = min(BREAK_SHOW, BREAKS_SHOW / max(len(br), 1)) * max(kept, 1.0)
    seg[2:2 + 2 * len(br):2] = np.minimum(seg[2:2 + 2 * len(br):2], show)
    # summed from lo, so that lo maps exactly (lo - 1e18 + 1e18 loses digits)
    return real, np.r_[lo - far, lo, lo + np.cumsum(seg[1:])]


def from_start(d: Drawing, t) -> np.ndarray:
    """Drawn time from the window's start (ns) of real times `t`: 0 at the
    top of the shown region, breaks cut short."""
    real, drawn = time_map(d)
    return np.interp(np.asarray(t, np.float64), real, drawn) - d.window[0]


def time_ticks(d: Drawing, n: int = 6) -> tuple:
    """Ticks of the time axis: (real ns from the start, drawn position ns from
    the start) of round instants about n to the drawn height, none inside a
    break, and each break's end; and the breaks as (drawn start, drawn end,
    real length ns)."""
    lo, hi = d.window
    br = np.asarray(d.extra.get("breaks", np.zeros((0, 2))), np.float64).reshape(-1, 2)
    drawn_span = max(float(from_start(d, hi)), 1.0)
    step = 10 ** np.floor(np.log10(drawn_span / n))
    for grow in (2, 2.5, 2):                  # 1, 2, 5, 10 x 10^k
        if drawn_span / step > 2 * n:
            step *= grow
    t = np.arange(0.0, max(hi - lo, 1.0) + 1, step)
    near = (t[:, None] + lo > br[:, 0] - step / 3) & (t[:, None] + lo < br[:, 1] + step / 3)
    t = np.union1d(np.r_[0.0, t[~near.any(1)]], br[:, 1] - lo)
    return t, from_start(d, t + lo), np.c_[from_start(d, br[:, 0]), from_start(d, br[:, 1]),
                                           br[:, 1] - br[:, 0]]


def _codes_and_names(col):
    """(integer codes, names) of a categorical or string column; the codes
    as narrow as the names allow (int8 for the few edge types: 8 bytes an
    edge at int64)."""
    codes, names = pd.factorize(col, sort=False)
    if len(names) < 127:
        codes = codes.astype(np.int8)
    return codes, np.asarray(names.astype(str), dtype=object)


class Less:
    """`base - less` (less: an array or a number), made only for the
    indexed part: `Less(a, b)[idx] == (a - b)[idx]`."""

    def __init__(self, base: np.ndarray, less):
        self.base, self.less = base, less

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, idx):
        less = self.less[idx] if isinstance(self.less, np.ndarray) else self.less
        return self.base[idx] - less

    @staticmethod
    def whole(y) -> np.ndarray:
        """The array itself, or a Less made in full."""
        return y.base - y.less if isinstance(y, Less) else y


class Coded:
    """A column kept as small integer codes; indexing gives the names."""

    def __init__(self, codes: np.ndarray, names: np.ndarray):
        self.codes, self.names = codes, names

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, idx):
        return self.names[self.codes[idx]]


def _type_codes(col) -> np.ndarray:
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = [NODE_TYPES.index(c) for c in col.cat.categories]
        return np.asarray(cats, np.int64)[col.cat.codes.to_numpy()]
    return pd.Index(NODE_TYPES).get_indexer(col.astype(str))


def _idle_members_first(key, parent, cx, G) -> np.ndarray:
    """Sibling order: a team's implicit tasks that created nothing before the
    others. A single producer's subtree then lies right of its whole team,
    and the team barrier (drawn at its leftmost member, `_columns`) is a
    short edge from every member instead of a diagonal across the subtree."""
    M = len(parent)
    has_child = np.zeros(M, dtype=bool)
    has_child[parent[parent >= 0]] = True
    idle = np.zeros(M, dtype=bool)
    idle[G:] = (cx["kind"].astype(str).to_numpy() == "implicit") & ~has_child[G:]
    key = np.asarray(key, dtype=np.int64)
    return np.where(idle, key - (1 << 61), key)


def _columns(g, pos) -> np.ndarray:
    """Owner whose column holds every node: the node's grain (chunks their
    own column, the rest their owner's); a team join (grain -1) its
    leftmost participant's."""
    nodes = g.nodes
    col = nodes["grain"].to_numpy(np.int64).copy()
    team = np.flatnonzero(col < 0)
    if len(team):
        e = g.edges
        src, dst = e["src"].to_numpy(), e["dst"].to_numpy()      # ids: int32 or int64
        into = np.isin(dst, team) & (col[src] >= 0)
        anchor = pd.Series(pos[col[src[into]]]).groupby(dst[into]).min()
        by_pos = np.empty(len(pos), np.int64)
        by_pos[pos] = np.arange(len(pos))
        col[anchor.index.to_numpy()] = by_pos[anchor.to_numpy()]
        root = int(by_pos[0]) if len(pos) else 0
        col[col < 0] = root
    return col


def _owner_extent(col, y0, y1, M):
    """Earliest top and latest bottom of every owner's nodes."""
    lo = np.full(M, np.iinfo(np.int64).max, np.int64)
    hi = np.full(M, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, col, y0)
    np.maximum.at(hi, col, y1)
    return lo, hi


def _chunk_labels(gr) -> np.ndarray:
    """Iteration range of every chunk ("first-last"), "" for tasks."""
    if "first_iteration" not in gr:
        return np.full(len(gr), "", dtype=object)
    first = gr["first_iteration"].to_numpy(np.int64)
    n = gr["iterations"].to_numpy(np.int64)
    out = np.full(len(gr), "", dtype=object)
    if not (first >= 0).any():
        return out
    # strings for the chunks only (a label per grain was ~0.1 us a grain)
    at = np.flatnonzero(is_one_of(gr["kind"], "chunk") & (n > 0))
    out[at] = (pd.Series(first[at]).astype(str) + "-"
               + pd.Series(first[at] + n[at] - 1).astype(str)).to_numpy(dtype=object)
    return out


def _parse_tokens(expand, M):
    """Expanded owners ("c<id>": a collapsed subtree opened) and pages of
    children shown ("m<id>": the next SIBLING_PAGE children of <id>)."""
    expanded = np.zeros(M, bool)
    pages = np.zeros(M, np.int64)
    for tok in expand or ():      # a handful of clicks, not grains
        try:
            k, i = str(tok)[0], int(str(tok)[1:])
        except (ValueError, IndexError):
            continue
        if not 0 <= i < M:
            continue
        if k == "c":
            expanded[i] = True
        elif k == "m":
            pages[i] += 1
    return expanded, pages


def item_fill(items: pd.DataFrame, n_grains: int) -> np.ndarray:
    """Fill colour of every item: its kind's, a context's grey, a problem
    grain's severity colour, or dimmed."""
    kind = items["kind"].to_numpy().astype(str)
    gid = items["grain"].to_numpy(np.int64)
    fill = np.array([KIND_COLORS.get(k, "#999") for k in kind], dtype=object)
    fill[(kind == "chunk")] = CHUNK_FILL
    fill[(kind == "fragment") & (gid >= n_grains)] = CONTEXT_COLOR
    cls = severity_class(items["sev"].to_numpy(np.float64))
    grainish = np.isin(kind, ["fragment", "chunk", "summary"]) & ((gid < n_grains) | (kind == "summary"))
    fill[grainish & (cls == 0)] = DIMMED
    for k in range(1, SEVERITY_STEPS + 1):
        fill[grainish & (cls == k)] = SEVERITY_COLORS[k - 1]
    return fill


def _item_severity(items, severity, G) -> np.ndarray:
    """The grain's severity for fragments and chunks of grains, the worst
    of its grains' for a summary (NaN where none applies)."""
    out = np.full(len(items), np.nan)
    if severity is None:
        return out
    sev = np.asarray(severity, np.float64)
    kind = items["kind"].to_numpy()
    gid = items["grain"].to_numpy(np.int64)
    own = np.isin(kind, ["fragment", "chunk"]) & (gid >= 0) & (gid < G)
    out[own] = sev[gid[own]]
    return out


def problem_severity(analysis, problem: str):
    """Severity in [0, 1] per grain of `problem` at the analysis's threshold
    (as `grainlab analyze` and the web app count them); None for "none"."""
    from .. import problems as P
    from ..errors import UsageError
    if problem in (None, "none"):
        return None
    grains = analysis.grains
    if problem not in P.RULES or problem not in grains.columns:
        have = [m for m in P.RULES if m in grains.columns]
        raise UsageError(f"--problem: unknown or unavailable problem {problem!r} "
                         f"(have: {', '.join(have)}, none)")
    th = analysis.resolved_thresholds[problem]
    sev = P.severity(grains[problem], problem, th)
    floor = P.floor_mask(grains, problem, analysis.resolved_thresholds)
    return np.where(floor, sev, 0.0) if floor is not None else np.asarray(sev, np.float64)
