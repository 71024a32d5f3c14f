"""Metrics on hand-built graphs whose answers are worked out by hand
(docs/metrics.md shows the same examples)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from handgraph import fork_join, loop, task_chain, thesis_fig_5_3
from grainlab.metrics import (compute_all, earliest_start, instantaneous_parallelism as ip,
                              load_balance, parallel_benefit, scatter, time_decomposition,
                              work_deviation)


def test_fig_5_4_interval_4_is_2_and_baz_is_1():
    g, ids = thesis_fig_5_3()
    info = ip.compute(g, interval=1)
    prof = ip.ideal_profile(g, interval=1)
    assert prof["optimistic"].tolist() == [1, 1, 2, 2, 2, 3, 2, 1, 1, 1, 1]
    assert prof["optimistic"][4] == 2
    assert g.grains.at[ids["baz"], ip.COLUMN] == 1
    assert g.grains.at[ids["bar"], ip.COLUMN] == 2
    assert info["intervals"] == 11 and info["interval_ns"] == 1


def test_fig_5_4_earliest_start_agrees_with_networkx_span():
    g, ids = thesis_fig_5_3()
    es = earliest_start(g)
    assert int((es + g.nodes["duration"].to_numpy()).max()) == g.span == 11
    # baz can start right after its fork at t=5; the join waits for baz (t=10)
    assert es[g.nodes.index[g.nodes["grain"] == ids["baz"]][0]] == 5
    assert es[g.nodes.index[g.nodes["type"] == "join"][0]] == 10


def test_fig_5_4_interval_choices():
    g, _ = thesis_fig_5_3()
    grain, start, end = ip.placed_fragments(g)
    cand = ip.interval_candidates(g, grain, start, end)
    # grain works: foo 2+3+1+1 = 7, bar 5, baz 5
    assert cand["median"] == 5 and cand["min"] == 5
    # placed grains: foo [0,11) bar [2,7) baz [5,10): starts 0,2,5 vs ends 7,10,11
    assert cand["gap"] == 2          # baz starts at 5, bar ends at 7
    info = ip.compute(g)             # median: intervals [0,5) [5,10) [10,15)
    assert info["interval_ns"] == 5
    assert ip.ideal_profile(g)["optimistic"].tolist() == [2, 3, 1]
    assert ip.ideal_profile(g)["conservative"].tolist() == [0, 1, 0]  # only baz covers [5,10)


def test_interval_cap_coarsens_with_a_note():
    g, _ = thesis_fig_5_3()
    info = ip.compute(g, interval=1, max_intervals=4)
    assert info["interval_ns"] == 3 and info["intervals"] == 4
    assert "coarsened" in info["note"]


@pytest.mark.parametrize("k", [1, 2, 5, 16])
def test_k_equal_children_have_parallelism_k(k):
    g, root, kids = fork_join(k, child_work=100)
    s = compute_all(g)
    assert s["parallelism"] == pytest.approx(k)
    assert (g.grains.loc[kids, ip.COLUMN] == k).all()
    assert (g.grains.loc[kids, ip.COLUMN_CONSERVATIVE] == k).all()


def test_chain_of_tasks_has_parallelism_1():
    g = task_chain(6, work=10)
    s = compute_all(g, interval=1)
    assert s["span_ns"] == 60 and s["parallelism"] == pytest.approx(1.0)
    assert (g.grains[ip.COLUMN] == 1).all()
    assert g.grains["earliest_start"].tolist() == [0, 10, 20, 30, 40, 50]


def test_parallel_benefit_hand_computed():
    # 3 children of 1000 ns, each created in 100 ns; the parent spends 300 ns
    # synchronizing with the 3 at the join -> cost 100 + 300/3 = 200 -> benefit 5
    g, _, kids = fork_join(3, child_work=1000, fork_cost=100, sync_time=300)
    parallel_benefit.compute(g)
    assert g.grains.loc[kids, "parallel_benefit"].tolist() == [5.0, 5.0, 5.0]
    # the root was not created by a fork and joins nowhere: no cost, infinite benefit
    assert np.isinf(g.grains.at[0, "parallel_benefit"])


def test_parallel_benefit_of_chunks_uses_bookkeeping():
    g, chunks = loop([[40, 40]], bookkeeping=8)
    parallel_benefit.compute(g)
    assert g.grains.loc[chunks, "parallel_benefit"].tolist() == [5.0, 5.0]


def test_load_balance_of_a_loop_hand_computed():
    # chains per thread: 2+2+2 = 6, 10, 3+5 = 8 -> median 8; longest chunk 10
    g, chunks = loop([[2, 2, 2], [10], [3, 5]])
    load_balance.compute(g)
    assert g.grains.loc[chunks, "load_balance"].tolist() == [1.25] * 6


def test_load_balance_of_siblings():
    # fork_join children all 100 -> 1.0; a group with works 10, 20, 60 -> 60/20
    g, _, kids = fork_join(3, child_work=100)
    load_balance.compute(g)
    assert g.grains.loc[kids, "load_balance"].tolist() == [1.0, 1.0, 1.0]
    g.grains.loc[kids, "work"] = [10, 20, 60]
    load_balance.compute(g)
    assert g.grains.loc[kids, "load_balance"].tolist() == [3.0, 3.0, 3.0]


def test_scatter_by_cpu_id_difference_and_numa():
    g, _, kids = fork_join(4, child_work=10)
    g.grains.loc[kids, "cpu"] = [0, 0, 3, 7]
    scatter.compute(g)
    # pairs: |0-0|=0 |0-3|=3 |0-7|=7 |0-3|=3 |0-7|=7 |3-7|=4 -> sorted 0 3 3 4 7 7 -> 3.5
    assert g.grains.loc[kids, "scatter"].tolist() == [3.5] * 4
    assert np.isnan(g.grains.at[0, "scatter"])          # the root has no sibling
    g.meta["topology"] = {"cpu_node": [0, 0, 0, 0, 1, 1, 1, 1],
                          "cpu_package": [0, 0, 0, 0, 1, 1, 1, 1],
                          "numa_distances": [[10, 21], [21, 10]]}
    assert scatter.compute(g) == "numa_distance"
    # nodes 0 0 0 1 -> distances 10 10 21 10 21 21 -> 10 10 10 21 21 21 -> 15.5
    assert g.grains.loc[kids, "scatter"].tolist() == [15.5] * 4
    assert scatter.cores_per_socket(g.meta, 99) == 4


def test_memory_hierarchy_utilization_absent_without_counters():
    g, _, _ = fork_join(2)
    s = compute_all(g)
    assert "memory_hierarchy_utilization" not in g.grains.columns
    assert "no stall-cycle counter" in s["memory_hierarchy_utilization"]
    g.grains["counter:PAPI_TOT_CYC"] = [0.0, 300.0, 500.0]
    g.grains["counter:PAPI_RES_STL"] = [0.0, 100.0, 250.0]
    compute_all(g)
    assert g.grains["memory_hierarchy_utilization"].tolist()[1:] == [2.0, 1.0]


def test_work_deviation_of_a_graph_against_itself_is_exactly_1():
    g, _ = thesis_fig_5_3()
    h, _ = thesis_fig_5_3()
    info = work_deviation.compute(g, h)
    assert info["matched"] == 3
    assert (g.grains["work_deviation"] == 1.0).all()


def test_work_deviation_matches_by_identity_not_position():
    a, ids = thesis_fig_5_3()
    b, _ = thesis_fig_5_3()
    # reorder B's grains and inflate bar's work
    b.grains = b.grains.iloc[::-1].reset_index(drop=True)
    b.grains.loc[b.grains["identity"] == "0.0.0", "work"] *= 3
    work_deviation.compute(b, a)
    dev = dict(zip(b.grains["identity"], b.grains["work_deviation"]))
    assert dev == {"0.0": 1.0, "0.0.0": 3.0, "0.0.1": 1.0}


def test_time_decomposition_per_thread():
    # loop: thread 0 runs bk(1) 2 bk(1) 2 bk(1) = 4 work + 3 schedule;
    # thread 1: bk(1) 7 bk(1) = 7 work + 2 schedule; window = 9
    g, _ = loop([[2, 2], [7]])
    t = time_decomposition.per_thread(g).set_index("thread")
    assert t.loc[0, "work"] == 4 and t.loc[0, "schedule"] == 3 and t.loc[0, "idle"] == 2
    assert t.loc[1, "work"] == 7 and t.loc[1, "schedule"] == 2 and t.loc[1, "idle"] == 0
    s = time_decomposition.decompose(g)
    assert s["OVR"] == pytest.approx(18 / 11)
    terms = time_decomposition.speedup_terms(s, {**s, "work": 11 / 1.1})
    assert terms["WTI"] == pytest.approx(1.1)
    assert terms["speedup_bound"] == pytest.approx(2 / (18 / 11 * 1.1))
    # against a hand-made 1-thread run of total 12 with work 10 (OVR 1.2): T_1 = 12, T_2 = 9
    one = {"work": 10, "total": 12, "threads": 1, "window_ns": 12, "OVR": 1.2}
    terms = time_decomposition.speedup_terms(s, one)
    assert terms["speedup"] == pytest.approx(12 / 9)
    assert terms["OVR_relative"] == pytest.approx((18 / 11) / 1.2)
    assert terms["speedup"] == pytest.approx(2 / (terms["OVR_relative"] * terms["WTI"]))


def test_compute_all_adds_every_column_and_a_json_summary():
    import json
    g, _ = thesis_fig_5_3()
    s = compute_all(g, reference=thesis_fig_5_3()[0])
    for col in ("parallel_benefit", "load_balance", "scatter", "instantaneous_parallelism",
                "instantaneous_parallelism_conservative", "earliest_start", "work_deviation"):
        assert col in g.grains.columns, col
    assert s["grains"] == 3 and s["tasks"] == 3 and s["chunks"] == 0
    assert s["span_ns"] == 11 and s["critical_path"] == [0, 2]
    json.dumps(s)  # JSON-able


def test_earliest_start_on_a_team_join_and_chains_across_owners():
    g, chunks = loop([[3, 3], [1]], bookkeeping=1)
    es = earliest_start(g)
    dur = g.nodes["duration"].to_numpy()
    # thread 0: 1+3+1+3+1 = 9; thread 1: 1+1+1 = 3; the join starts at 9
    assert es[len(g.nodes) - 1] == 9 == g.span
    assert int((es + dur).max()) == g.span


@pytest.mark.parametrize("seed", range(10))
def test_interval_counts_and_grain_minimum_against_brute_force(seed):
    """Random placed fragments (several per grain, in time order): per-interval
    counts and per-grain minima by plain loops over intervals."""
    rng = np.random.default_rng(seed)
    n_grains, length = 30, int(rng.integers(1, 8))
    grain, start, end = [], [], []
    for gid in range(n_grains):
        t = int(rng.integers(0, 60))
        for _ in range(int(rng.integers(1, 4))):
            d = int(rng.integers(0, 15))
            grain.append(gid)
            start.append(t)
            end.append(t + d)
            t += d + int(rng.integers(0, 5))
    grain, start, end = map(np.array, (grain, start, end))
    horizon = int(end.max())
    k = max(-(-horizon // length), 1)
    opt, cons, lo, hi, owner = ip._counts(grain, start, end, length, k)
    got = ip._grain_min(opt, lo, hi, owner, n_grains)
    got_cons = ip._grain_min(cons, lo, hi, owner, n_grains)
    for i in range(k):
        a, b = i * length, (i + 1) * length
        over = {gid for gid, s, e in zip(grain, start, end) if e > s and s < b and e > a}
        full = {gid for gid, s, e in zip(grain, start, end) if s <= a and e >= b}
        assert opt[i] == len(over) and cons[i] == len(full), i
    for gid in range(n_grains):
        mine = [(s, e) for g_, s, e in zip(grain, start, end) if g_ == gid]
        positive = [(s, e) for s, e in mine if e > s]
        if positive:        # the intervals its running fragments overlap
            ivs = {i for s, e in positive for i in range(s // length, (e - 1) // length + 1)}
        else:               # a grain with no running time sits at its start
            ivs = {min(s // length, k - 1) for s, _ in mine}
        assert got[gid] == min(opt[i] for i in ivs), gid
        assert got_cons[gid] == min(cons[i] for i in ivs), gid


@pytest.mark.parametrize("seed", range(10))
def test_gap_interval_is_the_smallest_start_to_other_end_distance(seed):
    from types import SimpleNamespace
    import pandas as pd
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    start = rng.integers(0, 100, n)
    end = start + rng.integers(0, 30, n)
    g = SimpleNamespace(grains=pd.DataFrame({"work": end - start}))
    got = ip.interval_candidates(g, np.arange(n), start, end)["gap"]
    d = [abs(int(start[i]) - int(end[j])) for i in range(n) for j in range(n) if i != j]
    d = [x for x in d if x > 0]
    assert got == (min(d) if d else 0)


def test_intervals_start_at_the_first_grain():
    # the same Fig. 5.4 graph shifted by 1000 ns of serial code: same counts
    g, ids = thesis_fig_5_3()
    g.nodes["earliest_start"] = ip.earliest_start(g) + 1000
    prof = ip.ideal_profile(g, interval=1)
    assert prof["optimistic"].tolist() == [1, 1, 2, 2, 2, 3, 2, 1, 1, 1, 1]
    assert prof["start"].tolist()[:2] == [1000, 1001]
    info = ip.compute(g, interval=1)
    assert info["origin_ns"] == 1000 and info["intervals"] == 11
    assert g.grains.at[ids["baz"], ip.COLUMN] == 1
    assert g.grains.at[ids["baz"], "earliest_start"] == 1005


def test_gap_candidate_is_the_nearest_other_grains_end_to_any_start():
    """The "gap" interval (thesis: the smallest distance between one grain's
    start and another's end) against a brute force over every pair, on
    grains given in random order, with distinct times."""
    import types
    from grainlab.metrics.instantaneous_parallelism import interval_candidates
    rng = np.random.default_rng(7)
    for trial in range(20):
        n = int(rng.integers(2, 40))
        times = rng.choice(np.arange(1, 100_000), size=2 * n, replace=False)
        times = times.reshape(n, 2)
        start, end = times.min(axis=1), times.max(axis=1)
        ids = rng.permutation(n)
        g = types.SimpleNamespace(grains=pd.DataFrame({"work": end - start}))
        got = interval_candidates(g, ids, start, end)["gap"]
        d = np.abs(start[:, None] - end[None, :]).astype(float)
        np.fill_diagonal(d, np.inf)
        assert got == int(d.min()), (trial, n)
