"""Undeferred tasks with `depend` and `taskwait depend` (examples/depend_if0):
libomp reports each wait for their predecessors as a pseudo-task
(ompt_task_taskwait) that ends without ever starting. Such a trace loads, counts
exactly the program's tasks, and keeps the dependence chain whole."""
from __future__ import annotations

import numpy as np
import pytest

import grainlab as gl
from conftest import grainlab


def chain_pairs(trace):
    """Dependence edges of the graph as (creation ordinal, creation ordinal)."""
    g = trace.graph()
    e, grain = g.edges, g.nodes["grain"].to_numpy()
    d = e[e["type"] == "dependence"]
    ordinal = np.array([int(str(i).rsplit(".", 1)[1]) for i in g.grains["identity"]])
    return sorted({(int(ordinal[grain[s]]), int(ordinal[grain[t]]))
                   for s, t in zip(d["src"], d["dst"])})


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n, every", [(30, 3), (12, 1), (9, 10)])
def test_chain_with_undeferred_tasks_loads_whole(record, n, every, threads):
    t = record("depend_if0", n, every, threads=threads)
    assert f"depend_if0({n}, {every}): x = " in record.stdout("depend_if0", n, every, threads=threads)
    s = t.summary()
    assert s["tasks"] == n                       # no pseudo-task counted
    assert s["tasks_with_dependences"] == n
    if threads > 1:
        assert s["undeferred_tasks"] == n // every
    # one wait per if(0) task with depend, and the taskwait depend
    assert t.meta["dependence_waits"] == n // every + 1
    # the chain 0 -> 1 -> ... -> n-1, nothing else
    assert chain_pairs(t) == [(i, i + 1) for i in range(n - 1)]
    a = gl.analyze(t)
    assert len(a.grains) == n
    assert a.report()["span_ns"] > 0


def test_analyze_and_info_run_on_it(record):
    t = record("depend_if0", 30, 3, threads=2)
    for cmd in ("info", "analyze"):
        r = grainlab(cmd, t.path)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
