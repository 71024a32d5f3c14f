"""The slots' columns placed straight from their parts into chain order
(grainlab.graph.slots._chain_order_parts) give exactly the graph of the
former join-then-gather path (SCATTER_PARTS False, kept as the reference):
every table, dtype and value, span, critical path, kept topological order;
on every golden trace, on random programs (taskwait, taskgroups, barriers,
region ends) and on synthetic traces of every shape, untied included."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab import synth
from grainlab.graph import build, slots
from randprog import random_program

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"
NAMES = sorted(p.stem for p in GOLDEN.glob("*.parquet"))


def assert_both_paths_equal(trace, monkeypatch):
    placed = build(trace)
    with monkeypatch.context() as m:
        m.setattr(slots, "SCATTER_PARTS", False)
        joined = build(trace)
    for table in ("nodes", "edges", "grains", "contexts"):
        pd.testing.assert_frame_equal(getattr(placed, table), getattr(joined, table))
    assert placed.span == joined.span and placed.work == joined.work
    np.testing.assert_array_equal(placed.critical_path, joined.critical_path)
    np.testing.assert_array_equal(placed.topological_order, joined.topological_order)


@pytest.mark.parametrize("name", NAMES)
def test_golden(monkeypatch, name):
    assert_both_paths_equal(gl.load(GOLDEN / f"{name}.parquet"), monkeypatch)


@pytest.mark.parametrize("seed", range(10))
def test_random_programs(tmp_path, monkeypatch, seed):
    program = random_program(seed)
    assert_both_paths_equal(gl.load(program.trace.write(tmp_path / "p.parquet")), monkeypatch)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", synth.SHAPES)
def test_synthetic(tmp_path, monkeypatch, shape, seed):
    rng = np.random.default_rng(seed)
    path = tmp_path / "s.parquet"
    synth.generate(path, shape, int(rng.integers(1, 800)), threads=int(rng.integers(1, 5)),
                   seed=seed)
    assert_both_paths_equal(gl.load(path), monkeypatch)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_cumcount_is_pandas_cumcount(seed, dtype):
    from grainlab.graph.columns import cumcount
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.integers(0, int(rng.integers(1, 50)), int(rng.integers(0, 2000))))
    got = cumcount(keys, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, pd.Series(keys).groupby(keys).cumcount().to_numpy())
