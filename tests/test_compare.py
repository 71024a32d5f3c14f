"""`grainlab compare` and work deviation on real runs of the deterministic fib
example with 1 and 2 threads (the 1-thread run has every task undeferred)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import assert_one_line_error, grainlab
from grainlab.graph import build
from grainlab.metrics import work_deviation


@pytest.fixture(scope="module")
def fib1(record):
    return record("fib", 20, 5, threads=1)


@pytest.fixture(scope="module")
def fib2(record):
    return record("fib", 20, 5, threads=2)


def test_lineage_matches_across_1_and_2_threads(fib1, fib2):
    a, b = build(fib1), build(fib2)
    assert len(a.grains) == len(b.grains) == 62
    assert set(a.grains["identity"]) == set(b.grains["identity"])
    pos = work_deviation.match(a.grains, b.grains)
    assert (pos >= 0).all() and len(np.unique(pos)) == 62
    # matched grains have the same place in the tree
    assert (a.grains["depth"].to_numpy()[pos] == b.grains["depth"].to_numpy()).all()
    assert (a.grains["child_number"].to_numpy()[pos] == b.grains["child_number"].to_numpy()).all()


def test_work_deviation_of_a_trace_against_itself_is_exactly_1(fib2):
    g, ref = build(fib2), build(fib2)
    info = work_deviation.compute(g, ref)
    assert info["matched"] == 62
    assert (g.grains["work_deviation"].to_numpy() == 1.0).all()


def test_compare_1_vs_2_threads(fib1, fib2):
    r = grainlab("compare", "--json", fib1.path, fib2.path)
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    assert c["matched"] == 62 and c["only_a"] == 0 and c["only_b"] == 0
    assert c["threads_a"] == 1 and c["threads_b"] == 2
    a, b = build(fib1), build(fib2)
    assert c["work_a_ns"] == int(a.grains["work"].sum())
    assert c["work_b_ns"] == int(b.grains["work"].sum())
    assert c["work_deviation"] == pytest.approx(c["work_b_ns"] / c["work_a_ns"])
    # per source location: the two task pragmas of fib.c, sums add up
    assert sorted(l["grains"] for l in c["locations"]) == [31, 31]
    assert sum(l["work_b_ns"] for l in c["locations"]) == c["work_b_ns"]
    for l in c["locations"]:
        assert l["work_deviation"] == pytest.approx(l["work_b_ns"] / l["work_a_ns"])
    # per grain: deviation = B / A of that grain
    for gr in c["grains"]:
        assert gr["work_deviation"] == pytest.approx(gr["work_b_ns"] / gr["work_a_ns"])
    td = c["time_decomposition"]
    assert td["WTI"] == pytest.approx(td["b"]["work"] / td["a"]["work"])


def test_compare_a_trace_with_itself(fib2):
    r = grainlab("compare", "--json", fib2.path, fib2.path)
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    assert c["work_deviation"] == 1.0 and c["inflated"]["grains"] == 0
    assert all(g["work_deviation"] == 1.0 for g in c["grains"])
    text = grainlab("compare", fib2.path, fib2.path)
    assert text.returncode == 0 and "matched        62 grains" in text.stdout


def test_threshold_lowers_inflation_bar(fib1, fib2):
    lo = json.loads(grainlab("compare", "--json", "--threshold", "work_deviation=0",
                             fib1.path, fib2.path).stdout)
    assert lo["threshold"] == 0.0 and lo["inflated"]["grains"] == 62


def test_different_programs_is_an_error(fib2, record, cli):
    tree = record("tree", 3, 3, threads=2)
    assert_one_line_error(cli("compare", fib2.path, tree.path), "different programs")


def test_missing_and_foreign_files(fib2, tmp_path, cli):
    assert_one_line_error(cli("compare", tmp_path / "a.parquet", fib2.path),
                          "a.parquet", "no such file")
    import pyarrow as pa
    import pyarrow.parquet as pq
    p = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"x": [1]}), p)
    assert_one_line_error(cli("compare", fib2.path, p), "foreign.parquet",
                          "not a grainlab trace")


def test_all_lists_every_grain(fib1, fib2):
    r = grainlab("compare", "--json", "--all", fib1.path, fib2.path)
    c = json.loads(r.stdout)
    assert len(c["grains"]) == 62 and len({g["identity"] for g in c["grains"]}) == 62
    devs = [g["work_deviation"] for g in c["grains"]]
    assert devs == sorted(devs, reverse=True)
