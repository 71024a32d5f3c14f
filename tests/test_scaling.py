"""`grainlab scaling` (issue 22 part 1): speed-up over runs at several thread
counts, split as Speed-up_N = (N / N_B) / (OVR_N · WTI_N) (docs/metrics.md
"Scaling"; grainlab.metrics.scaling, grainlab.analysis.scaling).

- hand-built graphs (tests/handgraph.py) whose work, overhead and idle are
  known, so speed-up, OVR, WTI and per-location inflation are known exactly;
- the identity on recorded runs of every example of the suite (examples/suite*.tsv,
  small size) at 1 and 2 threads;
- refusal of runs of different programs or inputs, the JSON keys, the text,
  the figures.
"""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line_error
from handgraph import loop

from grainlab import synth
from grainlab.metrics import scaling as sc
from grainlab.metrics import time_decomposition as td

# ---------------------------------------------------------------------------
# hand-computed cases


def _terms(*graphs, baseline=0):
    import pandas as pd
    return sc.terms(pd.DataFrame([sc.run_split(g) for g in graphs]), baseline)


def _exact(value, fraction):
    """A float figure against its exact value: equal up to the rounding of
    the two or three float64 divisions that make it (<= 4 ulps)."""
    assert abs(Fraction(float(value)) - fraction) <= 4 * 2.0 ** -52 * abs(fraction), \
        (value, fraction, float(fraction))


def _split_by_hand(threads, window, busy):
    """An independent decomposition of a hand loop (no created tasks, so every
    gap is idle): `busy` lists per thread that ran a node its (work, schedule)
    ns; team threads beyond them ran nothing. Returns work, overhead, idle,
    total as integers."""
    work = sum(w for w, _ in busy)
    overhead = sum(o for _, o in busy)
    idle = sum(window - w - o for w, o in busy) + (threads - len(busy)) * window
    return work, overhead, idle, threads * window


def test_hand_built_loops_give_exact_speedup_ovr_and_wti():
    # B: one thread, bookkeeping 1 before each of four chunks of 5 and after the
    #    last: window 25, work 20, overhead 5, idle 0.
    # A: two threads, each 1 5 1 5 1: window 13, work 20, overhead 6, idle 0.
    # C: two threads, 1 6 1 6 1 (15) and 1 6 1 4 1 (13): window 15, work 22,
    #    overhead 6, idle 2 (thread 1 after its last node).
    base, a, c = loop([[5, 5, 5, 5]])[0], loop([[5, 5], [5, 5]])[0], loop([[6, 6], [6, 4]])[0]
    r = _terms(base, a, c)
    hand = [_split_by_hand(1, 25, [(20, 5)]), _split_by_hand(2, 13, [(10, 3), (10, 3)]),
            _split_by_hand(2, 15, [(12, 3), (10, 3)])]
    assert r["threads"].tolist() == [1, 2, 2]
    assert r["duration_ns"].tolist() == [25, 13, 15]
    for col, k in (("work_ns", 0), ("overhead_ns", 1), ("idle_ns", 2), ("total_ns", 3)):
        assert r[col].tolist() == [h[k] for h in hand], col
    assert r["inflation_ns"].tolist() == [0, 0, 2]
    # by hand, in exact fractions: OVR* = N T / work, OVR relative to B's 25/20
    expect = {"speedup": [1, Fraction(25, 13), Fraction(25, 15)],
              "wti": [1, 1, Fraction(22, 20)],
              "ovr_abs": [Fraction(25, 20), Fraction(26, 20), Fraction(30, 22)],
              "ovr": [1, Fraction(26, 25), Fraction(30 * 20, 22 * 25)],
              "efficiency": [1, Fraction(25, 26), Fraction(25, 30)],
              "idle_share": [0, 0, Fraction(2, 30)]}
    for col, values in expect.items():
        for got, want in zip(r[col].tolist(), values):
            _exact(got, Fraction(want))


# The work split wrong on purpose: one thread gets nearly all the chunks, a
# second one chunk, and a third team thread none (libomp started it; it ran no
# node). By hand (bookkeeping 1 around each chunk):
#   thread 0: 1 9 1 9 1 = 21 (work 18, schedule 3)
#   thread 1: 1 2 1     = 4  (work 2, schedule 2), idle 21 - 4 = 17 after it
#   thread 2: nothing        idle 21 (the whole window)
# window 21, N = 3: total 63 = work 20 + overhead 5 + idle 38.
# Baseline (1 thread, chunks 5 5 5 5): window 25, work 20, total 25.
WRONG_SPLIT = {"threads": 3, "window": 21, "work": 20, "overhead": 5, "idle": 38, "total": 63}


