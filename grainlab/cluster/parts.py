"""One large trace in parts (`grainlab regions`; docs/cluster.md): its
top-level parallel regions analyzed separately, on Dask workers or here, and
the whole run's span composed from them.

The regions partition the run's grains, and the initial task runs them one
after another: its fork starts a region and the region's end joins it. So
every path of the grain graph crosses each region from its fork to its join,
and

    span(run) = serial + sum over regions of span(region)

where span(region) is the span `grainlab analyze --region N` reports and
`serial` is the longest path with every region's nodes weighing nothing (the
initial task's code between the regions; tests/test_cluster.py checks the
sum against the single-process span on every example).

A worker builds the run's graph once and keeps it for every region it is
given (`Analysis.part`), so W workers build it W times: what the parts split
is the per-region analysis (critical path, metrics, problems), not the
build.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import GrainlabError
from .worker import start_task

_WHOLE: dict = {}       # per process: (path, mtime) -> the run's Analysis


def _whole(path: str):
    from ..analysis.analysis import Analysis
    key = (path, os.stat(path).st_mtime_ns)
    if key not in _WHOLE:
        _WHOLE.clear()                       # one run at a time per worker
        _WHOLE[key] = Analysis(path)
    return _WHOLE[key]


def top_regions(path) -> list[int]:
    """Numbers of the run's top-level parallel regions (as `info` lists them),
    counted from the event columns alone (grainlab.scan: no graph)."""
    from ..trace.scan import scan
    return [r["region"] for r in scan(path).summary()["region_list"] if not r["nested"]]


def region_part(path: str, region: int) -> dict:
    """One region's facts, or {"error": line}: what a worker runs."""
    start_task()
    try:
        rep = _whole(path).part(region=region).report()
    except GrainlabError as e:
        return {"error": str(e)}
    found = [(v["percent"], k) for k, v in rep["problems"].items()
             if v.get("available") and v.get("grains")]
    return {"region": region, "description": rep["selection"]["description"],
            "grains": int(rep["grains"]), "work_ns": int(rep["work_ns"]),
            "span_ns": int(rep["span_ns"]), "parallelism": float(rep["parallelism"]),
            "top_problem": max(found)[1] if found else None}


def serial_part(path: str) -> dict:
    """The longest path of the run's graph with every top-level region's
    nodes weighing nothing: the serial code between the regions."""
    from ..analysis.selection import choose
    from ..graph.critical_path import longest_path, node_arrays
    from ..graph.select import region_nodes
    start_task()
    try:
        a = _whole(path)
        g = a.whole_graph
        inside = np.zeros(len(g.nodes), dtype=bool)
        for region in top_regions(path):
            sel = choose(a.trace, lambda: g, region, None)
            inside |= region_nodes(g, np.asarray(sel["contexts"], dtype=np.int64))
    except GrainlabError as e:
        return {"error": str(e)}
    arrays = node_arrays(g.nodes)
    arrays["duration"] = np.where(inside, 0, arrays["duration"])
    _, span, _, _ = longest_path(**arrays, src=g.edges["src"].to_numpy(),
                                 dst=g.edges["dst"].to_numpy())
    return {"serial_ns": int(span)}


def compose(path, *, workers: int | None = None, scheduler: str | None = None,
            progress=None) -> dict:
    """{"trace", "regions": [per region], "serial_ns", "span_ns"}: the regions
    and the serial part analyzed on Dask (workers / scheduler) or here."""
    path = str(path)
    if not os.path.isfile(path):
        raise GrainlabError(f"{path}: no such trace")
    regions = top_regions(path)
    if not regions:
        raise GrainlabError(f"{path}: no parallel region in this trace: nothing to split")
    if progress:
        progress(f"{len(regions)} top-level parallel region(s) and the serial part")
    calls = [(serial_part, (path,))] + [(region_part, (path, r)) for r in regions]
    results = _run(calls, workers, scheduler, progress)
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        raise GrainlabError(failed[0])
    serial, parts = results[0]["serial_ns"], results[1:]
    return {"trace": path, "regions": parts, "serial_ns": serial,
            "span_ns": serial + sum(p["span_ns"] for p in parts)}


def _run(calls, workers, scheduler, progress) -> list:
    if workers is None and scheduler is None:
        out = []
        for i, (fn, args) in enumerate(calls, 1):
            if progress:
                progress(f"[{i}/{len(calls)}] {_what(fn, args)}")
            out.append(fn(*args))
        return out
    from dask.distributed import as_completed
    from .engine import client_for
    with client_for(workers, scheduler, progress) as client:
        futures = [client.submit(fn, *args, pure=False) for fn, args in calls]
        index = {f.key: i for i, f in enumerate(futures)}
        for done, f in enumerate(as_completed(futures), 1):
            if progress:
                fn, args = calls[index[f.key]]
                progress(f"[{done}/{len(calls)}] {_what(fn, args)}: done")
        return [f.result() for f in futures]


def _what(fn, args) -> str:
    return "serial part" if fn is serial_part else f"region {args[1]}"
