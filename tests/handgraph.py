"""Small grain graphs built by hand, following docs/graph-model.md, for metric
tests whose answers are computed by hand (no trace, no graph builder involved).

    b = HandGraph()
    foo = b.task("0.0")
    n0 = b.node(foo, "fragment", start=0, duration=2)
    ...
    g = b.build()     # GrainGraph-like object: nodes, edges, grains, meta, span, work ...

Derived grain columns (work, creation_cost, bookkeeping_cost, join, sync_cost)
follow the contract; span and the critical path come from networkx, so they are
an independent reference for the metrics' own longest-path pass.
"""
from __future__ import annotations

from types import SimpleNamespace

import networkx as nx
import numpy as np
import pandas as pd


class HandGraph:
    def __init__(self):
        self.grain_rows = []
        self.node_rows = []
        self.edge_rows = []

    def task(self, identity, parent=-1, thread=0, cpu=0, codeptr=0x1000):
        self.grain_rows.append(dict(kind="task", identity=identity, parent=parent,
                                    thread=thread, cpu=cpu, codeptr=codeptr, loop="",
                                    child_number=len(self.grain_rows)))
        return len(self.grain_rows) - 1

    def chunk(self, loop, first_iteration, thread, cpu=None, parent=-1, codeptr=0x2000):
        self.grain_rows.append(dict(kind="chunk", identity=f"{loop}@{first_iteration}",
                                    parent=parent, thread=thread,
                                    cpu=thread if cpu is None else cpu,
                                    codeptr=codeptr, loop=loop, child_number=-1))
        return len(self.grain_rows) - 1

    def node(self, owner, type, start, duration, thread=0, sync_time=0, child=-1):
        self.node_rows.append(dict(type=type, grain=owner, thread=thread, cpu=thread,
                                   start=start, end=start + duration, duration=duration,
                                   sync_time=sync_time, child=child))
        return len(self.node_rows) - 1

    def edge(self, src, dst, type="continuation"):
        self.edge_rows.append(dict(src=src, dst=dst, type=type))

    def chain(self, *nodes):
        for a, b in zip(nodes, nodes[1:]):
            self.edge(a, b, "continuation")

    def build(self, meta=None):
        nodes = pd.DataFrame(self.node_rows)
        edges = pd.DataFrame(self.edge_rows, columns=["src", "dst", "type"])
        grains = pd.DataFrame(self.grain_rows)
        n_grains = len(grains)
        typ = nodes["type"].to_numpy()
        owner = nodes["grain"].to_numpy()
        dur = nodes["duration"].to_numpy()

        # waiter join of each grain: target of the synchronization edge from its nodes
        sync = edges[edges["type"] == "synchronization"]
        join_of = dict(zip(owner[sync["src"].to_numpy()], sync["dst"].to_numpy()))
        n_waited = sync.groupby("dst").size()
        nodes["n_waited"] = n_waited.reindex(nodes.index, fill_value=0).to_numpy()

        grains["work"] = [int(dur[(owner == i) & np.isin(typ, ["fragment", "chunk"])].sum())
                          for i in range(n_grains)]
        fork_of = {int(nodes.at[i, "child"]): i for i in np.flatnonzero(typ == "fork")}
        grains["creation_cost"] = [float(dur[fork_of[i]]) if i in fork_of else np.nan
                                   for i in range(n_grains)]
        bk = {}
        for s, d in zip(edges["src"], edges["dst"]):
            if typ[s] == "bookkeeping" and typ[d] == "chunk":
                bk[owner[d]] = float(dur[s])
        grains["bookkeeping_cost"] = [bk.get(i, np.nan) if grains.at[i, "kind"] == "chunk"
                                      else np.nan for i in range(n_grains)]
        grains["join"] = [int(join_of.get(i, -1)) for i in range(n_grains)]
        grains["sync_cost"] = [
            nodes.at[j, "sync_time"] / nodes.at[j, "n_waited"] if j >= 0 else np.nan
            for j in grains["join"]]

        G = nx.DiGraph()
        G.add_nodes_from(range(len(nodes)))
        G.add_edges_from(zip(edges["src"], edges["dst"]))
        # node weights moved onto edges: longest path from a virtual source
        H = nx.DiGraph()
        for v in G.nodes:
            H.add_edge(("in", v), ("out", v), weight=int(dur[v]))
            H.add_edge("S", ("in", v), weight=0)
            H.add_edge(("out", v), "T", weight=0)
        for a, b in G.edges:
            H.add_edge(("out", a), ("in", b), weight=0)
        path = nx.dag_longest_path(H, weight="weight")
        span = nx.dag_longest_path_length(H, weight="weight")
        cp = [p[1] for p in path if isinstance(p, tuple) and p[0] == "in"]
        nodes["on_critical_path"] = nodes.index.isin(cp)
        crit_grains = [int(owner[v]) for v in cp if 0 <= owner[v] < n_grains]
        crit_grains = list(dict.fromkeys(crit_grains))
        grains["on_critical_path"] = grains.index.isin(crit_grains)
        grains["start"] = [int(nodes["start"][owner == i].min()) for i in range(n_grains)]
        grains["end"] = [int(nodes["end"][owner == i].max()) for i in range(n_grains)]
        grains["kind"] = grains["kind"].astype("category")
        nodes["type"] = nodes["type"].astype("category")
        edges["type"] = edges["type"].astype("category")
        work = int(dur.sum())
        return SimpleNamespace(
            nodes=nodes, edges=edges, grains=grains,
            contexts=pd.DataFrame(), meta=dict(meta or {}),
            critical_path=np.asarray(cp, np.int64),
            critical_grains=np.asarray(crit_grains, np.int64),
            span=int(span), work=work, grain_work=int(grains["work"].sum()),
            parallelism=work / span if span else float("nan"))


