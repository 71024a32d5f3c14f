"""`grainlab predict` (issue 22, parts 2 and 3): the grain graph replayed on P
simulated cores (grainlab.metrics.predict, grainlab/native/replay.c).

Exact answers on DAGs built here by hand (zero runtime costs: the replay is
then a greedy list scheduler): a chain never speeds up; k equal independent
grains give min(P, k); a small fib tree has the work and span computed here
by its recursion, and enough cores finish it in exactly its span. On real
1-thread traces of the examples: the prediction lies between its bounds, the
compiled kernel and the Python replay agree, the what-if changes are checked
against the graph's own numbers, and inflated grains are capped."""
from __future__ import annotations

import json

import numpy as np
import pytest

import grainlab as gl
from conftest import assert_one_line_error
from grainlab.errors import GrainlabError, UsageError
from grainlab.metrics import predict as pm
from grainlab.metrics.predict import Costs, predict
from grainlab.metrics.replay_graph import Replay, location_mask, replay_graph

ZERO = Costs(0, 0, 0)
CORES = [1, 2, 3, 4, 8, 16, 64]


class Dag:
    """A node DAG built by hand: node weights, typed edges."""

    def __init__(self):
        self.w, self.edges, self.first = [], [], []

    def node(self, w, task_first=False):
        self.w.append(w)
        self.first.append(task_first)
        return len(self.w) - 1

    def edge(self, a, b, kind="continuation"):
        self.edges.append((a, b, {"continuation": 0, "creation": 1}.get(kind, 2)))

    def chain(self, *nodes):
        for a, b in zip(nodes, nodes[1:]):
            self.edge(a, b)

    def replay(self) -> Replay:
        n = len(self.w)
        src, dst, et = (np.array(x, dtype=t) for x, t in
                        zip(zip(*self.edges), (np.int64, np.int64, np.int8)))
        key = np.arange(n, dtype=np.int64)      # built in a topological order
        return Replay(np.array(self.w, np.int64), src, dst, et, np.array(self.first, bool),
                      np.ones(n, bool), {"start": key, "end": key, "is_join": np.zeros(n, bool),
                                         "released": np.zeros(n, bool)})


def spawn_and_wait(d: Dag, weights, fork_w=0, join_w=0):
    """A root creates one task per weight, then waits for them all."""
    prev = d.node(1)
    kids = []
    for w in weights:
        fk = d.node(fork_w)
        d.chain(prev, fk)
        kid = d.node(w, task_first=True)
        d.edge(fk, kid, "creation")
        kids.append(kid)
        prev = fk
    j = d.node(join_w)
    d.chain(prev, j)
    for k in kids:
        d.edge(k, j, "synchronization")
    return j


def test_a_chain_never_speeds_up():
    """A parent that creates one child at a time and waits for each: every
    node depends on the one before it."""
    d = Dag()
    prev = d.node(5)
    for i in range(12):
        fk, kid, j, frag = d.node(3), d.node(100 + 7 * i, True), d.node(2), d.node(11)
        d.chain(prev, fk)
        d.edge(fk, kid, "creation")
        d.chain(fk, j, frag)
        d.edge(kid, j, "synchronization")
        prev = frag
    rep = d.replay()
    out = predict(rep, CORES, ZERO)
    assert out["work_ns"] == out["span_ns"] == sum(d.w)
    assert out["predicted_ns"] == [sum(d.w)] * len(CORES)
    assert out["speedup"] == [1.0] * len(CORES)
    # runtime costs can only slow it down
    assert all(s <= 1.0 for s in predict(rep, CORES, Costs())["speedup"])


