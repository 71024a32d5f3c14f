"""Data locality (issue 23): stack distances, KRD histograms, `grainlab krd`,
the annotation's trace rows, --depend-bytes, NUMA locality per grain."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import assert_one_line_error, grainlab
from grainlab import schema as S
from grainlab.metrics import krd as K
from grainlab.metrics import numa_locality as NL
from grainlab.trace.accesses import empty_accesses

A, B, C = 0, 1, 2


def brute(blocks, sizes):
    """Stack distances by definition: distinct blocks' bytes since the last use."""
    out = []
    for i, b in enumerate(blocks):
        prev = max((j for j in range(i) if blocks[j] == b), default=None)
        if prev is None:
            out.append(-1)
        else:
            between = {blocks[j]: sizes[j] for j in range(prev + 1, i)}
            out.append(sum(between.values()))
    return out


@pytest.mark.parametrize("native", [True, False])
def test_hand_computed_distances(native, monkeypatch):
    if not native:
        monkeypatch.setenv("GRAINLAB_NATIVE", "0")
    # A B A: the second A at size(B); A A: 0; first uses: INF (-1)
    assert K.stack_distances(np.array([A, B, A]), np.array([10, 7, 10])).tolist() == [-1, -1, 7]
    assert K.stack_distances(np.array([A, A]), np.array([10, 10])).tolist() == [-1, 0]
    # B counted once however often it was used in between
    assert K.stack_distances(np.array([A, B, B, C, A]),
                             np.array([1, 2, 2, 4, 1])).tolist() == [-1, -1, 0, -1, 6]


def _random_stream(rng):
    """A stream of accesses: few to many distinct blocks (ids sparse or dense),
    each access with its own size (a block's bytes vary access by access, 0
    included), long enough that the kernel renumbers its slots."""
    nblocks = int(rng.choice([1, 2, 5, 12, 60, 300]))
    ids = rng.choice(10 * nblocks + 5, nblocks, replace=False) if rng.random() < 0.5 \
        else np.arange(nblocks)
    blocks = ids[rng.integers(0, nblocks, int(rng.integers(1, 400)))]
    sizes = rng.integers(0, 5000, len(blocks)) * (rng.random(len(blocks)) < 0.95)
    return blocks.astype(np.int64), sizes.astype(np.int64)


@pytest.mark.parametrize("native", [True, False])
def test_distances_match_the_definition_on_random_streams(native, monkeypatch):
    """Native kernel, and its Python fallback, against the brute-force
    definition (a block counts with the size of its latest use in between)."""
    if not native:
        monkeypatch.setenv("GRAINLAB_NATIVE", "0")
    assert (K._kernel() is not None) == native
    rng = np.random.default_rng(7)
    for _ in range(40):
        blocks, sizes = _random_stream(rng)
        assert K.stack_distances(blocks, sizes).tolist() == brute(blocks.tolist(), sizes.tolist())
    # the same size for every use of a block (what annotations usually give)
    for _ in range(10):
        blocks = rng.integers(0, 12, 200)
        sizes = rng.integers(1, 1000, 12)[blocks]
        assert K.stack_distances(blocks, sizes).tolist() == brute(blocks.tolist(), sizes.tolist())


def test_native_and_python_distances_agree_on_long_random_streams(monkeypatch):
    """Streams too long for the brute force (many slot renumberings)."""
    assert K._kernel() is not None, "the compiled kernels are not built"
    rng = np.random.default_rng(11)
    for nblocks, n in ((3, 20000), (200, 20000), (5000, 8000)):
        blocks = rng.integers(0, nblocks, n)
        sizes = rng.integers(0, 1 << 20, n)
        native = K.stack_distances(blocks, sizes)
        with monkeypatch.context() as m:
            m.setenv("GRAINLAB_NATIVE", "0")
            python = K.stack_distances(blocks, sizes)
        assert native.tolist() == python.tolist()
        assert (native == -1).sum() == len(np.unique(blocks))


def accesses(rows):
    """Access table from (thread, cpu, time, base, bytes) tuples."""
    df = pd.DataFrame(rows, columns=["thread", "cpu", "time", "base", "bytes"])
    return pd.DataFrame({
        "thread": df.thread.astype(np.uint16), "cpu": df.cpu.astype(np.uint16),
        "time": df.time.astype(np.int64), "task": np.ones(len(df), np.uint64),
        "codeptr": np.full(len(df), 0x1000, np.uint64), "base": df.base.astype(np.uint64),
        "bytes": df.bytes.astype(np.uint64), "mode": np.ones(len(df), np.uint8),
        "node": np.full(len(df), -1, np.int16)})


TWO_NODES = {"cpus": 4, "online": [0, 1, 2, 3], "cpu_core": [0, 1, 0, 1],
             "cpu_package": [0, 0, 1, 1], "cpu_node": [0, 0, 1, 1],
             "numa_distances": [[10, 21], [21, 10]],
             "caches": [{"level": 2, "type": "Unified", "size": 1024, "line": 64,
                         "shared_cpus": [0]},
                        {"level": 3, "type": "Unified", "size": 8192, "line": 64,
                         "shared_cpus": [0, 1]}]}


def test_two_cores_interleaved_streams_merge_by_time():
    # cpu 0: A@0 A@20; cpu 1: B@10; one LLC -> A B A: the second A at size(B)
    acc = accesses([(0, 0, 0, 0xA0, 100), (0, 0, 20, 0xA0, 100), (1, 1, 10, 0xB0, 30)])
    r = K.reuse(acc, TWO_NODES, "llc")
    assert sorted(r.dist.tolist()) == [-1, -1, 30]
    # per core: the streams are apart, A A -> 0
    r = K.reuse(acc, TWO_NODES, "core")
    assert sorted(r.dist.tolist()) == [-1, -1, 0]


def test_domains_are_separate_streams_and_summed():
    # A on node 0 then on node 1: two first uses (separate caches), then A A on node 1
    acc = accesses([(0, 0, 0, 0xA0, 64), (1, 2, 10, 0xA0, 64), (1, 2, 20, 0xA0, 64)])
    h = K.summary(K.reuse(acc, TWO_NODES, "numa"))
    assert [d["inf"] for d in h["domains"]] == [1, 1]
    assert (h["inf"], h["close"], h["accesses"]) == (2, 1, 3)
    assert sum(d["accesses"] for d in h["domains"]) == h["accesses"]


def test_histogram_bins_and_classes():
    h = K.histogram(np.array([-1, 0, 1, 2, 3, 1024, 1025, 9000]), 1024, 8192)
    ups = [b["upper_bytes"] for b in h["bins"]]
    assert ups[:4] == [0, 1, 2, 4] and ups[-1] is None and ups[-2] == 16384
    count = {b["upper_bytes"]: b["count"] for b in h["bins"]}
    assert (count[0], count[1], count[2], count[4], count[1024], count[2048], count[16384],
            count[None]) == (1, 1, 1, 1, 1, 1, 1, 1)
    assert (h["close"], h["near"], h["far"], h["inf"], h["accesses"]) == (5, 1, 1, 1, 8)


def test_cache_sizes_from_topology_and_flags():
    assert K.cache_sizes(TWO_NODES) == (1024, 8192)
    assert K.cache_sizes(TWO_NODES, l2=10, llc=20) == (10, 20)


# -- NUMA locality on a synthetic two-node machine -------------------------------

class FakeGraph:
    def __init__(self, nodes, grains, meta):
        self.nodes, self.grains, self.meta = nodes, grains, meta


def test_numa_locality_arithmetic_on_two_nodes():
    nodes = pd.DataFrame({"type": ["fragment", "fragment", "chunk", "fork"],
                          "grain": [0, 1, 2, -1], "thread": [0, 1, 1, 0],
                          "start": [0, 0, 200, 0], "end": [100, 150, 300, 5]})
    grains = pd.DataFrame(index=pd.Index([0, 1, 2], name="grain"))
    g = FakeGraph(nodes, grains, {"topology": TWO_NODES})
    acc = accesses([(0, 0, 10, 0x1, 300),     # grain 0 on cpu 0 (node 0), data on 0
                    (0, 0, 20, 0x2, 100),     # grain 0, data on node 1: remote
                    (1, 2, 50, 0x3, 400),     # grain 1 on cpu 2 (node 1), data on 0: remote
                    (1, 3, 250, 0x4, 50),     # grain 2 on cpu 3 (node 1), node unknown
                    (1, 3, 170, 0x5, 999)])   # between grains 1 and 2: no grain
    acc["node"] = np.array([0, 1, 0, -1, 1], np.int16)
    assert NL.access_grains(g, acc).tolist() == [0, 0, 1, 2, -1]
    out = NL.compute(g, acc)
    loc = g.grains["numa_locality"].tolist()
    assert loc[0] == pytest.approx(0.75) and loc[1] == 0.0 and np.isnan(loc[2])
    assert g.grains["remote_bytes"].tolist() == [100, 400, 0]
    assert g.grains["data_bytes"].tolist() == [400, 400, 50]
    # overall: local bytes 300 + 999 (node 1 on cpu 3's node 1) of 300+100+400+999
    assert out["overall"] == pytest.approx(1299 / 1799)
    assert out["accesses_with_node"] == 4


def test_numa_locality_unavailable_without_pages():
    nodes = pd.DataFrame({"type": ["fragment"], "grain": [0], "thread": [0], "start": [0],
                          "end": [10]})
    g = FakeGraph(nodes, pd.DataFrame(index=pd.Index([0], name="grain")),
                  {"topology": TWO_NODES})
    assert "no data accesses" in NL.compute(g, empty_accesses())
    assert "data_bytes" not in g.grains
    assert "GRAINLAB_PAGES" in NL.compute(g, accesses([(0, 0, 1, 0x1, 8), (0, 0, 2, 0x2, 4)]))
    assert g.grains["data_bytes"].tolist() == [12] and "numa_locality" not in g.grains


# -- recorded programs ----------------------------------------------------------------

def test_annotations_become_access_rows(record):
    t = record("krd_matmul", "4", "8", "row", threads=1)
    acc = t.accesses
    assert len(acc) == 3 * 4 ** 3
    assert not (t.events["event"] == S.DATA_ACCESS).any()     # kept out of the graph's rows
    assert sorted(acc["mode"].value_counts().to_dict().items()) == [(1, 128), (3, 64)]
    assert set(acc["bytes"].tolist()) == {8 * 8 * 8}
    assert len(np.unique(acc["base"])) == 3 * 4 * 4            # A, B and C blocks
    # each access names an explicit task of the run: 64 tasks, 3 accesses each
    tasks = t.tasks()
    explicit = set(tasks.loc[tasks["kind"] == "explicit", "id"].tolist())
    assert set(acc["task"].tolist()) == explicit
    assert acc.groupby("task").size().eq(3).all()
    # and, found by thread and time, lies in the grain of that very task
    import grainlab as gl
    g = gl.analyze(t).graph
    grain = NL.access_grains(g, acc)
    assert (grain >= 0).all()
    assert (g.grains.loc[grain, "task_id"].to_numpy() == acc["task"].to_numpy()).all()


