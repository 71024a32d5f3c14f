"""The topological order the critical path was found in is kept on the graph
(critical_path.graph_order) and reused by the parallel part's span: it must
be a topological order of the graph's edges, at the ids' width, and give the
parallel part exactly what a fresh sort gives."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import grainlab as gl
from grainlab.graph import build
from grainlab.graph.critical_path import graph_order
from grainlab.metrics.work import parallel_part
from randprog import random_program

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"
NAMES = sorted(p.stem for p in GOLDEN.glob("*.parquet"))


def check(g):
    order = g.topological_order
    assert order is not None and len(order) == len(g.nodes)
    assert order.dtype == g.edges["src"].dtype           # 4 bytes a node while ids fit
    assert np.array_equal(np.sort(order), np.arange(len(g.nodes)))   # a permutation
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    src, dst = g.edges["src"].to_numpy(), g.edges["dst"].to_numpy()
    assert (rank[src] < rank[dst]).all()                  # every edge forward
    kept = parallel_part(g)
    g.topological_order = None                            # a fresh sort instead
    assert parallel_part(g) == kept
    assert graph_order(g) is not None


@pytest.mark.parametrize("name", NAMES)
def test_kept_order_on_golden_traces(name):
    check(build(gl.load(GOLDEN / f"{name}.parquet")))


@pytest.mark.parametrize("seed", range(12))
def test_kept_order_on_random_programs(tmp_path, seed):
    program = random_program(seed)
    check(build(gl.load(program.trace.write(tmp_path / "p.parquet"))))