def _wrong_split():
    g = loop([[9, 9], [2]])[0]
    g.meta["threads"] = 3
    return g


def test_a_wrong_work_split_gives_the_hand_computed_decomposition():
    d = td.decompose(_wrong_split())
    assert {k: d[k] for k in ("threads", "work", "overhead", "idle", "total")} == \
        {k: WRONG_SPLIT[k] for k in ("threads", "work", "overhead", "idle", "total")}
    assert d["threads_active"] == 2 and d["window_ns"] == 21
    assert d["work"] + d["overhead"] + d["idle"] == 3 * 21
    _exact(d["OVR"], Fraction(63, 20))


def test_a_wrong_work_split_gives_exact_ovr_wti_and_speedup_in_scaling_and_compare():
    base, run = loop([[5, 5, 5, 5]])[0], _wrong_split()
    r = _terms(base, run)
    # scaling, by hand: speed-up T_B/T_N = 25/21; WTI 20/20; OVR (63/20)/(25/20)
    assert r.at[1, "threads"] == 3 and r.at[1, "threads_active"] == 2
    assert r.at[1, "idle_ns"] == 38 and r.at[1, "total_ns"] == 63
    _exact(r.at[1, "speedup"], Fraction(25, 21))
    _exact(r.at[1, "wti"], Fraction(1))
    _exact(r.at[1, "ovr"], Fraction(63, 25))
    _exact(r.at[1, "ovr_abs"], Fraction(63, 20))
    _exact(r.at[1, "efficiency"], Fraction(25, 63))
    _exact(r.at[1, "idle_share"], Fraction(38, 63))
    # compare (grainlab.analysis.Comparison's terms): the same numbers
    c = td.speedup_terms(td.decompose(run), td.decompose(base))
    _exact(c["OVR"], Fraction(63, 20))
    _exact(c["OVR_relative"], Fraction(63, 25))
    _exact(c["WTI"], Fraction(1))
    _exact(c["speedup"], Fraction(25, 21))
    _exact(c["speedup_bound"], Fraction(20, 21))     # N/(OVR WTI) = work_B / T_N


def test_compare_and_scaling_agree_on_the_pair_with_a_thread_that_ran_nothing():
    """The issue's pair: the team had 3 threads, one ran no node. scaling said
    OVR 1.636, compare 1.091 (it counted the 2 threads that ran a node)."""
    g = loop([[6, 6], [6, 4]])[0]
    g.meta["threads"] = 3
    base = loop([[5, 5, 5, 5]])[0]
    r = _terms(base, g)
    c = td.speedup_terms(td.decompose(g), td.decompose(base))
    want = Fraction(45, 22) / Fraction(25, 20)          # 1.636...
    _exact(r.at[1, "ovr"], want)
    _exact(c["OVR_relative"], want)
    for mine, theirs in (("OVR_relative", "ovr"), ("OVR", "ovr_abs"), ("WTI", "wti"),
                         ("speedup", "speedup")):
        assert c[mine] == r.at[1, theirs], mine


def test_a_team_thread_that_ran_nothing_is_idle_for_the_whole_window():
    g = loop([[6, 6], [6, 4]])[0]
    g.meta["threads"] = 3           # the team had 3 threads, one ran no node
    r = _terms(loop([[5, 5, 5, 5]])[0], g)
    assert r["threads"].tolist() == [1, 3]
    assert r["threads_active"].tolist() == [1, 2]
    assert r.at[1, "idle_ns"] == 2 + 15 and r.at[1, "total_ns"] == 45
    # speed-up unchanged (25/15); OVR grows by 45/30, efficiency is over 3 threads
    _exact(r.at[1, "speedup"], Fraction(25, 15))
    _exact(r.at[1, "ovr"], Fraction(45, 22) / Fraction(25, 20))
    _exact(r.at[1, "efficiency"], Fraction(25, 45))


def test_a_two_thread_baseline_gives_speedup_over_n_over_n_baseline():
    two, one = loop([[5, 5], [5, 5]])[0], loop([[5, 5, 5, 5]])[0]
    r = _terms(two, one, baseline=0)
    assert r["baseline"].tolist() == [True, False]
    _exact(r.at[1, "speedup"], Fraction(13, 25))
    _exact(r.at[1, "ideal"], Fraction(1, 2))
    # OVR relative to the 2-thread baseline: (25/20) / (26/20); WTI 20/20
    _exact(r.at[1, "ovr"], Fraction(25, 26))
    _exact(r.at[1, "wti"], Fraction(1))


