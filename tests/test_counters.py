"""Counters (collector/src/counters.c): Linux software events through
perf_event_open, PAPI where the machine can count (these VMs cannot).

Two levels, both real: the collector inside a real OpenMP program through
libomp (GRAINLAB_COUNTERS as a user sets it), and collector/tests/counters_probe,
which drives counters.c on two pthreads around work whose counts are known
(burn >= 20 ms of thread CPU time, touch 256 fresh pages, sleep 3 times).
Nothing is built here; missing build artifacts fail.
"""
from __future__ import annotations

import glob
import json
import os
import resource
import subprocess

import numpy as np
import pyarrow.parquet as pq
import pytest

from grainlab import _paths

pytestmark = pytest.mark.native  # the whole module runs native code

SOFTWARE = ["task-clock", "cpu-clock", "page-faults", "minor-faults", "major-faults",
            "context-switches", "cpu-migrations"]
REQUESTED = "task-clock,page-faults,context-switches,PAPI_TOT_CYC"
# Rows at which the collector reads counters (docs/trace-format.md, "Counters"):
# the fib program's task create, schedule and taskwait rows among them.
FIB_BOUNDARY_EVENTS = [7, 8, 9, 10]


def run_collected(build, program, *args, counters, out, threads=2):
    env = dict(os.environ,
               OMP_TOOL_LIBRARIES=str(build / "lib" / _paths.COLLECTOR),
               OMP_NUM_THREADS=str(threads),
               GRAINLAB_OUTPUT=str(out),
               GRAINLAB_COUNTERS=counters,
               # the trace is read with pyarrow right after: wait for it
               GRAINLAB_CONVERT="wait")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([program, *map(str, args)], env=env, capture_output=True,
                            text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_ns = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e9
    return result, cpu_ns


@pytest.fixture(scope="module")
def fib_with_counters(build, example, tmp_path_factory):
    out = tmp_path_factory.mktemp("counters") / "fib.parquet"
    result, cpu_ns = run_collected(build, example("fib"), 20, counters=REQUESTED, out=out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("fib(20) = 6765"), result.stdout
    return out, result.stderr, cpu_ns


def test_software_counter_columns_exist_and_papi_is_dropped(fib_with_counters):
    out, _, _ = fib_with_counters
    names = pq.ParquetFile(out).schema_arrow.names
    counter_cols = [n for n in names if n.startswith("counter:")]
    assert counter_cols == ["counter:task-clock", "counter:page-faults",
                            "counter:context-switches"]


def test_metadata_reports_every_requested_counter(fib_with_counters):
    out, _, _ = fib_with_counters
    kv = pq.ParquetFile(out).metadata.metadata
    counters = json.loads(kv[b"grainlab.counters"])
    assert [c["name"] for c in counters] == REQUESTED.split(",")
    for c in counters[:3]:
        assert c == {"name": c["name"], "source": "perf", "available": True,
                     "column": "counter:" + c["name"], "reason": None}
    papi = counters[3]
    assert papi["source"] == "papi" and papi["available"] is False
    assert papi["column"] is None
    assert isinstance(papi["reason"], str) and len(papi["reason"]) > 10


def test_unavailable_counter_said_once_on_stderr(fib_with_counters):
    _, stderr, _ = fib_with_counters
    mentions = [line for line in stderr.splitlines() if "PAPI_TOT_CYC" in line]
    assert len(mentions) == 1, stderr
    assert mentions[0].startswith("grainlab: counter PAPI_TOT_CYC unavailable: ")
    assert mentions[0].endswith("; continuing without it")


def test_counters_are_per_thread_cumulative(fib_with_counters):
    out, _, cpu_ns = fib_with_counters
    table = pq.read_table(out)
    thread = table.column("thread").to_numpy()
    event = table.column("event").to_numpy()
    assert len(np.unique(thread)) == 2
    boundary = np.isin(event, FIB_BOUNDARY_EVENTS)
    assert boundary.sum() > 1000
    clock_total = 0.0
    for name in ["task-clock", "page-faults", "context-switches"]:
        col = table.column("counter:" + name)
        values = col.to_numpy(zero_copy_only=False)     # float, NaN = null
        # Every boundary row got a real reading (a failed read is null).
        assert not np.isnan(values[boundary]).any(), name
        for t in np.unique(thread):
            # Rows of one thread are in its time order (row groups in file order).
            mine = values[(thread == t) & ~np.isnan(values)]
            assert np.all(np.diff(mine) >= 0), (name, t)
            assert mine[0] >= 0
            if name == "task-clock":
                assert mine[-1] > mine[0], t            # the thread ran: CPU time grew
                clock_total += mine[-1] - mine[0]
    # Each thread counts only itself: together they cannot exceed the CPU time
    # the whole process used (getrusage of the child), and they cover most of it.
    assert clock_total <= cpu_ns * 1.02 + 2e6
    assert clock_total >= 0.25 * cpu_ns


def test_bogus_counter_is_one_clear_line(build, example, tmp_path):
    result, _ = run_collected(build, example("fib"), 10, counters="task-clock,bogus",
                              out=tmp_path / "t.parquet")
    # The collector disables itself; the application still runs.
    assert result.returncode == 0
    assert result.stdout.startswith("fib(10) = 55")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "'bogus'" in lines[0] and lines[0].startswith("grainlab: ")
    for name in SOFTWARE:
        assert name in lines[0]


# ---------------------------------------------------------------- counters.c alone

def probe(spec: str):
    path = _paths.build_dir() / "tests" / "counters_probe"
    if not path.is_file():
        pytest.fail(f"native test program {path} not built (run `make build`)")
    return subprocess.run([str(path), spec], capture_output=True, text=True, timeout=60)


def probe_ok(spec: str):
    result = probe(spec)
    assert result.returncode == 0, result.stderr
    head, *threads = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(threads) == 2
    return head, threads, result.stderr


def test_every_software_counter_counts_this_thread():
    head, threads, stderr = probe_ok(",".join(SOFTWARE))
    assert stderr == ""
    assert head["init"] == len(SOFTWARE) and head["names"] == SOFTWARE
    for t in threads:
        delta = dict(zip(SOFTWARE, np.subtract(t["after"], t["before"])))
        # The probe burns >= 20 ms of CLOCK_THREAD_CPUTIME_ID on each thread.
        assert delta["task-clock"] >= 19_000_000, t
        assert delta["cpu-clock"] >= 19_000_000, t
        assert delta["page-faults"] >= 256, t         # 256 freshly touched pages
        assert delta["minor-faults"] >= 256, t
        # page faults = minor + major (the kernel counts each fault once, as one of the two)
        assert 0 <= delta["major-faults"] <= delta["page-faults"] - delta["minor-faults"] + 2, t
        assert delta["context-switches"] >= 3, t      # three sleeps
        # a thread moves to another CPU only when it is scheduled again
        assert 0 <= delta["cpu-migrations"] <= delta["context-switches"], t
        # Counting starts at thread start: a few microseconds before the first read.
        assert 0 <= t["before"][0] < 5_000_000


def test_names_are_trimmed_and_deduplicated():
    head, threads, _ = probe_ok(" task-clock ,, page-faults,task-clock,")
    assert head["names"] == ["task-clock", "page-faults"]
    assert [c["name"] for c in head["metadata"]] == ["task-clock", "page-faults"]
    assert all(len(t["after"]) == 2 for t in threads)


def test_off_cpu_is_the_time_the_thread_was_not_running():
    """off-cpu (`grainlab record --cpu-time`): ns the thread was switched out,
    cumulative from its start. Between the two reads the probe sleeps 3 x 1 ms
    (switched out >= 3 ms) and burns >= 20 ms of CLOCK_THREAD_CPUTIME_ID, so
    off-cpu = wall - CPU time over that stretch is at least 3 ms and at most
    the wall time around the reads minus those 20 ms: bounds no machine load
    can move."""
    head, threads, stderr = probe_ok("off-cpu,task-clock,OFF-CPU")
    assert stderr == ""
    assert head["names"] == ["off-cpu", "task-clock"]
    assert head["metadata"][0] == {"name": "off-cpu", "source": "clock", "available": True,
                                   "column": "counter:off-cpu", "reason": None}
    for t in threads:
        off, cpu = np.subtract(t["after"], t["before"])
        assert 0 <= t["before"][0] <= t["after"][0], t
        assert off >= 3_000_000, t
        assert off <= t["wall_ns"] - 20_000_000, t
        assert cpu >= 19_000_000, t


def test_off_cpu_alone_is_one_column():
    head, threads, stderr = probe_ok("off-cpu")
    assert stderr == "" and head["init"] == 1 and head["names"] == ["off-cpu"]
    for t in threads:
        assert 3_000_000 <= t["after"][0] - t["before"][0] <= t["wall_ns"] - 20_000_000, t


def test_unavailable_papi_counter_is_dropped_not_fatal():
    head, threads, stderr = probe_ok("PAPI_TOT_CYC,context-switches")
    assert head["init"] == 1 and head["names"] == ["context-switches"]
    papi = head["metadata"][0]
    assert (papi["name"], papi["source"], papi["available"], papi["column"]) == \
        ("PAPI_TOT_CYC", "papi", False, None)
    assert stderr.count("\n") == 1 and "PAPI_TOT_CYC unavailable" in stderr
    assert all(t["after"][0] >= 3 for t in threads)


def test_only_unavailable_counters_give_no_columns():
    head, threads, _ = probe_ok("PAPI_TOT_CYC,PAPI_RES_STL")
    assert head["init"] == 0 and head["names"] == []
    assert [c["available"] for c in head["metadata"]] == [False, False]
    assert all(t["after"] == [] for t in threads)


@pytest.mark.parametrize("spec, shown, what", [
    ("bogus-counter", "bogus-counter", "unknown"),
    ("task-clock,taskclock", "taskclock", "unknown"),
    ("task clock", "task clock", "malformed"),
    ("page-faults,cycles;rm", "cycles;rm", "malformed"),
])
def test_bad_name_is_one_line_naming_it_and_the_valid_names(spec, shown, what):
    result = probe(spec)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{what} counter '{shown}'" in lines[0]
    assert all(name in lines[0] for name in SOFTWARE)


# ---------------------------------------------------------------- PAPI path
# PAPI finds no hardware counters here, but its perf_event component offers
# the kernel's software events as native events (perf::TASK-CLOCK ...): they
# drive the PAPI code path for real (library/thread init, one event set per
# thread, PAPI_read) and give an independent second reading of our own perf
# group. CI installs libpapi-dev, so the build has PAPI when papi.h exists.
needs_papi = pytest.mark.skipif(not os.path.exists("/usr/include/papi.h"),
                                reason="libpapi-dev not installed: built without PAPI")


def _cpu_pmu() -> bool:
    """Whether the kernel exposes a hardware PMU. PAPI's perf_event component
    (libpfm4) needs one to enable itself, even for the kernel's software
    events; some VMs have none (only `software`, `tracepoint`, ...)."""
    return bool(glob.glob("/sys/bus/event_source/devices/cpu*"))


@needs_papi
def test_papi_native_events_count_on_every_thread_or_are_reported_unavailable():
    spec = "perf::PAGE-FAULTS,perf::TASK-CLOCK,page-faults"
    head, threads, stderr = probe_ok(spec)
    meta = [(c["name"], c["source"]) for c in head["metadata"]]
    assert meta == [("perf::PAGE-FAULTS", "papi"), ("perf::TASK-CLOCK", "papi"), ("page-faults", "perf")]
    # Our own perf group always counts.
    assert head["metadata"][2]["available"] is True
    papi = [c["available"] for c in head["metadata"][:2]]
    # PAPI decides whether its perf_event component is enabled: on some VMs
    # without a CPU PMU it is disabled (libpfm4 wants one), on others it still
    # offers the kernel's software events. Either verdict must be whole and
    # honest: available names count on every thread, unavailable ones carry
    # PAPI's reason, one stderr line each, and get no column.
    assert papi in ([True, True], [False, False]), head["metadata"]
    if papi == [True, True]:
        assert stderr == ""
        assert head["names"] == ["perf::PAGE-FAULTS", "perf::TASK-CLOCK", "page-faults"]
        for t in threads:
            faults, clock, ours = np.subtract(t["after"], t["before"])
            assert faults >= 256 and clock >= 19_000_000 and ours >= 256, t
    else:
        assert not _cpu_pmu()          # with a PMU PAPI has no reason to refuse
        for c in head["metadata"][:2]:
            assert c["column"] is None and "PAPI_" in c["reason"], c
        lines = stderr.strip().splitlines()
        assert len(lines) == 2 and all("unavailable" in line for line in lines), stderr
        assert head["names"] == ["page-faults"]
        for t in threads:
            (ours,) = np.subtract(t["after"], t["before"])
            assert ours >= 256, t


@needs_papi
def test_papi_and_perf_agree_inside_the_collector(build, example, tmp_path):
    out = tmp_path / "both.parquet"
    result, _ = run_collected(build, example("fib"), 20, out=out,
                              counters="perf::TASK-CLOCK,task-clock,perf::PAGE-FAULTS,page-faults")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("fib(20) = 6765"), result.stdout
    df = pq.read_table(out).to_pandas()
    columns = [c for c in df.columns if c.startswith("counter:")]
    if "counter:perf::TASK-CLOCK" not in columns:
        # PAPI's perf_event component is disabled here (see above): the run
        # goes on with the counters that can count.
        assert not _cpu_pmu()
        assert columns == ["counter:task-clock", "counter:page-faults"]
        assert result.stderr.count("unavailable") == 2, result.stderr
        pytest.skip("PAPI's perf_event component cannot count here (no CPU PMU): "
                    "perf::TASK-CLOCK was dropped, so PAPI and perf cannot be compared; "
                    "the run went on with the perf counters, as checked above")
    assert columns == ["counter:perf::TASK-CLOCK", "counter:task-clock",
                       "counter:perf::PAGE-FAULTS", "counter:page-faults"]
    df = df.dropna(subset=columns)
    for t, rows in df.groupby("thread"):
        span = rows.iloc[[0, -1]]
        d = span.diff().iloc[1]
        clock = d["counter:task-clock"]
        assert clock > 0
        # Same thread, same interval, two independent readers of the kernel's counts.
        assert abs(d["counter:perf::TASK-CLOCK"] - clock) <= 0.01 * clock + 1e6, (t, d)
        assert abs(d["counter:perf::PAGE-FAULTS"] - d["counter:page-faults"]) <= 2, (t, d)


def _paranoid() -> int | None:
    try:
        return int(open("/proc/sys/kernel/perf_event_paranoid").read())
    except (OSError, ValueError):
        return None


@pytest.mark.skipif(os.geteuid() != 0 or _paranoid() != 2,
                    reason="needs root (to drop to nobody) and kernel.perf_event_paranoid=2")
def test_unprivileged_user_gets_user_space_counts_and_no_silent_zeros():
    """perf_event_paranoid=2: an ordinary user may count only user-space
    activity. task-clock and page faults still work; context switches and
    migrations (kernel-only events) are reported unavailable, not recorded as 0."""
    path = _paths.build_dir() / "tests" / "counters_probe"
    if not path.is_file():
        pytest.fail(f"native test program {path} not built (run `make build`)")
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             str(path), "task-clock,context-switches,page-faults"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    head, *threads = [json.loads(line) for line in result.stdout.splitlines()]
    assert head["names"] == ["task-clock", "page-faults"]
    cs = head["metadata"][1]
    assert cs["available"] is False and "perf_event_paranoid=2" in cs["reason"]
    assert result.stderr.splitlines() == [
        f"grainlab: counter context-switches unavailable: {cs['reason']}; continuing without it"]
    for t in threads:
        clock, faults = np.subtract(t["after"], t["before"])
        assert clock >= 19_000_000 and faults >= 256, t
