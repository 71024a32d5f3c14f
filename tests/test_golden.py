"""Outputs recorded before the graph builder was restructured (issue 10):
`analyze --json`, `compare --json` and the exports of 38 real traces
(tests/golden/traces: every example program that records, at 1, 2 and 4 threads: tasks,
chunks, taskgroups, dependences, if(0), exec, loops of every schedule) must
stay exactly the same. tests/golden/make.py recorded them; regenerate
expected/ only for an intended change of output."""
from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("golden_make", HERE / "make.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


@pytest.mark.parametrize("name", list(golden.PROGRAMS))
def test_outputs_are_unchanged(tmp_path, name):
    produced = golden.outputs(name, tmp_path)
    expected = {p.name[len(name) + 1:]: p.read_text()
                for p in golden.EXPECTED.glob(f"{name}.*")}
    assert set(produced) == set(expected)
    for kind, text in produced.items():
        got = golden.stored(kind, text)
        if got != expected[kind]:
            diff = "".join(list(difflib.unified_diff(
                expected[kind].splitlines(True), got.splitlines(True),
                f"expected/{name}.{kind}", "now", n=1))[:60])
            pytest.fail(f"{name}.{kind} changed:\n{diff}")
