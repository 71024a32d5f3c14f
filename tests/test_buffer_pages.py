"""A thread's buffer pages are made resident step by step, 2,048 rows ahead
of the rows it writes (collector/src/thread_state.c, gl_touch_ahead), each
step between FLUSH_BEGIN and FLUSH_END rows of kind FLUSH_PAGES, which the
analysis credits to nobody. Touching a thread's whole pool (7 MiB) as it
began delayed every thread's start by 3-6 ms: in a short program the worker
joined when the work was done.

Each step must leave room, before the buffer's reserved last slot, for its
own two rows and the row that set it off: buffer sizes around the step size
check that the rows of every thread stay whole and in order."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import grainlab as gl
from grainlab import _paths
from grainlab import schema as S
from conftest import peak_rss_prefix

STEP = 2048            # GL_TOUCH_ROWS
POOL_BYTES = 8 << 20   # GL_POOL_BYTES
ROW_BYTES = 56


def fib_tasks(n: int) -> int:
    """fib N with a task per call: every call but the root's is a task."""
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1 - 1      # calls = 2 fib(n+1) - 1


def pool_size(buffer: int) -> int:
    return max(2, min(8, POOL_BYTES // ((buffer + 1) * ROW_BYTES)))


@pytest.mark.parametrize("buffer", [64, 2047, 2049, 2050, 2051, 4099, 65536])
def test_page_steps_keep_every_row(record, cli, buffer):
    trace = record("fib", 18, threads=2, extra=("--buffer-events", buffer))
    assert trace.problems == [] and trace.complete
    assert gl.analyze(trace).summary["grains"] == fib_tasks(18) == 8360
    ev = trace.events
    for thread, rows in ev.groupby("thread", sort=True):
        code, kind = rows["event"].to_numpy(), rows["kind"].to_numpy()
        begin = np.flatnonzero((code == S.FLUSH_BEGIN) & (kind == S.FLUSH_PAGES))
        end = np.flatnonzero((code == S.FLUSH_END) & (kind == S.FLUSH_PAGES))
        # each step is one FLUSH_BEGIN .. FLUSH_END pair, nothing between
        assert np.array_equal(end, begin + 1), thread
        # each pool buffer is touched once, a step at a time
        slots = buffer + 1
        steps_per_buffer = 0 if slots < STEP + 3 else -(-slots // STEP) - 1
        assert len(begin) <= pool_size(buffer) * steps_per_buffer, thread
        written = len(rows)
        if steps_per_buffer and written > STEP + 2:
            assert len(begin) >= 1, thread
        # rows stay in time order through the steps
        assert (np.diff(rows["tsc"].to_numpy().astype(np.int64)) >= 0).all(), thread
    # `info` counts the blocks written, not the steps
    blocks = int(((ev["event"] == S.FLUSH_BEGIN) & (ev["kind"] != S.FLUSH_PAGES)).sum())
    info = json.loads(cli("info", "--json", trace.path).stdout)
    assert info["flushes"] == blocks == info["row_groups"] - 2


def test_threads_begin_without_touching_their_pool(example, tmp_path):
    """8 threads of a short program: each touches one step (~110 KiB), not
    its whole pool (2 x 3.7 MiB each: 58 MiB in all, before)."""
    rss = tmp_path / "rss"
    env = dict(os.environ, OMP_NUM_THREADS="8", GRAINLAB_QUIET="1",
               GRAINLAB_OUTPUT=str(tmp_path / "t.parquet"),
               OMP_TOOL_LIBRARIES=str(_paths.build_dir() / "lib" / _paths.COLLECTOR))
    r = subprocess.run([*peak_rss_prefix(rss), example("fib"), "12", "4"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert int(rss.read_text()) < 24 << 20
    t = gl.load(tmp_path / "t.parquet")
    assert t.events["thread"].nunique() == 8


def test_page_steps_with_counters(record):
    """The counters' array is made resident with the rows: every row that
    samples counters has them, cumulative per thread, across the steps."""
    trace = record("fib", 18, threads=2, extra=("--buffer-events", 4099, "--counters",
                                                "task-clock,context-switches"))
    assert trace.problems == [] and trace.complete
    ev = trace.events
    steps = ev[(ev["event"] == S.FLUSH_BEGIN) & (ev["kind"] == S.FLUSH_PAGES)]
    assert len(steps) >= 2
    col = "counter:task-clock"
    assert steps[col].notna().all()
    sampled = []
    for _, rows in ev.groupby("thread"):
        v = rows[col].dropna().to_numpy()
        assert (np.diff(v) >= 0).all()
        sampled.append(len(v))
    # across the steps: a thread's samples span several of them (on a busy
    # machine the second thread may run few tasks, so not every thread does)
    assert max(sampled) > STEP
