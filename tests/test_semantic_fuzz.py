"""Semantic corruption (issue 11 item 5): traces that are valid Parquet with
valid columns but an impossible program behind them — a task that is its own
ancestor, a child created before its parent, ids reused, a task running on two
threads at once, counts that are not counts — and random mixes of such edits.
Through the CLI's own entry point (in this process: grainlab.cli.main), each
test under a timeout: no hang, no exception; a contradiction is one line
naming the row group and field."""
from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grainlab import schema as S
from conftest import assert_one_line_error

# a hang detector (~3 s per test at most here, unloaded): generous for a busy machine
TIMEOUT = 120
pytestmark = pytest.mark.timeout(TIMEOUT)  # a hang fails the test (pytest-timeout)


@pytest.fixture(scope="module")
def base(record):
    """A real fib trace, 2 threads: explicit tasks on both threads."""
    t = record("fib", 12, threads=2)
    f = pq.ParquetFile(t.path)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    table = pq.read_table(t.path)
    return table, sizes


def columns(base):
    table, _ = base
    return {n: table.column(n).to_numpy().copy() for n in table.column_names}


def write(base, cols, path):
    """The edited columns as a trace with the original row groups and metadata."""
    table, sizes = base
    t = pa.table({k: pa.array(v, type=table.schema.field(k).type) for k, v in cols.items()})
    t = t.replace_schema_metadata(table.schema.metadata)
    with pq.ParquetWriter(path, t.schema) as w:
        at = 0
        for n in sizes:
            w.write_table(t.slice(at, n))
            at += n
    return path


def rows(cols, event):
    return np.flatnonzero(cols["event"] == event)


def creates(cols):
    c = rows(cols, S.TASK_CREATE)
    return c, cols["task"][c], cols["other"][c]


# --- each kind of corruption, with the contradiction it must be named by ----

def self_parent(c):
    cr, ids, _ = creates(c)
    c["other"][cr[5]] = ids[5]
    return "cycle"


def parent_cycle(c):
    cr, ids, par = creates(c)
    # two explicit tasks, each the other's parent
    a, b = 10, 11
    c["other"][cr[a]], c["other"][cr[b]] = ids[b], ids[a]
    return "parent"           # a cycle always has a child created before its parent


def child_before_parent(c):
    cr, ids, par = creates(c)
    # the 3rd task's parent becomes a task created after it (times untouched)
    c["other"][cr[3]] = ids[-1]
    return "created before its parent"


def id_reused(c):
    cr, ids, _ = creates(c)
    c["task"][cr[7]] = ids[6]
    return "created twice"


def negative_count(c):
    par = rows(c, S.PARALLEL_BEGIN)
    c["count"][par[0]] = np.uint64(2**64 - 3)          # -3 written as unsigned
    return "not a count"


def huge_count(c):
    chunk_or_sync = np.flatnonzero(c["count"] > 0)
    c["count"][chunk_or_sync[0]] = np.uint64(2**63)
    return "not a count"


CASES = [self_parent, parent_cycle, child_before_parent, id_reused, negative_count, huge_count]
# (a task on two threads at once: test_a_task_on_two_threads_at_once_is_named_as_such forges
# an overlap that always exists, rather than rename runs that may not overlap)


@pytest.mark.parametrize("corrupt", CASES, ids=[c.__name__ for c in CASES])
def test_the_analysis_reports_the_validation_error_while_it_builds(base, tmp_path, corrupt):
    """The analysis builds its graph while the trace is validated on a thread
    (grainlab.trace.trace.load_checking): whatever the build makes of the damaged
    events, the error is the validation's, word for word, from any entry."""
    import grainlab
    from grainlab.errors import TraceError
    cols = columns(base)
    corrupt(cols)
    path = write(base, cols, tmp_path / "bad.parquet")
    with pytest.raises(TraceError) as direct:
        grainlab.load(path)
    for step in ("graph", "trace", "metrics", "report"):
        with pytest.raises(TraceError) as analysed:
            a = grainlab.analyze(path)
            r = getattr(a, step)
            r() if callable(r) else None
        assert str(analysed.value) == str(direct.value), step


