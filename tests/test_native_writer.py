"""The Parquet writer shim (collector/writer, libgrainwriter.so) through its C
ABI, exactly as the collector uses it: native programs from
collector/tests dlopen build/lib/libgrainwriter.so and write known events;
pyarrow reads them back independently.

Nothing is built here: `make` (CMake) builds the shim and the programs into
build/; a missing one is a failure, not a skip.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from grainlab import _paths, schema as S

pytestmark = pytest.mark.native  # the whole module runs native code

U64 = (1 << 64) - 1
INT64_MIN = -(1 << 63)

# What collector/tests/write_events.c writes (its header comment is the spec).
GROUPS = [(0, 5), (1, 7), (0, 4), (65535, 3), (2, 0), (1, 1)]
COUNTERS = ["task-clock", "PAPI_TOT_CYC"]
METADATA = {
    "grainlab.schema_version": "1",
    "grainlab.command": '["./fib", "a \\"quoted\\" arg"]',
    "grainlab.note": "Grüße ✓",
    "grainlab.empty": "",
}

# The columns' one definition (grainlab/trace_columns.def), which the writer
# compiles its schema from: the writer must write exactly that.
SCHEMA = S.arrow_schema(COUNTERS)


def expected_rows() -> dict[str, list]:
    """The known trace, recomputed from the formulas in write_events.c."""
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    r = 0
    for g, (thread, rows) in enumerate(GROUPS):
        for i in range(rows):
            cols["event"].append(1 + r % 17)
            cols["thread"].append(thread)
            cols["cpu"].append((r * 4099) % 65536)
            cols["tsc"].append(1_000_000 * g + 17 * i + i * i)
            cols["task"].append((thread + 1) << 40 | (i + 1))
            cols["other"].append(U64 if i == 0 else (thread + 1) << 40 | i)
            cols["codeptr"].append(0x401000 + 0x40 * (i % 3))
            cols["value"].append((r * 0x9E3779B97F4A7C15) & U64)
            cols["count"].append(100 * g + i)
            cols["kind"].append(0x80000000 | r)
            cols["flags"].append((37 * r) & 0xFF)
            cols["counter:task-clock"].append(None if r % 5 == 2 else 1000 * r + 1)
            c1 = None if r % 3 == 0 else -r
            c1 = {1: (1 << 63) - 1, 4: INT64_MIN + 1}.get(r, c1)
            cols["counter:PAPI_TOT_CYC"].append(c1)
            r += 1
    return cols


def native_program(name: str) -> Path:
    path = _paths.build_dir() / "tests" / name
    if not path.is_file():
        pytest.fail(f"native test program {path} not built (run `make build`)")
    if not (_paths.lib_dir() / _paths.WRITER).is_file():
        pytest.fail(f"{_paths.lib_dir() / _paths.WRITER} not built (run `make build`)")
    return path


def run(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(native_program(name)), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def known_trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("writer") / "known.parquet"
    result = run("write_events", out)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return out


def test_schema_is_the_defined_one(known_trace):
    f = pq.ParquetFile(known_trace)
    assert f.schema_arrow == SCHEMA
    # schema version 1's columns, in its order: a change here is a format change
    assert f.schema_arrow.names[:11] == ["event", "thread", "cpu", "tsc", "task", "other",
                                         "codeptr", "value", "count", "kind", "flags"]
    # Physical Parquet: the unsigned widths travel as logical types, so any
    # reader (not only Arrow) sees uint8/uint16/uint32/uint64.
    logical = {f.schema.column(i).name: str(f.schema.column(i).logical_type)
               for i in range(len(SCHEMA))}
    assert logical["event"] == "Int(bitWidth=8, isSigned=false)"
    assert logical["cpu"] == "Int(bitWidth=16, isSigned=false)"
    assert logical["kind"] == "Int(bitWidth=32, isSigned=false)"
    assert logical["tsc"] == "Int(bitWidth=64, isSigned=false)"


def test_every_value_round_trips(known_trace):
    table = pq.read_table(known_trace)
    want = expected_rows()
    assert table.num_rows == sum(rows for _, rows in GROUPS) == 20
    for field in SCHEMA:
        got = table.column(field.name).to_pylist()
        assert got == want[field.name], field.name


def test_nulls_only_where_int64_min_was_written(known_trace):
    table = pq.read_table(known_trace)
    tc = table.column("counter:task-clock")
    assert tc.null_count == 4                         # r = 2, 7, 12, 17
    cyc = table.column("counter:PAPI_TOT_CYC")
    nulls = np.flatnonzero(cyc.is_null().to_numpy(zero_copy_only=False))
    assert list(nulls) == [0, 3, 6, 9, 12, 15, 18]    # r % 3 == 0, except r written explicitly
    assert cyc[4].as_py() == INT64_MIN + 1            # smallest non-null value survives
    for name in S.COLUMNS:
        assert table.column(name).null_count == 0


def test_one_row_group_per_write_call(known_trace):
    md = pq.ParquetFile(known_trace).metadata
    assert md.num_row_groups == len(GROUPS)
    assert [md.row_group(g).num_rows for g in range(md.num_row_groups)] == \
        [rows for _, rows in GROUPS]
    f = pq.ParquetFile(known_trace)
    for g, (thread, rows) in enumerate(GROUPS):
        threads = f.read_row_group(g, columns=["thread"]).column(0).to_pylist()
        assert threads == [thread] * rows


def test_file_metadata_is_exactly_what_close_was_given(known_trace):
    kv = pq.ParquetFile(known_trace).metadata.metadata
    assert {k.decode(): v.decode() for k, v in kv.items()} == METADATA


def test_zstd_and_encodings(known_trace):
    md = pq.ParquetFile(known_trace).metadata
    rg = md.row_group(1)
    by_name = {rg.column(c).path_in_schema: rg.column(c) for c in range(rg.num_columns)}
    for col in by_name.values():
        assert col.compression == "ZSTD"
    # The deliberate per-column choices of gl_writer.cpp (kColumns, with the
    # measured figures): deltas for what grows or varies, byte streams for
    # `other` and the small-valued event/kind, a dictionary for the few return
    # addresses, PLAIN + zstd for the near-constant thread/cpu/flags.
    expected = {"tsc": "DELTA_BINARY_PACKED", "task": "DELTA_BINARY_PACKED",
                "value": "DELTA_BINARY_PACKED", "count": "DELTA_BINARY_PACKED",
                "counter:task-clock": "DELTA_BINARY_PACKED",
                "other": "BYTE_STREAM_SPLIT", "event": "BYTE_STREAM_SPLIT",
                "kind": "BYTE_STREAM_SPLIT", "codeptr": "RLE_DICTIONARY",
                "thread": "PLAIN", "cpu": "PLAIN", "flags": "PLAIN"}
    for name, encoding in expected.items():
        assert encoding in by_name[name].encodings, (name, by_name[name].encodings)
        if encoding != "RLE_DICTIONARY":
            assert "RLE_DICTIONARY" not in by_name[name].encodings, name
    # Statistics where a reader could prune by them (time, thread, event
    # kinds), not for ids, addresses and event-specific values.
    for name in ["tsc", "thread", "event", "cpu", "kind", "flags"]:
        assert by_name[name].is_stats_set, name
    for name in ["task", "other", "codeptr", "value", "count"]:
        assert not by_name[name].is_stats_set, name


def test_unwritable_path_is_one_line_error(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "t.parquet"
    result = run("write_events", target)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(target) in lines[0] and "No such file" in lines[0]
    assert not target.exists()


def test_thread_index_out_of_range_is_refused_and_file_stays_readable(tmp_path):
    out = tmp_path / "bad.parquet"
    result = run("write_events", out, "--bad-thread")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "70000" in lines[0] and "uint16" in lines[0], result.stderr
    # The failed write left no partial row group; close still wrote a footer.
    f = pq.ParquetFile(out)
    assert f.metadata.num_rows == 0 and f.metadata.num_row_groups == 0


def test_fib_like_stream_is_small_and_reads_back(tmp_path):
    """bench_writer's synthetic fib stream (2 threads, 64Ki-event buffers,
    3 counters): ≤ 8 bytes/event on disk, and every row group reads back as
    one thread with non-decreasing tsc and counters."""
    out = tmp_path / "fib.parquet"
    result = run("bench_writer", out, 300_000, 3)
    assert result.returncode == 0, result.stderr
    f = pq.ParquetFile(out)
    rows = f.metadata.num_rows
    assert rows >= 300_000
    assert out.stat().st_size / rows <= 8.0
    table = f.read()
    assert table.schema.names[-3:] == ["counter:task-clock", "counter:page-faults",
                                       "counter:context-switches"]
    thread = table.column("thread").to_numpy()
    tsc = table.column("tsc").to_numpy()
    clock = table.column("counter:task-clock").to_numpy()
    for g in range(f.metadata.num_row_groups):
        assert f.metadata.row_group(g).num_rows <= 65536
    for t in np.unique(thread):
        mine = thread == t
        assert np.all(np.diff(tsc[mine].astype(np.int64)) > 0)
        assert np.all(np.diff(clock[mine]) >= 0)
    # Event mix of a fib trace: creates, schedules, taskwaits and flush markers.
    kinds = set(np.unique(table.column("event").to_numpy()).tolist())
    assert kinds == {7, 8, 9, 10, 16, 17}


def test_disk_full_is_one_line_error():
    result = run("write_events", "/dev/full")          # every write: ENOSPC
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], result.stderr


def test_write_failing_mid_file_is_one_line_error(tmp_path):
    """The file-size limit cuts the file after the header and a row group or
    so: the failing gl_writer_write reports it (EFBIG) instead of crashing."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # get EFBIG, not a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))

    out = tmp_path / "cut.parquet"
    result = subprocess.run([str(native_program("write_events")), str(out)],
                            capture_output=True, text=True, timeout=60, preexec_fn=limit)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "File too large" in lines[0], result.stderr
