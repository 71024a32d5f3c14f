"""Compact identities (issue 7, "Scale"; grainlab/tables/identity.py).

Per task the identity is a parent, one step and a 128-bit path hash; strings
are made on demand. Checked here:
  - on-demand strings follow the lineage rule (docs/trace-format.md
    "Identity") on hand-built forests and a hand-built trace, against a
    plain-Python reference written from the rule;
  - hash equality is string equality: on real runs with 1 and 2 threads the
    partition of grains (and tasks) by (kind, hash) is the partition by
    (kind, identity string), and matching by hash equals matching by string;
  - without the identity columns (forced on-demand) analyze and compare print
    exactly what they print with them;
  - per-task memory does not grow with depth: bytes of the task table and of
    the grain graph's per-grain data at depth 2,000 vs depth 20 for the same
    task count (structure, never time).
"""
from __future__ import annotations

import json
from pathlib import Path
import random

import numpy as np
import pandas as pd
import pytest

import grainlab
from conftest import grainlab as run_cli
from grainlab.tables import identity as I
from grainlab import schema as S
from grainlab.metrics import work_deviation
from tracegen import TraceBuilder, fork_join_trace, task_id, team_region

ON_DEMAND = {"GRAINLAB_IDENTITY_MAX_CHARS": "0", "GRAINLAB_IDENTITY_TOTAL_CHARS": "0"}


# ------------------------------------------------------------- reference rule

def reference_step(tag, a, b) -> str:
    """docs/trace-format.md "Identity", written out step by step."""
    if tag == I.ROOT:            # initial task a
        return str(a)
    if tag == I.EXPLICIT:        # explicit child a
        return "." + str(a)
    if tag == I.PARALLEL:        # region a (its single winner implicit task)
        return ".p" + str(a)
    if tag == I.IMPLICIT:        # implicit task b of region a
        return ".p" + str(a) + ".i" + str(b)
    if tag == I.WORKSHARE:       # k-th worksharing construct of a region
        return ".w" + str(a)
    if tag == I.TASKLOOP:
        return ".t" + str(a)
    if tag == I.FIRST:           # chunk from iteration a
        return "@" + str(a)
    if tag == I.UNKNOWN:
        return "?"
    raise AssertionError(tag)


def reference_strings(parent, tag, a, b) -> list:
    """Identity of every node by recursion from the rule; None when no
    ROOT/UNKNOWN node is reached."""
    memo = {}

    def name(i, seen=()):
        if i in memo:
            return memo[i]
        if i in seen:
            return None
        if parent[i] < 0:
            out = reference_step(tag[i], a[i], b[i]) if tag[i] in (I.ROOT, I.UNKNOWN) else None
        else:
            up = name(parent[i], seen + (i,))
            out = None if up is None else up + reference_step(tag[i], a[i], b[i])
        memo[i] = out
        return out
    return [name(i) for i in range(len(parent))]


def random_forest(rng: random.Random, n: int, shuffle=True):
    """A random forest in which every node's step is unique among its
    siblings (as in real traces), nodes in a random order."""
    order = list(range(n))
    parent, tag, a, b = [-1] * n, [I.ROOT] * n, [0] * n, [0] * n
    roots = 0
    used = {}
    for i in range(n):
        if i == 0 or rng.random() < 0.05:
            tag[i], a[i] = (I.ROOT, roots) if rng.random() < 0.9 or roots == 0 else (I.UNKNOWN, 0)
            roots += tag[i] == I.ROOT
            if tag[i] == I.UNKNOWN and ("?", -1) in used:
                tag[i], a[i] = I.ROOT, roots
                roots += 1
            used[("?", -1) if tag[i] == I.UNKNOWN else ("r", a[i])] = 1
            continue
        p = rng.randrange(i)
        while True:
            t = rng.choice([I.EXPLICIT, I.EXPLICIT, I.PARALLEL, I.IMPLICIT, I.WORKSHARE,
                            I.TASKLOOP, I.FIRST])
            x = rng.randrange(-3, 40) if t == I.FIRST else rng.randrange(0, 12)
            y = rng.randrange(0, 4) if t == I.IMPLICIT else 0
            if (p, t, x, y) not in used:
                used[(p, t, x, y)] = 1
                break
        parent[i], tag[i], a[i], b[i] = p, t, x, y
    if shuffle:   # node numbering must not matter
        rng.shuffle(order)
    new_of = {old: new for new, old in enumerate(order)}
    P = [-1] * n
    T, A, B = [0] * n, [0] * n, [0] * n
    for old in range(n):
        k = new_of[old]
        P[k] = new_of[parent[old]] if parent[old] >= 0 else -1
        T[k], A[k], B[k] = tag[old], a[old], b[old]
    return P, T, A, B


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_on_demand_strings_follow_the_lineage_rule_on_random_forests(seed):
    rng = random.Random(seed)
    P, T, A, B = random_forest(rng, 400)
    names = I.Names.from_tree(P, T, A, B)
    want = reference_strings(P, T, A, B)
    assert all(w is not None for w in want)
    got = names.strings(np.arange(len(P)))
    assert list(got) == want
    # the top-down Arrow pass gives the same strings, and lengths/levels agree
    assert names.all_strings().to_pylist() == want
    assert names.length.tolist() == [len(w) for w in want]
    sample = rng.sample(range(len(P)), 25)
    assert list(names.strings(sample)) == [want[i] for i in sample]
    # levels: number of steps below the root
    for i in sample:
        d, j = 0, i
        while P[j] >= 0:
            d, j = d + 1, P[j]
        assert names.level[i] == d


