"""Before a whole trace is analyzed in one process: does it fit in memory?

A trace of 10^8 grains (a 20-second fine-grained run) needs ~130 GiB to
analyze in one process; on a 23 GiB machine it ran until the kernel killed it,
with no word of why. The command line checks first and refuses in one line,
saying what it needs and what to do (`grainlab info` streams any size).

The estimate is the measured peak per event of the whole-run analysis
(benchmarks/analyze_scale.py, stop 38: 287 B/event at fib 33, 45.6M events;
235 at uts, 28M events; 331 at fib 28, where fixed costs weigh more), so
BYTES_PER_EVENT plus BASE_BYTES (SERVE_BYTES_PER_EVENT for `serve`, whose
views hold more), against MemAvailable plus free swap.
GRAINLAB_MEMORY_LIMIT=SIZE (e.g. 8G, 512M) sets what may be used instead (a
budget on a shared machine); GRAINLAB_MEMORY_CHECK=0 skips the check."""
from __future__ import annotations

import os
import re

from .errors import UsageError

BYTES_PER_EVENT = 300
# `serve` keeps the analysis and adds the views' layout, the threads view's
# work/runtime/idle split and the parallelism profiles: stop 38 measured
# 15.7 GiB for fib 33 (45.6M events, 370 B/event) and 4.07 GiB for fib 30
# (10.8M, 406 B/event), kept with a margin (before: 546 B/event at fib 32,
# and fib 33 killed by the kernel at 24 GB on this 23 GiB machine)
SERVE_BYTES_PER_EVENT = 470
BASE_BYTES = 256 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def needed_bytes(events: int, per_event: int = BYTES_PER_EVENT) -> int:
    """Estimated peak memory of analyzing `events` events in one process
    (per_event: SERVE_BYTES_PER_EVENT for `serve`)."""
    return BASE_BYTES + per_event * int(events)


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


def check_fits(name: str, events: int, serve: bool = False) -> None:
    """Refuse (UsageError, one line) a whole-run analysis (serve: and its
    views) of `events` events that cannot fit: before anything is loaded."""
    if os.environ.get("GRAINLAB_MEMORY_CHECK", "").strip() == "0":
        return
    have = available_bytes()
    need = needed_bytes(events, SERVE_BYTES_PER_EVENT if serve else BYTES_PER_EVENT)
    if have is None or need <= have:
        return
    doing = "serving" if serve else "analyzing"
    fits = "`grainlab analyze` fits (its report, no views); " \
        if serve and needed_bytes(events) <= have else ""
    raise UsageError(
        f"{name}: {doing} its {events:,} events in one process needs about "
        f"{_gib(need)} of memory and {_gib(have)} is available: {fits}`grainlab info` reads "
        "it (streaming, any size); to analyze, record a shorter run or coarser tasks (a "
        "cutoff), or run where there is more memory (GRAINLAB_MEMORY_CHECK=0 tries anyway)")


def _gib(n: int) -> str:
    return f"{n / 2**30:,.1f} GiB"
