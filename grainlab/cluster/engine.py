"""Run one function per trace on Dask workers (`dask.distributed`), gather
the results in the order the traces were given, and tell progress.

Only paths travel to the workers and only small results (a row, a dict)
come back: the traces must be on a file system every worker sees (the
same machine for a LocalCluster; a shared file system on a cluster).

A trace whose analysis fails is one line and the others are kept. A worker
that dies (killed, out of memory) has its task retried on another worker by
Dask's scheduler (up to `distributed.scheduler.allowed-failures` times, 3 by
default); only a trace that kills every worker it is given fails.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from ..errors import GrainlabError, UsageError


@contextlib.contextmanager
def client_for(workers: int | None = None, scheduler: str | None = None, progress=None):
    """A dask.distributed Client: on a new LocalCluster of `workers` worker
    processes (one thread each), or connected to `scheduler` ("tcp://host:8786").
    The dashboard's address goes to `progress`."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise GrainlabError("dask.distributed is not installed: pip install 'dask[distributed]' "
                            "(make setup installs it)") from None
    if workers is not None and workers < 1:
        raise UsageError("--workers must be >= 1")
    with contextlib.ExitStack() as stack, _environment_kept():
        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler, timeout="10s"))
            except (OSError, TimeoutError) as e:
                raise GrainlabError(f"cannot reach the Dask scheduler at {scheduler}: "
                                    f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
                                    ) from None
        else:
            try:
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=":0", silence_logs=logging.CRITICAL))
            except (RuntimeError, OSError) as e:
                # e.g. a script read from stdin: worker processes cannot import it
                raise GrainlabError(f"cannot start a local Dask cluster of {workers} worker(s): "
                                    f"{e} (from a script, guard it with "
                                    "`if __name__ == '__main__':`)") from None
            client = stack.enter_context(Client(cluster))
        if progress:
            n = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            where = client.dashboard_link if _has_dashboard(client) else "no dashboard (install bokeh)"
            progress(f"dask: {n} worker(s) at {client.scheduler.address}; dashboard {where}")
        yield client


@contextlib.contextmanager
def _environment_kept():
    """os.environ as it was, afterwards: Dask's nannies set OMP_NUM_THREADS=1
    (and MKL_/OPENBLAS_NUM_THREADS) in this process's environment for the
    workers they spawn, and leave it there; every program this process then
    starts would run on one OpenMP thread."""
    import os
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _has_dashboard(client) -> bool:
    try:
        return "dashboard" in client.scheduler_info().get("services", {})
    except Exception:  # noqa: BLE001 - only decides what progress says
        return False


def map_traces(fn, paths, *, client, progress=None, what="analyzing"):
    """[(path, result, error)] in the order of `paths`: fn(path) on the
    workers; error is a one-line message (result None) when it failed. fn
    returns {"error": message} for a GrainlabError it caught itself."""
    from dask.distributed import as_completed
    paths = [str(p) for p in paths]
    futures = client.map(fn, paths, pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    out: list = [None] * len(paths)
    for done, f in enumerate(as_completed(futures), 1):
        i = index[f.key]
        out[i] = (paths[i], *_outcome(f))
        if progress:
            status = "failed" if out[i][2] else "done"
            progress(f"[{done}/{len(paths)}] {what} {Path(paths[i]).name}: {status}")
    return out


def _outcome(future):
    """(result, None) or (None, one-line error)."""
    if future.status == "error":
        e = future.exception()
        name = type(e).__name__
        if name == "KilledWorker":
            return None, "the workers analyzing it died each time (out of memory?)"
        first = (str(e).strip().splitlines() or [""])[0]
        return None, f"{name}: {first}" if first else name
    value = future.result()
    if isinstance(value, dict) and set(value) == {"error"}:
        return None, value["error"]
    return value, None


def run_all(fn, paths, *, workers: int | None = None, scheduler: str | None = None,
            progress=None, what="analyzing"):
    """map_traces on a Dask cluster when `workers` or `scheduler` is given,
    else the same fn in this process, one trace after another: both paths
    compute each result with the same function."""
    if workers is None and scheduler is None:
        out = []
        for i, p in enumerate(paths, 1):
            if progress:
                progress(f"[{i}/{len(paths)}] {what} {Path(str(p)).name}")
            value = fn(str(p))
            failed = isinstance(value, dict) and set(value) == {"error"}
            out.append((str(p), None if failed else value, value["error"] if failed else None))
        return out
    with client_for(workers, scheduler, progress) as client:
        return map_traces(fn, paths, client=client, progress=progress, what=what)
