"""The OpenMP runtimes users have (issue 33, part 2): a compact set of the
examples recorded with `grainlab record --runtime R` on every runtime this
machine has (LLVM libomp 14, 15, 16 — fetched by `make build` — and 19, and
Intel's libiomp5 from the intel-openmp wheel), with exact task and chunk
counts; GCC builds through --gomp-compat on each. A runtime that cannot
report chunks (no dispatch callback: libomp 14) must say so in the trace,
at record time and in `info`, and still give exact tasks and loops.
docs/compatibility.md has the table these measure."""
from __future__ import annotations

import json

import pytest

from conftest import assert_one_line_error, grainlab

from grainlab.record import runtimes
from grainlab.trace.runtime_info import ALWAYS

AVAILABLE = runtimes.available()
NAMES = [r.name for r in AVAILABLE]


def test_ci_covers_a_runtime_besides_libomp_19():
    """`make build` fetches libomp 14-16 and the dev extra installs Intel's:
    a machine set up by the Makefile has all of them."""
    assert {"llvm-14", "llvm-15", "llvm-16", "llvm-19", "intel"} <= set(NAMES), NAMES


# name, args, extra record options, expected with chunks reported:
# (tasks, chunks, loops, untied, dependences, taskgroups)
CASES = [
    ("fib", (15,), (), (1972, 0, 0, 0, 0, 0)),
    ("fib_untied", (15,), (), (1972, 0, 0, 1972, 0, 0)),
    ("depend", (20,), (), (100, 0, 0, 0, 180, 0)),
    ("taskloop", (10000, 1000), (), (10, 10, 1, 0, 0, 1)),
    ("taskgroup", (50,), ("--counters", "task-clock"), (150, 0, 0, 0, 0, 1)),
    ("undeferred", (20,), (), (81, 0, 0, 0, 0, 0)),
    ("loop_static", (1000, 3), (), (0, 6, 3, 0, 0, 0)),
    # GCC builds (libgomp ABI) on the runtime's GOMP layer. GCC inlines
    # schedule(static) loops (no runtime call, so no loop at all on any
    # runtime): only its dynamic and guided loops are loops to a tool.
    ("tree_gomp", (3, 5), ("--gomp-compat",), (155, 0, 0, 0, 0, 0)),
    ("depend_gomp", (20,), ("--gomp-compat",), (100, 0, 0, 0, 180, 0)),
    ("taskloop_gomp", (10000, 1000), ("--gomp-compat",), (10, 10, 1, 0, 0, 1)),
    ("loops_gomp", ("dynamic,7", 1000), ("--gomp-compat",), (0, 143, 1, 0, 0, 0)),
    ("loops_gomp", ("guided", 1000), ("--gomp-compat",), (0, 25, 1, 0, 0, 0)),
]


# iterations the chunks cover, where chunks are reported
ITERATIONS = {"taskloop": 10000, "loop_static": 3000, "taskloop_gomp": 10000, "loops_gomp": 1000}


@pytest.mark.parametrize("runtime", NAMES)
@pytest.mark.parametrize("name, args, extra, expect", CASES,
                         ids=[f"{c[0]}-{'_'.join(map(str, c[1]))}" for c in CASES])
def test_exact_counts_on_every_runtime(record, runtime, name, args, extra, expect):
    t = record(name, *args, threads=2, extra=("--runtime", runtime, *extra))
    meta = t.meta["runtime"]
    asked = next(r for r in AVAILABLE if r.name == runtime)
    assert meta["library"] == asked.path                 # it ran on the runtime asked for
    s = t.summary()
    tasks, chunks, loops, untied, deps, groups = expect
    got = (s["tasks"], s["loops"], s["untied_tasks"], s["dependences"], s["taskgroups"])
    assert got == (tasks, loops, untied, deps, groups)
    if meta["chunks_reported"]:
        assert s["chunks"] == chunks
        assert s["iterations"] == ITERATIONS.get(name, 0)
    else:
        # no dispatch callback (libomp 14): no chunk at all, said in the trace
        # (and by record and info: test_a_runtime_without_chunks_says_so)
        assert meta["callbacks"]["dispatch"] != ALWAYS
        assert s["chunks"] == 0 and s["iterations"] == 0
    if "--counters" in extra:
        assert s["counters"] == ["task-clock"] and not s["unavailable_counters"]


