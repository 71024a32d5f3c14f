"""The grain graph's structure (docs/graph-model.md) on real example programs
recorded through libomp, a hand-written trace of the thesis's Fig. 5.3a, and
synthetic traces with exact durations."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tracegen import TraceBuilder, task_id

from grainlab import schema as S
from grainlab import synth
from grainlab.graph import build
from grainlab.trace.trace import load


def graph_of(record, program, *args, threads=2):
    return build(record(program, *args, threads=threads))


def counts(series) -> dict:
    return {k: int(v) for k, v in series.value_counts().items() if v}


def fib_tasks(n, d, cutoff):
    if n < 2 or d >= cutoff:
        return 0
    return 2 + fib_tasks(n - 1, d + 1, cutoff) + fib_tasks(n - 2, d + 1, cutoff)


def succ(g, node_ids):
    """Continuation successor of chain nodes (NaN if none)."""
    e = g.edges[(g.edges["type"] == "continuation") & g.edges["src"].isin(node_ids)]
    assert not e["src"].duplicated().any()
    nxt = pd.Series(e["dst"].to_numpy(), index=e["src"].to_numpy())
    return nxt.reindex(node_ids).to_numpy(dtype=float)


# -- exact node and edge counts ----------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,cutoff", [(12, 4), (9, 20)])
def test_fib_node_and_edge_counts(record, n, cutoff, threads):
    trace = record("fib", n, cutoff, threads=threads)
    g = build(trace)
    tasks = fib_tasks(n, 0, cutoff)
    parents = tasks // 2                # creating calls, the root call in the single included
    team = threads
    barriers = int(((trace.events["event"] == S.SYNC_BEGIN)
                    & trace.events["kind"].isin(S.SYNC_BARRIERS)).sum()) // team
    nodes = counts(g.nodes["type"])
    assert len(g.grains) == tasks and (g.grains["kind"] == "task").all()
    assert nodes["fork"] == tasks + team                 # one per task + one per implicit task
    joins = counts(g.nodes["join_kind"])
    assert joins["taskwait"] == parents
    assert joins["barrier"] == barriers
    assert joins["region_end"] == 1 and joins["program_end"] == 1
    # fragments: a task with c children and a taskwait has c + 2; a leaf has 1
    kids = g.grains["n_children"].to_numpy()
    assert (g.grains["n_fragments"].to_numpy() == np.where(kids > 0, kids + 2, 1)).all()
    edges = counts(g.edges["type"])
    assert edges["creation"] == tasks + team
    assert edges["synchronization"] == tasks + team
    assert edges.get("dependence", 0) == 0
    # every task is waited for by its parent's taskwait
    waiter = g.grains["join"].to_numpy()
    assert (g.nodes["join_kind"].to_numpy()[waiter] == "taskwait").all()
    parent = g.grains["parent"].to_numpy()
    assert (g.nodes["owner"].to_numpy()[waiter] == parent).all()


def test_fork_has_exactly_one_child_and_chains_are_sequences(record):
    g = graph_of(record, "fib", 11, 3)
    forks = np.flatnonzero((g.nodes["type"] == "fork").to_numpy())
    creation = g.edges[g.edges["type"] == "creation"]
    assert sorted(creation["src"].tolist()) == sorted(forks.tolist())
    # continuation: every node has at most one continuation successor per chain
    cont = g.edges[g.edges["type"] == "continuation"]
    chain = cont[g.nodes["grain"].to_numpy()[cont["src"].to_numpy()] >= 0]
    assert not chain["src"].duplicated().any()


def test_lineage_is_the_same_with_1_and_2_threads(record):
    one = graph_of(record, "fib", 12, 4, threads=1).grains
    two = graph_of(record, "fib", 12, 4, threads=2).grains
    assert sorted(one["identity"]) == sorted(two["identity"])
    a = one.set_index("identity")[["n_fragments", "n_children", "depth"]].sort_index()
    b = two.set_index("identity")[["n_fragments", "n_children", "depth"]].sort_index()
    pd.testing.assert_frame_equal(a, b)


def test_trace_graph_is_graph_build(record):
    trace = record("fib", 9, 3)
    via_trace, via_build = trace.graph(), build(trace)
    pd.testing.assert_frame_equal(via_trace.nodes, via_build.nodes)
    pd.testing.assert_frame_equal(via_trace.edges, via_build.edges)
    pd.testing.assert_frame_equal(via_trace.grains, via_build.grains)
    assert via_trace.span == via_build.span > 0


@pytest.mark.parametrize("program,args", [("fib", (12, 4)), ("tree", (3, 3)),
                                          ("depend", (6,))])
@pytest.mark.parametrize("threads", [1, 2])
def test_lineage_is_unique_across_explicit_and_implicit_tasks(record, program, args,
                                                             threads):
    """A single winner's explicit child c (`L.p<r>.<c>`) must not share its name
    with implicit task c of the same region (`L.p<r>.i<c>`)."""
    tasks = record(program, *args, threads=threads).tasks()
    kinds = set(tasks["kind"])
    assert {"explicit", "implicit"} <= kinds
    lineage = tasks["lineage"]
    assert lineage.notna().all()
    assert not lineage.duplicated().any(), lineage[lineage.duplicated(keep=False)].tolist()
    implicit = tasks.loc[tasks["kind"] == "implicit", "lineage"]
    winners = tasks.loc[tasks["winner"], "lineage"]
    assert all(".i" in name for name in implicit if name not in set(winners))
    g = record(program, *args, threads=threads).graph()
    both = pd.concat([g.grains.loc[g.grains["kind"] == "task", "identity"],
                      g.contexts["identity"]])
    assert not both.duplicated().any()


def test_tasks_without_taskwait_join_at_the_region_end_barrier(record):
    trace = record("tree", 3, 3)
    g = build(trace)
    assert len(g.grains) == 3 + 9 + 27
    waiter = g.grains["join"].to_numpy()
    assert (g.nodes["join_kind"].to_numpy()[waiter] == "barrier").all()
    assert len(set(waiter.tolist())) == 1                # one barrier: the region's end
    barrier = waiter[0]
    assert g.nodes.at[barrier, "n_waited"] == len(g.grains)
    # it is the region's last barrier: its successors lead to the region_end join
    region_end = np.flatnonzero((g.nodes["join_kind"] == "region_end").to_numpy())
    assert len(region_end) == 1
    e = g.edges
    into_end = e[(e["dst"] == region_end[0]) & (e["type"] == "synchronization")]["src"]
    nxt = succ(g, into_end.to_numpy())
    assert np.isnan(nxt).all()                          # implicit tasks end there


def test_taskgroup_waits_for_grandchildren(record):
    g = graph_of(record, "taskgroup", 7)
    assert len(g.grains) == 21
    waiter = g.grains["join"].to_numpy()
    assert (g.nodes["join_kind"].to_numpy()[waiter] == "taskgroup").all()
    assert len(set(waiter.tolist())) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_undeferred_and_included_tasks_do_not_change_the_shape(record, threads):
    g = graph_of(record, "undeferred", 6, threads=threads)
    ref = graph_of(record, "undeferred", 6, threads=2)
    assert len(g.grains) == 4 * 6 + 1
    cols = ["identity", "n_fragments", "n_children"]
    a = g.grains[cols].sort_values("identity").reset_index(drop=True)
    b = ref.grains[cols].sort_values("identity").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    def wk(gr):
        return sorted(gr.nodes["join_kind"].to_numpy()[gr.grains["join"].to_numpy()].astype(str))
    assert wk(g) == wk(ref)
    if threads == 1:
        assert g.grains["undeferred"].all()


@pytest.mark.parametrize("threads", [1, 2])
def test_dependences_become_edges(record, threads):
    n = 6
    g = graph_of(record, "depend", n, threads=threads)
    dep = g.edges[g.edges["type"] == "dependence"]
    owner = g.nodes["grain"].to_numpy()
    pairs = set(zip(owner[dep["src"].to_numpy()].tolist(), owner[dep["dst"].to_numpy()].tolist()))
    assert len(pairs) == len(dep) == 8 * n - 4
    # sources end before sinks start (edges go forward in time)
    assert (g.nodes["end"].to_numpy()[dep["src"]] <= g.nodes["start"].to_numpy()[dep["dst"]]).all()


@pytest.mark.parametrize("schedule", ["static", "static,7", "dynamic,5", "guided"])
def test_loops_chunks_bookkeeping_and_the_loop_join(record, schedule):
    trace = record("loops", schedule, 200, threads=2)
    g = build(trace)
    chunks = trace.chunks()
    assert (g.grains["kind"] == "chunk").sum() == len(chunks) == int((g.nodes["type"] == "chunk").sum())
    assert set(g.grains.loc[g.grains["kind"] == "chunk", "identity"]) == set(chunks["id"])
    nodes = g.nodes
    chunk_nodes = nodes[nodes["type"] == "chunk"]
    per_task = chunk_nodes.groupby("owner").size()
    bk = nodes[nodes["type"] == "bookkeeping"].groupby("owner").size()
    implicit = g.contexts.index[g.contexts["kind"] == "implicit"]
    for ctx in implicit:
        c = int(per_task.get(ctx, 0))
        assert int(bk.get(ctx, 0)) == (c + 1 if c else 2)
    # each thread's chain: book-keeping -> chunk -> book-keeping ... -> the loop's join
    last_bk = nodes[nodes["type"] == "bookkeeping"].groupby("owner").tail(1).index.to_numpy()
    nxt = succ(g, last_bk).astype(int)
    assert (nodes["type"].to_numpy()[nxt] == "join").all()
    assert len(set(nxt.tolist())) == 1                  # one join for the whole loop
    chunk_join = g.grains.loc[g.grains["kind"] == "chunk", "join"].unique()
    assert list(chunk_join) == [nxt[0]]
    assert (g.grains.loc[g.grains["kind"] == "chunk", "work"] > 0).all()


# -- the thesis's Fig. 5.3a: foo creates bar and baz, computes in between, waits ----

def fig53a_trace(path):
    """Two threads; every time in ns (hz = 1e9). foo is a task of the implicit
    task 0; it creates bar at 200, computes until 500, creates baz, waits from
    520; thread 1 steals bar (300..990); foo runs baz in its taskwait (530..730)."""
    b = TraceBuilder()
    init, region = task_id(0, 1), task_id(0, 2)
    imp0, imp1 = task_id(0, 3), task_id(1, 1)
    foo, bar, baz = task_id(0, 4), task_id(0, 5), task_id(0, 6)
    E = S
    for t, ev, kw in [
        (0, E.THREAD_BEGIN, dict(kind=1)),
        (10, E.IMPLICIT_BEGIN, dict(task=init, value=1, count=1, kind=E.TASK_INITIAL)),
        (20, E.PARALLEL_BEGIN, dict(task=init, other=region, count=2, kind=0x80000002)),
        (30, E.IMPLICIT_BEGIN, dict(task=imp0, other=region, value=0, count=2, kind=E.TASK_IMPLICIT)),
        (100, E.TASK_CREATE, dict(task=foo, other=imp0, kind=E.TASK_EXPLICIT)),
        (110, E.SYNC_BEGIN, dict(task=imp0, other=region, kind=E.SYNC_TASKWAIT)),
        (120, E.TASK_SCHEDULE, dict(task=foo, other=imp0, kind=E.STATUS_SWITCH)),
        (200, E.TASK_CREATE, dict(task=bar, other=foo, kind=E.TASK_EXPLICIT)),
        (500, E.TASK_CREATE, dict(task=baz, other=foo, kind=E.TASK_EXPLICIT)),
        (520, E.SYNC_BEGIN, dict(task=foo, other=region, kind=E.SYNC_TASKWAIT)),
        (530, E.TASK_SCHEDULE, dict(task=baz, other=foo, kind=E.STATUS_SWITCH)),
        (730, E.TASK_SCHEDULE, dict(task=foo, other=baz, kind=E.STATUS_COMPLETE)),
        (1000, E.SYNC_END, dict(task=foo, other=region, kind=E.SYNC_TASKWAIT)),
        (1050, E.TASK_SCHEDULE, dict(task=imp0, other=foo, kind=E.STATUS_COMPLETE)),
        (1060, E.SYNC_END, dict(task=imp0, other=region, kind=E.SYNC_TASKWAIT)),
        (1070, E.SYNC_BEGIN, dict(task=imp0, other=region, kind=9)),
        (1080, E.SYNC_END, dict(task=imp0, other=region, kind=9)),
        (1090, E.IMPLICIT_END, dict(task=imp0, value=0, count=2, kind=E.TASK_IMPLICIT)),
        (1100, E.PARALLEL_END, dict(task=init, other=region, kind=0x80000002)),
        (1110, E.IMPLICIT_END, dict(task=init, value=1, count=1, kind=E.TASK_INITIAL)),
        (1120, E.THREAD_END, {}),
    ]:
        b.add(0, ev, t, **kw)
    for t, ev, kw in [
        (25, E.THREAD_BEGIN, dict(kind=2)),
        (40, E.IMPLICIT_BEGIN, dict(task=imp1, other=region, value=1, count=2, kind=E.TASK_IMPLICIT)),
        (50, E.SYNC_BEGIN, dict(task=imp1, other=region, kind=9)),
        (300, E.TASK_SCHEDULE, dict(task=bar, other=imp1, kind=E.STATUS_SWITCH)),
        (990, E.TASK_SCHEDULE, dict(task=imp1, other=bar, kind=E.STATUS_COMPLETE)),
        (1082, E.SYNC_END, dict(task=imp1, other=region, kind=9)),
        (1095, E.IMPLICIT_END, dict(task=imp1, value=1, count=2, kind=E.TASK_IMPLICIT)),
        (1096, E.THREAD_END, {}),
    ]:
        b.add(1, ev, t, **kw)
    return b.write(path)


def test_thesis_fig_5_3a_by_hand(tmp_path):
    g = build(load(fig53a_trace(tmp_path / "fig53a.parquet")))
    grains = g.grains.set_index("identity")
    foo, bar, baz = "0.p0.0", "0.p0.0.0", "0.p0.0.1"
    assert list(grains.index) == [foo, bar, baz]
    # creation gaps 10, 300, 20 -> estimate = 10th percentile = 12 ns
    assert g.meta["creation_cost_estimate_ns"] == 12
    assert grains["creation_cost"].tolist() == [10, 12, 12]
    # foo: 80 before bar, 300-12 until baz, 20-12 until its taskwait, 50 after it
    assert grains.at[foo, "work"] == 80 + 288 + 8 + 50
    assert grains.at[bar, "work"] == 690 and grains.at[baz, "work"] == 200
    assert grains["n_fragments"].tolist() == [4, 1, 1]
    # foo's join: 280 ns of its own time inside; shared by bar and baz
    assert grains.at[bar, "sync_cost"] == 140 and grains.at[baz, "sync_cost"] == 140
    # critical path by hand: initial 10, region fork 10, implicit 70, fork foo 10,
    # foo 80, fork bar 12, bar 690, foo's join 10 (from bar's end at 990 to 1000),
    # foo 50, implicit join 10, implicit 10, barrier 10, then thread 1's implicit
    # task 13 (longer than thread 0's 10), region end 0, initial 10
    assert g.span == 995
    assert list(g.grains.loc[g.critical_grains, "identity"]) == [foo, bar]
    assert not grains.at[baz, "on_critical_path"]
    assert g.work == 30 + 120 + 23 + 460 + 690 + 200
    assert g.parallelism == pytest.approx(1523 / 995)


# -- synthetic shapes with exact durations -------------------------------------

def test_a_task_spawning_k_equal_children_has_parallelism_k(tmp_path):
    k = 8
    path = tmp_path / "k.parquet"
    synth.generate(path, "spine", k, threads=2, timing=synth.Timing(work_ns=10**6), length=1)
    g = build(load(path))
    assert len(g.grains) == k
    assert g.parallelism == pytest.approx(k, rel=0.05)


def test_a_chain_of_tasks_has_parallelism_1(tmp_path):
    path = tmp_path / "chain.parquet"
    synth.generate(path, "spine", 30, threads=2, timing=synth.Timing(work_ns=10**6), length=30)
    g = build(load(path))
    assert g.grains["depth"].max() == 29        # the producer heads the chain
    assert g.parallelism == pytest.approx(1.0, abs=0.06)


def test_exact_work_of_synthetic_fork_join(tmp_path):
    path = tmp_path / "fj.parquet"
    t = synth.Timing()
    synth.generate(path, "fork-join", 500, threads=3, timing=t)
    g = build(load(path))
    gr = g.grains
    leaf = gr["n_children"] == 0
    assert (gr.loc[leaf, "work"] == t.work_ns).all()
    # parents: first fragment + last fragment; creation gaps are pure creation cost
    assert (gr.loc[~leaf, "work"] == t.work_ns + t.last_ns).all()
    assert (gr["creation_cost"] == t.create_ns).all()
    assert g.meta["creation_cost_estimate_ns"] == t.create_ns


def test_reductions_keep_member_weights(record):
    g = graph_of(record, "loops", "dynamic,3", 120)
    r = g.reduce()
    assert r.nodes["duration"].sum() == g.nodes["duration"].sum()
    assert r.nodes["n_members"].sum() == len(g.nodes)
    assert (r.group.to_numpy() >= 0).all() and len(r.group) == len(g.nodes)
    bk = r.nodes[r.nodes["type"] == "bookkeeping"]
    implicit = (g.contexts["kind"] == "implicit").sum()
    assert len(bk) == implicit                     # one per thread per loop (one loop each)
    chunks = (g.nodes["type"] == "chunk").sum()
    assert (r.nodes["type"] == "chunk").sum() == chunks   # chunks stay siblings
    f = build_fib = graph_of(record, "fib", 10, 3)
    rf = f.reduce()
    tasks_and_contexts = len(f.grains) + len(f.contexts)
    assert (rf.nodes["type"] == "fragment").sum() == tasks_and_contexts
    # forks before each join grouped: one group per (owner, join-delimited run)
    assert (rf.nodes["type"] == "fork").sum() < (build_fib.nodes["type"] == "fork").sum()
    assert not (rf.edges["src"] == rf.edges["dst"]).any()


def test_conversions(record):
    g = graph_of(record, "fib", 9, 3)
    ig = g.to_igraph()
    nx = g.to_networkx()
    assert ig.vcount() == nx.number_of_nodes() == len(g.nodes)
    assert ig.ecount() == nx.number_of_edges() == len(g.edges)
    assert ig.is_dag()
    assert ig.vs[0]["type"] == g.nodes["type"].iat[0]
    assert nx.nodes[0]["duration"] == g.nodes["duration"].iat[0]


def test_untied_tasks_take_the_migration_path_and_give_the_same_graph(tmp_path):
    """Untied tasks may resume on another thread: the builder then orders rows by
    global time instead of per thread. On the same events the graph is identical."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "tied.parquet"
    synth.generate(path, "random", 300, threads=3, seed=5)
    source = pq.ParquetFile(path)
    untied = tmp_path / "untied.parquet"
    with pq.ParquetWriter(untied, source.schema_arrow) as writer:
        for i in range(source.num_row_groups):          # keep one thread per row group
            table = source.read_row_group(i)
            kind = table["kind"].to_numpy().copy()
            kind[table["event"].to_numpy() == S.TASK_CREATE] |= np.uint32(S.TASK_UNTIED)
            table = table.set_column(table.schema.get_field_index("kind"),
                                     pa.field("kind", pa.uint32(), nullable=False),
                                     pa.array(kind, pa.uint32()))
            writer.write_table(table.cast(source.schema_arrow))
    a, b = build(load(path)), build(load(untied))
    assert b.grains["flags"].to_numpy().astype(np.int64).__and__(S.TASK_UNTIED).all()
    assert a.span == b.span and len(a.nodes) == len(b.nodes) and len(a.edges) == len(b.edges)
    pd.testing.assert_series_equal(a.grains["work"], b.grains["work"])


