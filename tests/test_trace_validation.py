"""grainlab.trace on hand-written traces: what loads, what is refused, and
that every refusal is one line naming the file (and row group and field)."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import grainlab
from grainlab import schema as S
from grainlab.errors import TraceError
from conftest import assert_one_line_error, grainlab as run_cli
from tracegen import fork_join_trace, task_id


def load_error(path) -> str:
    with pytest.raises(TraceError) as info:
        grainlab.load(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_good_trace_loads_with_expected_tables(tmp_path):
    path = fork_join_trace(children=3, threads=2).write(tmp_path / "t.parquet")
    t = grainlab.load(path)
    assert t.complete and t.problems == []
    assert t.threads == 2 and len(t.events) == 27
    tasks = t.tasks().set_index("lineage")
    # The thread-0 implicit task is the only creator in its region: "0.p0".
    assert tasks.loc["0", "kind"] == "initial"
    assert tasks.loc["0.p0", "kind"] == "implicit"
    assert tasks.loc["0.p0", "children"] == 3
    explicit = t.tasks()[t.tasks()["kind"] == "explicit"]
    assert sorted(explicit["lineage"]) == ["0.p0.0", "0.p0.1", "0.p0.2"]
    assert (explicit["depth"] == 2).all()
    # hz = 1e9: time equals ticks; the first child runs from tick 14 to 19.
    first = explicit[explicit["child_index"] == 0].iloc[0]
    assert (first["create_ns"], first["begin_ns"], first["end_ns"]) == (10, 14, 19)
    s = t.summary()
    assert (s["tasks"], s["taskwaits"], s["parallel_regions"], s["complete"]) == (3, 1, 1, True)


def test_time_is_ticks_scaled_by_clock_hz(tmp_path):
    b = fork_join_trace()
    clock = json.loads(b.meta["grainlab.clock"])
    clock["hz"] = 2e9
    path = b.write(tmp_path / "t.parquet", meta={"grainlab.clock": json.dumps(clock)})
    ev = grainlab.load(path).events
    np.testing.assert_array_equal(ev["time"].to_numpy(), np.rint(ev["tsc"].to_numpy() / 2))


def test_row_groups_split_within_a_thread_still_load(tmp_path):
    path = fork_join_trace().write(tmp_path / "t.parquet", rows_per_group=4)
    t = grainlab.load(path)
    assert len(t.row_group_sizes) > 2 and t.problems == []


def test_missing_file(tmp_path):
    assert "no such file" in load_error(tmp_path / "nope.parquet")


def test_not_parquet(tmp_path):
    path = tmp_path / "t.parquet"
    path.write_text("time,task\n1,2\n")
    assert "truncated or not a Parquet file" in load_error(path)


def test_empty_file(tmp_path):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"")
    assert "truncated or not a Parquet file" in load_error(path)


def test_truncated_file_without_footer(tmp_path):
    good = fork_join_trace().write(tmp_path / "good.parquet")
    data = good.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])  # what a SIGKILLed run leaves
    message = load_error(cut)
    assert "truncated or not a Parquet file" in message and "footer" in message


def test_foreign_parquet_file(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), path)
    assert "not a grainlab trace" in load_error(path)


def test_newer_schema_version(tmp_path):
    path = fork_join_trace().write(tmp_path / "t.parquet",
                                   meta={"grainlab.schema_version": "2"})
    message = load_error(path)
    assert "schema version 2" in message and "newer" in message


def test_missing_column(tmp_path):
    good = pq.read_table(fork_join_trace().write(tmp_path / "good.parquet"))
    path = tmp_path / "t.parquet"
    pq.write_table(good.drop_columns(["flags"]), path)
    assert "missing column(s) flags" in load_error(path)


def test_clock_without_hz(tmp_path):
    path = fork_join_trace().write(tmp_path / "t.parquet",
                                   meta={"grainlab.clock": json.dumps({"source": "tsc"})})
    assert "hz" in load_error(path)


def _contradiction(tmp_path, mutate, field):
    b = fork_join_trace()
    mutate(b)
    path = b.write(tmp_path / "bad.parquet")
    message = load_error(path)
    assert "row group" in message and f"field {field}" in message, message
    return message


def test_end_without_begin(tmp_path):
    region = task_id(0, 2)
    implicit0 = task_id(0, 10)
    msg = _contradiction(tmp_path, lambda b: b.add(
        0, S.SYNC_END, 100, task=implicit0, other=region, kind=S.SYNC_TASKWAIT), "event")
    assert "SYNC_END without a SYNC_BEGIN" in msg


def test_implicit_end_without_begin(tmp_path):
    msg = _contradiction(tmp_path, lambda b: b.add(
        1, S.IMPLICIT_END, 100, task=task_id(1, 77), kind=S.TASK_IMPLICIT), "event")
    assert "IMPLICIT_END without" in msg


def test_child_whose_parent_never_exists(tmp_path):
    msg = _contradiction(tmp_path, lambda b: b.add(
        1, S.TASK_CREATE, 100, task=task_id(1, 500), other=task_id(1, 999),
        kind=S.TASK_EXPLICIT), "other")
    assert "never exists" in msg


def test_scheduled_task_never_created(tmp_path):
    msg = _contradiction(tmp_path, lambda b: b.add(
        1, S.TASK_SCHEDULE, 100, task=task_id(1, 600), other=task_id(1, 10),
        kind=S.STATUS_SWITCH), "task")
    assert "never created" in msg


def test_time_going_backwards_on_a_thread(tmp_path):
    msg = _contradiction(tmp_path, lambda b: b.add(
        1, S.DEPENDENCE, 3, task=task_id(1, 10), kind=1), "tsc")
    assert "backwards" in msg


def test_unknown_event_code(tmp_path):
    msg = _contradiction(tmp_path, lambda b: b.add(1, 99, 100), "event")
    assert "unknown event code 99" in msg


def test_row_group_mixing_threads(tmp_path):
    b = fork_join_trace()
    b.rows[0][-1]["thread"] = 1
    path = b.write(tmp_path / "bad.parquet")
    assert "field thread" in load_error(path)


def test_incomplete_trace_loads_marked(tmp_path):
    b = fork_join_trace()
    b.rows[0] = [r for r in b.rows[0]
                 if r["event"] not in (S.THREAD_END, S.IMPLICIT_END, S.PARALLEL_END)]
    path = b.write(tmp_path / "t.parquet", meta={"grainlab.complete": "false",
                                                 "grainlab.end_reason": "signal:SIGINT"})
    t = grainlab.load(path)
    assert not t.complete
    assert any("SIGINT" in p for p in t.problems)
    assert any("without an end" in p for p in t.problems)
    assert t.summary()["tasks"] == 3


@pytest.mark.parametrize("case", ["missing", "text", "foreign", "newer", "contradiction"])
def test_info_reports_bad_traces_in_one_line(tmp_path, case, cli):
    path = tmp_path / "t.parquet"
    if case == "text":
        path.write_text("hello\n")
    elif case == "foreign":
        pq.write_table(pa.table({"x": [1]}), path)
    elif case == "newer":
        fork_join_trace().write(path, meta={"grainlab.schema_version": "7"})
    elif case == "contradiction":
        b = fork_join_trace()
        b.add(1, S.TASK_CREATE, 100, task=task_id(1, 500), other=task_id(1, 999),
              kind=S.TASK_EXPLICIT)
        b.write(path)
    for extra in ([], ["--json"]):
        result = cli("info", path, *extra)
        assert_one_line_error(result, str(path))
        assert result.stdout == ""


def test_a_bad_trace_through_a_real_process(tmp_path):
    """The error paths above run in-process (cli.main); once through a real
    `grainlab` process: the exit code and the one line on stderr."""
    b = fork_join_trace()
    b.add(1, S.TASK_CREATE, 100, task=task_id(1, 500), other=task_id(1, 999),
          kind=S.TASK_EXPLICIT)
    path = b.write(tmp_path / "t.parquet")
    for command in ("info", "analyze"):
        result = run_cli(command, path)
        assert_one_line_error(result, str(path), "never exists")
        assert result.stdout == ""


def test_info_warns_about_incomplete_trace(tmp_path, cli):
    path = fork_join_trace().write(tmp_path / "t.parquet", meta={
        "grainlab.complete": "false", "grainlab.end_reason": "signal:SIGTERM"})
    result = cli("info", "--json", path)
    assert result.returncode == 0
    summary = json.loads(result.stdout)
    assert summary["complete"] is False
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "incomplete" in lines[0] and "SIGTERM" in lines[0]


def test_odd_metadata_values_do_not_crash(tmp_path, cli):
    path = fork_join_trace().write(tmp_path / "t.parquet", meta={
        "grainlab.dropped_events": "many", "grainlab.counters": "{not json",
        "grainlab.runtime": "[]", "grainlab.command": "42"})
    s = grainlab.load(path).summary()
    assert s["dropped_events"] == 0 and s["unavailable_counters"] == []
    result = cli("info", path)
    assert result.returncode == 0 and "Traceback" not in result.stderr


def test_corrupted_bytes_give_trace_errors_only(tmp_path):
    import random
    data = fork_join_trace().write(tmp_path / "good.parquet").read_bytes()
    rng = random.Random(7)
    path = tmp_path / "t.parquet"
    for _ in range(60):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(4, len(b) - 4)] = rng.randrange(256)
        path.write_bytes(bytes(b))
        try:
            grainlab.load(path).summary()
        except TraceError as e:
            assert "\n" not in str(e) and str(path) in str(e)
