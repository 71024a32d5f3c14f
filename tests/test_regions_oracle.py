"""`grainlab regions` (grainlab.cluster.parts.compose) against an oracle that
shares nothing with it: random multi-region programs (tests/randprog.py, a
one-thread scheduler writing the trace libomp would), each region's members
taken from the events' own time windows (PARALLEL_BEGIN .. PARALLEL_END of
the trace's rows, not the builder's region bookkeeping), and spans from a
plain longest path over networkx's topological order. Dropping one node of
a region, or giving a node to the wrong region, changes a span here."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from randprog import random_program

import grainlab as gl
from grainlab import schema as S
from grainlab.cluster.parts import compose


def region_windows(program) -> list[tuple[int, int]]:
    """(begin, end) ns of each parallel region, from the trace's rows (1 tick = 1 ns)."""
    begin, windows = {}, []
    for row in program.trace.rows[0]:
        if row["event"] == S.PARALLEL_BEGIN:
            begin[row["other"]] = row["tsc"]
        elif row["event"] == S.PARALLEL_END:
            windows.append((begin[row["other"]], row["tsc"]))
    return windows


def longest_path(G: nx.DiGraph, weight: np.ndarray, keep: np.ndarray | None = None) -> int:
    """The heaviest path through the nodes `keep` (all when None), weights per node."""
    best = {}
    for v in nx.topological_sort(G):
        if keep is not None and not keep[v]:
            continue
        before = [best[u] for u in G.predecessors(v) if u in best]
        best[v] = (max(before) if before else 0) + int(weight[v])
    return max(best.values(), default=0)


@pytest.mark.parametrize("seed", range(0, 60, 2))
def test_each_regions_span_and_the_serial_part_match_the_oracle(tmp_path, seed):
    program = random_program(seed, regions=3)
    path = program.trace.write(tmp_path / f"p{seed}.parquet")
    g = gl.load(path).graph()
    start = g.nodes["start"].to_numpy()
    end = g.nodes["end"].to_numpy()
    dur = g.nodes["duration"].to_numpy()
    G = nx.DiGraph()
    G.add_nodes_from(range(len(g.nodes)))
    G.add_edges_from(zip(g.edges["src"].to_numpy().tolist(), g.edges["dst"].to_numpy().tolist()))
    inside = np.zeros(len(g.nodes), bool)
    spans = []
    for begin, stop in region_windows(program):
        member = (start >= begin) & (end <= stop)
        assert member.any()
        inside |= member
        spans.append(longest_path(G, dur, member))
    serial = longest_path(G, np.where(inside, 0, dur))
    c = compose(path)
    assert [r["span_ns"] for r in c["regions"]] == spans
    assert c["serial_ns"] == serial
    assert c["span_ns"] == serial + sum(spans) == gl.analyze(path).report()["span_ns"]