def test_breakdown_bars_sum_to_the_time_of_all_threads():
    # totals: 25; 2 x 15; 2 x (1 4 1 4 1) = 22
    r = _terms(loop([[5, 5, 5, 5]])[0], loop([[6, 6], [6, 4]])[0], loop([[4, 4], [4, 4]])[0])
    b = sc.breakdown(r)
    assert b["sequential_ns"].tolist() == [20, 20, 20]
    assert b["inflation_ns"].tolist() == [0, 2, -4]
    parts = b[["sequential_ns", "inflation_ns", "overhead_ns", "idle_ns"]].sum(axis=1)
    assert parts.tolist() == r["total_ns"].tolist() == [25, 30, 22]


def test_location_inflation_by_hand():
    # baseline: location a has grains of work 10, 20 (mean 15), b one of 4;
    # run: a 18, 18, 24 (mean 20, x 4/3, + 5*3 = 15 ns), b 4 (x 1, + 0), c (new) 7.
    base = sc.location_means([10, 20, 4], ["a", "a", "b"])
    run = sc.location_means([18, 4, 18, 24, 7], ["a", "b", "a", "a", "c"])
    t = sc.location_inflation(base, [base, run], [1, 2])
    at2 = t[t["run"] == 1].set_index("location")
    assert at2.loc["a", "grains"] == 3 and at2.loc["a", "baseline_grains"] == 2
    assert at2.loc["a", "inflation"] == pytest.approx(4 / 3)
    assert at2.loc["a", "added_work_ns"] == pytest.approx(15)
    assert at2.loc["b", "inflation"] == 1.0 and at2.loc["b", "added_work_ns"] == 0
    assert np.isnan(at2.loc["c", "inflation"]) and at2.loc["c", "baseline_grains"] == 0
    assert sc.most_inflated(t, 1)["location"].tolist() == ["a", "b"]


def test_loop_chunks_are_compared_per_iteration():
    # baseline: one chunk of 1000 iterations, 20000 ns (20 per iteration);
    # run: 1000 chunks of one iteration, 25 ns each (x 1.25, +5000 ns)
    base = sc.location_means([20000], ["loop"], [1000])
    run = sc.location_means(np.full(1000, 25), np.full(1000, "loop", object), np.ones(1000))
    t = sc.location_inflation(base, [run], [2]).iloc[0]
    assert t["grains"] == 1000 and t["baseline_grains"] == 1 and t["units"] == 1000
    assert t["mean_work_ns"] == 25 and t["baseline_mean_work_ns"] == 20
    assert t["inflation"] == 1.25 and t["added_work_ns"] == 5000
    g, _ = loop([[2, 2], [7]])
    assert sc.units(g.grains).tolist() == [1, 1, 1]      # hand loops: no iteration column


# ---------------------------------------------------------------------------
# every example at 1 and 2 threads


def _suite_small():
    from grainlab.suite import runner
    return [r for r in runner.read_tables(runner.default_tables()) if r.size == "small"]


