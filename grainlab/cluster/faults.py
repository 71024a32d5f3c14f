"""Fault injection for the tests of the cluster path (tests/test_cluster.py).

When GRAINLAB_TEST_KILL_WORKER_ONCE names a file, the first worker task to
create that file kills its own worker process with SIGKILL, mid-task, as an
out-of-memory killer would. Dask's scheduler must then run the task again
on another worker. Unset (always, outside the tests), it does nothing.
"""
from __future__ import annotations

import os
import signal

KILL_ONCE = "GRAINLAB_TEST_KILL_WORKER_ONCE"


def maybe_die() -> None:
    flag = os.environ.get(KILL_ONCE)
    if not flag:
        return
    try:
        os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)
