"""Metrics on real traces of the example programs: invariants that must hold
whatever the timing, checked against independent computations."""
from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from grainlab.graph import build
from grainlab.metrics import compute_all, earliest_start
from grainlab.symbolize import grain_locations, symbolize

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = [("fib", (20, 5)), ("tree", (3, 3)), ("loops", ()), ("taskgroup", ()),
            ("depend", ()), ("undeferred", (4,))]


@pytest.mark.parametrize("name, args", EXAMPLES)
def test_earliest_start_is_the_networkx_longest_path(record, name, args):
    g = build(record(name, *args, threads=2))
    es = earliest_start(g)
    dur = g.nodes["duration"].to_numpy()
    G = nx.DiGraph()
    G.add_nodes_from(range(len(g.nodes)))
    G.add_edges_from(zip(g.edges["src"].tolist(), g.edges["dst"].tolist()))
    ref = np.zeros(len(dur), np.int64)
    for v in nx.topological_sort(G):
        for u in G.predecessors(v):
            ref[v] = max(ref[v], ref[u] + dur[u])
    assert (es == ref).all()
    assert int((es + dur).max()) == g.span


@pytest.mark.parametrize("name, args", EXAMPLES)
def test_metric_invariants(record, name, args):
    g = build(record(name, *args, threads=2))
    s = compute_all(g)
    gr = g.grains
    positive = gr["work"].to_numpy() > 0
    ip = gr["instantaneous_parallelism"].to_numpy()
    # a running grain always counts itself (optimistic), never more than all grains
    assert (ip[positive] >= 1).all() and (ip[positive] <= len(gr)).all()
    assert (gr["instantaneous_parallelism_conservative"].to_numpy()[positive] <= ip[positive]).all()
    assert (gr["parallel_benefit"].dropna() >= 0).all()
    assert (gr["load_balance"].to_numpy() > 0).all()
    assert ((gr["earliest_start"] >= 0) | ~positive).all()
    td = s["time_decomposition"]
    assert td["work"] + td["overhead"] + td["idle"] == td["total"]
    assert "memory_hierarchy_utilization" not in gr.columns     # no stall counter here


@pytest.mark.parametrize("name, args", EXAMPLES + [("depend", (6,)), ("sort", ("65536", "2048", "2048", "20"))])
def test_the_span_split_adds_up(record, name, args):
    """metrics.work.critical_path_time: grains + their joins + contexts + team barriers =
    the span; each part from the nodes flagged on the path (an independent
    reading of the same path); contexts longest first, of their own kind."""
    g = build(record(name, *args, threads=2))
    split = compute_all(g)["critical_path_time"]
    assert split["grains_ns"] + split["joins_ns"] + split["contexts_ns"] + split["barriers_ns"] == g.span
    n = g.nodes[g.nodes["on_critical_path"].to_numpy(bool)]
    grain, dur, G = n["grain"].to_numpy(), n["duration"].to_numpy(), len(g.grains)
    own = (grain >= 0) & (grain < G)
    join = (n["type"] == "join").to_numpy()
    assert split["grains_ns"] == dur[own & ~join].sum()
    assert split["joins_ns"] == dur[own & join].sum()
    assert split["barriers_ns"] == dur[grain < 0].sum()
    per = [c["ns"] for c in split["contexts"]]
    assert sum(per) == split["contexts_ns"] and per == sorted(per, reverse=True)
    assert all(g.contexts.loc[c["context"], "kind"] == c["kind"] for c in split["contexts"])
    if name == "depend":
        # ~1.5 us of tasks against the program's serial start (hundreds of
        # us): the initial task's first fragment, before any region, is on
        # every path, so the contexts' part holds it (structure: not a ratio
        # to the grains, which a preempted task can stretch by milliseconds)
        initial = int(g.contexts.index[g.contexts["kind"] == "initial"][0])
        mine = g.nodes[(g.nodes["grain"] == initial) & (g.nodes["type"].astype(str) == "fragment")]
        first = int(mine.sort_values("start")["duration"].iloc[0])
        assert first > 0 and split["contexts_ns"] >= first
        assert any(c["kind"] == "initial" and c["ns"] >= first for c in split["contexts"])


def test_symbolized_fib_locations_are_its_task_pragmas(record):
    t = record("fib", 20, 5, threads=2)
    g = build(t)
    src = (REPO / "examples" / "fib.c").read_text().splitlines()
    pragma_lines = {i + 1 for i, line in enumerate(src)
                    if re.match(r"\s*#pragma omp task\b(?!wait)", line)}
    assert len(pragma_lines) == 2
    locs = grain_locations(g, t.meta)
    found = {int(re.fullmatch(r"fib\.c:(\d+) \(fib, task\)", l).group(1)) for l in locs}
    assert found == pragma_lines
    # child 0 of every task is fib(n-1), created at the first pragma
    first = min(pragma_lines)
    assert (locs[g.grains["child_number"] == 0] == f"fib.c:{first} (fib, task)").all()


def test_symbolize_fallbacks(tmp_path):
    not_elf = tmp_path / "libfake.so"
    not_elf.write_bytes(b"not an elf file")
    loadmap = [{"path": str(not_elf), "base": 0x1000, "start": 0x1000, "end": 0x2000}]
    out = symbolize([0, 0x1234, 0x9999, 0x1234], loadmap)
    assert out.tolist() == ["?", "libfake.so+0x234", "0x9999", "libfake.so+0x234"]
    assert symbolize([0x10], None).tolist() == ["0x10"]


@pytest.mark.parametrize("name, args", [("fib", (20, 5)), ("loops", ())])
def test_achieved_profile_and_its_summary_agree(record, name, args):
    from grainlab.metrics import instantaneous_parallelism as ip
    g = build(record(name, *args, threads=2))
    prof = ip.achieved_profile(g)
    t, r = prof["time"].to_numpy(), prof["running"].to_numpy()
    assert r[-1] == 0 and (r >= 0).all() and r.max() <= 2     # 2 threads
    s = ip.achieved_stats(g)
    assert s["achieved_max"] == r.max()
    assert s["achieved_mean"] == pytest.approx((r[:-1] * np.diff(t)).sum() / (t[-1] - t[0]))


def test_taskloop_grains_point_into_libomp_by_symbol(record):
    # taskloop's codeptr is inside libomp (no line info): binary+offset (function)
    t = record("taskloop", threads=2)
    g = build(t)
    locs = set(grain_locations(g, t.meta))
    assert locs and all(re.fullmatch(r"libomp\.so[.\d]* \(\w*taskloop\w*\+0x[0-9a-f]+, taskloop\)",
                                     l) for l in locs), locs
