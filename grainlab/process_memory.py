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
  * numpy asks the kernel for huge pages (madvise) for every array of 4 MiB
    or more. glibc takes arrays up to 32 MiB (per-event columns of traces up
    to ~4M events) from its heap and reuses freed ones, so they rarely fault;
    there, huge pages only add the zeroing of whole 2 MiB pages, and
    `analyze` of real fib 28 (4.1M events) took 7.3-7.8 s with the advice
    against 5.9-6.2 s without (deep tree 1M tasks: 5.8-6.7 s against
    5.0-5.2 s). Larger arrays are fresh mmaps every time, where a huge page
    is one fault instead of 512: uts (20M events) took 39.7-41.7 s with the
    advice against 46.5-49.6 s without. fib 30 (10.8M events) was even.
    So the advice is kept only for traces of HUGEPAGE_MIN_ROWS rows or more.
    GRAINLAB_HUGEPAGES=0 / 1 overrides the choice.
"""
from __future__ import annotations

import os

HUGEPAGE_MIN_ROWS = 8_000_000

_enabled = False


def enable() -> None:
    """Make the command line's choices (the module docstring says which)."""
    global _enabled
    import pyarrow as pa
    pa.set_memory_pool(pa.system_memory_pool())
    _enabled = True


def hugepages_for(rows: int, setting: str | None = None) -> bool:
    """Whether numpy should advise huge pages for a trace of `rows` events;
    `setting` is GRAINLAB_HUGEPAGES (0, 1, or unset / auto: by size)."""
    setting = (os.environ.get("GRAINLAB_HUGEPAGES", "") if setting is None else setting)
    setting = setting.strip().lower()
    if setting in ("0", "no", "off"):
        return False
    if setting in ("1", "yes", "on"):
        return True
    return rows >= HUGEPAGE_MIN_ROWS


def fit_to_trace(rows: int) -> None:
    """Before a trace of `rows` events is read: numpy's huge-page advice for
    its size, when the command line enabled these choices."""
    if not _enabled:
        return
    from numpy._core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is not None:      # numpy builds without it have no advice to change
        setter(hugepages_for(rows))
