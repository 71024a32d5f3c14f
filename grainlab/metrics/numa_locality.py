"""NUMA locality per grain: the byte-weighted fraction of a grain's annotated
data that sat on the NUMA node of the CPU it ran on (docs/locality.md).

Needs accesses whose pages' node is known: grain_data() annotations recorded
with GRAINLAB_PAGES=1 (the collector asks move_pages(2) for each block's
pages). An access belongs to the grain whose fragment (or chunk) runs on its
thread at its time; its run node is the NUMA node of the CPU it was
recorded on (topology `cpu_node`). Columns, not loops: one sort of the
fragments, one search per access.

Adds to g.grains, when the run has accesses:
  data_bytes     bytes the grain's accesses name (its annotated footprint,
                 counting a block once per access)
and when some access has a known node:
  numa_locality  fraction of the grain's known-node bytes on its own node
                 (NaN: no such access)
  remote_bytes   bytes of its accesses on another node
"""
from __future__ import annotations

import numpy as np
import pandas as pd

GRAIN_NODES = ("fragment", "chunk")


def access_grains(g, accesses: pd.DataFrame) -> np.ndarray:
    """Grain id of each access (-1: none runs on its thread at its time)."""
    n = g.nodes
    # grains only (contexts, the implicit and initial tasks, have fragments too)
    keep = n["type"].isin(GRAIN_NODES).to_numpy() & n["grain"].isin(g.grains.index).to_numpy()
    thread = n["thread"].to_numpy()[keep].astype(np.int64)
    start = n["start"].to_numpy()[keep].astype(np.int64)
    end = n["end"].to_numpy()[keep].astype(np.int64)
    grain = n["grain"].to_numpy()[keep].astype(np.int64)
    order = np.lexsort((start, thread))
    thread, start, end, grain = thread[order], start[order], end[order], grain[order]
    key = thread * (1 << 44) + start
    at_thread = accesses["thread"].to_numpy().astype(np.int64)
    at_time = accesses["time"].to_numpy().astype(np.int64)
    i = np.searchsorted(key, at_thread * (1 << 44) + at_time, side="right") - 1
    ok = i >= 0
    ic = np.maximum(i, 0)
    ok &= (thread[ic] == at_thread) & (at_time <= end[ic]) if len(key) else np.zeros(len(i), bool)
    return np.where(ok, grain[ic] if len(key) else -1, -1)


def local_mask(accesses: pd.DataFrame, topology: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """(known, local) per access: its pages' node is known; it is the node of
    the CPU the access was recorded on."""
    node = accesses["node"].to_numpy().astype(np.int64)
    cpu_node = np.asarray((topology or {}).get("cpu_node", []), np.int64)
    cpu = accesses["cpu"].to_numpy().astype(np.int64)
    known = (node >= 0) & (cpu < len(cpu_node))
    run_node = np.where(known, cpu_node[np.minimum(cpu, max(len(cpu_node) - 1, 0))]
                        if len(cpu_node) else -1, -1)
    return known, known & (node == run_node)


def compute(g, accesses: pd.DataFrame) -> dict | str:
    """Add numa_locality and remote_bytes to g.grains; return the run's
    byte-weighted locality, or why it is unavailable."""
    if not len(accesses):
        return "no data accesses (grain_data() annotations: docs/locality.md)"
    grain = access_grains(g, accesses)
    nbytes = accesses["bytes"].to_numpy().astype(np.float64)
    index = g.grains.index.to_numpy()
    inside = grain >= 0
    g.grains["data_bytes"] = np.bincount(np.searchsorted(index, grain[inside]),
                                         weights=nbytes[inside],
                                         minlength=len(index)).astype(np.int64)
    known, local = local_mask(accesses, g.meta.get("topology"))
    if not known.any():
        return "no page placement recorded (record with GRAINLAB_PAGES=1)"
    use = known & inside
    pos = np.searchsorted(index, grain[use])
    total = np.bincount(pos, weights=nbytes[use], minlength=len(index))
    near = np.bincount(pos, weights=np.where(local[use], nbytes[use], 0.0), minlength=len(index))
    with np.errstate(invalid="ignore", divide="ignore"):
        g.grains["numa_locality"] = np.where(total > 0, near / total, np.nan)
    g.grains["remote_bytes"] = (total - near).astype(np.int64)
    all_bytes = nbytes[known].sum()
    return {"overall": float(nbytes[local].sum() / all_bytes) if all_bytes else float("nan"),
            "accesses": int(len(accesses)), "accesses_with_node": int(known.sum()),
            "remote_bytes": int(nbytes[known & ~local].sum())}