@pytest.mark.parametrize("k", [1, 4, 8, 64])
def test_k_equal_independent_grains_give_min_p_k(k):
    d = Dag()
    spawn_and_wait(d, [1000] * k)
    d.w[0] = 0                       # the root's own fragment: nothing
    cores = [P for P in [1, 2, 4, 8, 16, 64, 128] if P >= k or k % P == 0]
    out = predict(d.replay(), cores, ZERO)
    assert out["work_ns"] == 1000 * k and out["span_ns"] == 1000
    assert out["speedup"] == [float(min(P, k)) for P in cores]
    assert out["predicted_ns"] == [1000 * -(-k // P) for P in cores]


def fib_dag(n, A=10, F=3, J=2, B=4, L=7):
    """fib(n) as tasks: a call with n >= 2 runs a fragment (A), creates
    fib(n-1) and fib(n-2) (forks F), waits (join J), runs a fragment (B);
    a leaf runs L. Returns (Dag, its root's first and last node)."""
    d = Dag()

    def call(n, first):
        if n < 2:
            v = d.node(L, first)
            return v, v
        a = d.node(A, first)
        f1 = d.node(F)
        c1 = call(n - 1, True)
        f2 = d.node(F)
        c2 = call(n - 2, True)
        j, b = d.node(J), d.node(B)
        d.chain(a, f1, f2, j, b)
        d.edge(f1, c1[0], "creation")
        d.edge(f2, c2[0], "creation")
        d.edge(c1[1], j, "synchronization")
        d.edge(c2[1], j, "synchronization")
        return a, b
    call(n, False)
    return d


def fib_work_span(n, A=10, F=3, J=2, B=4, L=7, defer=0, steal=0):
    """By the recursion: work(n) = A+2F+J+B + work(n-1) + work(n-2);
    span(n) = A + F + max(span(n-1), F + span(n-2)) + J + B; burdened: each
    fork costs `defer` more, each created task's start `steal` more."""
    if n < 2:
        return L, L
    w1, s1 = fib_work_span(n - 1, A, F, J, B, L, defer, steal)
    w2, s2 = fib_work_span(n - 2, A, F, J, B, L, defer, steal)
    f = F + defer
    return A + 2 * F + J + B + w1 + w2, A + f + max(steal + s1, f + steal + s2) + J + B


def longest_path(d: Dag) -> int:
    """The DAG's longest node-weighted path, by networkx (independent of the
    recursion and of grainlab's span kernel)."""
    import networkx as nx
    G = nx.DiGraph()
    G.add_nodes_from(range(len(d.w)))
    G.add_edges_from((a, b) for a, b, _ in d.edges)
    best = {}
    for v in nx.topological_sort(G):
        best[v] = d.w[v] + max((best[u] for u in G.predecessors(v)), default=0)
    return max(best.values())


@pytest.mark.parametrize("n", [2, 5, 8])
def test_fib_work_and_span_by_hand(n):
    """Work and span by the recursion, checked against numbers worked by hand
    (n = 2, 5, 8: work 22 + w(n-1) + w(n-2) from w(0) = w(1) = 7; span 19 +
    max(s(n-1), 3 + s(n-2)) from 7) and, for every n, against the built DAG
    itself: its weights' sum and its longest path by networkx."""
    work, span = fib_work_span(n)
    d = fib_dag(n)
    assert (work, span) == (sum(d.w), longest_path(d))
    assert (work, span) == {2: (36, 29), 5: (210, 86), 8: (964, 143)}[n]
    rep = d.replay()
    out = predict(rep, [1, 2, 4, 1000], ZERO)
    assert out["work_ns"] == work and out["span_ns"] == span
    assert out["predicted_ns"][0] == work
    # cores for every ready node: the replay finishes in exactly the span
    assert out["predicted_ns"][-1] == span
    for i, P in enumerate(out["cores"]):
        assert max(-(-work // P), span) <= out["predicted_ns"][i] <= -(-work // P) + span


@pytest.mark.parametrize("n", [2, 5, 8])
def test_burdened_span_adds_the_per_spawn_cost_along_the_path(n):
    """Cilkscale's burdened span: every spawn costs its deferral on the fork
    and a steal on the created task's start (the recursion above)."""
    c = Costs(steal_ns=100, defer_ns=20, lock_ns=0)
    out = predict(fib_dag(n).replay(), [1], c)
    assert out["burdened_span_ns"] == fib_work_span(n, defer=20, steal=100)[1]
    assert out["burdened_span_ns"] > out["span_ns"] == fib_work_span(n)[1]


def test_a_full_deque_makes_the_creator_run_the_child(monkeypatch):
    """libomp's throttling: with room for 2 queued tasks, a creator that
    finds its deque full runs the new task itself; without a limit every
    child waits in the deque and the others steal them."""
    d = Dag()
    spawn_and_wait(d, [1000] * 16, fork_w=10)
    rep = d.replay()
    slow = dict(steal_ns=5000, defer_ns=0, lock_ns=0)     # the creator outruns the thief
    longest = []
    push = pm._Sim.push

    def watched(self, c, v, t):
        push(self, c, v, t)
        longest[-1] = max(longest[-1], len(self.dq[c]))
    monkeypatch.setattr(pm._Sim, "push", watched)
    monkeypatch.setenv("GRAINLAB_NATIVE", "0")
    for cap in (0, 2):
        longest.append(0)
        pm.replay(rep, rep.w, 2, Costs(**slow, deque_cap=cap))
    # unbounded: the 16 children queue, less the one stolen at once and the
    # last, which its creator runs itself (nothing else is ready then);
    # capped: two children and the parent's continuation at most
    assert longest == [14, 3]
    # 1 core with a cap of 2: every child but two runs at its fork
    one = pm.replay(rep, rep.w, 1, Costs(0, 0, 0, deque_cap=2))
    assert one["makespan"] == rep.work and one["steals"] == 0


def test_costs_are_paid_only_when_there_are_cores_to_steal():
    d = Dag()
    spawn_and_wait(d, [1000] * 8)
    c = Costs(steal_ns=50, defer_ns=10, lock_ns=5)
    out = predict(d.replay(), [1, 2, 8], c)
    assert out["predicted_ns"][0] == out["work_ns"] and out["steals"][0] == 0
    assert out["steals"][2] >= 7            # every core but the creator's stole
    # each deferred task pays defer_ns, each steal steal_ns: slower than free
    assert out["predicted_ns"][2] > predict(d.replay(), [8], ZERO)["predicted_ns"][0]


# ------------------------------------------------------------ real traces

EXAMPLES = [("fib", (15, 6)), ("tree", (4, 3)), ("taskgroup", ()), ("depend", ()),
            ("undeferred", (4,)), ("nqueens", (8, 3)), ("sparselu", ("single", 6, 8)),
            ("health", (3, 10, 3, 4)), ("uts", ("geo", 4, 3))]


@pytest.mark.parametrize("name, args", EXAMPLES)
def test_every_example_prediction_lies_between_its_bounds(record, name, args):
    g = record(name, *args, threads=1).graph()
    rep = replay_graph(g)
    for costs in (Costs(), ZERO):
        out = predict(rep, [1, 2, 4, 16, 256], costs)
        for i, P in enumerate(out["cores"]):
            t = out["predicted_ns"][i]
            assert max(-(-out["work_ns"] // P), out["span_ns"]) <= t, (P, out)
            assert t <= out["upper_bound_ns"][i], (P, out)
            assert out["speedup_lower"][i] <= out["speedup"][i] <= out["speedup_upper"][i]
        assert out["predicted_ns"][0] == out["work_ns"]
    # greedy without costs: Graham's bound
    out = predict(rep, [2, 4, 16], ZERO)
    assert all(t <= -(-out["work_ns"] // P) + out["span_ns"]
               for t, P in zip(out["predicted_ns"], out["cores"]))


GOLDEN = sorted((__import__("pathlib").Path(__file__).parent / "golden" / "traces").glob("*.parquet"))


@pytest.mark.parametrize("trace", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_every_recorded_example_lies_between_its_bounds(trace):
    """Every example program that records (the golden traces: tasks, loops of
    every schedule, dependences, if(0), taskgroups, several regions, exec; at
    1, 2 and 4 threads): the prediction lies between its bounds."""
    rep = replay_graph(gl.load(trace).graph())
    out = predict(rep, [1, 2, 3, 8, 64], Costs())
    for i, P in enumerate(out["cores"]):
        t = out["predicted_ns"][i]
        assert max(-(-out["work_ns"] // P), out["span_ns"]) <= t <= out["upper_bound_ns"][i], P
        assert out["speedup_lower"][i] <= out["speedup"][i] <= out["speedup_upper"][i]


def test_the_kernel_and_the_python_replay_agree(record, monkeypatch):
    g = record("fib", 14, 5, threads=1).graph()
    rep = replay_graph(g)
    assert pm._kernel() is not None
    for costs in (Costs(), ZERO, Costs(700, 90, 2000, work_first=True),
                  Costs(300, 50, 100, deque_cap=2)):
        native = [pm.replay(rep, rep.w, P, costs) for P in (1, 2, 3, 8)]
        with monkeypatch.context() as m:
            m.setenv("GRAINLAB_NATIVE", "0")
            python = [pm.replay(rep, rep.w, P, costs) for P in (1, 2, 3, 8)]
        assert native == python


def test_without_the_kernel_a_big_graph_is_one_error(record, monkeypatch):
    g = record("fib", 14, 5, threads=1).graph()
    rep = replay_graph(g)
    monkeypatch.setenv("GRAINLAB_NATIVE", "0")
    monkeypatch.setattr(pm, "PYTHON_LIMIT", 10)
    with pytest.raises(GrainlabError, match="compiled replay kernel"):
        pm.replay(rep, rep.w, 2, Costs())


def test_what_if_scales_one_location(record):
    t = record("fib", 15, 6, threads=1)
    a = gl.analyze(t)
    base = replay_graph(a.graph)
    loc = a.locations.astype(str).value_counts().index[0]
    mask = location_mask(a.locations, loc)
    assert mask.sum() == (a.locations.astype(str) == loc).sum() > 0
    zero = replay_graph(a.graph, scale=(mask, 0.0))
    own = base.own & np.isin(a.graph.nodes["grain"].to_numpy(), np.flatnonzero(mask))
    assert zero.work == base.work - int(base.w[own].sum())
    same = replay_graph(a.graph, scale=(mask, 1.0))
    assert (same.w == base.w).all()
    out = a.predict([1, 4], what_if=f"{loc}=0.5")
    assert out["what_if"]["work_ns"] < out["work_ns"]
    assert out["what_if"]["gain"][0] == pytest.approx(out["work_ns"] / out["what_if"]["work_ns"])


def test_merge_below_inlines_subtrees_into_their_root(record):
    g = record("fib", 15, 6, threads=1).graph()
    base = replay_graph(g)
    depth = g.grains["depth"].to_numpy()
    assert depth.max() == 6
    same = replay_graph(g, merge_below=int(depth.max()))
    assert same.work == base.work and len(same.w) == len(base.w)
    for d in (1, 3):
        m = replay_graph(g, merge_below=d)
        assert m.tasks == int((depth <= d).sum())
        # the grains' own work is kept; only forks and joins of merged tasks go
        assert int(m.w[m.own].sum()) == int(base.w[base.own].sum())
        out = predict(m, [1, 2, 8], Costs())
        assert out["predicted_ns"][0] == m.work <= base.work
        assert out["span_ns"] <= m.work


def test_an_inflated_grain_is_capped_at_its_location(record):
    """A leaf task stretched by 30 ms (a preemption) would be the whole
    16-core prediction; the guard caps it at its location's fence."""
    g = record("fib", 15, 6, threads=1).graph()
    gr = g.grains
    leaf = int(np.flatnonzero((gr["n_children"] == 0).to_numpy())[3])
    node = int(np.flatnonzero((g.nodes["grain"] == leaf).to_numpy()
                              & (g.nodes["type"] == "fragment").to_numpy())[0])
    clean = predict(replay_graph(g), [16], Costs())["predicted_ns"][0]
    g.nodes.loc[node, "duration"] += 30_000_000
    none = predict(replay_graph(g, guard="none"), [16], Costs())
    guarded = replay_graph(g)
    assert guarded.guard["capped_grains"] == 1
    assert guarded.guard["capped_ns"] > 25_000_000
    out = predict(guarded, [16], Costs())
    assert none["predicted_ns"][0] > 30_000_000
    assert out["predicted_ns"][0] < clean + 2_000_000


def test_cpu_time_weighs_the_replay_where_recorded(record):
    g = record("fib", 12, 4, threads=1).graph()
    off = np.where(g.nodes["type"].isin(["fragment", "chunk"]), 0.0, np.nan)
    leaf = int(np.flatnonzero(g.nodes["type"] == "fragment")[-3])
    off[leaf] = g.nodes["duration"].iloc[leaf] / 2
    g.nodes["counter:off-cpu"] = off
    rep = replay_graph(g, guard="cpu")
    assert rep.guard["cpu_time"] and rep.guard["off_cpu_ns"] == int(off[leaf])
    base = replay_graph(g, guard="none")
    assert base.work - rep.work in (int(off[leaf]), int(off[leaf]) + 1)


# --------------------------------------------------------------- the CLI


def test_cli_json_and_text(record, cli, tmp_path):
    t = record("fib", 15, 6, threads=1)
    r = cli("predict", "--cores", "1,2,4,16", "--json", t.path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["cores"] == [1, 2, 4, 16] and len(out["speedup"]) == 4
    for key in ("work_ns", "span_ns", "burdened_span_ns", "predicted_ns",
                "lower_bound_ns", "upper_bound_ns"):
        assert key in out
    assert out["burdened_span_ns"] >= out["span_ns"]
    r = cli("predict", "--cores", "2,8", "--merge-below", "2", t.path)
    assert r.returncode == 0, r.stderr
    assert "what-if" in r.stdout and "merged" in r.stdout
    assert len([line for line in r.stdout.splitlines() if line.split()[:1] in (["2"], ["8"])]) == 2


def test_wti_scales_the_grains_at_more_than_one_core(record, tmp_path):
    g = record("fib", 15, 6, threads=1).graph()
    rep = replay_graph(g)
    plain = predict(rep, [1, 4], ZERO)
    inflated = predict(rep, [1, 4], ZERO, wti=2.0)
    assert inflated["predicted_ns"][0] == plain["predicted_ns"][0]
    assert inflated["predicted_ns"][1] > 1.5 * plain["predicted_ns"][1]
    f = tmp_path / "scaling.json"
    f.write_text(json.dumps({"runs": [{"threads": 1, "wti": 1.0}, {"threads": 4, "wti": 1.5}]}))
    model = pm.wti_model(str(f))
    assert model(2) == pytest.approx(1.25) and model(64) == 1.5


@pytest.mark.parametrize("args, words", [
    (["--cores", "0,2"], ["--cores", "between 1"]),
    (["--cores", "a"], ["--cores"]),
    (["--what-if", "nowhere.c:1=0.5"], ["--what-if", "no grain at that location"]),
    (["--what-if", "fib.c=x"], ["--what-if", "LOCATION=k"]),
    (["--merge-below", "0"], ["--merge-below"]),
    (["--steal-ns", "-5"], ["steal cost"]),
    (["--wti", "nofile.json"], ["--wti"]),
])
def test_bad_arguments_are_one_line(record, cli, args, words):
    t = record("fib", 12, 4, threads=1)
    assert_one_line_error(cli("predict", *args, t.path), *words)


def test_a_missing_trace_is_one_line(cli, tmp_path):
    assert_one_line_error(cli("predict", tmp_path / "none.parquet"), "none.parquet")


def test_the_figure_draws_the_prediction_between_its_bounds(record):
    from grainlab.app.predict_figure import prediction_figure
    a = gl.analyze(record("fib", 15, 6, threads=1))
    pred = a.predict([1, 2, 4, 16], merge_below=3)
    fig = prediction_figure(pred)
    by_name = {t.name: t for t in fig.data if t.name}
    assert list(by_name["predicted"].y) == pred["speedup"]
    assert list(by_name["predicted"].x) == [1, 2, 4, 16]
    band = [t for t in fig.data if t.fill == "tonexty"][0]
    assert list(band.y) == pred["speedup_lower"]
    alt = [t for n, t in by_name.items() if n.startswith("what-if")][0]
    assert list(alt.y) == pred["what_if"]["speedup_vs_baseline"]
    assert any(n.startswith("parallelism") for n in by_name)


@pytest.mark.parametrize("threads, inlined", [(1, 20), (2, 30)])
def test_tasks_that_ran_in_their_creator_are_merged_into_it(record, threads, inlined):
    """examples/undeferred 10: 10 if(0) tasks, a final task with 10 children
    and 10 grandchildren (included), 10 mergeable tasks. Included tasks run in
    their creator at any thread count; if(0) ones are only known as such in a
    trace of more than one thread (at one, libomp flags every task undeferred)."""
    g = record("undeferred", 10, threads=threads).graph()
    assert len(g.grains) == 41
    rep = replay_graph(g)
    assert rep.guard["inlined_tasks"] == inlined and rep.tasks == 41 - inlined
    plain = replay_graph(g, inline=False)
    assert plain.tasks == 41 and int(rep.w.sum()) == int(plain.w.sum())
    out = predict(rep, [1, 4], Costs())
    assert out["predicted_ns"][0] == rep.work
    assert max(-(-rep.work // 4), out["span_ns"]) <= out["predicted_ns"][1]


def test_the_parallel_part_is_timed_unless_whole(record, cli):
    """By default the initial task's time before its first region and after
    its last one weighs nothing; --whole keeps it (read here from node times)."""
    t = record("fib", 15, 6, threads=1)
    g = t.graph()
    whole, part = replay_graph(g, whole=True), replay_graph(g)
    assert whole.work == int(g.nodes["duration"].sum())
    n = g.nodes
    initial = g.contexts.index[(g.contexts["kind"] == "initial").to_numpy()][0]
    mine = (n["owner"] == initial).to_numpy()
    region = (n["child"] >= len(g.grains)).to_numpy() & mine
    end = (n["join_kind"] == "region_end").to_numpy() & mine
    t0, t1 = n["start"][region].min(), n["end"][end].max()
    outside = mine & ((n["end"] <= t0) | (n["start"] >= t1)).to_numpy()   # (joins there weigh 0)
    assert outside.any()
    assert part.work == whole.work - int(n["duration"][outside].sum())
    r = cli("predict", "--json", "--whole", "--cores", "1", t.path)
    assert json.loads(r.stdout)["work_ns"] == whole.work
    r = cli("predict", "--json", "--region", "1", "--cores", "1,4", t.path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["predicted_ns"][0] <= part.work


def test_what_if_names_a_location_by_its_function(record):
    """examples/whatif: `heavy` names the heavy tasks' location, whose text is
    `whatif.c:LINE (heavy, inlined into main, task)` when the compiler inlined
    it (or `(heavy)`), and only those N grains."""
    n = 40
    a = gl.analyze(record("whatif", n, 100, 400, threads=1))
    text = a.locations.astype(str)
    for name in ("heavy", "light"):
        mask = location_mask(a.locations, name)
        assert mask.sum() == n
        assert all(f"({name}" in s for s in text[mask])
    assert not (location_mask(a.locations, "heavy") & location_mask(a.locations, "light")).any()
    with pytest.raises(UsageError):
        location_mask(a.locations, "heav")       # a function name is matched whole


def test_the_parallelism_shown_names_its_part(record):
    """work/span of the parallel part (predict's default) and of the whole run
    (--whole, as analyze's header) are two numbers: each is named where shown."""
    from grainlab.app.predict_figure import prediction_figure
    a = gl.analyze(record("fib", 15, 6, threads=1))
    part, whole = a.predict([1, 2]), a.predict([1, 2], whole=True)
    assert (part["part"], whole["part"]) == ("parallel part", "whole run")
    assert whole["parallelism"] == pytest.approx(a.summary["parallelism"], rel=1e-9)
    names = [t.name for t in prediction_figure(part).data if t.name]
    assert any(n.startswith("parallelism of the parallel part") for n in names), names
