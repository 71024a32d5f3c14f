"""Cutoff tuning (issue 25): the sweep's table, the summary against pandas
directly, the rule on tables built to exercise each of its branches, the
explanation's numbers, and `grainlab sweep` on a real example."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import grainlab
from grainlab.errors import UsageError
from grainlab.suite import cutoffs as C


def runs(spec: dict, reps=3, seed=0) -> pd.DataFrame:
    """cutoff -> (alone mean s, overhead share, parallelism): rows per rep
    with a little spread, like `measurements` returns."""
    rng = np.random.default_rng(seed)
    rows = []
    for c, (alone, overhead, par) in spec.items():
        for r in range(reps):
            a = alone * (1 + 0.02 * (r - 1))
            rows.append({"cutoff": c, "rep": r + 1, "alone_s": a, "serial_s": 2 * alone,
                         "collector_s": 1.5 * a, "span_ms": 1 + rng.uniform(), "parallelism": par,
                         "overhead_fraction": overhead, "idle_fraction": 0.1,
                         "parallel_benefit_median": 1 / overhead, "grains": 2 ** c})
    df = pd.DataFrame(rows)
    df["speedup"] = df.groupby("cutoff")["serial_s"].mean().min() / df["alone_s"]
    df["inflation"] = df["collector_s"] / df["alone_s"]
    return df


def test_summary_is_mean_and_sample_sd_per_cutoff():
    df = runs({2: (1.0, 0.2, 2), 4: (0.5, 0.3, 4)})
    t = C.summary(df).set_index("cutoff")
    for c in (2, 4):
        sub = df[df["cutoff"] == c]
        assert t.loc[c, "alone_s_mean"] == pytest.approx(sub["alone_s"].mean())
        assert t.loc[c, "alone_s_sd"] == pytest.approx(sub["alone_s"].std(ddof=1))
        assert t.loc[c, "reps"] == 3


def test_fastest_wins_when_not_overhead_bound():
    t = C.summary(runs({2: (1.0, 0.2, 2), 4: (0.5, 0.3, 4), 6: (0.8, 0.4, 8)}))
    rec = C.recommend(t)
    assert rec["cutoff"] == 4 and rec["fastest"] == 4 and not rec["fallback"]
    assert rec["indistinguishable"] == [4]


def test_an_overhead_bound_fastest_is_not_recommended():
    # 8 is fastest but 70% of its thread time is overhead; 6 is as fast within noise
    spec = {2: (1.0, 0.2, 2), 6: (0.505, 0.45, 6), 8: (0.50, 0.7, 12)}
    rec = C.recommend(C.summary(runs(spec)))
    assert rec["fastest"] == 8 and 8 in rec["overhead_bound"]
    assert rec["cutoff"] == 6 and not rec["fallback"]


def test_fallback_to_the_fastest_light_one_and_none_when_all_are_bound():
    spec = {2: (1.0, 0.2, 2), 8: (0.5, 0.7, 12)}
    rec = C.recommend(C.summary(runs(spec)))
    assert rec["cutoff"] == 2 and rec["fallback"]
    rec = C.recommend(C.summary(runs({2: (1.0, 0.6, 2), 8: (0.5, 0.7, 12)})))
    assert rec["cutoff"] is None and rec["fastest"] == 8
    assert "No recommendation" in C.explain(rec, C.summary(runs({2: (1.0, 0.6, 2),
                                                                   8: (0.5, 0.7, 12)})), 2)


def test_recommendation_against_the_measured_times_directly():
    """The rule restated on the raw rows, with pandas only."""
    df = runs({2: (1.0, 0.2, 2), 4: (0.62, 0.3, 4), 6: (0.6, 0.45, 8), 8: (0.59, 0.8, 16)})
    g = df.groupby("cutoff")
    mean, sd, ov = g["alone_s"].mean(), g["alone_s"].std(ddof=1), g["overhead_fraction"].mean()
    tie = mean <= mean.min() + sd[mean.idxmin()] + sd
    want = mean[tie & (ov <= 0.5)].idxmin()
    assert C.recommend(C.summary(df))["cutoff"] == want == 6


def test_the_documented_rule_agrees_on_random_sweeps():
    """recommend() against tests/cutoff_oracle.py (the rule restated from
    docs/notebooks.md in plain Python) on random sweeps: ties within noise,
    overhead-bound fastest cutoffs, all bound, one repetition's zero sd."""
    from cutoff_oracle import documented_rule
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(300):
        cuts = sorted(rng.choice(np.arange(1, 30), int(rng.integers(1, 6)), replace=False))
        rows = []
        for c in cuts:
            mean, noise = rng.uniform(0.4, 1.0), rng.choice([0.0, 0.01, 0.1, 0.3])
            overhead = rng.uniform(0.1, 0.9)
            for r in range(int(rng.integers(1, 5)) if rng.random() < 0.2 else 3):
                rows.append({"cutoff": int(c), "rep": r + 1,
                             "alone_s": mean * (1 + noise * rng.standard_normal()),
                             "overhead_fraction": overhead})
        df = pd.DataFrame(rows)
        for m in C.MEASURES:
            if m not in df:
                df[m] = 1.0
        want = documented_rule(df.to_dict("records"))
        got = C.recommend(C.summary(df))
        assert {k: got[k] for k in want} == want, df
        seen.add("none" if want["cutoff"] is None else "fallback" if want["fallback"] else
                 "fastest" if want["cutoff"] == want["fastest"] else "tie")
    assert seen == {"none", "fallback", "fastest", "tie"}     # every branch of the rule met


