"""Reliability, the small things (issue 11 item 6), each through the real CLI
and collector: one buffer-size rule for both, counter names by case, a program
that never starts the runtime, more threads than CPUs, a file name that is not
UTF-8."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import grainlab as gl
from grainlab import _paths, schema
from conftest import REPO, grainlab


def collector_env(out, **extra):
    return {**os.environ, "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
            "GRAINLAB_OUTPUT": str(out), "OMP_NUM_THREADS": "2", **extra}


# --- one rule for the buffer size -------------------------------------------

def test_cli_and_collector_constants_are_the_same_numbers():
    header = (REPO / "collector" / "include" / "grainlab_spool.h").read_text()

    def c_value(name):
        text = re.search(rf"#define {name} (.+)", header).group(1)
        text = re.sub(r"(\d+)u\b", r"\1", text.split("/*")[0]).strip()
        return eval(text, {})          # "64u", "(1u << 26)": plain integer arithmetic

    assert c_value("GL_BUFFER_EVENTS_MIN") == schema.BUFFER_EVENTS_MIN
    assert c_value("GL_BUFFER_EVENTS_MAX") == schema.BUFFER_EVENTS_MAX
    assert c_value("GL_BUFFER_EVENTS_DEFAULT") == schema.BUFFER_EVENTS_DEFAULT


@pytest.mark.parametrize("value", [schema.BUFFER_EVENTS_MIN - 1, 10, 0, -5,
                                   schema.BUFFER_EVENTS_MAX + 1])
def test_cli_refuses_what_the_collector_would(example, tmp_path, value, cli):
    out = tmp_path / "t.parquet"
    r = cli("record", "-o", out, "--buffer-events", value, "--", example("fib"), 10)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert f"{schema.BUFFER_EVENTS_MIN}..{schema.BUFFER_EVENTS_MAX}" in r.stderr.splitlines()[-1]
    assert "libomp" not in r.stderr        # never the misleading runtime hint
    assert not out.exists()
    # and the collector refuses the same number, in one line, without tracing
    env = collector_env(out, GRAINLAB_BUFFER_EVENTS=str(value))
    c = subprocess.run([example("fib"), "10"], env=env, capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and c.stdout == "fib(10) = 55\n"
    assert c.stderr.count("\n") == 1 and "not tracing" in c.stderr, c.stderr
    assert not out.exists()


def test_the_smallest_allowed_buffer_records(record):
    t = record("fib", 12, extra=("--buffer-events", str(schema.BUFFER_EVENTS_MIN)))
    assert t.summary()["tasks"] == 2 * 233 - 2      # 2 F(13) - 2


@pytest.mark.parametrize("text", [" 128", "128 ", "\t128\n", " 128 "])
def test_collector_trims_blanks_on_both_sides(example, tmp_path, text):
    out = tmp_path / "t.parquet"
    env = collector_env(out, GRAINLAB_BUFFER_EVENTS=text, GRAINLAB_CONVERT="wait")
    c = subprocess.run([example("fib"), "10"], env=env, capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and "trace written" in c.stderr and "BUFFER" not in c.stderr, c.stderr
    assert gl.load(out).summary()["tasks"] == 2 * 89 - 2


@pytest.mark.parametrize("text", ["+128", "-128", "12 8", "128k", "0x80"])
def test_collector_refuses_signs_and_junk(example, tmp_path, text):
    out = tmp_path / "t.parquet"
    c = subprocess.run([example("fib"), "10"], env=collector_env(out, GRAINLAB_BUFFER_EVENTS=text),
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and c.stdout == "fib(10) = 55\n"
    assert c.stderr.count("\n") == 1 and "GRAINLAB_BUFFER_EVENTS" in c.stderr, c.stderr
    assert not out.exists()


# --- counters: one counter whatever the case --------------------------------

def test_counter_named_twice_in_two_cases_is_one_counter(record):
    t = record("fib", 12, extra=("--counters", "task-clock,TASK-CLOCK,Page-Faults"))
    assert t.counters == ["task-clock", "page-faults"]
    names = [c["name"] for c in t.meta["counters"]]
    assert names == ["task-clock", "page-faults"], t.meta["counters"]


# --- a libomp program that runs no OpenMP construct -------------------------

def test_program_without_a_construct_is_told_as_such(example, tmp_path):
    out = tmp_path / "t.parquet"
    r = grainlab("record", "-o", out, "--", example("no_construct"), 1000)
    assert r.stdout.startswith("no_construct(1000): checksum")
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "ran no OpenMP construct" in lines[0] and "exited with 0" in lines[0]
    assert "is it linked" not in lines[0]
    assert r.returncode != 0 and not out.exists()


def test_program_without_libomp_still_gets_the_runtime_hint(example, tmp_path):
    r = grainlab("record", "-o", tmp_path / "t.parquet", "--", example("not_openmp"))
    assert "ran no OpenMP construct" not in r.stderr
    assert r.returncode != 0 and "Traceback" not in r.stderr


# --- more threads than CPUs --------------------------------------------------

def test_cores_used_counts_cpus_not_threads(record):
    cpus = len(os.sched_getaffinity(0))
    threads = cpus * 4
    t = record("fib", 16, 6, threads=threads)
    report = gl.analyze(t).report()
    assert report["threads_used"] <= threads
    assert report["cores_used"] <= cpus
    assert report["cores_used"] <= report["threads_used"]
    # the cores the grains really ran on, counted independently
    ran_on = {int(c) for c in gl.analyze(t).graph.nodes["cpu"] if c >= 0}
    assert report["cores_used"] == min(report["threads_used"], len(ran_on))
    # and the instantaneous-parallelism threshold follows it
    assert report["thresholds"]["instantaneous_parallelism"] == report["cores_used"]


# --- a trace file name that is not UTF-8 -------------------------------------

def test_non_utf8_file_name_round_trips(example, tmp_path):
    name = os.fsencode(tmp_path) + b"/trace-\xff\xfe.parquet"
    r = subprocess.run([os.fsencode(sys.executable), b"-m", b"grainlab.cli", b"record", b"-q",
                        b"-o", name, b"--", os.fsencode(example("fib")), b"12"],
                       capture_output=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    assert os.path.isfile(name)
    for cmd in ([b"info", b"--json", name], [b"analyze", b"--json", name]):
        r = subprocess.run([os.fsencode(sys.executable), b"-m", b"grainlab.cli", *cmd],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["tasks"] == 2 * 233 - 2


def test_users_own_tool_init_log_is_left_alone(example, tmp_path):
    # record watches libomp's tool-search log to tell "no construct ran" from
    # "the collector was not loaded"; a user who asked for the log keeps it.
    log = tmp_path / "mine.log"
    r = grainlab("record", "-q", "-o", tmp_path / "t.parquet", "--", example("fib"), 8,
                 env={"OMP_TOOL_VERBOSE_INIT": str(log)})
    assert r.returncode == 0, r.stderr
    assert "START LOGGING OF TOOL REGISTRATION" in log.read_text()
    assert gl.load(tmp_path / "t.parquet").summary()["tasks"] == 2 * 34 - 2


def test_program_given_as_dot_slash_runs(example, tmp_path):
    # Path("./fib") prints as "fib", which exec would look up in PATH
    folder = os.path.dirname(example("fib"))
    r = grainlab("record", "-q", "-o", tmp_path / "t.parquet", "--", "./fib", 8, cwd=folder)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "fib(8) = 21\n"
