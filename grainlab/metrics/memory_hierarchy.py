"""Memory hierarchy utilization (thesis §5.4.2).

  memory_hierarchy_utilization = computing cycles / stalled cycles
                               = (cycles - stalled cycles) / stalled cycles

Needs a stall counter and a cycle counter recorded with the trace
(`grainlab record --counters ...`). When either is missing the column is ABSENT
(not zero, not NaN-filled): a machine without counters (these VMs) says nothing
about memory behaviour. `compute` returns why it was skipped, or None.
"""
from __future__ import annotations

import numpy as np

COLUMN = "memory_hierarchy_utilization"
STALL_COUNTERS = ("PAPI_RES_STL", "PAPI_MEM_SCY", "PAPI_STL_CCY", "PAPI_STL_ICY",
                  "stalled-cycles-backend", "stalled-cycles-frontend")
CYCLE_COUNTERS = ("PAPI_TOT_CYC", "cycles", "cpu-cycles", "PAPI_REF_CYC")


def _first_present(grains, names):
    for name in names:
        col = f"counter:{name}"
        if col in grains.columns and grains[col].notna().any():
            return col
    return None


def compute(g):
    gr = g.grains
    stall = _first_present(gr, STALL_COUNTERS)
    cycles = _first_present(gr, CYCLE_COUNTERS)
    if stall is None:
        return "no stall-cycle counter in the trace (" + ", ".join(STALL_COUNTERS) + ")"
    if cycles is None:
        return f"stall counter {stall} recorded but no cycle counter"
    s = gr[stall].to_numpy(np.float64)
    c = gr[cycles].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        gr[COLUMN] = np.where(s > 0, (c - s) / np.where(s > 0, s, 1.0), np.inf)
    return None