def test_nested_taskgroups_wait_for_their_own_tasks(tmp_path):
    """taskgroup A { create t1; taskgroup B { create t2 } create t3 }: t2 joins at
    B's end, t1 and t3 at A's end (libomp reports a taskgroup's SYNC_BEGIN at its start)."""
    b = TraceBuilder()
    init, region, imp = task_id(0, 1), task_id(0, 2), task_id(0, 3)
    t1, t2, t3 = task_id(0, 4), task_id(0, 5), task_id(0, 6)
    rows = [
        (0, S.THREAD_BEGIN, dict(kind=1)),
        (10, S.IMPLICIT_BEGIN, dict(task=init, value=1, count=1, kind=S.TASK_INITIAL)),
        (20, S.PARALLEL_BEGIN, dict(task=init, other=region, count=1, kind=0x80000002)),
        (30, S.IMPLICIT_BEGIN, dict(task=imp, other=region, value=0, count=1, kind=S.TASK_IMPLICIT)),
        (40, S.SYNC_BEGIN, dict(task=imp, other=region, kind=S.SYNC_TASKGROUP)),      # A
        (50, S.TASK_CREATE, dict(task=t1, other=imp, kind=S.TASK_EXPLICIT)),
        (60, S.SYNC_BEGIN, dict(task=imp, other=region, kind=S.SYNC_TASKGROUP)),      # B
        (70, S.TASK_CREATE, dict(task=t2, other=imp, kind=S.TASK_EXPLICIT)),
        (80, S.TASK_SCHEDULE, dict(task=t2, other=imp, kind=S.STATUS_SWITCH)),
        (90, S.TASK_SCHEDULE, dict(task=imp, other=t2, kind=S.STATUS_COMPLETE)),
        (100, S.SYNC_END, dict(task=imp, other=region, kind=S.SYNC_TASKGROUP)),       # B ends
        (110, S.TASK_CREATE, dict(task=t3, other=imp, kind=S.TASK_EXPLICIT)),
        (120, S.TASK_SCHEDULE, dict(task=t3, other=imp, kind=S.STATUS_SWITCH)),
        (130, S.TASK_SCHEDULE, dict(task=imp, other=t3, kind=S.STATUS_COMPLETE)),
        (140, S.TASK_SCHEDULE, dict(task=t1, other=imp, kind=S.STATUS_SWITCH)),
        (150, S.TASK_SCHEDULE, dict(task=imp, other=t1, kind=S.STATUS_COMPLETE)),
        (160, S.SYNC_END, dict(task=imp, other=region, kind=S.SYNC_TASKGROUP)),       # A ends
        (170, S.SYNC_BEGIN, dict(task=imp, other=region, kind=9)),
        (180, S.SYNC_END, dict(task=imp, other=region, kind=9)),
        (190, S.IMPLICIT_END, dict(task=imp, value=0, count=1, kind=S.TASK_IMPLICIT)),
        (200, S.PARALLEL_END, dict(task=init, other=region, kind=0x80000002)),
        (210, S.IMPLICIT_END, dict(task=init, value=1, count=1, kind=S.TASK_INITIAL)),
        (220, S.THREAD_END, {}),
    ]
    for t, ev, kw in rows:
        b.add(0, ev, t, **kw)
    g = build(load(b.write(tmp_path / "tg.parquet")))
    join = g.grains.set_index("identity")["join"]
    kinds = g.nodes["join_kind"].astype(str)
    assert (kinds[join.to_numpy()] == "taskgroup").all()
    assert join["0.p0.0"] == join["0.p0.2"] != join["0.p0.1"]
    # B's join comes first in the implicit task's chain; it starts at t2's switch-in
    assert g.nodes.at[join["0.p0.1"], "owner_seq"] < g.nodes.at[join["0.p0.0"], "owner_seq"]
    assert g.nodes.at[join["0.p0.1"], "start"] == 80
    assert g.nodes.at[join["0.p0.0"], "start"] == 120
