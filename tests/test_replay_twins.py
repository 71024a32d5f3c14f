"""The replay's twins proven equal (issue 30): grainlab/native/replay.c and
the Python replay (grainlab.metrics.predict.replay_python) on random DAGs,
and their shared conventions (grainlab/native/replay.def, read by
grainlab.metrics.replay_abi) checked in both copies.

The random DAGs (fixed seeds, at most 48 nodes, so the whole file runs in
seconds) have continuation, creation and synchronization/dependence edges,
several sources, loop-shaped parts (book-keeping -> chunk -> book-keeping
chains per thread ending in a join), created tasks flagged at random (the
spawn flag follows: a fork whose created node starts a task), zero, tied and
spread weights; each is replayed on 1, 2, 3, 5 and 8 cores under zero costs,
the defaults, work-first, and tiny deques (throttling). makespan, steals and
overhead must be equal.
"""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from grainlab.metrics import predict as pm
from grainlab.metrics import replay_abi
from grainlab.metrics.predict import Costs
from grainlab.metrics.replay_graph import EDGE_CODES, Replay

CONT, CREATE, OTHER = (replay_abi.EDGES[k] for k in ("CONTINUATION", "CREATION", "OTHER"))
COSTS = [Costs(0, 0, 0, deque_cap=0), Costs(),
         Costs(700, 90, 2000, work_first=True, deque_cap=0),
         Costs(300, 50, 100, deque_cap=1), Costs(13, 7, 29, work_first=True, deque_cap=2)]
CORES = [1, 2, 3, 5, 8]


def random_dag(rng) -> Replay:
    """A random node DAG in topological id order (see the module doc)."""
    n = int(rng.integers(2, 40))
    src, dst, et = [], [], []
    for j in range(1, n):
        if rng.random() < 0.15:
            continue                                   # another source
        preds = rng.choice(j, size=min(j, int(rng.integers(1, 4))), replace=False)
        for p in preds:
            src.append(int(p))
            dst.append(j)
            et.append(int(rng.choice([CONT, CREATE, OTHER], p=[0.5, 0.3, 0.2])))
    if rng.random() < 0.5:                             # a loop after a random node
        before = int(rng.integers(0, n))
        ends = []
        for _thread in range(int(rng.integers(1, 4))):
            prev = before
            for _chunk in range(int(rng.integers(1, 4))):
                bk, chunk = n, n + 1
                n += 2
                src += [prev, bk]
                dst += [bk, chunk]
                et += [CONT, CONT]
                prev = chunk
            src.append(prev)
            dst.append(n)
            et.append(CONT)
            ends.append(n)
            n += 1
        join = n
        n += 1
        for e in ends:
            src.append(e)
            dst.append(join)
            et.append(OTHER if rng.random() < 0.5 else CONT)
    kind = rng.integers(0, 3)
    w = (np.full(n, int(rng.integers(0, 20))) if kind == 0 else      # ties everywhere
         rng.integers(0, 8, n) if kind == 1 else                       # small, many zeros
         rng.integers(0, 10**6, n) * (rng.random(n) < 0.9))            # spread
    src, dst = np.array(src, np.int64), np.array(dst, np.int64)
    etype = np.array(et, np.int8)
    task_first = np.zeros(n, bool)
    created = dst[etype == CREATE]
    task_first[created[rng.random(len(created)) < 0.8]] = True
    task_first[rng.random(n) < 0.05] = True            # flagged without a creation edge
    key = np.arange(n, dtype=np.int64)
    return Replay(np.asarray(w, np.int64), src, dst, etype, task_first, np.ones(n, bool),
                  {"start": key, "end": key, "is_join": np.zeros(n, bool),
                   "released": np.zeros(n, bool)})


@pytest.mark.parametrize("seed", range(20))
def test_the_kernel_and_the_python_replay_agree_on_random_dags(seed, monkeypatch):
    assert pm._kernel() is not None, "the compiled kernels are not built"
    rng = np.random.default_rng(1000 + seed)
    spawns = 0
    for _ in range(12):
        rep = random_dag(rng)
        spawns += int(rep.spawn.sum())
        for costs in COSTS:
            native = [pm.replay(rep, rep.w, P, costs) for P in CORES]
            with monkeypatch.context() as m:
                m.setenv("GRAINLAB_NATIVE", "0")
                assert pm._kernel() is None
                python = [pm.replay(rep, rep.w, P, costs) for P in CORES]
            assert native == python, (seed, costs, rep.w.tolist(), rep.src.tolist(),
                                      rep.dst.tolist(), rep.etype.tolist())
            # zero costs: greedy, so one core takes exactly the work
            if costs == COSTS[0]:
                assert native[0]["makespan"] == rep.work
    assert spawns > 0                                  # the spawn flag was exercised


