"""The whole run (issue 34): a trace covers its process from start to exit,
and every node of a `--cpu-time` trace carries its thread's off-CPU time.

examples/late_start computes for a long while before its first OpenMP call
(when libomp starts the collector) and prints its own CLOCK_MONOTONIC at
main's start and just before it returns. The trace's clock is on the same
CLOCK_MONOTONIC (metadata clock.start_monotonic_ns is tick 0), so the two
measures of one run are compared with each other, never with a wall-clock
threshold: the trace holds main's whole life, and lasts within 2% of it
(what it adds: the dynamic loader before main, libomp's shut-down after).
"""
from __future__ import annotations

import json
import os
import re
import subprocess


import grainlab as gl
from conftest import grainlab
from grainlab import _paths

SETUP = "200"        # million rounds of serial work before the first region (~0.6 s)


def main_life(stdout: str) -> tuple[int, int]:
    m = re.search(r"main (\d+) (\d+)", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def check_covers(trace, stdout):
    begin, end = main_life(stdout)
    origin = int(trace.meta["clock"]["start_monotonic_ns"])
    last = origin + int(trace.events["time"].max())
    life = end - begin
    assert last >= end                       # the trace ends after main returned
    assert abs((last - origin) - life) <= 0.02 * life, (last - origin, life)
    # the initial thread and task begin at tick 0: the process's start
    ev = trace.events
    first = ev[ev["thread"] == 0].iloc[:2]
    assert list(first["event"]) == [1, 5] and list(first["time"]) == [0, 0]
    return origin, begin


def check_serial_start(trace, begin_ns):
    """The set-up is the initial task's first fragment, from tick 0 to the
    first region's fork, and it is on the critical path."""
    g = trace.graph()
    ctx = g.contexts
    initial = int(ctx.index[ctx["kind"].astype(str) == "initial"][0])
    nodes = g.nodes[g.nodes["owner"] == initial].sort_values("owner_seq")
    first = nodes.iloc[0]
    assert first["type"] == "fragment" and first["start"] == 0
    assert first["end"] > begin_ns           # the set-up runs after main starts
    assert bool(first["on_critical_path"])
    assert nodes.iloc[1]["type"] == "fork"


def test_record_covers_the_process_from_its_start(record):
    trace = record("late_start", SETUP, "8", "10", threads=2)
    stdout = record.stdout("late_start", SETUP, "8", "10", threads=2)
    origin, begin = check_covers(trace, stdout)
    # under record the preloaded libgrainexec.so's constructor bounds the
    # start: before main, always
    assert origin <= begin
    assert trace.meta["process_start"]["method"] in ("run time", "preload", "tick")
    check_serial_start(trace, begin - origin)


def test_the_collector_alone_covers_the_process(example, tmp_path):
    out = tmp_path / "alone.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_OUTPUT": str(out),
           "GRAINLAB_CONVERT": "wait", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR)}
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([example("late_start"), SETUP, "8", "10"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    trace = gl.load(out)
    origin, begin = check_covers(trace, run.stdout)
    start = trace.meta["process_start"]
    # the kernel's clock tick bounds it from below: never more than one tick early
    assert origin + start["uncertainty_ns"] >= origin
    check_serial_start(trace, begin - origin)


def test_predict_whole_sees_the_serial_start(record):
    """predict --whole replays from the process's start: the set-up (most of
    the run) is serial, so no core count gives even 2x (Amdahl), and the
    predicted time at 1 core is the whole trace's."""
    trace = record("late_start", SETUP, "8", "10", threads=2)
    r = grainlab("predict", "--whole", "--json", "--cores", "1,16", trace.path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    g = trace.graph()
    assert doc["span_ns"] == g.span
    first = g.nodes[g.nodes["start"] == 0]
    assert len(first) and doc["span_ns"] >= int(first["duration"].max())
    assert doc["speedup"][1] < 2