def thesis_fig_5_3():
    """Thesis Fig. 5.3a/5.4: foo creates bar, computes, creates baz, computes,
    waits for both. Durations (ns, forks and the join weigh 0):
        foo: frag [0,2) fork(bar) frag [2,5) fork(baz) frag [5,6) join frag [10,11)
        bar: [2,7)   baz: [5,10)
    With 1-ns intervals the counts are 1 1 2 2 2 3 2 1 1 1 1: interval 4 ([4,5))
    holds foo and bar -> 2; baz overlaps intervals 5..9, whose least count is 1."""
    b = HandGraph()
    foo = b.task("0.0", codeptr=0x1000)
    bar = b.task("0.0.0", parent=foo, thread=1, cpu=1, codeptr=0x1100)
    baz = b.task("0.0.1", parent=foo, thread=0, codeptr=0x1200)
    f0 = b.node(foo, "fragment", 0, 2)
    k1 = b.node(foo, "fork", 2, 0, child=bar)
    f1 = b.node(foo, "fragment", 2, 3)
    k2 = b.node(foo, "fork", 5, 0, child=baz)
    f2 = b.node(foo, "fragment", 5, 1)
    j = b.node(foo, "join", 6, 0, sync_time=4)
    f3 = b.node(foo, "fragment", 10, 1)
    b.chain(f0, k1, f1, k2, f2, j, f3)
    nbar = b.node(bar, "fragment", 2, 5, thread=1)
    nbaz = b.node(baz, "fragment", 5, 5, thread=0)
    b.edge(k1, nbar, "creation")
    b.edge(k2, nbaz, "creation")
    b.edge(nbar, j, "synchronization")
    b.edge(nbaz, j, "synchronization")
    return b.build(), dict(foo=foo, bar=bar, baz=baz)


def fork_join(k, child_work=10, fork_cost=0, sync_time=0, threads=1):
    """A root task that creates k equal children, then waits for them."""
    b = HandGraph()
    root = b.task("0.0")
    prev = b.node(root, "fragment", 0, 0)
    kids = []
    t = 0
    for i in range(k):
        c = b.task(f"0.0.{i}", parent=root, thread=i % threads, cpu=i % threads)
        fk = b.node(root, "fork", t, fork_cost, child=c)
        fr = b.node(root, "fragment", t + fork_cost, 0)
        b.chain(prev, fk, fr)
        n = b.node(c, "fragment", t + fork_cost, child_work, thread=i % threads)
        b.edge(fk, n, "creation")
        kids.append((c, n))
        prev = fr
        t += fork_cost
    j = b.node(root, "join", t, 0, sync_time=sync_time)
    last = b.node(root, "fragment", t + child_work, 0)
    b.chain(prev, j, last)
    for _, n in kids:
        b.edge(n, j, "synchronization")
    return b.build(), root, [c for c, _ in kids]


def task_chain(depth, work=10):
    """Each task computes, creates the next one and waits for it."""
    b = HandGraph()
    parent, fork, t = -1, None, 0
    waits = []
    for d in range(depth):
        me = b.task("0" + ".0" * (d + 1), parent=parent)
        f = b.node(me, "fragment", t, work)
        if fork is not None:
            b.edge(fork, f, "creation")
        t += work
        if d < depth - 1:
            fork = b.node(me, "fork", t, 0, child=me + 1)
            j = b.node(me, "join", t, 0)
            after = b.node(me, "fragment", t, 0)
            b.chain(f, fork, j, after)
            waits.append((me, j))
        parent = me
    # synchronization: each child's last node -> its parent's join
    for (p, j) in reversed(waits):
        child = p + 1
        child_last = [i for i, r in enumerate(b.node_rows) if r["grain"] == child][-1]
        b.edge(child_last, j, "synchronization")
    return b.build()


def loop(chunks_per_thread, bookkeeping=1, region_thread_cpu=None):
    """One loop instance `0.p0.L0`: thread t runs bookkeeping -> chunk -> ... ->
    bookkeeping, then every thread meets the loop's join. chunks_per_thread is
    a list (per thread) of chunk works; chunk first iterations count up."""
    b = HandGraph()
    ends = []
    it = 0
    chunks = []
    for t, works in enumerate(chunks_per_thread):
        time = 0
        prev = None
        for w in works:
            bk = b.node(-1, "bookkeeping", time, bookkeeping, thread=t)
            time += bookkeeping
            c = b.chunk("0.p0.L0", it, thread=t)
            chunks.append(c)
            it += 10
            n = b.node(c, "chunk", time, w, thread=t)
            time += w
            if prev is not None:
                b.edge(prev, bk)
            b.edge(bk, n)
            prev = n
        last = b.node(-1, "bookkeeping", time, bookkeeping, thread=t)
        b.edge(prev, last)
        ends.append((last, time + bookkeeping))
    j = b.node(-1, "join", max(e for _, e in ends), 0, thread=-1)
    for last, _ in ends:
        b.edge(last, j, "continuation")
    g = b.build()
    g.grains.loc[chunks, "join"] = j
    return g, chunks
