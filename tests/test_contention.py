"""Contention in `grainlab predict` (issue 34, item 3), the what-ifs of a
cutoff sweep (item 4) and the serial part (item 6): exact cases on graphs
built here, invariants on real traces. No time is measured.

- the model i(c) = 1 + A (1 - 1/c): the fit recovers A from points on the
  curve, never goes below 0, needs concurrency;
- k equal grains under the model: the replay's makespan is exactly the
  inflated grain's weight, at the concurrency the contention-free replay had;
- merge-below of a synthetic fork-join tree: the replay at 1 core is the
  work minus exactly the forks and joins an inlined call does not pay, and
  with enough cores exactly the merged graph's span;
- the predicted-best-cutoff rule on constructed inputs;
- predict's output: the range holds the contention-free prediction, runs at
  2 threads fit the locations, and the serial part bounds the speed-up."""
from __future__ import annotations

import json

import numpy as np
import pytest

import grainlab as gl
from grainlab import synth
from grainlab.metrics import contention as ct
from grainlab.metrics.predict import Costs, predict
from grainlab.metrics.replay_graph import Replay, replay_graph
from grainlab.suite import cutoffs as cu

ZERO = Costs(0, 0, 0)


@pytest.mark.parametrize("A", [0.0, 0.35, 1.0, 2.5])
def test_the_fit_recovers_the_amplitude_from_points_on_the_curve(A):
    c = np.array([1.7, 2.0, 3.5, 7.9])
    assert ct.fit_amplitude(c, ct.inflation(A, c)) == pytest.approx(A, abs=1e-12)
    assert ct.fit_amplitude(c[:1], ct.inflation(A, c[:1])) == pytest.approx(A, abs=1e-12)


def test_the_model_is_one_at_one_grain_and_saturates():
    assert ct.inflation(3.0, 1.0) == 1.0
    assert ct.inflation(1.0, 2.0) == pytest.approx(1.5)
    assert ct.inflation(1.0, 1e9) == pytest.approx(2.0)
    c = np.arange(1, 100)
    assert (np.diff(ct.inflation(0.7, c)) > 0).all()


def test_the_fit_needs_concurrency_and_never_speeds_grains_up():
    assert ct.fit_amplitude([1.05], [3.0]) is None          # one core busy: nothing to say
    assert ct.fit_amplitude([2.0], [0.8]) == 0.0             # faster at 2: not extrapolated
    assert ct.fit_amplitude([2.0], [100.0]) == ct.A_RANGE[1]


def equal_grains(k, w):
    """A root (1 ns) spawns k independent grains of w ns (forks, join: 0)."""
    n = 1 + 2 * k + 1
    weights = np.zeros(n, np.int64)
    weights[0] = 1
    first = np.zeros(n, bool)
    grain = np.full(n, -1, np.int64)
    src, dst, et = [], [], []
    prev = 0
    for i in range(k):
        fk, kid = 1 + 2 * i, 2 + 2 * i
        src += [prev, fk]
        dst += [fk, kid]
        et += [0, 1]
        weights[kid], first[kid], grain[kid] = w, True, i
        prev = fk
    join = n - 1
    src += [prev] + [2 + 2 * i for i in range(k)]
    dst += [join] * (k + 1)
    et += [0] + [2] * k
    key = np.arange(n, dtype=np.int64)
    own = grain >= 0
    own[0] = True
    return Replay(weights, np.array(src, np.int64), np.array(dst, np.int64),
                  np.array(et, np.int8), first, own,
                  {"start": key, "end": key, "is_join": np.zeros(n, bool),
                   "released": np.zeros(n, bool)}, {}, grain)


