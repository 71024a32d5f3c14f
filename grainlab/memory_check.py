"""Before a whole trace is analyzed in one process: does it fit in memory?

A trace of 10^8 grains (a 20-second fine-grained run) needs ~130 GiB to
analyze in one process; on a 23 GiB machine it ran until the kernel killed it,
with no word of why. The command line checks first and refuses in one line,
saying what it needs and what to do (`grainlab info` streams any size).

The estimate is the measured peak per event of the whole-run analysis
(benchmarks/analyze_scale.py, stop 38: 287 B/event at fib 33, 45.6M events;
235 at uts, 28M events; 331 at fib 28, where fixed costs weigh more), so
BYTES_PER_EVENT plus BASE_BYTES, against MemAvailable plus free swap.
GRAINLAB_MEMORY_LIMIT=SIZE (e.g. 8G, 512M) sets what may be used instead (a
budget on a shared machine); GRAINLAB_MEMORY_CHECK=0 skips the check."""
from __future__ import annotations

import os
import re

from .errors import UsageError

BYTES_PER_EVENT = 300
BASE_BYTES = 256 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def needed_bytes(events: int) -> int:
    """Estimated peak memory of analyzing `events` events in one process."""
    return BASE_BYTES + BYTES_PER_EVENT * int(events)


def available_bytes() -> int | None:
    """What the analysis may use: GRAINLAB_MEMORY_LIMIT if set, else the
    kernel's MemAvailable plus free swap (None when unknown)."""
    limit = os.environ.get("GRAINLAB_MEMORY_LIMIT", "").strip()
    if limit:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?", limit)
        if not m:
            raise UsageError(f"GRAINLAB_MEMORY_LIMIT={limit}: expected a size such as "
                             "8G or 512M")
        return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    try:
        info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
        kib = lambda k: int(info[k].split()[0]) * 1024  # noqa: E731
        return kib("MemAvailable") + kib("SwapFree")
    except (OSError, KeyError, ValueError):
        return None


def check_fits(name: str, events: int) -> None:
    """Refuse (UsageError, one line) a whole-run analysis of `events` events
    that cannot fit: before anything is loaded."""
    if os.environ.get("GRAINLAB_MEMORY_CHECK", "").strip() == "0":
        return
    have = available_bytes()
    need = needed_bytes(events)
    if have is None or need <= have:
        return
    raise UsageError(
        f"{name}: analyzing its {events:,} events in one process needs about "
        f"{_gib(need)} of memory and {_gib(have)} is available: `grainlab info` reads it "
        "(streaming, any size); to analyze, record a shorter run or coarser tasks (a "
        "cutoff), or run where there is more memory (GRAINLAB_MEMORY_CHECK=0 tries anyway)")


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"
