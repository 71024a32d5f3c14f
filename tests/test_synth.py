"""grainlab.synth writes traces in the collector's exact format, with the event
sequences real libomp produces (compared against real traces of the examples)."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import assert_one_line_error, grainlab

from grainlab import schema as S
from grainlab import synth
from grainlab.trace.trace import load


def write(tmp_path, shape, grains, **kw):
    path = tmp_path / f"{shape}-{grains}.parquet"
    synth.generate(path, shape, grains, **kw)
    return path


def task_signatures(trace) -> Counter:
    """Per explicit task: the (event, kind, role) sequence of the rows about it
    on its thread — its creations, syncs, switches in and out."""
    ev = trace.events
    order = np.argsort(ev["thread"].to_numpy(), kind="stable")
    ev = ev.iloc[order]
    explicit = set(ev.loc[ev["event"] == S.TASK_CREATE, "task"].tolist())
    seqs: dict[int, list] = {}
    for e, k, task, other in zip(ev["event"].tolist(), ev["kind"].tolist(),
                                 ev["task"].tolist(), ev["other"].tolist()):
        if e == S.TASK_CREATE and other in explicit:
            seqs.setdefault(other, []).append(("create",))
        elif e in (S.SYNC_BEGIN, S.SYNC_END) and task in explicit:
            seqs.setdefault(task, []).append((e, k))
        elif e == S.TASK_SCHEDULE:
            if task in explicit:
                seqs.setdefault(task, []).append(("in", k))
            if other in explicit:
                seqs.setdefault(other, []).append(("out", k))
    return Counter(tuple(s) for s in seqs.values())


def implicit_signatures(trace) -> set:
    """Per implicit task: its own worksharing/sync/begin/end rows (chunks collapsed)."""
    ev = trace.events
    order = np.argsort(ev["thread"].to_numpy(), kind="stable")
    ev = ev.iloc[order]
    implicit = set(ev.loc[(ev["event"] == S.IMPLICIT_BEGIN) & (ev["kind"] == S.TASK_IMPLICIT),
                          "task"].tolist())
    seqs: dict[int, list] = {}
    keep = (S.IMPLICIT_BEGIN, S.IMPLICIT_END, S.WORK_BEGIN, S.WORK_END, S.CHUNK,
            S.SYNC_BEGIN, S.SYNC_END)
    for e, k, task in zip(ev["event"].tolist(), ev["kind"].tolist(), ev["task"].tolist()):
        if e in keep and task in implicit:
            s = seqs.setdefault(task, [])
            if not (s and s[-1] == (e, k) and e == S.CHUNK):
                s.append((e, k))
    return {tuple(s) for s in seqs.values()}


def test_schema_and_metadata_are_the_collectors(record, tmp_path):
    real = pq.ParquetFile(record("fib", 8, 3).path)
    fake = pq.ParquetFile(write(tmp_path, "fork-join", 50))
    assert fake.schema_arrow.remove_metadata() == real.schema_arrow.remove_metadata()
    real_keys = set(real.metadata.metadata)
    fake_keys = set(fake.metadata.metadata)
    assert real_keys <= fake_keys, real_keys - fake_keys
    assert fake.metadata.metadata[b"grainlab.schema_version"] == b"1"
    clock = json.loads(fake.metadata.metadata[b"grainlab.clock"])
    assert clock["hz"] > 0


def test_fork_join_event_sequences_match_real_fib(record, tmp_path):
    real = task_signatures(record("fib", 12, 4, threads=2))
    fake = task_signatures(load(write(tmp_path, "fork-join", 300, threads=2)))
    assert set(fake) <= set(real), set(fake) - set(real)
    # the two everyday shapes: a leaf, and a parent that runs both children in its taskwait
    assert len(fake) >= 2


def test_loop_event_sequences_match_real_dynamic_loop(record, tmp_path):
    real = implicit_signatures(record("loops", "dynamic,5", 200, threads=2))
    fake = implicit_signatures(load(write(tmp_path, "loop", 40, threads=2)))
    assert fake <= real, fake - real


def test_producer_and_barrier_sequences_match_real_fib(record, tmp_path):
    real = implicit_signatures(record("fib", 12, 4, threads=2))
    fake = implicit_signatures(load(write(tmp_path, "fork-join", 100, threads=2)))
    assert fake <= real, fake - real


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("shape", synth.SHAPES)
def test_synthetic_traces_are_valid_and_complete(tmp_path, shape, threads):
    grains = 700
    path = write(tmp_path, shape, grains, threads=threads, seed=threads, buffer_events=256)
    t = load(path)
    assert t.complete and not t.problems
    s = t.summary()
    assert s["threads"] == threads
    if shape == "loop":
        assert s["chunks"] == grains and s["iterations"] == grains * 4
    else:
        assert s["tasks"] == grains
        assert t.tasks()["lineage"].notna().all()
    rg = pq.ParquetFile(path)
    assert rg.metadata.num_row_groups > 1
    for i in range(rg.metadata.num_row_groups):
        threads_in_group = set(rg.read_row_group(i, columns=["thread"])["thread"].to_pylist())
        assert len(threads_in_group) == 1
    # every row group after a thread's first starts with FLUSH_END and follows
    # one that ends with FLUSH_BEGIN, as the collector writes them
    flushes = int(t.events["event"].isin([S.FLUSH_BEGIN, S.FLUSH_END]).sum())
    assert flushes == 2 * (rg.metadata.num_row_groups - threads)


def test_exact_durations_and_determinism(tmp_path):
    a = load(write(tmp_path / "..", "random", 200, seed=3))
    b = pq.read_table(write(tmp_path, "random", 200, seed=3)).to_pandas()
    assert a.events.drop(columns=["row_group", "time"]).reset_index(drop=True).equals(b)
    c = pq.read_table(write(tmp_path, "random", 200, seed=4)).to_pandas()
    assert not c.equals(b)


def test_spine_is_a_chain_of_parents(tmp_path):
    t = load(write(tmp_path, "spine", 100, length=10))
    tasks = t.tasks()
    explicit = tasks[tasks["kind"] == "explicit"]
    assert explicit["depth"].max() - explicit["depth"].min() == 9
    parents = explicit[explicit["children"] > 0]
    assert len(parents) == 9                       # the producer heads the chain


def test_cli_writes_a_trace(tmp_path):
    out = tmp_path / "cli.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", "64", "--threads", "3",
                 "-o", out)
    assert r.returncode == 0, r.stderr
    info = grainlab("info", "--json", out)
    assert json.loads(info.stdout)["tasks"] == 64


@pytest.mark.parametrize("args,fragment", [
    (["--shape", "fork-join", "--grains", "0"], "--grains"),
    (["--shape", "loop", "--grains", "5", "--threads", "0"], "--threads"),
    (["--shape", "fork-join", "--grains", "5", "--jitter", "-1"], "--jitter"),
])
def test_cli_bad_arguments_are_one_line_errors(tmp_path, args, fragment, cli):
    r = cli("synth", *args, "-o", tmp_path / "x.parquet")
    assert_one_line_error(r, fragment)


def test_cli_unwritable_output(tmp_path, cli):
    r = cli("synth", "--shape", "loop", "--grains", "5", "-o", tmp_path / "no" / "x.parquet")
    assert_one_line_error(r, "cannot write")


@pytest.mark.parametrize("shape", ["fork-join", "loop", "spine", "random"])
def test_synthetic_counts_are_what_a_scan_counts(tmp_path, shape):
    """grainlab.counts of a synthetic trace, as the converter's: what
    `record`'s closing line would print equals the streamed scan's counts."""
    from grainlab.trace.scan import closing_counts, scan
    path = write(tmp_path, shape, 3000, threads=3)
    fast, full = closing_counts(path), scan(path)
    assert type(fast).__name__ != "Scan"
    assert (fast.events, fast.threads, fast.tasks, fast.chunk_events) == \
        (full.events, full.threads, full.tasks, full.chunk_events)
