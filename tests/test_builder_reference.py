"""The graph builder's waiters (who joins each task) against two independent
answers:
  - OpenMP's rules, on random programs run by tests/randprog.py (taskwait,
    nested taskgroups, tasks nobody waits for, teams of one and two);
  - the plain statement of the rule in tests/reference_waiters.py, on the
    same programs, on `grainlab synth --shape random` traces of many seeds,
    and on the real golden traces (tests/golden/traces).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import reference_waiters
from randprog import random_program

import grainlab as gl
from grainlab import schema as S
from grainlab.synth import generate

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"


def builder_waiters(trace) -> dict[int, tuple]:
    """task id -> the builder's waiter, named as reference_waiters names it."""
    g = trace.graph()
    nodes, grains = g.nodes, g.grains
    owner_task = np.concatenate([grains["task_id"].to_numpy(np.uint64),
                                 g.contexts["task_id"].to_numpy(np.uint64)])
    ev = trace.events
    ib = ev[ev["event"] == S.IMPLICIT_BEGIN]
    region_of = dict(zip(ib["task"].to_numpy().tolist(), ib["other"].to_numpy().tolist()))

    names = {}
    joins = nodes[nodes["type"] == "join"]
    kind = joins["join_kind"].astype(str).to_numpy()
    for k in np.unique(kind):
        sel = joins[(kind == k) & (joins["owner"] >= 0).to_numpy()]
        sel = sel.sort_values(["owner", "owner_seq"])
        tid = owner_task[sel["owner"].to_numpy()]
        ordinal = sel.groupby("owner").cumcount().to_numpy()
        for node, t, o in zip(sel.index, tid.tolist(), ordinal.tolist()):
            names[node] = (t, k, o)
    # team barriers: region of a participant (continuation edge into it), k-th in time
    team = joins[joins["owner"] < 0]
    if len(team):
        e = g.edges[(g.edges["type"] == "continuation") & g.edges["dst"].isin(team.index)]
        src_owner = nodes["owner"].to_numpy()[e["src"].to_numpy()]
        region = pd.Series([region_of[int(owner_task[o])] for o in src_owner],
                           index=e["dst"].to_numpy())
        region = region[~region.index.duplicated()]
        tb = pd.DataFrame({"region": region.reindex(team.index).to_numpy(),
                           "start": team["start"].to_numpy()}, index=team.index)
        tb = tb.sort_values(["region", "start"], kind="stable")
        tb["k"] = tb.groupby("region").cumcount()
        for node, row in tb.iterrows():
            names[node] = ("barrier", int(row["region"]), int(row["k"]))
    tasks = grains[grains["kind"] == "task"]
    return {int(t): names.get(int(j)) for t, j in zip(tasks["task_id"], tasks["join"])}


def truth_names(program) -> dict[int, tuple]:
    """The simulator's truth, named like reference_waiters."""
    out = {}
    for tid, (owner, kind, ordinal) in program.waiters().items():
        if kind == "barrier":
            region_index = owner[1]
            out[tid] = ("barrier", program.region_ids[region_index], 0)
        elif kind == "region_end":
            out[tid] = (program.initial, "region_end", owner[1])
        else:
            out[tid] = (owner, kind, ordinal)
    return out


def load_program(tmp_path, seed):
    program = random_program(seed)
    path = program.trace.write(tmp_path / f"p{seed}.parquet")
    return program, gl.load(path)


@pytest.mark.parametrize("seed", range(0, 120, 3))
def test_builder_agrees_with_openmp_rules_on_random_programs(tmp_path, seed):
    program, trace = load_program(tmp_path, seed)
    truth = truth_names(program)
    assert len(truth) == len(program.tasks)
    built = builder_waiters(trace)
    assert built == truth
    assert reference_waiters.waiters(trace) == truth


def test_random_programs_cover_every_rule(tmp_path):
    """The seeds above exercise each way of being waited for."""
    kinds = set()
    caught = 0
    for seed in range(0, 120, 3):
        program = random_program(seed)
        w = program.waiters()
        kinds |= {k for _, k, _ in w.values()}
        # caught: waited for by a construct of a task other than the parent
        caught += sum(1 for x in program.tasks
                      if w[x.id][0] != getattr(x.parent, "id", None))
    assert kinds == {"taskwait", "taskgroup", "barrier", "region_end"}
    assert caught > 50


@pytest.mark.parametrize("seed", range(12))
def test_builder_agrees_with_reference_on_synth(tmp_path, seed):
    path = tmp_path / "r.parquet"
    generate(path, "random", 300 + 37 * seed, threads=1 + seed % 3, seed=seed)
    trace = gl.load(path)
    assert builder_waiters(trace) == reference_waiters.waiters(trace)


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.parquet")))
def test_builder_agrees_with_reference_on_real_traces(name):
    trace = gl.load(GOLDEN / f"{name}.parquet")
    built, ref = builder_waiters(trace), reference_waiters.waiters(trace)
    assert built == ref
