"""Loading reads the trace a few row groups at a time into columns allocated
once (grainlab.trace.trace.read_events), and checks a loaded trace in batches
of views (grainlab.trace.batches.loaded_batches). Both must give exactly what
the former whole-table path gave: that path is kept here as the reference
(pyarrow reads the whole file, pandas takes its columns), and random synthetic
traces, with counter columns, several row groups per read step and batch
sizes that cut row groups, are loaded both ways and compared column by
column; validation and `summary()` must give the same answers whatever the
batch size."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import grainlab
from grainlab import schema as S
from grainlab import synth
from grainlab.errors import TraceError
from grainlab.trace import batches, trace as trace_module
from grainlab.trace.accesses import split_accesses
from grainlab.trace.dependence_waits import fold_dependence_waits


def reference_events(path) -> pd.DataFrame:
    """The former loader: the whole table read by pyarrow, each column to numpy
    (counters as nullable Int64), then `row_group` and `time`, the dependence
    waits folded and the data accesses split off."""
    parquet = pq.ParquetFile(path)
    table = parquet.read()
    sizes = np.array([parquet.metadata.row_group(i).num_rows
                      for i in range(parquet.metadata.num_row_groups)], np.int64)
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        if name.startswith(S.COUNTER_PREFIX):
            columns[name] = col.cast(pa.int64()).to_pandas(
                types_mapper={pa.int64(): pd.Int64Dtype()}.get).array
        else:
            columns[name] = col.to_numpy()
    events = pd.DataFrame(columns)
    events["row_group"] = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    hz = float(json.loads(parquet.metadata.metadata[b"grainlab.clock"])["hz"])
    events["time"] = np.rint(events["tsc"].to_numpy().astype(np.float64)
                             * (1e9 / hz)).astype(np.int64)
    events, _ = fold_dependence_waits(events)
    events, _, _ = split_accesses(events, sizes)
    return events


def with_counters(path, out, seed):
    """The trace at `path` with two counter columns (int64, null on random rows)."""
    table = pq.read_table(path)
    rng = np.random.default_rng(seed)
    n = table.num_rows
    for name in ("task-clock", "page-faults"):
        values = rng.integers(0, 1 << 40, n)
        mask = rng.random(n) < 0.6
        table = table.append_column(pa.field(S.COUNTER_PREFIX + name, pa.int64()),
                                    pa.array(values, pa.int64(), mask=mask))
    meta = pq.ParquetFile(path).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    with pq.ParquetWriter(out, table.schema.with_metadata(table.schema.metadata)) as w:
        at = 0
        for k in sizes:                 # the same row groups (one thread's rows each)
            w.write_table(table.slice(at, k))
            at += k
    return out


def assert_same_columns(a: pd.DataFrame, b: pd.DataFrame):
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)
    for name in a.columns:
        x, y = a[name], b[name]
        assert x.dtype == y.dtype, name
        if isinstance(x.dtype, pd.Int64Dtype):
            assert (x.isna().to_numpy() == y.isna().to_numpy()).all(), name
            ok = ~x.isna().to_numpy()
            assert np.array_equal(x.to_numpy(np.int64, na_value=0)[ok],
                                  y.to_numpy(np.int64, na_value=0)[ok]), name
        else:
            assert np.array_equal(x.to_numpy(), y.to_numpy()), name


CASES = [("fork-join", 3000, 2, 0), ("random", 2000, 3, 1), ("spine", 1500, 2, 2),
         ("loop", 800, 4, 3), ("random", 500, 1, 4)]


@pytest.mark.parametrize("shape,grains,threads,seed", CASES)
def test_lean_load_equals_the_whole_table_read(tmp_path, monkeypatch, shape, grains, threads,
                                               seed):
    base = tmp_path / "t.parquet"
    # small buffers: many row groups, so read steps hold several of them
    synth.generate(base, shape, grains, threads=threads, seed=seed, buffer_events=997)
    for path in (base, with_counters(base, tmp_path / "c.parquet", seed)):
        reference = reference_events(path)
        expected = None
        rng = np.random.default_rng(seed)
        for read_rows in (1 << 20, 1000, int(rng.integers(1, 5000))):
            monkeypatch.setattr(trace_module, "READ_ROWS", read_rows)
            t = grainlab.load(path)
            assert_same_columns(t.events, reference)
            for name in S.COLUMNS:       # numpy arrays of the file's own types
                assert t.events[name].to_numpy().dtype == np.dtype(S.COLUMNS[name])
            summary = t.summary()
            expected = expected or (summary, list(t.problems))
            assert (summary, list(t.problems)) == expected


@pytest.mark.parametrize("shape,grains,threads,seed", CASES[:3])
def test_checks_and_facts_do_not_depend_on_the_batch_size(tmp_path, monkeypatch, shape,
                                                          grains, threads, seed):
    path = tmp_path / "t.parquet"
    synth.generate(path, shape, grains, threads=threads, seed=seed, buffer_events=997)
    answers = set()
    for batch_rows in (1 << 20, 777, 64):
        monkeypatch.setattr(batches, "LOADED_BATCH_ROWS", batch_rows)
        t = grainlab.load(path)
        answers.add((repr(t.summary()), tuple(t.problems)))
    assert len(answers) == 1


def test_a_contradiction_is_named_the_same_whatever_the_batch_size(tmp_path, monkeypatch):
    """Time going backwards in the middle of a row group: the same row group
    named whether the batches cut it or not."""
    path = tmp_path / "t.parquet"
    synth.generate(path, "fork-join", 2000, buffer_events=997)
    table = pq.read_table(path)
    tsc = table.column("tsc").to_numpy().copy()
    tsc[2500] = tsc[2499] - 5
    table = table.set_column(table.schema.get_field_index("tsc"),
                             table.schema.field("tsc"), pa.array(tsc, pa.uint64()))
    meta = pq.ParquetFile(path).metadata
    bad = tmp_path / "bad.parquet"
    with pq.ParquetWriter(bad, table.schema) as w:
        at = 0
        for i in range(meta.num_row_groups):
            k = meta.row_group(i).num_rows
            w.write_table(table.slice(at, k))
            at += k
    messages = set()
    for batch_rows in (1 << 20, 300):
        monkeypatch.setattr(batches, "LOADED_BATCH_ROWS", batch_rows)
        with pytest.raises(TraceError) as e:
            grainlab.load(bad)
        messages.add(str(e.value))
    assert len(messages) == 1
    (message,) = messages
    assert "time goes backwards" in message and "\n" not in message


def test_a_fixed_column_with_nulls_is_one_line(tmp_path):
    """A foreign writer's nullable fixed column holding nulls: one line, no traceback."""
    path = tmp_path / "t.parquet"
    synth.generate(path, "fork-join", 200)
    table = pq.read_table(path)
    i = table.schema.get_field_index("count")
    values = table.column("count").to_numpy()
    mask = np.zeros(len(values), bool)
    mask[3] = True
    table = table.set_column(i, pa.field("count", pa.uint64()),
                             pa.array(values, pa.uint64(), mask=mask))
    pq.write_table(table, tmp_path / "n.parquet")
    with pytest.raises(TraceError) as e:
        grainlab.load(tmp_path / "n.parquet")
    assert "column count has null values" in str(e.value) and "\n" not in str(e.value)