# ---------------------------------------------------------------------------
# the shared definition, and both copies against it


def test_the_definition_is_read_and_checked():
    assert replay_abi.COSTS == ("steal_ns", "defer_ns", "lock_ns", "deque_cap")
    assert replay_abi.STATS == ("makespan", "steals", "overhead")
    assert replay_abi.FLAGS == {"TASK_FIRST": 1, "SPAWN": 2}
    assert replay_abi.EDGES == {"CONTINUATION": 0, "CREATION": 1, "OTHER": 2}
    with pytest.raises(ValueError, match="repeats"):
        replay_abi.read("GL_REPLAY_FLAG(A, 1)\nGL_REPLAY_FLAG(B, 1)")
    with pytest.raises(ValueError, match="0, 1, 2"):
        replay_abi.read("GL_REPLAY_COST(a, 0)\nGL_REPLAY_COST(b, 2)")
    with pytest.raises(ValueError, match="one bit"):
        replay_abi.read("GL_REPLAY_FLAG(A, 3)")
    with pytest.raises(ValueError, match="not a GL_REPLAY"):
        replay_abi.read("GL_REPLAY_COST(a, 0) junk")


def test_the_compiled_kernel_was_built_from_the_definition():
    from grainlab._paths import graph_kernel
    abi = graph_kernel("gl_replay_abi", [ctypes.c_void_p])
    assert abi is not None, "the compiled kernels are not built"
    out = np.full(15, -1, np.int64)
    abi(out.ctypes.data)
    f, e = replay_abi.FLAGS, replay_abi.EDGES
    want = [len(replay_abi.COSTS), f["TASK_FIRST"] | f["SPAWN"], len(replay_abi.STATS),
            *(replay_abi.COSTS.index(c) for c in ("steal_ns", "defer_ns", "lock_ns", "deque_cap")),
            f["TASK_FIRST"], f["SPAWN"], e["CONTINUATION"], e["CREATION"], e["OTHER"],
            *(replay_abi.STATS.index(s) for s in ("makespan", "steals", "overhead"))]
    assert out.tolist() == want


def test_the_python_copy_follows_the_definition():
    # the cost vector: each Costs field at its index in replay.def
    c = Costs(steal_ns=11, defer_ns=22, lock_ns=33, work_first=True, deque_cap=44)
    vec = pm.cost_vector(c)
    assert len(vec) == len(replay_abi.COSTS)
    for i, name in enumerate(replay_abi.COSTS):
        assert vec[i] == getattr(c, name)
    # edge codes and flags of a replayed graph: fork -> task (creation), task -> join (sync)
    assert EDGE_CODES == {"continuation": replay_abi.EDGES["CONTINUATION"],
                          "creation": replay_abi.EDGES["CREATION"]}
    key = np.arange(4, dtype=np.int64)
    rep = Replay(np.ones(4, np.int64), np.array([0, 1, 1, 2]), np.array([1, 2, 3, 3]),
                 np.array([CONT, CREATE, CONT, OTHER], np.int8),
                 np.array([False, False, True, False]), np.ones(4, bool),
                 {"start": key, "end": key, "is_join": np.zeros(4, bool),
                  "released": np.zeros(4, bool)})
    assert rep.flags.tolist() == [0, replay_abi.FLAGS["SPAWN"], replay_abi.FLAGS["TASK_FIRST"], 0]


def test_no_copy_spells_the_conventions_as_literals():
    """replay.c reads the cost vector, stats, flags and edge codes by their
    replay.def names, and the Python replay by replay_abi's."""
    from pathlib import Path
    c = (Path(pm.__file__).parents[1] / "native" / "replay.c").read_text()
    assert '#include "replay.def"' in c
    assert not re.findall(r"\b(costs|stats)\[\d\]|flags\[v\] & \d|etype\[e\] == \d", c)
    py = Path(pm.__file__).read_text()
    assert not re.findall(r"self\.tf\[v\] & \d|\bet == \d|stats\[\d\]", py)
