"""Process-wide memory choices the command line makes for the analysis.

`import grainlab` changes none of them (a notebook's numpy and Arrow stay as
the user set them): `grainlab.cli` calls `enable()`, and from then on each
trace read calls `fit_to_trace(rows)` before its arrays are made.

Why, measured on the 2-core Debian VMs this is built on (fresh memory costs
a page fault of ~2 us per 4 KiB page there, and transparent huge pages are
`madvise`):

  * Arrow's buffers come from malloc, not from its mimalloc pool, which keeps
    freed memory cached: loading a 20M-event trace peaked at 1.99 GB against
    1.66 GB, and took 2-4.5 s against 1.0 s.
  * Traces under LARGE_TRACE_ROWS events (8M) get the "small" profile,
    larger ones the "large" one; GRAINLAB_MEMORY_PROFILE=small / large
    overrides the choice by size.
    small: numpy gives no huge-page advice and glibc takes every array from
    its heap (M_MMAP_MAX 0), keeping up to 1 GiB of freed memory there
    (M_TRIM_THRESHOLD), so freed arrays are reused instead of faulted in
    afresh. large: numpy's huge-page advice and glibc's default (arrays
    over 32 MiB are fresh mmaps, unmapped when freed).
    Why: numpy advises transparent huge pages for every array of 4 MiB or
    more, and these VMs follow it (THP `madvise`). Reused heap memory does
    not fault, and there huge pages only add the zeroing of whole 2 MiB
    pages; fresh mmaps fault on every page, and there a huge page is one
    fault instead of 512. Measured `analyze --json` (small profile; the
    huge-page advice off alone; large profile):
      fib 28, 4.1M events:  small 5.38-5.45 s (1.9-2.1 GB) against 5.55-5.63
                            s with the advice off alone, 7.3-7.8 s large;
      fib 29, 6.7M events:  small 8.25-8.32 s (2.9 GB), advice off alone
                            10.75 s (2.9 GB), large 12.1-12.9 s;
      deep tree 1M tasks:   small 4.9 s, advice off alone 5.0-5.2 s, large
                            5.8-6.7 s;
      fib 30, 10.8M events: large 21.7-22.8 s (4.4 GB); small 19.1 s but
                            5.2 GB;
      uts, 20M events:      large 39.7-41.7 s (7.6 GB), advice off alone
                            46.5-49.6 s; small 37.8 s but 9.2 GB, over the
                            8 GiB budget: the heap's fragmentation grows
                            with the arrays.
"""
from __future__ import annotations

import functools
import os

LARGE_TRACE_ROWS = 8_000_000
SMALL_TRIM_BYTES = 1 << 30

# glibc mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
GLIBC_MMAP_MAX, GLIBC_TRIM_THRESHOLD = 65536, 128 * 1024     # glibc's defaults

_enabled = False
_heap_only = False      # mallopt made the small profile's heap choices


def enable() -> None:
    """Make the command line's choices (the module docstring says which)."""
    global _enabled
    import pyarrow as pa
    pa.set_memory_pool(pa.system_memory_pool())
    _enabled = True


def profile_for(rows: int, setting: str | None = None) -> str:
    """"small" or "large": the memory profile for a trace of `rows` events;
    `setting` is GRAINLAB_MEMORY_PROFILE (small, large, or unset / auto: by size)."""
    setting = (os.environ.get("GRAINLAB_MEMORY_PROFILE", "") if setting is None else setting)
    setting = setting.strip().lower()
    if setting in ("small", "large"):
        return setting
    return "large" if rows >= LARGE_TRACE_ROWS else "small"


def fit_to_trace(rows: int) -> None:
    """Before a trace of `rows` events is read: the memory profile for its
    size, when the command line enabled these choices."""
    if not _enabled:
        return
    large = profile_for(rows) == "large"
    from numpy._core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is not None:      # numpy builds without it have no advice to change
        setter(large)
    global _heap_only
    from . import array_cache
    if large:
        # numpy's large arrays from already-faulted memory (array_cache.py)
        array_cache.install(hugepage=True)
    else:
        array_cache.uninstall()
    if not large:
        _mallopt(M_MMAP_MAX, 0)
        _mallopt(M_TRIM_THRESHOLD, SMALL_TRIM_BYTES)
        _heap_only = True
    elif _heap_only:
        # back to glibc's values (its dynamic mmap threshold stays off once
        # set: one process reading a small then a large trace, e.g. serve --compare)
        _mallopt(M_MMAP_MAX, GLIBC_MMAP_MAX)
        _mallopt(M_TRIM_THRESHOLD, GLIBC_TRIM_THRESHOLD)
        _heap_only = False


def _mallopt(param: int, value: int) -> bool:
    """glibc's mallopt; False where there is none (another C library)."""
    fn = _mallopt_function()
    return fn is not None and fn(param, value) == 1


@functools.cache
def _mallopt_function():
    import ctypes
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn
