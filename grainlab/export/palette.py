"""The colours every view draws with, and the severity classes: one place,
so the web app, the SVG/PNG drawing and the notebooks' figures agree.

Structure (thesis Fig. 5.3): green forks and creation edges, orange joins and
synchronization edges, turquoise book-keeping, green chunks, black
continuation edges, red for the critical path; serial and team code
(initial and implicit tasks) grey. Problem grains by severity: how far past
its threshold a grain's value is, in SEVERITY_STEPS classes from light orange
pink to dark magenta; grains without the problem dimmed.
"""
from __future__ import annotations

import numpy as np

CRITICAL = "#e31a1c"
KIND_COLORS = {"fork": "#2ca02c", "join": "#ff7f0e", "bookkeeping": "#17becf",
               "chunk": "#31a354", "fragment": "#9ecae1", "summary": "#cbc9e2"}
CHUNK_FILL = "#c7e9c0"        # a chunk's body (its outline is KIND_COLORS["chunk"])
SUMMARY_BORDER = "#6a51a3"
EDGE_COLORS = {"creation": "#2ca02c", "synchronization": "#ff7f0e",
               "continuation": "#222222", "dependence": "#7f7f7f"}
EDGE = "#b0b0b0"              # edges of the app's wall-clock figures
# ColorBrewer RdPu: one hue, lightness falling with severity (perceptually
# ordered), apart from the structure's green, orange, turquoise and red
SEVERITY_COLORS = ["#fcc5c0", "#fa9fb5", "#f768a1", "#c51b8a", "#7a0177"]
SEVERITY_STEPS = len(SEVERITY_COLORS)
CONTEXT_COLOR = "#9e9e9e"     # serial / team code (initial and implicit tasks)
DIMMED = "#e8e8e8"            # a grain without the problem, in the drawing
NO_PROBLEM = "#dcdcdc"        # the same, in the app's segment figures
IDLE = "#f0f0f0"              # a thread waiting for work (threads view): near-empty
WORK = "#6baed6"              # a grain running without the problem (threads view)
RUNTIME = "#525252"           # a thread in the runtime: creating, scheduling, synchronizing

# Drawing classes of the app's figures: -1 serial / team code (contexts), 0 a
# grain without the problem, 1..SEVERITY_STEPS problem grains by severity;
# drawn in this order, so problems sit on top.
CLASS_COLORS = {-1: CONTEXT_COLOR, 0: NO_PROBLEM,
                **{k + 1: c for k, c in enumerate(SEVERITY_COLORS)}}
CLASS_NAMES = {-1: "serial / team code", 0: "no problem", 1: "problem: < 20% past threshold",
               2: "20-40% past", 3: "40-60% past", 4: "60-80% past", 5: "> 80% past"}


def severity_class(sev) -> np.ndarray:
    """Per value of a severity in [0, 1] (grainlab.problems.severity): 0 for
    no problem, 1..SEVERITY_STEPS by how far past the threshold, -1 where no
    severity applies (NaN)."""
    sev = np.asarray(sev, np.float64)
    cls = np.where(sev > 0, 1 + np.minimum((np.nan_to_num(sev) * SEVERITY_STEPS)
                                           .astype(np.int64), SEVERITY_STEPS - 1), 0)
    return np.where(np.isnan(sev), -1, cls)


# When most grains are flagged (more than BY_VALUE_SHARE of those with a
# value), the five steps are the flagged grains' values in fifths (by rank,
# mildest to worst), so that grains still differ: grainlab.app.data.
BY_VALUE_SHARE = 0.8


def severity_names(by_value=False) -> list:
    """Legend names of the five severity steps. by_value: False, True, or
    the five fifths' value ranges (mildest first, grainlab.app.data's
    value_steps), named in the legend so the steps read as a scale."""
    if by_value:
        names = ["problem: mildest fifth by value", "2nd fifth by value", "3rd fifth by value",
                 "4th fifth by value", "worst fifth by value"]
        if isinstance(by_value, (list, tuple)):   # short: the legend's columns are narrow
            names = [f"{n} fifth ({r})" for n, r in
                     zip(("mildest", "2nd", "3rd", "4th", "worst"), by_value)]
        return names
    return ["problem: < 20% past threshold", "20-40% past", "40-60% past", "60-80% past",
            "> 80% past"]