@pytest.mark.parametrize("P", [2, 4, 8])
def test_k_equal_grains_take_their_inflated_weight(P):
    k, w, A = 8, 1000, 1.0
    rep = equal_grains(k, w)
    free = predict(rep, [1, P], ZERO)
    assert free["predicted_ns"] == [1 + k * w, 1 + (k // P) * w]
    c = ct.concurrency(ct.grain_work(rep), free["predicted_ns"][1], P)
    assert c == pytest.approx(min(P, k * w / (1 + (k // P) * w)))
    amp = np.full(k, A)
    out = predict(rep, [1, P], ZERO, lambda p: ct.node_factors(rep, amp, c))
    grain_w = int(np.rint(w * ct.inflation(A, c)))
    assert out["predicted_ns"] == [1 + k * w, 1 + (k // P) * grain_w]
    assert out["wti"][1] == pytest.approx((1 + k * grain_w) / (1 + k * w))
    # the root's own node is not a grain's: never inflated
    assert ct.node_factors(rep, amp, c)[0] == 1.0


def test_a_per_location_amplitude_reaches_only_its_grains():
    rep = equal_grains(4, 1000)
    model = ct.Contention({"a.c:1": 2.0}, 0.5)
    amp = model.grain_amplitude(["a.c:1", "b.c:2", "a.c:1", "c.c:3"])
    assert amp.tolist() == [2.0, 0.5, 2.0, 0.5]
    f = ct.node_factors(rep, amp, 2.0)
    assert f[rep.grain >= 0].tolist() == [2.0, 1.25, 2.0, 1.25]


def test_the_pessimistic_bound_uses_stalled_cycles_where_recorded():
    class G:
        pass
    g = G()
    import pandas as pd
    g.grains = pd.DataFrame({"counter:PAPI_RES_STL": [0.0, 50.0, 100.0],
                             "counter:PAPI_TOT_CYC": [100.0, 100.0, 100.0]})
    m = ct.pessimistic(g)
    assert m.grain_amplitude(["x", "y", "z"]).tolist() == [0.0, ct.PESSIMISTIC_A / 2,
                                                           ct.PESSIMISTIC_A]
    g.grains = pd.DataFrame({"work": [1, 2]})
    m = ct.pessimistic(g)
    assert m.grain_amplitude(["x", "y"]).tolist() == [ct.PESSIMISTIC_A] * 2
    assert "no stall and cycle counters" in m.notes[0]


def test_a_measured_speedup_fits_one_factor():
    m = ct.from_speedup(2, measured=1.25, predicted=1.875, concurrency_P=2.0)
    assert m.default == pytest.approx((1.875 / 1.25 - 1) / 0.5)
    assert m.amplitude == {}


# -- merge-below on a tree known exactly ------------------------------------------

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = tmp_path_factory.mktemp("contention") / "forkjoin.parquet"
    synth.generate(path, "fork-join", 200, threads=1, seed=3, timing=synth.Timing(jitter=0))
    return gl.analyze(path)


@pytest.mark.parametrize("D", [1, 2, 3, 5])
def test_merge_below_of_a_known_tree_is_exact(tree, D):
    """At 1 core with no costs the replay is its graph's work: the recorded
    work less exactly what an inlined call does not pay (the forks creating
    tasks deeper than D, the joins of the tasks at D, the merged tasks' own
    forks and joins); with as many cores as tasks it is exactly the merged
    graph's span."""
    g = tree.graph
    n, gr = g.nodes, g.grains
    depth = gr["depth"].to_numpy()
    task = (gr["kind"] == "task").to_numpy()
    G = len(gr)
    owner = n["owner"].to_numpy()
    child = n["child"].to_numpy()
    kind = n["type"].astype(str).to_numpy()
    dur = n["duration"].to_numpy(np.int64)
    own_depth = np.where((owner >= 0) & (owner < G), depth[np.clip(owner, 0, G - 1)], 0)
    in_task = (owner >= 0) & (owner < G)
    child_deep = (kind == "fork") & (child >= 0) & (child < G) & \
        (depth[np.clip(child, 0, G - 1)] > D)
    free = child_deep | ((kind == "join") & in_task & (own_depth == D)) | \
        (in_task & (own_depth > D) & np.isin(kind, ["fork", "join"]))
    rep = replay_graph(g, merge_below=D, guard="none", whole=True)
    base = replay_graph(g, guard="none", whole=True)
    assert rep.guard["merged_tasks"] == int((task & (depth > D)).sum())
    assert rep.work == base.work - int(dur[free].sum())
    out = predict(rep, [1, 10_000], ZERO)
    assert out["predicted_ns"][0] == rep.work
    assert out["predicted_ns"][1] == out["span_ns"]
    # deeper than the tree: nothing merged, the same replay
    same = replay_graph(g, merge_below=int(depth.max()), guard="none", whole=True)
    assert same.work == base.work and len(same.w) == len(base.w)


# -- the predicted best cutoff -------------------------------------------------------

def test_the_predicted_best_cutoff_is_the_fastest():
    assert cu.predicted_best([2, 4, 6, 8], [50, 30, 20, 40]) == 6
    assert cu.predicted_best(["a", "b"], [1.0, 1.0]) == "a"


def test_a_tie_goes_to_the_cutoff_with_fewer_tasks():
    # 6 and 8 within 2%: 6 has fewer tasks
    assert cu.predicted_best([2, 4, 6, 8], [50, 30, 20.3, 20.0], [6, 30, 126, 510]) == 6
    # beyond the tie: the fastest wins whatever its tasks
    assert cu.predicted_best([2, 4, 6, 8], [50, 30, 21, 20.0], [6, 30, 126, 510]) == 8
    # sort's size cutoffs: larger size, fewer tasks
    assert cu.predicted_best([65536, 16384, 4096], [10.0, 10.1, 12], [64, 384, 2048]) == 65536


def test_steps_and_depths():
    assert cu.steps_apart([8, 2, 6, 4], 2, 6) == 2
    assert cu.steps_apart([1024, 256, 4096], 4096, 1024) == 1
    cum = [2, 6, 14, 30, 62]                  # a binary tree's tasks at depth <= D
    assert cu.merge_depths({1: 2, 3: 14, 5: 62}, cum) == {1: 1, 3: 3, 5: 5}
    assert cu.merge_depths({"big": 5, "small": 40}, cum) == {"big": 2, "small": 4}


# -- predict's output --------------------------------------------------------------

def test_the_range_holds_the_contention_free_prediction(record):
    a = gl.analyze(record("fib", 15, 6, threads=1).path)
    out = a.predict([1, 2, 4, 16])
    assert "contention" not in out
    rng = out["range"]
    for sp, (lo, hi), p in zip(out["speedup"], rng["speedup"], out["cores"]):
        assert hi == pytest.approx(sp) and lo <= hi
        if p == 1:
            assert lo == pytest.approx(1.0)
    inf = rng["pessimistic"]["inflation"]
    assert inf[0] == 1.0 and all(1.0 <= x <= 1 + ct.PESSIMISTIC_A for x in inf)


def test_runs_at_two_threads_fit_the_locations(record, cli):
    one = record("sort", 65536, 512, 512, 20, threads=1)
    two = record("sort", 65536, 512, 512, 20, threads=2)
    a = gl.analyze(one.path)
    out = a.predict([1, 2, 8], runs=[two.path])
    c = out["contention"]
    assert c["fitted"] and c["source"].startswith("runs: ")
    assert c["predicted_ns"][0] == out["predicted_ns"][0]          # 1 core: the trace
    for f in c["locations"]:
        assert 0.0 <= f["amplitude"] <= ct.A_RANGE[1]
        assert f["measured"] and all(m["threads"] == 2 for m in f["measured"])
        assert f["inflation"][0] == 1.0
    for (lo, hi), t in zip(out["range"]["predicted_ns"], c["predicted_ns"]):
        assert lo <= hi and lo <= t <= hi or t == hi
    r = cli("predict", "--cores", "1,2", "--runs", str(two.path), "--json", str(one.path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["contention"]["fitted"]
    r = cli("predict", "--cores", "1,2", "--runs", "2=1.5", str(one.path))
    assert r.returncode == 0, r.stderr
    assert "contention   fitted" in r.stdout and "measured speed-up 1.5 at 2" in r.stdout


@pytest.mark.parametrize("args", [["--runs", "1=2"], ["--runs", "2=x"],
                                  ["--runs", "2=1.5", "--wti", "1.2"]])
def test_bad_runs_are_one_line(record, cli, args):
    t = record("fib", 12, 4, threads=1)
    r = cli("predict", *args, str(t.path))
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1


def test_the_serial_part_bounds_the_speedup(tree):
    out = tree.predict([1, 2], whole=True)
    s = out["serial"]
    g = tree.graph
    from grainlab.metrics.work import critical_path_time
    init = sum(c["ns"] for c in critical_path_time(g)["contexts"] if c["kind"] == "initial")
    assert s["serial_ns"] == init > 0
    assert s["amdahl_speedup"] == pytest.approx(out["work_ns"] / init)
    assert s["serial_start_ns"] == synth.Timing().serial_ns
    assert s["amdahl_speedup"] >= out["parallelism"]
