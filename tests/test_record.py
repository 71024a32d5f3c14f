"""`grainlab record`: every mistake costs one line, a stopped run still leaves
a readable trace, and the program's exit code comes through."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grainlab
from grainlab import schema as S
from grainlab.trace.spool import spool_of
from conftest import assert_one_line_error, grainlab as run_cli


def test_records_a_trace_and_passes_output_through(tmp_path, example):
    out = tmp_path / "fib.parquet"
    result = run_cli("record", "-o", out, "--", example("fib"), 12, 3)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fib(12) = 144"
    assert "Traceback" not in result.stderr
    t = grainlab.load(out)
    assert t.complete and t.summary()["tasks"] == 14


@pytest.mark.parametrize("program, args", [("loops", ("all", 500)), ("depend_if0", (12, 3))])
def test_closing_line_counts_what_the_trace_holds(tmp_path, example, program, args):
    """The closing line is counted by streaming the trace (grainlab.trace.scan), the
    same numbers as loading it: events (dependence waits folded away),
    threads, tasks, chunk events."""
    out = tmp_path / "t.parquet"
    result = run_cli("record", "-o", out, "--", example(program), *args)
    assert result.returncode == 0, result.stderr
    t = grainlab.load(out)
    code = t.events["event"].to_numpy()
    want = (f"grainlab: wrote {out} ({len(code)} events, {t.threads} threads, "
            f"{int((code == S.TASK_CREATE).sum())} tasks, "
            f"{int((code == S.CHUNK).sum())} chunk events)")
    assert result.stderr.strip().splitlines()[-1] == want


def test_not_openmp_program(tmp_path, example, cli):
    result = cli("record", "-o", tmp_path / "t.parquet", "--", example("not_openmp"))
    assert_one_line_error(result, "does not use OpenMP", "nothing to record")
    assert not (tmp_path / "t.parquet").exists()


def test_libgomp_program_says_why_and_the_way_out(tmp_path, example, cli):
    result = cli("record", "-o", tmp_path / "t.parquet", "--", example("fib_gomp"), 10)
    assert_one_line_error(result, "libgomp", "no OMPT", "clang -fopenmp", "--gomp-compat")


def test_libgomp_program_runs_on_libomp_gomp_layer(tmp_path, example):
    out = tmp_path / "t.parquet"
    result = run_cli("record", "--gomp-compat", "-o", out, "--", example("fib_gomp"), 10, 3)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fib(10) = 55"
    assert grainlab.load(out).summary()["tasks"] == 14


@pytest.mark.parametrize("output", ["/nonexistent-dir/t.parquet", "/proc/t.parquet", "DIR"])
def test_unwritable_output_path(tmp_path, example, output, cli):
    if output == "DIR":
        output = tmp_path
    result = cli("record", "-o", output, "--", example("fib"), 5)
    assert_one_line_error(result, "cannot write trace to")
    assert result.stdout == ""  # the program never ran


@pytest.mark.parametrize("spec", ["no-such-counter", "task-clock,bogus", "task-clock,,"])
def test_bad_counter_name(tmp_path, example, spec, cli):
    result = cli("record", "--counters", spec, "-o", tmp_path / "t.parquet",
                     "--", example("fib"), 5)
    assert_one_line_error(result, "counter")
    assert result.stdout == ""


def test_software_counters_become_columns(tmp_path, example):
    out = tmp_path / "t.parquet"
    result = run_cli("record", "--counters", "task-clock,context-switches", "-o", out,
                     "--", example("fib"), 10, 3)
    assert result.returncode == 0, result.stderr
    t = grainlab.load(out)
    assert t.counters == ["task-clock", "context-switches"]
    clock = t.events["counter:task-clock"]
    # Counters are read at fragment boundaries: task create rows carry a value.
    assert clock[t.events["event"] == 7].notna().all()


def test_missing_and_non_executable_program(tmp_path, build, cli):
    result = cli("record", "-o", tmp_path / "t.parquet", "--", tmp_path / "nope")
    assert_one_line_error(result, "no such file")
    script = tmp_path / "plain.txt"
    script.write_text("hello")
    result = cli("record", "-o", tmp_path / "t.parquet", "--", script)
    assert_one_line_error(result, "not executable")
    result = cli("record", "-o", tmp_path / "t.parquet")
    assert_one_line_error(result, "no program given")


def test_program_exit_code_is_returned(tmp_path, example):
    # fib rejects a malformed argument with exit code 2 before any OpenMP runs,
    # so no trace is written: both facts must come through.
    result = run_cli("record", "-o", tmp_path / "t.parquet", "--", example("fib"), "x")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr


def test_missing_collector_is_one_line(tmp_path, example, cli):
    result = cli("record", "-o", tmp_path / "t.parquet", "--", example("fib"), 5,
                     env={"GRAINLAB_COLLECTOR": str(tmp_path / "libnothing.so")})
    assert_one_line_error(result, "GRAINLAB_COLLECTOR")


# Bytes of spool that mean the run is well under way: a raw 4096-event block
# (56 bytes per event), about a dozen compact blocks (~5 bytes per event).
FIRST_BLOCK = 4096 * 56


def _wait_for_spool(out, proc, timeout=120):   # a hang detector, generous for a busy machine
    """Wait until the run has spooled a first block (the trace itself appears
    only after the run: the collector spools to TRACE.spool)."""
    spool = spool_of(out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if spool.exists() and spool.stat().st_size > FIRST_BLOCK:
            return
        time.sleep(0.01)
    raise AssertionError(f"{spool} never grew past one block")


def _record_then_signal(tmp_path, example, signum, name="t.parquet"):
    out = tmp_path / name
    # fib 40 without cutoff runs for minutes: it is still running when signalled.
    proc = subprocess.Popen(
        [sys.executable, "-m", "grainlab.cli", "record", "-o", str(out),
         "--buffer-events", "4096", "--", example("fib"), "40"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
    _wait_for_spool(out, proc)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        # Never leave fib 40 spooling (~0.5 GB/s) after a failed test.
        subprocess.run(["pkill", "-KILL", "-f", f"{example('fib')} 40"])
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, err, out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopped_run_leaves_readable_incomplete_trace(tmp_path, example, signum):
    # Five times each: a signal can land anywhere (mid-flush included), and
    # every run must leave a readable incomplete trace.
    for attempt in range(5):
        code, err, out = _record_then_signal(tmp_path, example, signum, f"t{attempt}.parquet")
        assert code == 128 + signum, err
        assert "Traceback" not in err
        assert not spool_of(out).exists(), "the converter removes the spool"
        t = grainlab.load(out)
        assert t.complete is False
        assert t.meta["end_reason"] == f"signal:{signal.Signals(signum).name}"
        assert t.summary()["tasks"] > 0
        assert int(t.meta["dropped_events"]) == 0, attempt
        warning = [line for line in err.splitlines() if line.startswith("grainlab: warning")]
        assert len(warning) == 1 and "incomplete" in warning[0]
    # What `info` says about it: one warning line, exit 0.
    info = run_cli("info", out)
    assert info.returncode == 0 and "INCOMPLETE" in info.stdout


def test_runtime_that_loads_no_tool_is_reported(tmp_path, build, example):
    # A library without ompt_start_tool: libomp loads it and finds no tool.
    not_a_tool = build / "lib" / "libgrainwriter.so"
    result = run_cli("record", "-o", tmp_path / "t.parquet", "--", example("fib"), 5,
                     env={"GRAINLAB_COLLECTOR": str(not_a_tool)})
    assert_one_line_error(result, "no trace written", "did not load the collector")
    assert result.stdout.strip() == "fib(5) = 5"  # the program itself ran


def test_sigkilled_run_is_recovered_from_its_spool(tmp_path, build, example):
    """SIGKILL leaves a spool without its end record; loading the trace
    converts it: readable, marked incomplete, nothing but the unflushed
    buffers lost."""
    out = tmp_path / "t.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(build / "lib" / "libgraincollect.so"),
           "GRAINLAB_OUTPUT": str(out), "GRAINLAB_BUFFER_EVENTS": "4096"}
    proc = subprocess.Popen([example("fib"), "40"], env=env, stdout=subprocess.DEVNULL)
    _wait_for_spool(out, proc)
    proc.kill()
    proc.wait(timeout=30)
    assert not out.exists() and spool_of(out).exists()
    result = run_cli("info", "--json", out)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["complete"] is False and info["tasks"] > 0
    assert not spool_of(out).exists()
    t = grainlab.load(out)
    assert t.meta["end_reason"] == "killed: no shutdown record"
    # Every row group is a whole 4096-event buffer: the spool's blocks.
    assert (t.row_group_sizes == 4097).all()


def test_record_recovers_a_sigkilled_program(tmp_path, example):
    out = tmp_path / "t.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "grainlab.cli", "record", "-o", str(out),
         "--buffer-events", "4096", "--", example("fib"), "40"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
    _wait_for_spool(out, proc)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 1
    os.kill(int(children[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert "Traceback" not in err
    warning = [line for line in err.splitlines() if line.startswith("grainlab: warning")]
    assert len(warning) == 1 and "killed: no shutdown record" in warning[0], err
    assert not grainlab.load(out).complete


def test_ctrl_c_at_a_terminal(tmp_path, example):
    """Ctrl-C in a terminal signals grainlab and the program together: the
    program writes its incomplete trace once, grainlab reports it."""
    import pty
    import select
    out = tmp_path / "t.parquet"
    pid, fd = pty.fork()
    if pid == 0:  # child: grainlab on the pty's terminal
        os.environ["OMP_NUM_THREADS"] = "2"
        os.execv(sys.executable, [sys.executable, "-m", "grainlab.cli", "record",
                                  "-o", str(out), "--", example("fib"), "40"])
    spool = spool_of(out)
    deadline = time.monotonic() + 120      # a hang detector, generous for a busy machine
    while time.monotonic() < deadline and (not spool.exists()
                                           or spool.stat().st_size < FIRST_BLOCK):
        time.sleep(0.01)
    os.write(fd, b"\x03")  # the terminal's interrupt character
    text = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            text += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = text.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 130, text
    assert "Traceback" not in text
    assert "warning: incomplete trace" in text
    t = grainlab.load(out)
    assert not t.complete and t.meta["end_reason"] == "signal:SIGINT"


def test_force_records_a_program_that_loads_no_runtime_visibly(tmp_path, example):
    # --force skips the linked-runtime check; with no OpenMP at all, the run
    # still produces no trace, and says so in one line.
    result = run_cli("record", "--force", "-o", tmp_path / "t.parquet", "--",
                     example("not_openmp"), 10)
    assert_one_line_error(result, "no trace written")
    assert "not_openmp(10)" in result.stdout


@pytest.mark.parametrize("program, args, threads", [
    ("loops", ("all", 500), 2), ("fib", (14, 4), 2), ("depend_if0", (12, 3), 2),
    ("taskloop", (100, 9), 1), ("regions", (3, 4, 2, "single"), 2)])
def test_the_converter_counts_the_rows_it_writes(tmp_path, example, program, args, threads):
    """grainlab.counts (what the closing line prints for a complete trace)
    against the Parquet rows themselves, read with pyarrow alone."""
    import pyarrow.parquet as pq
    import numpy as np
    out = tmp_path / "t.parquet"
    result = run_cli("record", "-q", "-o", out, "--", example(program), *args,
                     env={"OMP_NUM_THREADS": str(threads)})
    assert result.returncode == 0, result.stderr
    f = pq.ParquetFile(out)
    counts = json.loads(f.metadata.metadata[b"grainlab.counts"])
    cols = f.read(columns=["event", "kind", "thread"])
    code = cols["event"].to_numpy()
    kind = cols["kind"].to_numpy().astype(np.uint64)
    creates = code == S.TASK_CREATE
    assert counts == {
        "events": f.metadata.num_rows,
        "threads": len(np.unique(cols["thread"].to_numpy())),
        "task_creates": int(creates.sum()),
        "chunk_events": int((code == S.CHUNK).sum()),
        "dependence_wait_creates": int((creates & ((kind & S.TASK_TASKWAIT) != 0)).sum())}
    if program == "depend_if0":
        assert counts["dependence_wait_creates"] > 0


def test_the_closing_line_reads_the_converters_counts_only_when_it_may(tmp_path, example):
    """A complete trace: the footer's counts, not a scan (a forged count shows
    through); counts missing, an incomplete run or pseudo-tasks: the scan."""
    import pyarrow.parquet as pq
    from grainlab.trace.scan import closing_counts, scan
    out = tmp_path / "t.parquet"
    assert run_cli("record", "-q", "-o", out, "--", example("fib"), 12, 4).returncode == 0
    truth = scan(out)
    f = pq.ParquetFile(out)
    groups = [f.read_row_group(i) for i in range(f.num_row_groups)]   # one thread each
    meta = dict(f.schema_arrow.metadata)
    counts = json.loads(meta[b"grainlab.counts"])
    assert closing_counts(out).tasks == truth.tasks == counts["task_creates"]

    def rewrite(path, **changes):
        m = dict(meta)
        for k, v in changes.items():
            key = f"grainlab.{k}".encode()
            if v is None:
                m.pop(key)
            else:
                m[key] = v.encode()
        with pq.ParquetWriter(path, f.schema_arrow.with_metadata(m)) as w:
            for g in groups:
                w.write_table(g.replace_schema_metadata(m))
        return path
    forged = rewrite(tmp_path / "forged.parquet", counts=json.dumps({**counts, "task_creates": 7}))
    assert closing_counts(forged).tasks == 7
    for name, change in [("none", {"counts": None}),
                         ("incomplete", {"complete": "false", "end_reason": "signal:SIGINT"}),
                         ("pseudo", {"counts": json.dumps({**counts, "task_creates": 7,
                                                           "dependence_wait_creates": 1})}),
                         ("rows", {"counts": json.dumps({**counts, "events": 3})})]:
        got = closing_counts(rewrite(tmp_path / f"{name}.parquet", **change))
        assert (got.events, got.tasks, got.threads) == (truth.events, truth.tasks, truth.threads)
        assert type(got).__name__ == "Scan"
