"""The collector's writer threads (collector/src/writer.c) and the CPU column.

The first writer thread starts at the first hand-over of a full buffer; a
thread whose pool of buffers is full (the writers do not keep up) starts
another, up to 4, while traced threads and writers leave each a CPU (with
GRAINLAB_WRITER=1, regardless). The end
record says how many started (metadata `grainlab.writers`). Whatever the
number, every thread's blocks reach the spool in order: the trace is whole,
its counts exact and each thread's rows in time order.

Pools are made to fill deterministically: libslowwritev.so makes spool
writes sleep (a stalled disk), so handed-over buffers stay queued."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess

import numpy as np
import pytest
import pyarrow.parquet as pq

import grainlab as gl
from grainlab import schema as S

FIB20_TASKS = 21890  # 2 fib(21) - 2: every call but the root's


def run_fib(build, example, tmp_path, n, threads, env=(), cpus=None):
    out = tmp_path / "t.parquet"
    full = {**os.environ, "OMP_NUM_THREADS": str(threads), "GRAINLAB_QUIET": "1",
            "OMP_TOOL_LIBRARIES": str(build / "lib" / "libgraincollect.so"),
            "GRAINLAB_OUTPUT": str(out), "GRAINLAB_CONVERT": "wait", **dict(env)}
    argv = [example("fib"), str(n)]
    if cpus is not None:
        argv = [shutil.which("taskset"), "-c", cpus, *argv]
    r = subprocess.run(argv, env=full, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def slow_disk(build, calls=40, ms=20):
    """Spool writes 2 .. calls+1 sleep `ms` each."""
    return {"LD_PRELOAD": str(build / "tests" / "libslowwritev.so"),
            "GL_SLOW_WRITEV_FROM": "2", "GL_SLOW_WRITEV_COUNT": str(calls),
            "GL_SLOW_WRITEV_MS": str(ms)}


def writers(path) -> int:
    return int(pq.ParquetFile(path).metadata.metadata[b"grainlab.writers"])


def assert_whole(path, tasks):
    trace = gl.load(path)
    assert trace.problems == [] and trace.complete
    ev = trace.events
    assert int((ev["event"] == S.TASK_CREATE).sum()) == tasks
    nblocks = 0
    for thread, rows in ev.groupby("thread", sort=True):
        assert (np.diff(rows["tsc"].to_numpy().astype(np.int64)) >= 0).all(), thread
        # a full block ends with FLUSH_BEGIN, whose count is the block's rows:
        # the thread's blocks are whole and in the order they were filled
        end = (rows["event"].to_numpy() == S.FLUSH_BEGIN) & \
            (rows["kind"].to_numpy() == S.FLUSH_BLOCK)
        at = np.flatnonzero(end)
        assert np.array_equal(np.diff(at, prepend=-1), rows["count"].to_numpy()[at]), thread
        nblocks += len(at)
    assert nblocks >= 10
    return trace


def test_writers_added_when_pools_fill(build, example, tmp_path):
    """GRAINLAB_WRITER=1 and a stalled disk: the first writer sits in a slow
    write, pools fill, threads start more writers; the trace stays whole."""
    env = {"GRAINLAB_WRITER": "1", "GRAINLAB_BUFFER_EVENTS": "4096", **slow_disk(build)}
    out = run_fib(build, example, tmp_path, 20, 2, env)
    assert 2 <= writers(out) <= 4
    assert_whole(out, FIB20_TASKS)


def test_no_writer_added_without_a_free_cpu(build, example, tmp_path):
    """As users run it, on 2 CPUs with 1 traced thread: the first writer has
    the other CPU, a second would have none, so none is added however full
    the pool gets."""
    if not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs taskset and 2 CPUs")
    cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))[:2]))
    env = {"GRAINLAB_BUFFER_EVENTS": "4096", **slow_disk(build)}
    out = run_fib(build, example, tmp_path, 20, 1, env, cpus=cpus)
    assert writers(out) == 1
    trace = assert_whole(out, FIB20_TASKS)
    # the pool did fill: the thread waited for a buffer (or wrote its own)
    ev = trace.events
    fb = ev[ev["event"].isin([S.FLUSH_BEGIN, S.FLUSH_END]) & (ev["kind"] == S.FLUSH_BLOCK)]
    gaps = np.diff(fb["tsc"].to_numpy().astype(np.int64))[
        (fb["event"].to_numpy()[:-1] == S.FLUSH_BEGIN) & (fb["event"].to_numpy()[1:] == S.FLUSH_END)]
    hz = json.loads(pq.ParquetFile(out).metadata.metadata[b"grainlab.clock"])["hz"]
    assert gaps.max() / hz > 0.010  # a stall of at least one slow (20 ms) write


def test_no_writer_in_a_run_that_fills_no_buffer(build, example, tmp_path):
    """The first writer starts at the first hand-over: a short run has none
    (its exit does not wait for a SCHED_IDLE thread to be scheduled)."""
    out = run_fib(build, example, tmp_path, 12, 2, {"GRAINLAB_WRITER": "1"})
    assert writers(out) == 0
    trace = gl.load(out)
    assert trace.problems == [] and trace.complete
    assert int((trace.events["event"] == S.TASK_CREATE).sum()) == 464  # 2 fib(13) - 2


def test_no_writer_when_turned_off(build, example, tmp_path):
    out = run_fib(build, example, tmp_path, 20, 2, {"GRAINLAB_WRITER": "0",
                                                     "GRAINLAB_BUFFER_EVENTS": "4096"})
    assert writers(out) == 0
    assert_whole(out, FIB20_TASKS)


@pytest.mark.parametrize("rseq", ["rseq", "no rseq"])
@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_column_is_the_cpu_the_thread_ran_on(build, example, tmp_path, threads, rseq):
    """The collector reads the CPU from the thread's rseq area, or with
    glibc's rseq turned off from sched_getcpu (the cold call, gl_cpu_slow):
    pinned to one CPU, every row says that CPU."""
    if not shutil.which("taskset"):
        pytest.skip("needs taskset")
    cpu = max(os.sched_getaffinity(0))
    env = {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"} if rseq == "no rseq" else {}
    out = run_fib(build, example, tmp_path, 16, threads, env=env, cpus=str(cpu))
    cpus = pq.read_table(out, columns=["cpu"]).column("cpu").to_numpy()
    assert len(cpus) > 1000 and (cpus == cpu).all()


@pytest.mark.parametrize("tool", ["libgrainempty.so", "libgrainclock.so"])
def test_the_floor_tools_load_and_leave_the_program_alone(build, example, tool):
    """benchmarks/collector_threads.py compares the collector with two floors:
    the empty tool and the clock floor (the empty tool reading the clock in
    each callback). libomp starts each, and the program's result is its own."""
    r = subprocess.run([example("fib"), "16"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OMP_NUM_THREADS": "2", "OMP_TOOL_VERBOSE_INIT": "stdout",
                            "OMP_TOOL_LIBRARIES": str(build / "lib" / tool)})
    assert r.returncode == 0, r.stderr
    assert f"{tool}... Success." in r.stdout and "fib(16) = 987" in r.stdout


def test_only_the_clock_floor_reads_the_clock(build):
    """The two floors differ by the clock read alone: one TSC read per
    callback in libgrainclock.so (12 callbacks), none in libgrainempty.so."""
    objdump = shutil.which("objdump")
    if objdump is None or platform.machine() != "x86_64":
        pytest.skip("needs objdump on x86-64")

    def reads(tool):
        text = subprocess.run([objdump, "-d", str(build / "lib" / tool)], capture_output=True,
                              text=True, check=True).stdout
        return sum(1 for line in text.splitlines() if line.rstrip().endswith("rdtsc"))
    assert reads("libgrainempty.so") == 0
    assert reads("libgrainclock.so") == 12
