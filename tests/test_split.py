"""One trace analyzed in parts built from their own rows
(grainlab.cluster.split, `grainlab analyze --workers N`) against the
single-process analysis of the whole run: work, span, the critical path
(grain identities, in order), cores used, every problem's counts (grains,
on the critical path, their work), the per-location table, the interval of
instantaneous parallelism, and grain by grain (matched by identity) every
metric column. On every golden trace, on random multi-region programs
(tests/randprog.py: random task trees, random numbers of regions and teams,
so random part boundaries), and on a real Dask LocalCluster of 2 workers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from randprog import random_program

import grainlab as gl
from grainlab.cluster import split

GOLDEN = sorted((Path(__file__).parent / "golden" / "traces").glob("*.parquet"))

COLUMNS = ("work", "creation_cost", "bookkeeping_cost", "sync_cost", "on_critical_path",
           "parallel_benefit", "load_balance", "scatter", "instantaneous_parallelism",
           "instantaneous_parallelism_conservative", "earliest_start", "location")


def same_as_whole(path, s) -> None:
    """The composed analysis `s` equals the single-process one of `path`."""
    a = gl.analyze(path)
    rep = a.report()
    for key in ("grains", "tasks", "chunks", "work_ns", "grain_work_ns", "span_ns",
                "cores_used", "threads_used"):
        assert s[key] == rep[key], key
    assert s["parallelism"] == pytest.approx(rep["parallelism"], rel=1e-12)
    crit = list(a.graph.identities(np.asarray(rep["critical_path"], np.int64)))
    assert s["critical_path"] == crit
    for key in ("grains_ns", "joins_ns", "contexts_ns", "barriers_ns"):
        assert s["critical_path_time"].get(key) == rep["critical_path_time"].get(key), key
    assert s["thresholds"] == rep["thresholds"]
    for name, p in rep["problems"].items():
        q = s["problems"][name]
        assert (q["available"], q["grains"], q["on_critical_path"], q["work_ns"]) == \
            (p["available"], p["grains"], p["on_critical_path"], p["work_ns"]), name
    ip = rep["instantaneous_parallelism"]
    assert s["instantaneous_parallelism"]["interval_ns"] == ip["interval_ns"]
    assert s["instantaneous_parallelism"]["intervals"] == ip["intervals"]
    whole = a.by_location()
    mine = {r["location"]: (r["grains"], r["work_ns"]) for r in s["all_locations"]}
    assert mine == {i: (int(r.grains), int(r.work_ns)) for i, r in whole.iterrows()}
    for r in s["all_locations"]:      # flagged grains per location
        for name, n in r["problem_grains"].items():
            pct = whole.at[r["location"], f"{name}_percent"]
            assert n == round(pct * r["grains"] / 100.0), (r["location"], name)
    if "grains_table" in s:
        same_grains(a, s["grains_table"])


def same_grains(a, parts: pd.DataFrame) -> None:
    g = a.graph_with_metrics
    whole = a.grains.copy()
    whole["identity"] = list(g.identities(whole.index.to_numpy()))
    assert whole["identity"].is_unique
    left = whole.set_index("identity")
    right = parts.set_index("identity")
    assert set(left.index) == set(right.index)
    right = right.loc[left.index]
    for col in COLUMNS:
        if col not in left.columns:
            continue
        x, y = left[col].to_numpy(), right[col].to_numpy()
        if col == "location":
            assert list(map(str, x)) == list(map(str, y))
        else:
            np.testing.assert_array_equal(x.astype(np.float64), y.astype(np.float64),
                                          err_msg=col)


@pytest.mark.parametrize("trace", GOLDEN, ids=lambda p: p.stem)
def test_parts_equal_the_whole_run_on_every_golden_trace(trace):
    same_as_whole(trace, split.analyze_split(trace, grains=True))


@pytest.mark.parametrize("seed", range(40))
def test_parts_equal_the_whole_run_on_random_programs(tmp_path, seed):
    rng = np.random.default_rng(1000 + seed)
    program = random_program(seed, regions=int(rng.integers(1, 7)),
                             max_tasks=int(rng.integers(5, 80)))
    path = program.trace.write(tmp_path / f"p{seed}.parquet")
    same_as_whole(path, split.analyze_split(path, grains=True))


def test_a_part_reads_only_its_row_groups_and_rows():
    """A region part reads the row groups its ranges overlap, not all of
    them, and its rows are its threads' rows inside its ranges (plus the
    context rows)."""
    path = GOLDEN[[p.stem for p in GOLDEN].index("loops")]
    parts = split.plan(path)
    import pyarrow.parquet as pq
    n = pq.ParquetFile(path).metadata.num_row_groups
    whole = gl.load(path).events
    for p in parts[1:]:
        t = split.read_part(path, p)
        assert len(t.events) < len(whole)
        assert set(t.events["row_group"].unique()) <= set(split._row_groups(
            pq.ParquetFile(path), p))
        assert len(split._row_groups(pq.ParquetFile(path), p)) <= n
    counted = sum(len(split.read_part(path, p).events) for p in parts)
    # every row is in exactly one part, except the context rows repeated
    assert counted >= len(whole)


def test_gap_interval_is_refused_in_parts():
    from grainlab.errors import UsageError
    with pytest.raises(UsageError):
        split.analyze_split(GOLDEN[0], interval="gap")


@pytest.fixture(scope="module")
def dask_ready():
    pytest.importorskip("dask.distributed")


@pytest.mark.parametrize("name", ["loops", "regions_master_t2", "setup_kernel"])
def test_parts_on_a_dask_cluster_of_two_workers(dask_ready, name):
    path = GOLDEN[[p.stem for p in GOLDEN].index(name)]
    said = []
    s = split.analyze_split(path, workers=2, grains=True, progress=said.append)
    same_as_whole(path, s)
    assert any("part(s)" in line for line in said)


def test_a_part_whose_workers_keep_dying_is_one_line():
    """A part whose worker dies every time (as one out of memory does: Dask's
    KilledWorker) ends `analyze --workers` with one line naming the likely
    cause and what to do, not Dask's exception."""
    import os

    pytest.importorskip("dask.distributed")
    from grainlab.errors import GrainlabError
    with split._Runner(1, None, lambda _msg: None) as run:
        with pytest.raises(GrainlabError) as e:
            run.each("building the parts' graphs", os._exit, [(3,)])
    msg = str(e.value)
    assert "\n" not in msg and "died each time" in msg and "per worker" in msg
    assert "--workers 1" in msg