@pytest.mark.parametrize("run", _suite_small(), ids=lambda r: r.label)
def test_the_identity_holds_on_every_example_at_1_and_2_threads(record, run):
    """Speed-up_2 = 2 / (OVR_2 · WTI_2) with a 1-thread baseline.

    Error allowed: relative 1e-12. The definitions make it an identity
    (docs/metrics.md "Scaling": OVR_N · WTI_N = N T_N / (N_B T_B) after the
    work cancels), computed from integer ns by a handful of float64
    divisions and products, each off by at most half an ulp (1.1e-16): the
    result is off by ~1e-15 at most. Anything larger is a wrong definition,
    not rounding. Independently of the module: T_N is read from the graph's
    node window, the team's size is the OMP_NUM_THREADS asked for, and
    work + overhead + idle must cover N · T_N exactly (integers)."""
    import grainlab as gl
    one = record(run.name, *run.args, threads=1)
    two = record(run.name, *run.args, threads=2)
    s = gl.scaling([two, one])           # the baseline is found: fewest threads
    r = s.runs
    assert r["threads"].tolist() == [1, 2]
    assert r["baseline"].tolist() == [True, False]
    windows = []
    for a in s.analyses:
        nodes = a.graph.nodes
        windows.append(int(nodes["end"].max() - nodes["start"].min()))
    assert r["duration_ns"].tolist() == windows
    assert (r["work_ns"] + r["overhead_ns"] + r["idle_ns"]).tolist() == \
        [1 * windows[0], 2 * windows[1]]
    speedup = windows[0] / windows[1]
    assert r.at[1, "speedup"] == pytest.approx(speedup, rel=1e-15)
    n_over = 2 / (r.at[1, "ovr"] * r.at[1, "wti"])
    assert abs(n_over / speedup - 1) < 1e-12, (n_over, speedup)
    assert r.at[0, "ovr"] == 1.0 and r.at[0, "wti"] == 1.0 and r.at[0, "speedup"] == 1.0
    # WTI from the node table itself (every fragment's and chunk's duration:
    # its own time, less grains run inside it), not from the decomposition's
    # per-thread sums
    w = []
    for a in s.analyses:
        nodes = a.graph.nodes
        own = nodes["type"].astype(str).isin(["fragment", "chunk"]) & (nodes["thread"] >= 0)
        w.append(int(nodes["duration"][own].sum()))
    assert r["work_ns"].tolist() == w
    _exact(r.at[1, "wti"], Fraction(w[1], w[0]))
    assert r["matched_grains"].min() >= 1
    # `compare` (B = 2 threads against A = 1) prints the same figures
    c = s.analyses[1].compare(s.analyses[0]).summary["time_decomposition"]
    assert (c["a"]["threads"], c["b"]["threads"]) == (1, 2)
    for mine, theirs in (("OVR_relative", "ovr"), ("OVR", "ovr_abs"), ("WTI", "wti"),
                         ("speedup", "speedup")):
        assert c[mine] == r.at[1, theirs], mine


# ---------------------------------------------------------------------------
# the command: JSON, text, refusals


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("scaling")
    paths = {}
    for threads in (1, 2, 3):
        paths[threads] = d / f"fj-{threads}.parquet"
        synth.generate(paths[threads], "fork-join", 200, threads=threads)
    paths["other"] = d / "fj-300.parquet"
    synth.generate(paths["other"], "fork-join", 300, threads=2)
    paths["loop"] = d / "loop.parquet"
    synth.generate(paths["loop"], "loop", 100, threads=2)
    for name in ("other", "loop", 1):       # the same traces, without a command line
        paths[f"{name}-anon"] = _without_command(paths[name], d / f"{name}-anon.parquet")
    return paths


def _without_command(src, dst):
    """A copy of a trace without its command line (row groups kept: one per
    thread buffer, as the format requires)."""
    f = pq.ParquetFile(src)
    meta = {k: v for k, v in f.schema_arrow.metadata.items() if k != b"grainlab.command"}
    schema = f.schema_arrow.with_metadata(meta)
    with pq.ParquetWriter(dst, schema, compression="zstd") as w:
        for i in range(f.num_row_groups):
            w.write_table(f.read_row_group(i).replace_schema_metadata(meta))
    return dst


JSON_RUN_KEYS = {"path", "threads", "duration_ns", "work_ns", "overhead_ns", "idle_ns",
                 "speedup", "ovr", "wti"}


def test_json_has_the_issue_keys_and_the_identity(cli, synthetic):
    r = cli("scaling", "--json", synthetic[2], synthetic[3], synthetic[1])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["baseline"] == str(synthetic[1])
    assert {"baseline", "runs", "locations", "most_inflated", "program"} <= set(out)
    runs = out["runs"]
    assert [x["threads"] for x in runs] == [1, 2, 3]
    assert [x["baseline"] for x in runs] == [True, False, False]
    for x in runs:
        assert JSON_RUN_KEYS <= set(x), JSON_RUN_KEYS - set(x)
        assert x["speedup"] == pytest.approx(runs[0]["duration_ns"] / x["duration_ns"])
        assert x["threads"] / (x["ovr"] * x["wti"]) == pytest.approx(x["speedup"], rel=1e-12)
        assert x["work_ns"] + x["overhead_ns"] + x["idle_ns"] == x["threads"] * x["duration_ns"]
        assert x["matched_grains"] == x["grains"] == 200
    loc = out["locations"][0]
    assert {"location", "baseline_mean_work_ns", "runs"} <= set(loc)
    assert [p["threads"] for p in loc["runs"]] == [1, 2, 3]
    assert [m["threads"] for m in out["most_inflated"]] == [2, 3]


