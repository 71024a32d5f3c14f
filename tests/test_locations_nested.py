"""Source locations of nested tasks, of loops whose iterations create tasks,
and of inlined helpers (issue 20, part 2), on programs built for it:
examples/nested_loc.c, loop_tasks.c and inlined.c. Every location names the
programmer's function and the construct's line (found from the `/* LOC name */`
markers in the source, never hard-coded), never a compiler-outlined name; a
worksharing loop instance is exactly one location, its pragma's line; an
inlined helper is `(helper, inlined into caller, construct)`."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab.trace.regions import choose_regions
from grainlab.symbolize import (_one_per_loop, _Piece, format_locations, grain_locations,
                                user_function)
from conftest import REPO

THREADS = [1, 2, 4]
# what a compiler names: clang's outlined bodies and task entries, target
# regions, GCC's outlined bodies
COMPILER_NAME = re.compile(r"\.omp[._]|__omp_offloading|_omp_fn|_debug__")


def markers(name: str) -> dict:
    """`/* LOC marker */` comments of examples/<name> -> their line numbers."""
    src = (REPO / "examples" / name).read_text().splitlines()
    out = {}
    for i, line in enumerate(src):
        m = re.search(r"/\* LOC (\w+) \*/", line)
        if m:
            assert m.group(1) not in out, m.group(1)
            assert line.lstrip().startswith("#pragma omp "), line
            out[m.group(1)] = i + 1
    return out


def no_compiler_names(locations):
    bad = [loc for loc in set(map(str, locations)) if COMPILER_NAME.search(loc)]
    assert not bad, bad


# -- nested tasks ---------------------------------------------------------------

def expected_nested(file: str) -> dict:
    at = markers("nested_loc.c")
    return {f"{file}:{at['level1']} (producer, task)": "level1",
            f"{file}:{at['level2']} (producer, task)": "level2",
            f"{file}:{at['level3']} (producer, task)": "level3",
            f"{file}:{at['consumer']} (consumer, task)": "consumer"}


@pytest.mark.parametrize("program, threads", [("nested_loc", t) for t in THREADS] + [
    (variant, t) for variant in ("nested_loc_O0", "nested_loc_gmlt") for t in (1, 2)])
def test_nested_tasks_name_the_function_that_wrote_them(record, program, threads):
    n = 4
    a = gl.analyze(record(program, n, threads=threads))
    gr = a.grains
    assert (gr["kind"].astype(str) == "task").all() and len(gr) == 9 * n
    loc = gr["location"].astype(str)
    no_compiler_names(loc)
    want = expected_nested("nested_loc.c")
    assert set(loc) == set(want), set(loc)
    # independently of the addresses: which construct made a task follows from
    # its place in the tree (depth; a level-2 task's children 0 and 1 are
    # level-3 tasks, child 2 is consumer's)
    depth, child = gr["depth"].to_numpy(), gr["child_number"].to_numpy()
    construct = np.select([depth == 1, depth == 2, (depth == 3) & (child < 2),
                           (depth == 3) & (child == 2)],
                          ["level1", "level2", "level3", "consumer"], "?")
    assert (loc.map(want).to_numpy() == construct).all()
    assert loc.map(want).value_counts().to_dict() == {
        "level1": n, "level2": 2 * n, "level3": 4 * n, "consumer": 2 * n}


# -- worksharing loops whose iterations create tasks ------------------------------

@pytest.mark.parametrize("variant", ["tied", "untied"])
@pytest.mark.parametrize("threads", THREADS)
def test_each_loop_is_one_location_at_its_pragma(record, variant, threads):
    n, per = 64, 2
    a = gl.analyze(record("loop_tasks", n, per, variant, threads=threads))
    gr = a.grains
    no_compiler_names(gr["location"])
    at = markers("loop_tasks.c")
    sfx = "" if variant == "tied" else "_untied"
    fn = "run_loops" + sfx
    chunks = gr[gr["kind"].astype(str) == "chunk"]
    per_loop = chunks.groupby(chunks["loop"].astype(str))["location"].agg(
        lambda s: sorted(set(map(str, s))))
    # the k-th worksharing construct of the region is the k-th `for` pragma
    assert sorted(per_loop.index.str.rsplit(".", n=1).str[-1]) == ["w0", "w1"], per_loop
    for loop, locs in per_loop.items():
        which = "loop_nowait" if loop.endswith(".w0") else "loop_barrier"
        assert locs == [f"loop_tasks.c:{at[which + sfx]} ({fn}, for)"], (loop, locs)
    # every chunk is there: N per loop (libomp runs a team of one's dynamic
    # loop as one chunk)
    sizes = chunks.groupby(chunks["loop"].astype(str)).size()
    assert (sizes == (n if threads > 1 else 1)).all(), sizes
    tasks = gr[gr["kind"].astype(str) == "task"]
    assert tasks["location"].astype(str).value_counts().to_dict() == {
        f"loop_tasks.c:{at['task_nowait' + sfx]} ({fn}, task)": n * per,
        f"loop_tasks.c:{at['task_barrier' + sfx]} ({fn}, task)": n * per}


# -- inlined helpers --------------------------------------------------------------

def elf_functions(path) -> set:
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        sym = ELFFile(f).get_section_by_name(".symtab")
        return {s.name for s in sym.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}


@pytest.mark.parametrize("threads", THREADS)
def test_inlined_helpers_keep_their_names(record, example, threads):
    # the premise: clang -O2 inlined all three helpers (no symbol of their own)
    assert not {"producer", "spawn", "sweep"} & elf_functions(example("inlined"))
    n, m = 8, 64
    a = gl.analyze(record("inlined", n, m, threads=threads))
    gr = a.grains
    no_compiler_names(gr["location"])
    at = markers("inlined.c")
    chunks = -(-m // 4) if threads > 1 else 1
    assert gr["location"].astype(str).value_counts().to_dict() == {
        f"inlined.c:{at['spawn_task']} (spawn, inlined into producer, task)": 2 * n,
        f"inlined.c:{at['producer_task']} (producer, inlined into main, task)": n,
        f"inlined.c:{at['sweep_for']} (sweep, inlined into main, for)": chunks}
    # spawn's tasks are the children of producer's
    spawn = gr["location"].astype(str).str.contains("spawn")
    assert (gr.loc[spawn, "depth"] == 2).all() and (gr.loc[~spawn & (gr["kind"] == "task"),
                                                         "depth"] == 1).all()


# -- what `analyze --json` says per location --------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_analyze_json_by_location(record, cli, threads):
    n = 4
    t = record("nested_loc", n, threads=threads)
    r = cli("analyze", "--json", t.path)
    assert r.returncode == 0, r.stderr
    no_compiler_names([r.stdout])
    by = {e["location"]: e["grains"] for e in json.loads(r.stdout)["locations"]}
    want = expected_nested("nested_loc.c")
    assert by == {loc: {"level1": n, "level2": 2 * n, "level3": 4 * n, "consumer": 2 * n}[c]
                  for loc, c in want.items()}

    t = record("loop_tasks", 64, 2, "untied", threads=threads)
    r = cli("analyze", "--json", t.path)
    assert r.returncode == 0, r.stderr
    no_compiler_names([r.stdout])
    at = markers("loop_tasks.c")
    by = {e["location"]: e["grains"] for e in json.loads(r.stdout)["locations"]}
    per_loop = 64 if threads > 1 else 1
    assert by == {
        f"loop_tasks.c:{at['loop_nowait_untied']} (run_loops_untied, for)": per_loop,
        f"loop_tasks.c:{at['loop_barrier_untied']} (run_loops_untied, for)": per_loop,
        f"loop_tasks.c:{at['task_nowait_untied']} (run_loops_untied, task)": 128,
        f"loop_tasks.c:{at['task_barrier_untied']} (run_loops_untied, task)": 128}


# -- the rules, without a program ---------------------------------------------------

def test_compiler_names_give_the_users_function():
    assert user_function("__omp_offloading_fd00_2a3b1c_producer_l42") == "producer"
    assert user_function("__omp_offloading_10302_bd2c0d_main_l7.omp_outlined") == "main"
    assert user_function("main._omp_fn.3") == "main"           # GCC
    assert user_function(".omp.reduction.reduction_func") is None
    assert user_function(".omp_task_dup.") is None
    assert user_function("main.omp_outlined_debug__") == "main"
    assert user_function("omp_helper") == "omp_helper"          # not a compiler name


def test_without_a_line_addresses_stay_apart_and_unnamed_by_the_compiler():
    pieces = [
        # the programmer's own function: offset into it
        _Piece("/s/a.c", 0, "work", 0x20, "app+0x1220", "work", None),
        # an outlined body whose function DWARF or the symbol names
        _Piece("/s/a.c", 0, "run.omp_outlined", 0x130, "app+0x1930", "run", None),
        _Piece("/s/a.c", 0, "run.omp_outlined", 0x2a7, "app+0x1aa7", "run", None),
        # an inlined helper
        _Piece("/s/a.c", 0, ".omp_task_entry.", 0x10, "app+0x1710", "spawn", "producer"),
        # nobody knows whose: binary+address only
        _Piece(None, 0, ".omp_task_entry..3", 0x10, "app+0x1810", None, None),
        _Piece("/s/a.c", 12, ".omp_task_entry..3", 0x10, "app+0x1810", "spawn", "producer"),
    ]
    out = format_locations(pieces, ["task"] * len(pieces)).tolist()
    assert out == ["a.c (work+0x20, task)",
                   "a.c (run, app+0x1930, task)", "a.c (run, app+0x1aa7, task)",
                   "a.c (spawn, inlined into producer, app+0x1710, task)",
                   "app+0x1810 (task)",
                   "a.c:12 (spawn, inlined into producer, task)"]
    no_compiler_names(out)


def test_one_location_per_loop_instance():
    loop = pd.Categorical(["r.w0"] * 5 + ["r.w1"] * 3 + ["r.w2"] * 2)
    cp = np.array([0, 7, 7, 9, 7,  0, 4, 0,  0, 0], np.uint64)
    assert _one_per_loop(loop, cp).tolist() == [7] * 5 + [4] * 3 + [0] * 2
    big = np.array([0xffff_ffff_ffff_fff1] * 2, np.uint64)     # no float round trip
    assert _one_per_loop(pd.Categorical(["a", "a"]), big).tolist() == big.tolist()


def test_regions_chosen_by_a_function_name_before_a_comma():
    table = pd.DataFrame({"location": ["a.c:5 (main, parallel)",
                                       "a.c:9 (helper, inlined into main, parallel)",
                                       "b.c:3 (other, parallel)"]},
                         index=pd.RangeIndex(1, 4, name="region"))
    assert choose_regions(table, "helper").index.tolist() == [2]
    assert choose_regions(table, "main").index.tolist() == [1, 2]
    assert choose_regions(table, "other").index.tolist() == [3]


@pytest.mark.parametrize("untied", [False, True])
def test_chunks_take_their_loops_address_when_tasks_are_untied(tmp_path, untied):
    """A trace with an untied task orders the builder's rows by global time,
    not per thread: a chunk's loop (a row position) must not be read as a
    global rank (it was: chunks took the codeptr of some other row, e.g. 0 or
    another loop's WORK_END, and their loop became `? (parallel for)`)."""
    from tracegen import TraceBuilder, task_id, team_region, team_region_end
    from grainlab import schema as S
    from grainlab.graph import build
    from grainlab.trace.trace import load
    b = TraceBuilder()
    init, region, imp = team_region(b, threads=2)
    kid = task_id(0, 100)
    flags = S.TASK_EXPLICIT | (S.TASK_UNTIED if untied else 0)
    loop, end = dict(other=region, kind=S.WORK_LOOP_DYNAMIC), dict(other=region, kind=9)
    chunk = dict(other=region, count=2, kind=S.DISPATCH_LOOP_CHUNK)
    b.add(0, S.WORK_BEGIN, 10, task=imp[0], count=8, codeptr=0x1000, **loop)
    b.add(1, S.WORK_BEGIN, 11, task=imp[1], count=8, codeptr=0x1000, **loop)
    b.add(0, S.CHUNK, 12, task=imp[0], value=0, **chunk)
    b.add(1, S.CHUNK, 13, task=imp[1], value=2, **chunk)
    b.add(0, S.TASK_CREATE, 14, task=kid, other=imp[0], kind=flags, codeptr=0x2000)
    b.add(0, S.CHUNK, 16, task=imp[0], value=4, **chunk)
    b.add(1, S.CHUNK, 17, task=imp[1], value=6, **chunk)
    b.add(1, S.WORK_END, 19, task=imp[1], **loop)
    b.add(0, S.WORK_END, 20, task=imp[0], **loop)
    b.add(1, S.SYNC_BEGIN, 21, task=imp[1], **end)
    b.add(0, S.SYNC_BEGIN, 22, task=imp[0], **end)
    b.add(0, S.TASK_SCHEDULE, 23, task=kid, other=imp[0], kind=S.STATUS_SWITCH)
    b.add(0, S.TASK_SCHEDULE, 25, task=imp[0], other=kid, kind=S.STATUS_COMPLETE)
    for th in (0, 1):
        b.add(th, S.SYNC_END, 30, task=imp[th], **end)
        b.add(th, S.IMPLICIT_END, 31, task=imp[th], value=th, count=2, kind=S.TASK_IMPLICIT)
    team_region_end(b, init, region, 40)
    t = load(b.write(tmp_path / "t.parquet"))
    g = build(t)
    chunks = g.grains[g.grains["kind"] == "chunk"]
    assert len(chunks) == 4
    assert bool(g.grains["flags"].to_numpy()[0] & S.TASK_UNTIED) == untied
    assert [int(c) for c in chunks["codeptr"]] == [0x1000] * 4
    assert set(grain_locations(g, t.meta)[chunks.index]) == {"0x1000 (parallel for)"}


def test_too_large_a_unit_falls_back_to_the_symbol_table(record, monkeypatch):
    """A compile unit over GRAINLAB_DWARF_UNIT_MAX_BYTES is not read: names
    come from the symbol table (outlined bodies by the line spans of the
    programmer's symbols), without inlining, and still never a compiler name."""
    from grainlab import symbolize
    # fresh Trace objects: nothing made here is cached on the session's traces
    nested = gl.load(record("nested_loc", 4, threads=2).path)
    inlined = gl.load(record("inlined", 8, 64, threads=2).path)
    monkeypatch.setenv("GRAINLAB_DWARF_UNIT_MAX_BYTES", "1")
    symbolize._parse_binary.cache_clear()
    try:
        loc = gl.analyze(nested).locations.astype(str)
        assert set(loc) == set(expected_nested("nested_loc.c"))
        loc = gl.analyze(inlined).locations.astype(str)
        no_compiler_names(loc)
        at = markers("inlined.c")
        assert set(loc) == {f"inlined.c:{at['spawn_task']} (task)",      # nobody's: no name
                            f"inlined.c:{at['producer_task']} (main, task)",
                            f"inlined.c:{at['sweep_for']} (main, for)"}
    finally:
        symbolize._parse_binary.cache_clear()
