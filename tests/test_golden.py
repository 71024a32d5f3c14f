"""Outputs recorded before the graph builder was restructured (issue 10):
`analyze --json`, `compare --json` and the exports of 38 real traces
(tests/golden/traces: every example program that records, at 1, 2 and 4 threads: tasks,
chunks, taskgroups, dependences, if(0), exec, loops of every schedule) must
stay the same. tests/golden/make.py recorded them.

JSON outputs (`analyze --json`, `compare --json`) are compared as a subset:
every key stored in expected/ must be printed now with the same value (dicts
recursively, lists item by item and of the same length), and new keys may be
added without touching expected/ — a change that only adds keys passes, one
that changes or drops a stored value fails with its path. Exports (GraphML,
Perfetto) are kept as digests and must match exactly.

Refresh expected/ (`python tests/golden/make.py expected`, or `... expected
NAME...` for some traces) only for an intended change of a stored value, and
say why in the commit; to record keys added since, the same command.
"""
from __future__ import annotations

import difflib
import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("golden_make", HERE / "make.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


def changed(stored, now, path="$") -> list[str]:
    """Where `now` differs from `stored`, ignoring keys `stored` lacks:
    JSON paths of values changed or dropped (empty: `now` only adds keys)."""
    if isinstance(stored, dict):
        if not isinstance(now, dict):
            return [f"{path}: was an object, now {type(now).__name__}"]
        out = []
        for k, v in stored.items():
            if k not in now:
                out.append(f"{path}.{k}: dropped (was {json.dumps(v)[:60]})")
            else:
                out += changed(v, now[k], f"{path}.{k}")
        return out
    if isinstance(stored, list):
        if not isinstance(now, list) or len(now) != len(stored):
            n = len(now) if isinstance(now, list) else type(now).__name__
            return [f"{path}: a list of {len(stored)} items, now {n}"]
        return [d for i, (a, b) in enumerate(zip(stored, now)) for d in changed(a, b, f"{path}[{i}]")]
    if stored != now or type(stored) is not type(now) and not (
            isinstance(stored, (int, float)) and isinstance(now, (int, float))
            and not isinstance(stored, bool) and not isinstance(now, bool)):
        return [f"{path}: {json.dumps(stored)} -> {json.dumps(now)}"]
    return []


def test_the_subset_rule_catches_changes_and_drops_but_not_additions():
    was = {"a": 1, "b": {"c": [1, 2.5, {"d": "x"}]}, "e": True}
    assert changed(was, {**was, "new": 3, "b": {"c": [1, 2.5, {"d": "x", "f": 0}], "g": 1}}) == []
    assert changed(was, {**was, "a": 2}) == ["$.a: 1 -> 2"]
    assert changed(was, {"a": 1, "e": True}) == ['$.b: dropped (was {"c": [1, 2.5, {"d": "x"}]})']
    assert changed(was, {**was, "b": {"c": [1, 2.5]}}) == ["$.b.c: a list of 3 items, now 2"]
    assert changed(was, {**was, "b": {"c": [1, 2.5, {"d": "y"}]}}) == ['$.b.c[2].d: "x" -> "y"']
    assert changed(was, {**was, "e": 1}) == ["$.e: true -> 1"]
    assert changed({"x": 2}, {"x": 2.0}) == []          # JSON does not tell 2 from 2.0


@pytest.mark.parametrize("name", list(golden.PROGRAMS))
def test_outputs_are_unchanged(tmp_path, name):
    produced = golden.outputs(name, tmp_path)
    expected = {p.name[len(name) + 1:]: p.read_text()
                for p in golden.EXPECTED.glob(f"{name}.*")}
    assert set(produced) == set(expected)
    for kind, text in produced.items():
        got = golden.stored(kind, text)
        if kind.endswith(".json") and kind not in golden.DIGESTED:
            diffs = changed(json.loads(expected[kind]), json.loads(got))
            if diffs:
                pytest.fail(f"{name}.{kind}: stored values changed (keys may only be added; "
                            f"refresh with tests/golden/make.py for an intended change):\n"
                            + "\n".join(diffs[:40]))
        elif got != expected[kind]:
            diff = "".join(list(difflib.unified_diff(
                expected[kind].splitlines(True), got.splitlines(True),
                f"expected/{name}.{kind}", "now", n=1))[:60])
            pytest.fail(f"{name}.{kind} changed:\n{diff}")
