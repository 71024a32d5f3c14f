"""Source locations (issue: fidelity, item 4) on real programs built for it:
distinct code addresses never merge, a loop instance has one location, the
programmer's function (not the compiler's outlined one) with the construct
beside it, and file paths just long enough to be unique."""
from __future__ import annotations

import re

import pytest

import grainlab as gl
from grainlab.symbolize import _unique_suffixes, user_function
from conftest import REPO


def pragma_lines(path, what=r"task\b(?!wait)"):
    src = (REPO / "examples" / path).read_text().splitlines()
    return {i + 1 for i, line in enumerate(src) if re.match(rf"\s*#pragma omp {what}", line)}


@pytest.mark.parametrize("threads", [1, 2])
def test_two_task_constructs_of_one_function_are_two_locations(record, threads):
    locs = gl.analyze(record("twotasks", 10, threads=threads)).locations
    # `work` is static and called once: clang inlines it into main's region
    lines = {int(re.fullmatch(r"twotasks\.c:(\d+) \(work, inlined into main, task\)", l)
                 .group(1)) for l in locs}
    assert lines == pragma_lines("twotasks.c")
    assert locs.value_counts().tolist() == [10, 10]


@pytest.mark.parametrize("threads", [1, 2])
def test_without_line_information_they_stay_apart(record, threads):
    locs = gl.analyze(record("twotasks_nolines", 10, threads=threads)).locations
    counts = locs.value_counts()
    assert counts.tolist() == [10, 10], counts
    for loc in counts.index:
        # no DWARF: the symbol (main.omp_outlined) gives the programmer's
        # function, and binary+address keeps the two constructs apart; no file:0
        assert re.fullmatch(r"twotasks_nolines \(main, twotasks_nolines\+0x[0-9a-f]+, task\)",
                            loc), loc
        assert ":0" not in loc and ".omp" not in loc


def test_same_basename_in_two_directories(record):
    locs = set(gl.analyze(record("samename", 5, threads=2)).locations)
    line_a = pragma_lines("samename/a/kernel.c").pop()
    line_b = pragma_lines("samename/b/kernel.c").pop()
    assert locs == {f"a/kernel.c:{line_a} (kernel_a, task)",
                    f"b/kernel.c:{line_b} (kernel_b, task)"}


def test_loop_chunks_have_their_loops_location(record):
    a = gl.analyze(record("loops", "all", 300, threads=2))
    gr = a.grains
    chunks = gr[gr["kind"].astype(str) == "chunk"]
    per_loop = chunks.groupby(chunks["loop"].astype(str))["location"].nunique()
    assert (per_loop == 1).all(), per_loop
    assert not chunks["location"].str.startswith("?").any()
    # the loops' lines are run_loop's `#pragma omp for` lines, named after
    # run_loop (not run_loop.omp_outlined...), as a parallel for
    for loc in set(chunks["location"]):
        assert re.fullmatch(r"loops\.c:\d+ \(run_loop, parallel for\)", loc), loc


def test_outlined_names_are_the_users_function():
    assert user_function("run_loop.omp_outlined.13") == "run_loop"
    assert user_function("main.omp_outlined") == "main"
    assert user_function(".omp_task_entry..15") is None
    assert user_function(".omp_outlined.") is None
    assert user_function("fib") == "fib"


def test_unique_suffixes_are_the_shortest():
    got = _unique_suffixes({"/src/x/a/sparselu.c", "/src/y/a/sparselu.c", "/src/z/b/kernel.c",
                            "/src/main.c"})
    assert got == {"/src/x/a/sparselu.c": "x/a/sparselu.c", "/src/y/a/sparselu.c":
                   "y/a/sparselu.c", "/src/z/b/kernel.c": "kernel.c", "/src/main.c": "main.c"}
