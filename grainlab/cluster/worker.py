"""What every task run on a Dask worker does first (`start_task`).

- The command line's memory choices (grainlab.process_memory): a worker is a
  process of our own, like `grainlab analyze`, and without them its analyses
  took 1.6x as long (fresh memory faulted in on every array). Only on a
  worker: in the user's own process the sequential path leaves them alone.
- Fault injection for the tests (tests/test_cluster.py): when
  GRAINLAB_TEST_KILL_WORKER_ONCE names a file, the first task to create that
  file kills its own worker process with SIGKILL, mid-task, as an
  out-of-memory killer would. Dask's scheduler must then run the task again
  on another worker. Unset (always, outside the tests), it does nothing.
"""
from __future__ import annotations

import os
import signal

KILL_ONCE = "GRAINLAB_TEST_KILL_WORKER_ONCE"


def start_task() -> None:
    _maybe_die()
    try:
        from distributed import get_worker
        get_worker()
    except (ImportError, ValueError):
        return                       # not on a Dask worker
    from .. import process_memory
    process_memory.enable()


def _maybe_die() -> None:
    flag = os.environ.get(KILL_ONCE)
    if not flag:
        return
    try:
        os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)