@pytest.mark.skipif("llvm-14" not in NAMES, reason="needs LLVM libomp 14 (make build fetches it)")
def test_a_runtime_without_chunks_says_so(example, tmp_path):
    out = tmp_path / "t.parquet"
    r = grainlab("record", "--runtime", "llvm-14", "-o", out, "--", example("loop_static"),
                 1000, 3, env={"OMP_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if "reports less" in line]
    assert len(notes) == 1 and "dispatch" in notes[0] and "chunks" in notes[0], r.stderr
    info = grainlab("info", out)
    assert "reports less: dispatch callback never" in info.stdout, info.stdout
    assert "llvm-14" in info.stdout
    j = json.loads(grainlab("info", "--json", out).stdout)
    assert j["runtime_limitations"] and j["chunks_reported"] is False


def test_a_full_runtime_says_nothing_more(example, tmp_path):
    out = tmp_path / "t.parquet"
    r = grainlab("record", "--runtime", "llvm-19", "-o", out, "--", example("loop_static"),
                 100, 1, env={"OMP_NUM_THREADS": "2"})
    assert r.returncode == 0 and "reports less" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.skipif("llvm-16" not in NAMES, reason="needs LLVM libomp 16 (make build fetches it)")
def test_a_program_built_for_a_newer_runtime_is_refused_in_one_line(cli, example):
    """clang-19's dynamic loops call __kmpc_dispatch_deinit (libomp 18+)."""
    r = cli("record", "--runtime", "llvm-16", "--", example("loops"))
    assert_one_line_error(r, "__kmpc_dispatch_deinit", "llvm-16")


def test_an_unknown_runtime_is_one_line(cli, example):
    assert_one_line_error(cli("record", "--runtime", "llvm-3", "--", example("fib")),
                          "LLVM libomp 3 not found")
    assert_one_line_error(cli("record", "--runtime", "/nonexistent/libomp.so", "--",
                              example("fib")), "no such file")


# The benchmark-style programs of the example suite (tests/test_examples_b.py:
# each verifies its own result, and its task and chunk counts come from an
# independent reference there), on every runtime. clang-19 builds dynamic and
# guided loops with __kmpc_dispatch_deinit, which libomp 14-16 lack: a binary
# that has such a loop anywhere is refused there in one line naming it (the
# check reads the binary's imports, before the run), never recorded wrong.
from test_examples_b import CASES as SUITE  # noqa: E402

NO_DISPATCH_DEINIT = {"llvm-14", "llvm-15", "llvm-16"}


def dynamic_loop(name, args) -> bool:
    """Does the binary hold a dynamic or guided loop (whatever `args` run)?"""
    return name in ("alignment", "loop_dynamic", "imbalance")


@pytest.mark.parametrize("runtime", NAMES)
@pytest.mark.parametrize("name, args, said, expect", SUITE,
                         ids=[f"{c[0]}-{'_'.join(map(str, c[1]))}" for c in SUITE])
def test_the_suite_programs_on_every_runtime(record, example, tmp_path, runtime, name, args,
                                             said, expect):
    if runtime in NO_DISPATCH_DEINIT and dynamic_loop(name, args):
        r = grainlab("record", "--runtime", runtime, "-o", tmp_path / "t.parquet", "--",
                     example(name), *args, env={"OMP_NUM_THREADS": "2"})
        assert_one_line_error(r, "__kmpc_dispatch_deinit", runtime)
        assert not (tmp_path / "t.parquet").exists()
        return
    extra = ("--runtime", runtime)
    t = record(name, *args, threads=2, extra=extra)
    out = record.stdout(name, *args, threads=2, extra=extra)
    assert out.startswith(said) and out.rstrip().endswith("verified"), out
    tasks, chunks = expect(2)
    s = t.summary()
    assert s["tasks"] == tasks
    assert s["chunks"] == (chunks if t.meta["runtime"]["chunks_reported"] else 0)


# The BOTS-style kernels (tests/test_examples_a.py: task counts and
# taskwaits from formulas there), on every runtime.
from test_examples_a import SMALL as KERNELS, TASKWAITS  # noqa: E402


@pytest.mark.parametrize("runtime", NAMES)
@pytest.mark.parametrize("case", list(KERNELS))
def test_the_kernels_on_every_runtime(record, runtime, case):
    import re
    prog, args, pattern, tasks = KERNELS[case]
    extra = ("--runtime", runtime)
    t = record(prog, *args, threads=2, extra=extra)
    out = record.stdout(prog, *args, threads=2, extra=extra).strip()
    assert re.match(pattern, out), out
    assert t.complete and t.summary()["tasks"] == tasks
    if case in TASKWAITS:
        assert t.summary()["taskwaits"] == TASKWAITS[case]
