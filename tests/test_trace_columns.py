"""The trace's columns are defined once, in grainlab/trace_columns.def: the
converter's writer compiles its Parquet schema from it (test_native_writer
checks what it writes), grainlab.schema reads it at import, and synth and the
tests' trace generator write their traces through `schema.arrow_schema`."""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grainlab import schema as S
from grainlab.synth import generate
from tracegen import fork_join_trace

REPO = Path(__file__).resolve().parent.parent


def test_columns_come_from_the_definition_file():
    text = S.COLUMNS_FILE.read_text()
    lines = re.findall(r"^GL_COLUMN\((\w+), (\w+), (\w+)\)$", text, flags=re.M)
    assert list(S.COLUMNS.items()) == [(name, t) for name, t, _ in lines]
    assert {source for *_, source in lines} == {"EVENT", "BUFFER"}


def test_arrow_schema():
    s = S.arrow_schema(["task-clock"], metadata={"grainlab.schema_version": "1"})
    assert s.names == [*S.COLUMNS, "counter:task-clock"]
    for name, type_name in S.COLUMNS.items():
        assert str(s.field(name).type) == type_name and not s.field(name).nullable
    assert s.field("counter:task-clock").type == pa.int64() and s.field("counter:task-clock").nullable
    assert s.metadata == {b"grainlab.schema_version": b"1"}


@pytest.mark.parametrize("line", ["GL_COLUMN(x, int64, EVENT)", "GL_COLUMN(x, uint8, ELSEWHERE)",
                                  "GL_COLUMN(x uint8 EVENT)", "GL_COLUMN(event, uint8, EVENT)"])
def test_a_bad_definition_line_is_refused(line):
    with pytest.raises(ValueError, match="GL_COLUMN"):
        S._read_columns("/* the columns */\nGL_COLUMN(event, uint8, EVENT)\n" + line)


def test_synth_and_tracegen_write_the_schema(tmp_path):
    generate(tmp_path / "s.parquet", "fork-join", 20)
    fork_join_trace().write(tmp_path / "t.parquet")
    for name in ("s", "t"):
        schema = pq.read_schema(tmp_path / f"{name}.parquet")
        assert schema.remove_metadata() == S.arrow_schema(), name


def test_the_documented_columns_are_the_defined_ones():
    """docs/trace-format.md's "Columns" table lists them, in order, with their types."""
    doc = (REPO / "docs" / "trace-format.md").read_text()
    table = doc.split("## Columns", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", table, flags=re.M)
    assert rows[:len(S.COLUMNS)] == list(S.COLUMNS.items())
    assert rows[len(S.COLUMNS):] == [("counter:<name>", "int64, nullable")]