@pytest.mark.parametrize("corrupt", CASES, ids=[c.__name__ for c in CASES])
@pytest.mark.parametrize("command", ["info", "analyze"])
def test_each_corruption_is_one_line(base, tmp_path, corrupt, command, cli):
    cols = columns(base)
    expect = corrupt(cols)
    path = write(base, cols, tmp_path / "bad.parquet")
    r = cli(command, path)
    assert_one_line_error(r, str(path), "row group", expect)


def runs(cols, known):
    """(task, thread, switch-in row, switch-out row) of every run of an explicit task."""
    sched = rows(cols, S.TASK_SCHEDULE)
    out = []
    for r in sched:
        x = cols["task"][r]
        if x not in known:
            continue
        end = next((q for q in sched if q > r and cols["other"][q] == x
                    and cols["thread"][q] == cols["thread"][r]), None)
        if end is not None:
            out.append((x, cols["thread"][r], r, end))
    return out


@pytest.fixture(scope="module")
def concurrent(record):
    """Tasks that surely run on both threads at once: 4 tasks of 30 ms each."""
    t = record("regions", 1, 4, 30, "master", threads=2)
    f = pq.ParquetFile(t.path)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    return pq.read_table(t.path), sizes


def test_a_task_on_two_threads_at_once_is_named_as_such(concurrent, tmp_path, cli):
    base = concurrent
    cols = columns(base)
    _, ids, _ = creates(cols)
    all_runs = runs(cols, set(ids.tolist()))
    tsc = cols["tsc"]
    # a run on thread 1 that starts inside a run of another task on thread 0:
    # make it a run of that task (its switch in and out), so it overlaps itself
    pair = next(((a, b) for a in all_runs if a[1] == 0 for b in all_runs
                 if b[1] == 1 and b[0] != a[0] and tsc[a[2]] < tsc[b[2]] < tsc[a[3]]), None)
    assert pair is not None, "4 tasks of 30 ms on 2 threads overlap in time"
    (x, _, _, _), (_, _, b_in, b_out) = pair
    cols["task"][b_in] = x
    cols["other"][b_out] = x
    path = write(base, cols, tmp_path / "twice.parquet")
    r = cli("info", path)
    assert_one_line_error(r, str(path), "two threads at once")


# --- random mixes --------------------------------------------------------------

def random_edit(cols, rng):
    """One semantic edit at a random place: an id, a parent, a time, a count."""
    n = len(cols["event"])
    what = rng.integers(6)
    r = int(rng.integers(n))
    ids = cols["task"][rows(cols, S.TASK_CREATE)]
    if what == 0:                    # a random row names another (existing) task
        cols["task"][r] = ids[rng.integers(len(ids))]
    elif what == 1:                  # a random row's `other` names another task
        cols["other"][r] = ids[rng.integers(len(ids))]
    elif what == 2:                  # a time nudged (within the thread's range)
        cols["tsc"][r] = cols["tsc"][r] + np.uint64(rng.integers(0, 1000))
    elif what == 3:                  # a count made huge or "negative"
        cols["count"][r] = np.uint64(2**64 - 1 - int(rng.integers(100)))
    elif what == 4:                  # an event code swapped for another valid one
        cols["event"][r] = rng.integers(S.THREAD_BEGIN, S.FLUSH_END + 1)
    else:                            # a kind (flags, status, sync kind) changed
        cols["kind"][r] = np.uint32(rng.integers(0, 2**31))


@pytest.mark.parametrize("seed", range(12))
def test_random_semantic_corruption_never_hangs_or_tracebacks(base, tmp_path, seed, cli):
    rng = np.random.default_rng(seed)
    cols = columns(base)
    for _ in range(1 + seed % 4):
        random_edit(cols, rng)
    path = write(base, cols, tmp_path / f"fuzz{seed}.parquet")
    for command in ("info", "analyze"):
        r = cli(command, "--json", path)     # an exception would fail the test
        if r.returncode != 0:
            assert_one_line_error(r)


def test_the_untouched_trace_passes(base, tmp_path, cli):
    path = write(base, columns(base), tmp_path / "same.parquet")
    for command in ("info", "analyze"):
        r = cli(command, path)
        assert r.returncode == 0 and r.stderr == "", (command, r.stderr)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