def test_hash_partition_equals_string_partition_across_renumbered_forests():
    """Two numberings of the same forest (as two runs of a program), plus a
    forest with a different shape: nodes get equal hashes exactly when their
    reference strings are equal."""
    rng = random.Random(7)
    one = random_forest(rng, 300, shuffle=False)
    perm = list(range(300))
    random.Random(8).shuffle(perm)
    inv = {old: new for new, old in enumerate(perm)}
    two = ([inv[one[0][o]] if one[0][o] >= 0 else -1 for o in perm],
           [one[1][o] for o in perm], [one[2][o] for o in perm], [one[3][o] for o in perm])
    other = random_forest(random.Random(9), 300)
    strings, hashes = [], []
    for P, T, A, B in (one, two, other):
        names = I.Names.from_tree(P, T, A, B)
        strings += reference_strings(P, T, A, B)
        h1, h2 = names.hashes(np.arange(len(P)))
        hashes += list(zip(h1.tolist(), h2.tolist()))
    by_string, by_hash = {}, {}
    for s, h in zip(strings, hashes):
        by_string.setdefault(s, set()).add(h)
        by_hash.setdefault(h, set()).add(s)
    assert all(len(v) == 1 for v in by_string.values())
    assert all(len(v) == 1 for v in by_hash.values())
    assert len(by_string) < len(strings)      # the renumbered copy really repeats


def test_extend_and_unreachable_nodes():
    # 0 root "0"; 1 explicit child 2 of 0; 2 has a missing parent (no identity)
    names = I.Names.from_tree([-1, 0, -1], [I.ROOT, I.EXPLICIT, I.EXPLICIT], [0, 2, 5], [0, 0, 0])
    assert list(names.strings([0, 1, 2, -1])) == ["0", "0.2", None, None]
    assert names.valid([0, 1, 2, -1]).tolist() == [True, True, False, False]
    names, new = names.extend([1, 2, -1], [I.PARALLEL, I.PARALLEL, I.UNKNOWN], [3, 0, 0], 0)
    names, loops = names.extend(new, I.WORKSHARE, [1, 1, 4], 0)
    names, chunks = names.extend(loops, I.FIRST, [-7, 0, 10], 0)
    assert list(names.strings(chunks)) == ["0.2.p3.w1@-7", None, "?.w4@10"]
    # the same path built again (another "run") hashes the same
    again = I.Names.from_tree([-1, 0, 1, 2, 3], [I.ROOT, I.EXPLICIT, I.PARALLEL, I.WORKSHARE,
                                                  I.FIRST], [0, 2, 3, 1, -7], [0] * 5)
    assert [int(h[0]) for h in again.hashes([4])] == [int(h[0]) for h in names.hashes([chunks[0]])]
    # a region node and the winner task of that region share a string, so a hash
    assert names.strings([new[0]])[0] == "0.2.p3"


# ------------------------------------------------------ hand-built trace

