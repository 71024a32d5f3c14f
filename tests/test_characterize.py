"""`grainlab characterize` / grainlab.characterize (issue 9): one row per trace,
equal to what `grainlab analyze --json` says for the same quantities, through
text, CSV and JSON; folders expand; a bad trace is one line."""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab.suite.characterization import COLUMNS
from conftest import assert_one_line_error, grainlab

PROGRAMS = [("fib", (16, 6)), ("health", (3, 4, 3, 3)), ("loop_static", (20000, 2)),
            ("sparselu_depend", (6, 4))]


@pytest.fixture(scope="module")
def traces(record):
    return [record(name, *args).path for name, args in PROGRAMS]


def analyze_json(path):
    r = grainlab("analyze", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_values_equal_analyze_json(traces):
    df = gl.characterize(traces)
    assert list(df.columns[:len(COLUMNS)]) == COLUMNS and len(df) == len(traces)
    for path, (_, r) in zip(traces, df.iterrows()):
        j = analyze_json(path)
        td = j["time_decomposition"]
        assert r["trace"] == str(path)
        for key in ("grains", "tasks", "chunks", "span_ns", "work_ns", "grain_work_ns"):
            assert r[key] == j[key], key
        assert r["parallelism"] == pytest.approx(j["parallelism"], rel=1e-12)
        assert r["critical_path_grains"] == len(j["critical_path"])
        assert r["cores"] == j["cores_used"] and r["threads"] == j["threads_used"]
        assert r["work_fraction"] == pytest.approx(td["work"] / td["total"])
        assert r["overhead_fraction"] == pytest.approx(td["overhead"] / td["total"])
        assert r["idle_fraction"] == pytest.approx(td["idle"] / td["total"])
        assert r["parallel_benefit_low_pct"] == pytest.approx(
            j["problems"]["parallel_benefit"]["percent"])
        assert r["achieved_parallelism_mean"] == pytest.approx(
            j["instantaneous_parallelism"]["achieved_mean"])


def test_per_grain_properties_from_the_grains(traces):
    """Median/spread of grain work, depth: recomputed here with plain numpy
    from the analysis's grains frame."""
    path = traces[0]
    r = gl.characterize([path]).iloc[0]
    gr = gl.analyze(path).grains
    work = gr["work"].to_numpy(float)
    assert r["grain_work_median_ns"] == np.median(work)
    assert r["grain_work_cv"] == pytest.approx(work.std() / work.mean())
    assert r["depth_max"] == gr["depth"].max() == 6     # fib 16 with cutoff 6
    # fib: every join (taskwait) joins exactly the two children of one call
    assert r["join_degree_max"] == 2


def test_csv_and_json_round_trip_and_text_lists_every_trace(traces, tmp_path):
    want = gl.characterize(traces)
    r = grainlab("characterize", "--csv", "-q", *traces)
    assert r.returncode == 0, r.stderr
    got = pd.read_csv(io.StringIO(r.stdout))
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got[["grains", "span_ns", "work_ns"]],
                                  want[["grains", "span_ns", "work_ns"]], check_dtype=False)
    out = tmp_path / "c.json"
    r = grainlab("characterize", "--json", "-q", "-o", out, *traces)
    assert r.returncode == 0 and r.stdout == ""
    rows = json.loads(out.read_text())
    assert [x["grains"] for x in rows] == list(want["grains"])
    assert all(x["parallelism"] is None or math.isfinite(x["parallelism"]) for x in rows)
    text = grainlab("characterize", "-q", *traces).stdout.splitlines()
    assert len(text) == 1 + len(traces)


def test_a_folder_stands_for_its_traces(traces, tmp_path):
    import shutil
    for p in traces[:2]:
        shutil.copy(p, tmp_path / p.name)
    df = gl.characterize([tmp_path])
    assert sorted(df["trace"]) == sorted(str(tmp_path / p.name) for p in traces[:2])


def test_bad_trace_is_one_line_and_keep_going_skips_it(traces, tmp_path, cli):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a trace at all")
    r = cli("characterize", "-q", traces[0], bad)
    assert_one_line_error(r, "bad.parquet")
    r = cli("characterize", "--csv", "-q", "--keep-going", traces[0], bad)
    assert r.returncode == 1
    assert len(pd.read_csv(io.StringIO(r.stdout))) == 1
    assert r.stderr.count("\n") == 1 and "skipped" in r.stderr and "bad.parquet" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(cli("characterize", empty), "no *.parquet")