def test_the_oracle_on_the_hand_cases():
    from cutoff_oracle import documented_rule
    for spec, want in (({2: (1.0, 0.2, 2), 4: (0.5, 0.3, 4), 6: (0.8, 0.4, 8)}, 4),
                       ({2: (1.0, 0.2, 2), 6: (0.505, 0.45, 6), 8: (0.50, 0.7, 12)}, 6),
                       ({2: (1.0, 0.2, 2), 8: (0.5, 0.7, 12)}, 2),
                       ({2: (1.0, 0.6, 2), 8: (0.5, 0.7, 12)}, None)):
        assert documented_rule(runs(spec).to_dict("records"))["cutoff"] == want, spec


def test_explanation_states_the_numbers():
    t = C.summary(runs({2: (1.0, 0.2, 2), 4: (0.5, 0.3, 4), 6: (0.8, 0.7, 8)}))
    rec = C.recommend(t)
    text = C.explain(rec, t, 2)
    row = t.set_index("cutoff").loc[4]
    assert "**Recommended: cutoff 4**" in text
    assert f"{1e3 * row['alone_s_mean']:.1f} ± {1e3 * row['alone_s_sd']:.1f} ms alone" in text
    assert "6 (70%)" in text          # the overhead-bound one, with its share
    assert f"picks cutoff {C.grain_graph_choice(t, 2)}" in text


def test_expand_fills_every_placeholder():
    assert C.expand(["sort", "64", "{}", "{}", "20"], 8) == ["sort", "64", "8", "8", "20"]
    with pytest.raises(UsageError):
        C.expand(["fib", "20"], 4)


def test_sweep_command_records_every_cutoff_and_repetition(example, tmp_path):
    out = tmp_path / "sw"
    r = grainlab("sweep", "--cutoffs", "2,4", "--reps", "2", "-q", "-o", out, "--",
                 example("fib"), "16", "{}")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out / C.SWEEP_CSV)
    # repetition by repetition, every cutoff in each
    assert list(zip(df["rep"], df["cutoff"])) == [(1, 2), (1, 4), (2, 2), (2, 4)]
    assert (df[["alone_s", "serial_s", "collector_s"]] > 0).all().all()
    assert all((out / t).is_file() for t in df["trace"])
    m = C.measurements(out)
    # the traces are the cutoffs' own: fib 16 c creates 2^(c+1) - 2 tasks
    assert list(m["grains"]) == [6, 30, 6, 30]
    assert m["inflation"].tolist() == pytest.approx((m["collector_s"] / m["alone_s"]).tolist())


def test_sweep_command_errors_are_one_line(example, tmp_path):
    r = grainlab("sweep", "--cutoffs", "2", "-o", tmp_path / "x", "--", example("fib"), "16")
    assert r.returncode != 0 and "no {}" in r.stderr and "Traceback" not in r.stderr
    r = grainlab("sweep", "--cutoffs", "2,x", "-o", tmp_path / "x", "--", example("fib"), "{}")
    assert r.returncode != 0 and "expected integers" in r.stderr and "Traceback" not in r.stderr