def nested_trace() -> tuple[TraceBuilder, dict]:
    """Initial task -> region of 2 implicit tasks; implicit task 0 creates
    A and B; B creates C and D; D creates E. Each task runs to completion
    right after its creation burst (thread 0). Returns the builder and the
    lineage every task must get by the documented rule."""
    b = TraceBuilder()
    init, region, imp = team_region(b, 2)
    A, B, C, D, E = (task_id(0, 100 + i) for i in range(5))
    kids = {imp[0]: [A, B], B: [C, D], D: [E]}
    t = [10]

    def tick():
        t[0] += 1
        return t[0]

    def run(task):
        mine = kids.get(task, [])
        for k in mine:
            b.add(0, S.TASK_CREATE, tick(), task=k, other=task, kind=S.TASK_EXPLICIT)
        for k in mine:
            b.add(0, S.TASK_SCHEDULE, tick(), task=k, other=task, kind=S.STATUS_SWITCH)
            run(k)
            b.add(0, S.TASK_SCHEDULE, tick(), task=task, other=k, kind=S.STATUS_COMPLETE)
    run(imp[0])
    end = tick()
    for th in range(2):
        b.add(th, S.SYNC_BEGIN, end, task=imp[th], other=region, kind=9)
        b.add(th, S.SYNC_END, end + 1, task=imp[th], other=region, kind=9)
        b.add(th, S.IMPLICIT_END, end + 2, task=imp[th], value=th, count=2,
              kind=S.TASK_IMPLICIT)
    b.add(0, S.PARALLEL_END, end + 3, task=init, other=region)
    b.add(1, S.THREAD_END, end + 4)
    b.add(0, S.IMPLICIT_END, end + 5, task=init, kind=S.TASK_INITIAL, count=1)
    b.add(0, S.THREAD_END, end + 6)
    # implicit task 0 is its region's only creator: the winner "0.p0"
    want = {init: "0", imp[0]: "0.p0", imp[1]: "0.p0.i1", A: "0.p0.0", B: "0.p0.1",
            C: "0.p0.1.0", D: "0.p0.1.1", E: "0.p0.1.1.0"}
    return b, want