def krd_json(path, *extra):
    r = grainlab("krd", "--json", *extra, path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_one_thread_runs_give_identical_histograms(record, build):
    one = record("krd_matmul", "8", "8", "z", threads=1)
    two = record("krd_matmul", "8", "8", "z", threads=1, env={"GRAINLAB_RUN": "again"})
    assert one.path != two.path
    a, b = krd_json(one.path), krd_json(two.path)
    keys = ("bins", "close", "near", "far", "inf", "accesses")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
    assert a["accesses"] == 3 * 8 ** 3 and a["inf"] == 3 * 8 * 8
    assert a["bins"][-1] == {"upper_bytes": None, "count": a["inf"]}


def test_z_order_reuses_closer_than_row_major(record):
    # documented in examples/krd_matmul.c and docs/locality.md: with L2 = an
    # eighth of one matrix and LLC = one matrix, Z-order has more close and
    # fewer far reuses; the same first uses
    nb, bs = 8, 16
    matrix = nb * nb * bs * bs * 8
    row = record("krd_matmul", str(nb), str(bs), "row", threads=1)
    z = record("krd_matmul", str(nb), str(bs), "z", threads=1)
    r = krd_json(row.path, "--l2", matrix // 8, "--llc", matrix, "--compare", z.path)
    zz = r["compare"]
    assert zz["close"] > r["close"] and zz["far"] < r["far"]
    assert zz["inf"] == r["inf"] == 3 * nb * nb
    assert r["difference"]["far"] == zz["far"] - r["far"] < 0


def test_no_accesses_says_how_to_add_them(record):
    t = record("fib", "10", "4", threads=1)
    r = grainlab("krd", t.path)
    assert_one_line_error(r, "holds no data accesses", "grain_data", "--depend-bytes")


def test_depend_bytes(record):
    t = record("stencil_depend", "4", "8", "2", threads=1)
    r = grainlab("krd", t.path)
    assert_one_line_error(r, "holds no data accesses", "--depend-bytes")
    for bad in ("0", "-5", "12x", "K"):
        assert_one_line_error(grainlab("krd", "--depend-bytes", bad, t.path), "--depend-bytes")
    h = krd_json(t.path, "--depend-bytes", "512")
    deps = t.events[t.events["event"] == S.DEPENDENCE]
    assert h["accesses"] == len(deps)
    # one first use per distinct block (the 16 block tokens)
    assert h["inf"] == len(np.unique(deps["value"])) == 16


def test_annotated_program_runs_without_a_tool_and_its_trace_streams(record, example):
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if k != "OMP_TOOL_LIBRARIES"}
    out = subprocess.run([example("krd_matmul"), "4", "8", "z"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0 and "verified" in out.stdout, out.stderr
    # `info` streams the file with DATA_ACCESS rows in it (the checks know event 18)
    t = record("krd_matmul", "4", "8", "row", threads=1)
    r = grainlab("info", "--json", t.path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tasks"] == 64


def test_characterize_memory_columns(record):
    import grainlab as gl
    t = record("krd_matmul", "4", "8", "row", threads=1)
    row = gl.characterize([t.path]).iloc[0]
    assert row["data_bytes_median"] == 3 * 8 * 8 * 8          # three 512-byte blocks a task
    h = krd_json(t.path)
    for c in ("close", "near", "far", "inf"):
        assert row[f"krd_{c}_share"] == pytest.approx(h[c] / h["accesses"])
    assert np.isnan(row["numa_locality"])                     # recorded without GRAINLAB_PAGES
    plain = gl.characterize([record("fib", "10", "4", threads=1).path]).iloc[0]
    assert np.isnan(plain["data_bytes_median"]) and np.isnan(plain["krd_inf_share"])


def test_info_counts_accesses_streamed_and_loaded(record):
    t = record("krd_matmul", "4", "8", "row", threads=1)
    r = grainlab("info", "--json", t.path)
    streamed = json.loads(r.stdout)
    loaded = t.summary()
    assert streamed["data_accesses"] == loaded["data_accesses"] == len(t.accesses) == 192
    assert streamed["events"] == loaded["events"] == len(t.events) + len(t.accesses)
    assert "192 access(es)" in grainlab("info", t.path).stdout
    plain = record("fib", "10", "4", threads=1)
    assert "data_accesses" not in plain.summary() and len(plain.accesses) == 0
    assert list(plain.accesses.columns) == list(t.accesses.columns)


def test_chunk_grains_own_their_accesses(record):
    # krd_matmul loop: a parallel for (dynamic), one chunk per C block; the
    # annotations name the implicit task, the grain is found by time
    import grainlab as gl
    t = record("krd_matmul", "4", "8", "loop", threads=2)
    acc = t.accesses
    assert len(acc) == 3 * 4 ** 3
    g = gl.analyze(t).graph
    grain = NL.access_grains(g, acc)
    assert (grain >= 0).all()
    kinds = g.grains.loc[grain, "kind"].astype(str)
    assert (kinds == "chunk").all()
    # 16 chunks of one iteration each, 12 accesses (4 products x 3 blocks) in each
    assert np.bincount(grain).tolist().count(12) == 16
    assert (g.grains.loc[np.unique(grain), "iterations"] == 1).all()


def test_pages_on_this_one_node_machine(record):
    # GRAINLAB_PAGES=1 on real hardware with one NUMA node: every resident
    # block is on node 0 (A and B are written before the tasks run), so every
    # grain is fully local; pages never touched yet are unknown (-1)
    import grainlab as gl
    t = record("krd_matmul", "4", "8", "row", threads=1, env={"GRAINLAB_PAGES": "1"})
    acc = t.accesses
    assert set(acc["node"].tolist()) <= {-1, 0}
    assert (acc.loc[acc["mode"] == S.GRAIN_IN, "node"] == 0).all()
    a = gl.analyze(t)
    loc = a.metrics["numa_locality"]
    assert loc["overall"] == 1.0 and loc["remote_bytes"] == 0
    assert loc["accesses_with_node"] == int((acc["node"] >= 0).sum())
    known = a.grains["numa_locality"].dropna()
    assert len(known) == 64 and (known == 1.0).all()
    p = a.summary["problems"]["numa_locality"]
    assert p["available"] and p["grains"] == 0


def two_node_trace(path):
    """tests/tracegen's fork-join (3 children, run one after another on thread
    0, cpu 0 of a two-node machine) with DATA_ACCESS rows: child 0 reads 100
    local bytes; child 1 100 local and 300 on node 1; child 2 64 bytes of
    unknown node."""
    from tracegen import TraceBuilder, task_id, team_region, team_region_end
    b = TraceBuilder()
    init, region, implicit = team_region(b, 2)
    kids = [task_id(0, 100 + c) for c in range(3)]
    for c, kid in enumerate(kids):
        b.add(0, S.TASK_CREATE, 10 + c, task=kid, other=implicit[0], kind=S.TASK_EXPLICIT)
    b.add(0, S.SYNC_BEGIN, 13, task=implicit[0], other=region, kind=S.SYNC_TASKWAIT)
    data = {0: [(0x1000, 100, 1)], 1: [(0x2000, 100, 1), (0x3000, 300, 2)], 2: [(0x4000, 64, 0)]}
    t = 14
    for c, kid in enumerate(kids):
        b.add(0, S.TASK_SCHEDULE, t, task=kid, other=implicit[0], kind=S.STATUS_SWITCH)
        for k, (base, nbytes, node1) in enumerate(data[c]):
            b.add(0, S.DATA_ACCESS, t + 1 + k, task=kid, other=node1, value=base, count=nbytes,
                  kind=S.GRAIN_IN, codeptr=0x5000 + c)
        b.add(0, S.TASK_SCHEDULE, t + 5, task=implicit[0], other=kid, kind=S.STATUS_COMPLETE)
        t += 10
    b.add(0, S.SYNC_END, t, task=implicit[0], other=region, kind=S.SYNC_TASKWAIT)
    for th in range(2):
        b.add(th, S.SYNC_BEGIN, t + 1, task=implicit[th], other=region, kind=9)
        b.add(th, S.SYNC_END, t + 2, task=implicit[th], other=region, kind=9)
        b.add(th, S.IMPLICIT_END, t + 3, task=implicit[th], value=th, count=2,
              kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, t + 4, 2)
    return b.write(path, meta={"grainlab.topology": json.dumps(TWO_NODES)})


def test_synthetic_two_node_trace_end_to_end(tmp_path):
    import grainlab as gl
    a = gl.analyze(two_node_trace(tmp_path / "two.parquet"))
    assert len(a.trace.accesses) == 4
    loc = a.grains.sort_values("start")["numa_locality"].tolist()
    assert loc[0] == 1.0 and loc[1] == 0.25 and np.isnan(loc[2])
    assert a.metrics["numa_locality"]["overall"] == pytest.approx(200 / 500)
    p = a.summary["problems"]["numa_locality"]
    assert p["available"] and p["grains"] == 1
    assert len(a.grains) == 3
    r = grainlab("analyze", a.path)
    assert r.returncode == 0 and "numa_locality" in r.stdout
    h = krd_json(a.path)                     # four distinct blocks: all first uses
    assert (h["accesses"], h["inf"]) == (4, 4)


def test_domains_of_a_two_thread_run_and_bad_cache_sizes(record):
    t = record("krd_matmul", "4", "8", "z", threads=2)
    llc, core = krd_json(t.path), krd_json(t.path, "--domain", "core")
    # one LLC on this machine: one stream; per core: as many streams as CPUs
    # used, each block first used once per core that touches it
    assert len(llc["domains"]) == 1 and llc["inf"] == 3 * 4 * 4
    topo = t.meta["topology"]
    core_of = {c: (topo["cpu_package"][c], topo["cpu_core"][c]) for c in range(topo["cpus"])}
    cores = t.accesses["cpu"].map(core_of)
    assert len(core["domains"]) == cores.nunique()
    assert core["accesses"] == llc["accesses"] and core["inf"] >= llc["inf"]
    per_core_blocks = t.accesses.groupby(cores)["base"].nunique().sum()
    assert core["inf"] == per_core_blocks
    assert_one_line_error(grainlab("krd", "--l2", "100", "--llc", "50", t.path),
                          "L2 no larger than the LLC")
