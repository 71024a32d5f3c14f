"""`grainlab info` and `info --json` print exactly what they printed before
they streamed row groups: outputs recorded then (tests/golden/make_info_golden.py)
on real traces at 1 and 2 threads, synthetic, killed, stopped, exec()ing and
counter traces, and on damaged and contradictory ones (the same problems, in
the same order; the same one-line errors). In-process, through `cli.main`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from grainlab.trace import batches
from grainlab import cli

GOLDEN = Path(__file__).resolve().parent / "golden" / "info"
EXPECTED = json.loads((GOLDEN / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("mode", ["text", "json"])
def test_info_prints_what_it_printed_before(name, mode, capsys):
    check(name, mode, capsys)


@pytest.mark.parametrize("batch_rows", [5, 64])
def test_same_output_whatever_the_batch_size(batch_rows, capsys, monkeypatch):
    """Streamed in batches of 5 or 64 rows (instead of 2^18): every check
    and count carries its state across batches and row groups. (--json says
    all that the text says; batches of 1 row pass too, in 30 s.)"""
    monkeypatch.setattr(batches, "BATCH_ROWS", batch_rows)
    for name in sorted(EXPECTED):
        check(name, "json", capsys)


def check(name, mode, capsys):
    trace = GOLDEN / f"{name}.parquet"
    want = EXPECTED[name][mode]
    code = cli.main(["info", *(["--json"] if mode == "json" else []), str(trace)])
    out, err = capsys.readouterr()
    assert (name, code) == (name, want["code"])
    assert out == want["stdout"].replace("{TRACE}", str(trace)), name
    assert err == want["stderr"].replace("{TRACE}", str(trace)), name


def test_the_golden_set_covers_what_it_says():
    """Errors, damaged traces with problems, and clean ones are all there."""
    codes = [EXPECTED[n]["text"]["code"] for n in EXPECTED]
    problems = [n for n in EXPECTED if EXPECTED[n]["text"]["code"] == 0
                and EXPECTED[n]["text"]["stderr"]]
    assert codes.count(2) >= 20 and len(problems) >= 15 and codes.count(0) >= 40


def test_gl_scan_is_the_function_once_its_module_is_loaded():
    """`gl.scan` stays callable after grainlab.trace.scan (its module) is imported:
    a submodule named like the function would replace it on the package."""
    import grainlab as gl
    import grainlab.trace.scan  # noqa: F401
    assert callable(gl.scan)
    s = gl.scan(GOLDEN / "fib10-t1.parquet")
    assert s.summary() == json.loads(EXPECTED["fib10-t1"]["json"]["stdout"].replace(
        "{TRACE}", str(GOLDEN / "fib10-t1.parquet")))