@pytest.mark.parametrize("env", [{}, ON_DEMAND])
def test_hand_built_trace_lineages(tmp_path, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    b, want = nested_trace()
    t = grainlab.load(b.write(tmp_path / "nested.parquet"))
    assert t.problems == []
    tasks = t.tasks()
    assert ("lineage" in tasks) == (not env)
    names = t.task_names()
    got = dict(zip(tasks["id"].tolist(), names.strings(np.arange(len(tasks)))))
    assert got == want
    if not env:
        assert dict(zip(tasks["id"].tolist(), tasks["lineage"])) == want
    assert dict(zip(tasks["id"].tolist(), tasks["depth"])) == {
        k: v.count(".") - v.count(".i") for k, v in want.items()}
    g = grainlab.analyze(t).graph
    assert ("identity" in g.grains) == (not env)
    ids = dict(zip(g.grains["task_id"].tolist(), g.identities()))
    assert ids == {k: v for k, v in want.items() if v.count(".") >= 2 and ".i" not in v}
    ctx = dict(zip(g.contexts["task_id"].tolist(), g.identities(g.contexts.index)))
    assert ctx == {k: want[k] for k in ctx} and len(ctx) == 3
    regions = t.regions()
    assert list(regions["identity"]) == ["0.p0"]


def test_fork_join_trace_with_missing_parent_has_no_identity(tmp_path):
    b = fork_join_trace(children=2, threads=2)
    # a task created by a parent the trace never names
    b.add(0, S.TASK_CREATE, 12, task=task_id(0, 999), other=task_id(5, 5),
          kind=S.TASK_EXPLICIT)
    rows = b.rows[0]
    rows.sort(key=lambda r: r["tsc"])     # stable: in place among tick-12 rows
    # a stopped run (incomplete trace) is read with its problems listed
    t = grainlab.load(b.write(tmp_path / "orphan.parquet",
                              meta={"grainlab.complete": "false",
                                    "grainlab.end_reason": "signal"}))
    assert any("never exists" in p for p in t.problems)
    tasks = t.tasks()
    row = np.flatnonzero(tasks["id"].to_numpy() == task_id(0, 999))[0]
    assert t.task_names().strings([row])[0] is None
    assert pd.isna(tasks["lineage"].iloc[row]) and tasks["depth"].iloc[row] == -1


# ----------------------------------------------------------------- real runs

PROGRAMS = [("fib", (12, 4)), ("tree", (3, 4)), ("loops", ("all", 300)),
            ("mixed", (6, 1, 2)), ("taskgroup", (20,)), ("regions", (2, 4, 5, "master"))]


def partitions_agree(keys_a, keys_b) -> bool:
    """Two labelings of the same items induce the same partition."""
    ab, ba = {}, {}
    for x, y in zip(keys_a, keys_b):
        ab.setdefault(x, set()).add(y)
        ba.setdefault(y, set()).add(x)
    return all(len(v) == 1 for v in ab.values()) and all(len(v) == 1 for v in ba.values())


@pytest.mark.parametrize("program,args", PROGRAMS)
def test_hash_equality_is_string_equality_across_1_and_2_threads(record, program, args):
    graphs = [grainlab.analyze(record(program, *args, threads=th)).graph for th in (1, 2)]
    string_keys, hash_keys = [], []
    for g in graphs:
        strings = g.identities()                  # on demand, walking parents
        assert list(strings) == list(g.grains["identity"])   # == the column
        kind = g.grains["kind"].astype(str).tolist()
        h1, h2, valid = g.identity_hashes()
        assert valid.all()
        string_keys += list(zip(kind, strings))
        hash_keys += list(zip(kind, h1.tolist(), h2.tolist()))
        # contexts: on demand == column
        assert list(g.identities(g.contexts.index)) == list(g.contexts["identity"])
    assert partitions_agree(string_keys, hash_keys)
    # grains are matched across the runs the same way by hash and by string
    a, b = graphs
    by_hash = work_deviation.match(a.grains, b.grains, a.identity_hashes(), b.identity_hashes())
    by_string = work_deviation.match(a.grains, b.grains)
    assert (by_hash == by_string).all()
    if program != "loops":     # chunks are schedule dependent; tasks are not
        assert (by_hash >= 0).all()


@pytest.mark.parametrize("program,args", PROGRAMS[:3])
def test_task_table_hashes_partition_like_lineage(record, program, args):
    keys_s, keys_h = [], []
    for th in (1, 2):
        trace = record(program, *args, threads=th)
        tasks, names = trace.tasks(), trace.task_names()
        rows = np.arange(len(tasks))
        strings = names.strings(rows)
        assert list(strings) == list(tasks["lineage"])
        h1, h2 = names.hashes(rows)
        keys_s += list(strings)
        keys_h += list(zip(h1.tolist(), h2.tolist()))
    assert partitions_agree(keys_s, keys_h)


def _same_output(args, env):
    normal = run_cli(*args)
    forced = run_cli(*args, env=env)
    assert normal.returncode == 0, normal.stderr
    assert forced.returncode == 0, forced.stderr
    # the printed text, byte for byte (parsed dicts would differ on NaN != NaN)
    assert normal.stdout == forced.stdout
    return json.loads(normal.stdout), json.loads(forced.stdout)


@pytest.mark.parametrize("program,args", [("fib", (12, 4)), ("loops", ("all", 300)),
                                          ("mixed", (6, 1, 2))])
def test_analyze_json_same_with_identities_on_demand(record, program, args):
    t = record(program, *args, threads=2)
    normal, forced = _same_output(("analyze", "--json", t.path), ON_DEMAND)
    assert normal["critical_path_grains"]
    assert all(c["identity"] not in ("", "nan") for c in normal["critical_path_grains"])


def test_compare_json_same_with_identities_on_demand(record):
    a = record("fib", 14, 4, threads=1)
    b = record("fib", 14, 4, threads=2)
    normal, forced = _same_output(("compare", "--json", a.path, b.path), ON_DEMAND)
    # fib(14) with cutoff 4: every task of B is matched in A (same shape)
    assert normal["matched"] == normal["grains_b"] == normal["grains_a"]
    assert normal["grains"] and all(g["identity"].startswith("0.p0") for g in normal["grains"])



def test_column_limit_keeps_the_graph_column_small_but_not_the_exports(record, monkeypatch,
                                                                        tmp_path):
    """GRAINLAB_IDENTITY_COLUMN_CHARS bounds the graph's identity column (a
    million grains: no column, strings on demand), not what exports and the
    task table may materialise: their full identities stay."""
    t = record("fib", 10, 3, threads=2)
    full = grainlab.analyze(t.path).graph
    assert "identity" in full.grains
    total = int(full.grains["identity"].str.len().sum()
                + full.contexts["identity"].str.len().sum())
    normal, limited = _same_output(("analyze", "--json", t.path),
                                   {"GRAINLAB_IDENTITY_COLUMN_CHARS": str(total - 1)})
    assert limited["critical_path_grains"]
    monkeypatch.setenv("GRAINLAB_IDENTITY_COLUMN_CHARS", str(total - 1))
    g = grainlab.analyze(t.path).graph
    assert "identity" not in g.grains and "identity" not in g.contexts
    assert list(g.identities()) == full.grains["identity"].tolist()
    assert I.materialise(g.names, g.identity_node)          # exports: full identities
    monkeypatch.setenv("GRAINLAB_IDENTITY_COLUMN_CHARS", str(total))
    assert "identity" in grainlab.analyze(t.path).graph.grains

# ------------------------------------------------------- memory vs depth

def _per_task_bytes(path) -> dict:
    """Bytes held per task / grain: the task table (every column, strings
    included), and the grain graph's grains + contexts frames with its
    identity forest."""
    t = grainlab.load(path)
    tasks = t.tasks()
    task_bytes = int(tasks.memory_usage(deep=True).sum()) + t.task_names().nbytes
    g = grainlab.analyze(path).graph
    graph_bytes = (int(g.grains.memory_usage(deep=True).sum())
                   + int(g.contexts.memory_usage(deep=True).sum())
                   + g.names.nbytes + g.identity_node.nbytes)
    deepest = int(np.argmax(g.grains["depth"].to_numpy()))
    return {"tasks": task_bytes / len(tasks), "graph": graph_bytes / len(g.grains),
            "n": len(g.grains), "g": g, "deepest": deepest}


def _lineage_by_parents(g, grain) -> str:
    """A grain's lineage from the grain table alone (parent ids and child
    numbers), the context at the top: an independent construction."""
    gr = g.grains
    steps = []
    i = grain
    G = len(gr)
    while i < G:
        steps.append(f".{int(gr['child_number'].iat[i])}")
        i = int(gr["parent"].iat[i])
    top = g.contexts.loc[i]
    return str(g.identities([i])[0] if "identity" not in g.contexts else top["identity"]) \
        + "".join(reversed(steps))


def test_per_task_memory_does_not_grow_with_depth(tmp_path):
    """200,000 tasks as a synthetic spine 20 and 2,000 deep: bytes per task of
    the task table and per grain of the graph tables stay within 1.3x (the
    lineage strings alone would be ~100x: ~2 KiB per task at depth 2,000)."""
    got = {}
    for depth in (20, 2000):
        path = tmp_path / f"spine{depth}.parquet"
        r = run_cli("synth", "--shape", "spine", "--grains", 200_000,
                    "--spine-length", depth, "-o", path, "-q")
        assert r.returncode == 0, r.stderr
        got[depth] = _per_task_bytes(path)
    shallow, deep = got[20], got[2000]
    assert shallow["n"] == deep["n"] == 200_000
    assert deep["tasks"] <= 1.3 * shallow["tasks"], (deep["tasks"], shallow["tasks"])
    assert deep["graph"] <= 1.3 * shallow["graph"], (deep["graph"], shallow["graph"])
    # the identity forest is a fixed number of integers per node
    g = deep["g"]
    assert g.names.nbytes <= 8 * 8 * len(g.names)
    assert "identity" not in g.grains          # too long to keep for every grain
    assert "identity" in shallow["g"].grains   # short: kept, as always
    # ...yet any grain's identity is there on demand, and right
    deepest = deep["deepest"]
    text = g.identities([deepest])[0]
    assert int(g.grains["depth"].iat[deepest]) >= 2000
    assert text == _lineage_by_parents(g, deepest)
    assert len(text) > 2 * 2000


@pytest.mark.parametrize("env", [{}, ON_DEMAND])
def test_app_details_show_the_identity_with_or_without_the_column(record, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from grainlab.app.data import AppData
    a = grainlab.analyze(record("fib", 10, 3, threads=2).path)   # fresh graph
    data = AppData(a)
    g = a.graph
    assert ("identity" in g.grains) == (not env)
    want = g.identities()
    for gid in (0, len(g.grains) - 1):
        row = data.grain_details(gid)["row"]
        assert row["identity"] == want[gid]
        assert list(row.index[:2]) == ["kind", "identity"]
    # contexts are labelled by their identity either way
    G = len(g.grains)
    labels = data.hover[np.arange(len(data.hover))]
    assert list(labels[G:]) == ["serial/team code " + s for s in g.identities(g.contexts.index)]
    assert all(f"#{i} " in labels[i] for i in range(G))


def test_saved_analysis_keeps_identities_and_matching(record, tmp_path, monkeypatch):
    """A saved analysis keeps its identity forest: identities on demand and
    hash matching work after reopening (here without identity columns)."""
    for k, v in ON_DEMAND.items():
        monkeypatch.setenv(k, v)
    from grainlab.analysis.analysis import open as open_analysis
    a = grainlab.analyze(record("fib", 10, 3, threads=1).path)
    b = grainlab.analyze(record("fib", 10, 3, threads=2).path)
    want = a.graph.identities()
    a.save(tmp_path / "a")
    back = open_analysis(tmp_path / "a")
    assert "identity" not in back.graph.grains
    assert list(back.graph.identities()) == list(want)
    hashes = back.graph.identity_hashes()
    assert hashes is not None and hashes[2].all()
    pos = work_deviation.match(back.graph.grains, b.graph.grains, hashes,
                               b.graph.identity_hashes())
    # fib: same tasks in both runs, each matched to the grain of equal identity
    assert (pos >= 0).all()
    assert list(want[pos]) == list(b.graph.identities())


def test_exports_of_graphs_without_identity_columns_use_short_labels(record, tmp_path,
                                                                      monkeypatch):
    """A graph whose identities are not kept (forced here: huge deep graphs in
    practice) is exported with fixed-size labels: the identity's last 4
    steps ("…" when cut) and its 128-bit hash."""
    import networkx as nx
    from grainlab.export import write_graphml, write_perfetto
    for k, v in ON_DEMAND.items():
        monkeypatch.setenv(k, v)
    g = grainlab.analyze(record("fib", 10, 3, threads=2).path).graph
    full = list(g.identities(np.arange(len(g.grains) + len(g.contexts))))
    h1, h2 = g.names.hashes(g.identity_nodes())

    def expected(i):
        s = full[i]
        # the steps of a lineage: "0", ".p0", ".<c>" (fib has no implicit ".i")
        steps = [s.split(".")[0]] + ["." + p for p in s.split(".")[1:]]
        shown = "".join(steps[-4:])
        return ("\u2026" if len(steps) > 4 else "") + shown + f" #{h1[i]:016x}{h2[i]:016x}"
    assert any(len(s.split(".")) > 4 for s in full)       # some are cut
    G = nx.read_graphml(write_graphml(g, tmp_path / "g.graphml") and tmp_path / "g.graphml")
    owner = g.nodes["grain"].to_numpy()
    for n, o in zip(g.nodes.index, owner):
        if o >= 0:
            assert G.nodes[f"n{n}"]["identity"] == expected(o)
    write_perfetto(g, tmp_path / "t.json")
    events = json.load(open(tmp_path / "t.json"))
    events = events["traceEvents"] if isinstance(events, dict) else events
    got = {e["args"]["grain"]: e["args"]["identity"] for e in events
           if isinstance(e.get("args"), dict) and "grain" in e["args"]}
    assert got and all(v == expected(k) for k, v in got.items())


def test_grains_match_when_the_single_went_to_another_thread():
    """Two real runs of fib 14 4 (tests/data): at 1 thread, and at 2 where
    thread 1 won the `single`. The producer is ".p0" in both, so every grain
    matches by identity (the hash once held the winner's team index, and
    compare refused the pair)."""
    data = Path(__file__).resolve().parent / "data"
    a = grainlab.load(data / "fib14_t1.parquet").graph()
    b = grainlab.load(data / "fib14_t2_single_on_thread1.parquet").graph()
    assert int(b.contexts.loc[b.grains["parent"].iloc[0], "team_index"]) == 1
    c = grainlab.analyze(data / "fib14_t2_single_on_thread1.parquet").compare(
        data / "fib14_t1.parquet")
    assert c.info["matched"] == len(a.grains) == len(b.grains) == 30
