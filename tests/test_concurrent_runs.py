"""Two runs with one output (issue 11 item 3): the second never waits for the
first's run; it refuses at once with one line (record: before starting the
program; the collector: the program runs untraced); each `record` reports on
the file its own program wrote."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from contextlib import redirect_stderr
from pathlib import Path

import grainlab as gl
from grainlab import _paths
from grainlab.commands import record as record_cmd
from grainlab.trace.spool import header_values, spool_of
from conftest import assert_one_line_error, grainlab

# regions 1 4 1500 master: one region, 4 tasks of 1.5 s each -> >= 3 s at 2 threads
LONG = ("regions", "1", "4", "1500", "master")


def collector_env(out):
    return {**os.environ, "OMP_NUM_THREADS": "2",
            "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
            "GRAINLAB_OUTPUT": str(out)}


def wait_for_header(out, proc, timeout=20):
    spool = spool_of(out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if header_values(spool):
            return
        time.sleep(0.01)
    raise AssertionError(f"{spool} has no header")


def test_second_record_refuses_at_once_and_first_reports_its_own(example, tmp_path):
    out = tmp_path / "t.parquet"
    first = subprocess.Popen([sys.executable, "-m", "grainlab.cli", "record", "-o", str(out), "--",
                              example(LONG[0]), *LONG[1:]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "2"})
    wait_for_header(out, first)
    t0 = time.monotonic()
    second = grainlab("record", "-o", out, "--", example("fib"), 12)
    waited = time.monotonic() - t0
    assert_one_line_error(second, "is being recorded by process", "choose another output")
    assert second.stdout == ""                  # the program was not started
    assert first.poll() is None, "the first run ended before the second was refused"
    assert waited < 2.5                          # not held for the first run's 6 s
    stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert "wrote" in stderr and "4 tasks" in stderr, stderr
    t = gl.load(out)
    assert t.summary()["tasks"] == 4 and t.meta["command"][0].endswith("regions")


def test_collector_refuses_at_once_and_the_program_runs_untraced(example, tmp_path):
    out = tmp_path / "t.parquet"
    first = subprocess.Popen([example(LONG[0]), *LONG[1:]], env=collector_env(out),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_header(out, first)
    t0 = time.monotonic()
    second = subprocess.run([example("fib"), "12"], env=collector_env(out),
                            capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t0 < 2.5
    assert first.poll() is None
    assert second.returncode == 0 and second.stdout == "fib(12) = 144\n"
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"process {first.pid} is recording to it" in lines[0], second.stderr
    first.communicate(timeout=120)
    assert first.returncode == 0
    assert gl.load(out).summary()["tasks"] == 4    # the first run's trace, whole


def test_record_never_reports_another_runs_trace(example, tmp_path):
    """The race the check before the run cannot close: our program started, but
    another run holds the output. record looks at the token in the spool's
    header and says so at once, instead of waiting for and reporting theirs."""
    out = tmp_path / "t.parquet"
    other = subprocess.Popen([example(LONG[0]), *LONG[1:]], env=collector_env(out),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_header(out, other)
        assert header_values(spool_of(out))["grainlab.run_id"] is None   # not record's
        err = io.StringIO()
        t0 = time.monotonic()
        with redirect_stderr(err):
            code = record_cmd.report(out, Path(os.path.realpath(out)), None, "fib", 0, False,
                                     runtime_started=True, run_id="ab" * 16)
        assert time.monotonic() - t0 < 2.5 and other.poll() is None
        assert code != 0
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and "is recording to it" in lines[0] and "untraced" in lines[0]
    finally:
        other.wait(timeout=120)


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
