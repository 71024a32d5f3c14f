"""A whole run too big for this machine's memory is refused before it is
loaded, in one line that says what it needs and what to do
(grainlab/memory_check.py): `grainlab analyze` and `grainlab serve` of a real
trace under a memory limit below its estimate; the limit's own errors; the
check's off switch; and parts (--region) are not judged."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from conftest import REPO, assert_one_line_error
from grainlab import memory_check as M
from grainlab.errors import UsageError

TRACE = REPO / "tests" / "data" / "fib14_t2_single_on_thread1.parquet"


def test_estimate_grows_with_events():
    assert M.needed_bytes(0) == M.BASE_BYTES
    assert M.needed_bytes(10**8) > 10**10 > M.needed_bytes(10**6)
    assert M.needed_bytes(10**7, M.SERVE_BYTES_PER_EVENT) > M.needed_bytes(10**7)


def test_serve_is_judged_by_its_own_estimate(monkeypatch):
    """A run the analysis fits but the views do not (fib 33's serve was
    killed at 24 GB): refused for serve only."""
    events = 40_000_000
    limit = (M.needed_bytes(events) + M.needed_bytes(events, M.SERVE_BYTES_PER_EVENT)) // 2
    monkeypatch.setenv("GRAINLAB_MEMORY_LIMIT", str(limit))
    M.check_fits("t.parquet", events)
    with pytest.raises(UsageError, match="serving its 40,000,000 events") as e:
        M.check_fits("t.parquet", events, serve=True)
    assert "`grainlab analyze` fits" in str(e.value)


def test_check_refuses_with_the_numbers(monkeypatch):
    monkeypatch.setenv("GRAINLAB_MEMORY_LIMIT", "2G")
    with pytest.raises(UsageError) as e:
        M.check_fits("big.parquet", 10**8)
    msg = str(e.value)
    assert "big.parquet" in msg and "100,000,000 events" in msg
    assert f"{M.needed_bytes(10**8) / 2**30:,.1f} GiB" in msg and "2.0 GiB" in msg
    assert "grainlab info" in msg and "\n" not in msg
    M.check_fits("small.parquet", 1000)                  # fits: nothing said
    monkeypatch.setenv("GRAINLAB_MEMORY_CHECK", "0")
    M.check_fits("big.parquet", 10**8)                   # switched off


@pytest.mark.parametrize("limit,bytes_", [("8G", 8 << 30), ("512M", 512 << 20),
                                          ("1.5g", int(1.5 * (1 << 30))), ("100000", 100000),
                                          ("4GiB", 4 << 30)])
def test_limit_sizes(monkeypatch, limit, bytes_):
    monkeypatch.setenv("GRAINLAB_MEMORY_LIMIT", limit)
    assert M.available_bytes() == bytes_


def test_available_memory_is_read_from_the_kernel(monkeypatch):
    monkeypatch.delenv("GRAINLAB_MEMORY_LIMIT", raising=False)
    have = M.available_bytes()
    assert have is not None and have > 0


def test_analyze_refuses_in_one_line_and_loses_nothing(cli, tmp_path):
    events = pq.ParquetFile(TRACE).metadata.num_rows
    r = cli("analyze", TRACE, env={"GRAINLAB_MEMORY_LIMIT": "1k"})
    assert_one_line_error(r, TRACE.name, f"{events:,} events", "needs about")
    assert TRACE.exists()
    ok = cli("analyze", "--json", TRACE, env={"GRAINLAB_MEMORY_LIMIT": "1k",
                                              "GRAINLAB_MEMORY_CHECK": "0"})
    assert ok.returncode == 0, ok.stderr
    # one region is a part: not judged by the whole run's estimate
    part = cli("analyze", "--json", "--region", "1", TRACE,
               env={"GRAINLAB_MEMORY_LIMIT": "1k"})
    assert part.returncode == 0, part.stderr


def test_serve_refuses_before_it_serves(cli):
    r = cli("serve", "--port", "0", TRACE, env={"GRAINLAB_MEMORY_LIMIT": "1k"})
    assert_one_line_error(r, "needs about")
    assert "serving" not in r.stdout and "progress at" not in r.stdout


def test_a_bad_limit_is_one_line(cli):
    r = cli("analyze", TRACE, env={"GRAINLAB_MEMORY_LIMIT": "lots"})
    assert_one_line_error(r, "GRAINLAB_MEMORY_LIMIT", "8G")
