"""Small things a user sees (issue: fidelity, items 5 and 8): the command line
the user launched, the task depth `info` reports, plural forms, and papers
named by author and title in user-facing text."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

import grainlab as gl
from grainlab import _paths
from conftest import grainlab


def fib_depth(n, cutoff, depth=0):
    """Deepest task depth of examples/fib.c (children of the implicit task: 1)."""
    if n < 2 or depth >= cutoff:
        return depth
    return max(fib_depth(n - 1, cutoff, depth + 1), fib_depth(n - 2, cutoff, depth + 1))


def info(path):
    r = grainlab("info", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("args", [(15, 5), (12, 10), (9,)])
def test_info_task_depth_counts_explicit_levels(record, args, threads):
    t = record("fib", *args, threads=threads)
    cutoff = args[1] if len(args) > 1 else args[0]
    assert info(t.path)["max_task_depth"] == fib_depth(args[0], cutoff)
    # the same as the grain graph's depth column (explicit ancestors + 1)
    assert info(t.path)["max_task_depth"] == gl.analyze(t).grains["depth"].max()


def test_record_stores_the_argv_it_launched(example, tmp_path, build):
    out = tmp_path / "o.parquet"
    cmd = [example("options"), "-n", "10", "-c", "3"]
    r = grainlab("record", "-o", out, "--", *cmd)
    assert r.returncode == 0, r.stderr
    assert gl.load(out).meta["command"] == cmd
    assert info(out)["max_task_depth"] == 3
    # Loaded by hand, the collector can only read what the program left in its argv.
    env = dict(os.environ, OMP_TOOL_LIBRARIES=str(build / "lib" / _paths.COLLECTOR),
               GRAINLAB_OUTPUT=str(tmp_path / "p.parquet"), GRAINLAB_CONVERT="wait")
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert gl.load(tmp_path / "p.parquet").meta["command"] == [cmd[0], "-*", "10", "-*", "3"]


def test_one_thread_is_singular(example, tmp_path):
    r = grainlab("record", "-o", tmp_path / "t.parquet", "--", example("fib"), 8, 3,
                 env={"OMP_NUM_THREADS": "1"})
    assert r.returncode == 0 and "1 thread," in r.stderr and "1 threads" not in r.stderr, r.stderr


def test_user_text_names_papers_not_files(record):
    one, two = record("fib", 12, 4, threads=1), record("fib", 12, 4, threads=2)
    text = grainlab("compare", one.path, two.path).stdout
    help_text = grainlab("compare", "--help").stdout + grainlab("analyze", "--help").stdout
    for t in (text, help_text):
        assert "seed" not in t.lower() and "000_" not in t
    assert "Olivier" in text
