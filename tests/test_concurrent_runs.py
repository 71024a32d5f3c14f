"""Two runs with one output (issue 11 item 3): the second never waits for the
first's run; it refuses at once with one line (record: before starting the
program; the collector: the program runs untraced); each `record` reports on
the file its own program wrote.

"At once" is checked by the order of events, not by seconds: the first run is
a program that cannot end before the test lets it (it reads a line from its
stdin between two regions), so the second run must finish, refused, while the
first is still running. A second run that waited for the first would wait
forever: its timeout (a hang detector only) fails the test."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, redirect_stderr
from pathlib import Path

import pytest

import grainlab as gl
from grainlab import _paths
from grainlab.commands import record as record_cmd
from grainlab.trace.spool import header_values, spool_of
from conftest import assert_one_line_error, grainlab

# A hang detector, never a measure of speed: generous for a busy machine.
HANG_S = 120

# Two regions of two tasks; between them the program waits for a line on its
# stdin, so it ends only after the test has checked the second run.
GATE_C = r"""
#include <stdio.h>
static void region(int base) {
#pragma omp parallel
#pragma omp single
  for (int i = 0; i < 2; i++) {
#pragma omp task firstprivate(i)
    { volatile int x = base + i; (void)x; }
  }
}
int main(void) {
  char line[16];
  region(0);                                /* the collector is up: spool header */
  if (!fgets(line, sizeof line, stdin)) return 3;   /* the test's go-ahead */
  region(2);
  printf("gate: 4 tasks ran\n");
  return 0;
}
"""


@pytest.fixture(scope="module")
def gate(tmp_path_factory, build):
    d = tmp_path_factory.mktemp("gate")
    (d / "gate.c").write_text(GATE_C)
    subprocess.run(["clang-19", "-fopenmp", "-O1", str(d / "gate.c"), "-o", str(d / "gate")],
                   check=True, timeout=HANG_S)
    return str(d / "gate")


def collector_env(out):
    return {**os.environ, "OMP_NUM_THREADS": "2",
            "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
            "GRAINLAB_OUTPUT": str(out)}


def wait_for_header(out, proc, timeout=HANG_S):
    spool = spool_of(out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if header_values(spool):
            return
        time.sleep(0.01)
    raise AssertionError(f"{spool} has no header (the first run exited {proc.poll()})")


@contextmanager
def held(argv, env):
    """The first run, started with its stdin a pipe: it stays inside its run
    (spool locked, header written) until the block ends, then it is let go
    and awaited. Yields the Popen; `.released` holds (stdout, stderr)."""
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        try:
            proc.released = proc.communicate(input="go\n", timeout=HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise


def test_second_record_refuses_while_the_first_runs_and_first_reports_its_own(gate, example,
                                                                             tmp_path):
    out = tmp_path / "t.parquet"
    argv = [sys.executable, "-m", "grainlab.cli", "record", "-o", str(out), "--", gate]
    with held(argv, {**os.environ, "OMP_NUM_THREADS": "2"}) as first:
        wait_for_header(out, first)
        second = grainlab("record", "-o", out, "--", example("fib"), 12, timeout=HANG_S)
        # the first cannot have ended: it waits for the line sent below
        assert first.poll() is None, "the first run ended before it was let go"
    assert_one_line_error(second, "is being recorded by process", "choose another output")
    assert second.stdout == ""                  # the program was not started
    stdout, stderr = first.released
    assert first.returncode == 0, stderr
    assert stdout == "gate: 4 tasks ran\n"
    assert "wrote" in stderr and "4 tasks" in stderr, stderr
    t = gl.load(out)
    assert t.summary()["tasks"] == 4 and t.meta["command"][0].endswith("gate")


def test_collector_refuses_while_the_first_runs_and_the_program_runs_untraced(gate, example,
                                                                              tmp_path):
    out = tmp_path / "t.parquet"
    with held([gate], collector_env(out)) as first:
        wait_for_header(out, first)
        second = subprocess.run([example("fib"), "12"], env=collector_env(out),
                                capture_output=True, text=True, timeout=HANG_S)
        assert first.poll() is None, "the first run ended before it was let go"
    assert second.returncode == 0 and second.stdout == "fib(12) = 144\n"
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"process {first.pid} is recording to it" in lines[0], second.stderr
    assert first.returncode == 0 and first.released[0] == "gate: 4 tasks ran\n"
    assert gl.load(out).summary()["tasks"] == 4    # the first run's trace, whole


def test_record_never_reports_another_runs_trace(gate, tmp_path):
    """The race the check before the run cannot close: our program started, but
    another run holds the output. record looks at the token in the spool's
    header and says so while the other still runs, instead of waiting for and
    reporting theirs."""
    out = tmp_path / "t.parquet"
    with held([gate], collector_env(out)) as other:
        wait_for_header(out, other)
        assert header_values(spool_of(out))["grainlab.run_id"] is None   # not record's
        err, result = io.StringIO(), {}

        def report():
            with redirect_stderr(err):
                result["code"] = record_cmd.report(out, Path(os.path.realpath(out)), None, "fib", 0,
                                                   False, runtime_started=True, run_id="ab" * 16)
        # in a thread: a report that waited for the other run would never return
        worker = threading.Thread(target=report, daemon=True)
        worker.start()
        worker.join(HANG_S)
        assert not worker.is_alive(), "record waited for another run's trace"
        assert other.poll() is None
    assert result["code"] != 0
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "is recording to it" in lines[0] and "untraced" in lines[0]
    assert other.returncode == 0


def test_record_stores_its_token_and_the_collector_consumes_it(record):
    t = record("fib", 10)
    token = t.meta["run_id"]
    assert isinstance(token, str) and len(token) == 32 and int(token, 16) >= 0


def test_a_malformed_token_is_not_stored(example, tmp_path):
    out = tmp_path / "t.parquet"
    env = {**collector_env(out), "GRAINLAB_RUN_ID": "not-hex!", "GRAINLAB_CONVERT": "wait"}
    r = subprocess.run([example("fib"), "8"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert gl.load(out).meta["run_id"] is None