def test_baseline_option_and_text(cli, synthetic):
    r = cli("scaling", "--baseline", synthetic[2], synthetic[1], synthetic[2])
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert f"baseline       {synthetic[2]}  (2 thread(s)" in text
    for word in ("speed-up", "effic.", "OVR", "WTI", "N/(OVR*WTI)", "grains matched",
                 "SOURCE LOCATIONS", "200/200"):
        assert word in text, word
    rows = [ln for ln in text.splitlines() if ln.startswith("*")]
    assert len(rows) == 1 and rows[0].split()[1] == "2"     # the baseline row is marked


def test_refuses_different_inputs_and_programs(cli, synthetic, record):
    r = cli("scaling", synthetic[1], synthetic["other"])
    assert_one_line_error(r, "different inputs", "200", "300")
    fib = record("fib", "12", "4", threads=1)
    tree = record("tree", "3", "2", threads=1)
    r = cli("scaling", fib.path, tree.path)
    assert_one_line_error(r, "different programs", "fib", "tree")


def test_refuses_by_grain_identity_without_command_lines(cli, synthetic):
    # no command line to compare: a different task tree (200 vs 300 tasks) ...
    r = cli("scaling", synthetic["1-anon"], synthetic["other-anon"])
    assert_one_line_error(r, "different task trees", "200 of 300")
    # ... or no grain in common (tasks vs loop chunks) is refused
    r = cli("scaling", synthetic["1-anon"], synthetic["loop-anon"])
    assert_one_line_error(r, "no grain", "by identity")
    # the same task tree without command lines is accepted
    r = cli("scaling", "--json", synthetic["1-anon"], synthetic[2])
    assert r.returncode == 0, r.stderr


def test_the_text_says_which_factor_costs_more(cli, synthetic):
    # synthetic fork-join: fixed grain durations, so WTI is 1 up to the serial
    # code's nanoseconds and the loss is overhead and idle (OVR > 1)
    r = cli("scaling", "--json", synthetic[1], synthetic[2])
    two = json.loads(r.stdout)["runs"][1]
    assert two["wti"] == pytest.approx(1, abs=0.01) and two["ovr"] > 1.05
    text = cli("scaling", synthetic[1], synthetic[2]).stdout
    line = next(ln for ln in text.splitlines() if ln.startswith("  2 threads: speed-up"))
    assert f"speed-up {two['speedup']:.3g} of 2 " in line
    assert "lost mostly to overhead and idle" in line and f"OVR {two['ovr']:.3g}" in line


def test_one_line_errors_for_bad_input(cli, synthetic, tmp_path):
    assert_one_line_error(cli("scaling", synthetic[1]), "two or more runs")
    assert_one_line_error(cli("scaling", synthetic[1], tmp_path / "missing.parquet"),
                          "missing.parquet")
    assert_one_line_error(cli("scaling", "--baseline", synthetic[3], synthetic[1],
                              synthetic[2]), "--baseline")


def test_help_has_examples(cli):
    r = cli("scaling", "--help")
    assert r.returncode == 0
    assert "grainlab scaling fib-1.parquet fib-2.parquet" in r.stdout
    assert "--json" in r.stdout and "OVR" in r.stdout


# ---------------------------------------------------------------------------
# the Python API and its figures


def test_python_api_and_figures(synthetic):
    import grainlab as gl
    from grainlab.app.scaling_figures import breakdown_figure, speedup_figure
    s = gl.scaling([synthetic[1], synthetic[2], synthetic[3]])
    assert isinstance(s, gl.Scaling)
    fig = breakdown_figure(s)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == ["sequential-equivalent work", "work time inflation",
                                      "overhead", "idle"]
    # work up to the sequential-equivalent + inflation above it = work: a bar's
    # top is threads x time
    stacked = np.sum([np.asarray(t.y, float) for t in bars], axis=0)
    assert stacked * 1e6 == pytest.approx(s.runs["total_ns"].to_numpy(float), rel=1e-9)
    fig2 = speedup_figure(s)
    by_name = {t.name: t for t in fig2.data if t.name}
    assert list(by_name["speed-up"].y) == pytest.approx(s.runs["speedup"].tolist())
    assert list(by_name["OVR"].y) == pytest.approx(s.runs["ovr"].tolist())
    assert list(by_name["1 / WTI"].y) == pytest.approx((1 / s.runs["wti"]).tolist(), rel=1e-12)
