"""What a trace says about the OpenMP runtime it was recorded on
(`grainlab.runtime` metadata: version string, library file, set_callback
results): one phrase for it, and what it did not report. Read from the
callbacks the runtime granted, never from version strings (libomp 14..19 all
call themselves "LLVM OMP version: 5.0.20140926"); docs/compatibility.md."""
from __future__ import annotations

import os
import re

# ompt_set_result_t (OpenMP 5.x, omp-tools.h)
SET_RESULTS = {0: "error", 1: "never", 2: "impossible", 3: "sometimes",
               4: "sometimes paired", 5: "always"}
ALWAYS = 5

# What a callback the runtime does not always deliver costs the trace
# (callbacks the collector registers: collector/src/callbacks.c).
LOST_IF_MISSING = {
    "dispatch": "no loop chunks (dispatch is OpenMP 5.1): loops are recorded whole, "
                "without their chunks or iteration ranges",
    "task_dependence": "no task-dependence edges from the runtime: dependences come "
                       "only from the depend addresses",
    "dependences": "no depend items: tasks with depend clauses are not ordered by them",
    "task_schedule": "no task switches: task execution cannot be recorded",
    "task_create": "no task creation: tasks cannot be recorded",
    "sync_region": "no taskwait, taskgroup or barrier events",
    "work": "no worksharing (loop, single, sections, taskloop) events",
    "control_tool": "no omp_control_tool data annotations (grain_data)",
}


def short_name(real: str) -> str:
    m = re.search(r"/llvm-(\d+)/", real + "/")
    if m and os.path.basename(real).startswith("libomp"):
        return f"llvm-{m.group(1)}"
    if os.path.basename(real).startswith("libiomp5"):
        return "intel"
    return os.path.basename(real)


def describe(meta_runtime: dict | None) -> str:
    """The runtime of a trace as one phrase: its version string, and its file
    where the collector recorded it."""
    if not isinstance(meta_runtime, dict) or not meta_runtime.get("name"):
        return "unknown"
    library = meta_runtime.get("library")
    name = meta_runtime["name"]
    return f"{name} ({short_name(library)}: {library})" if library else name


def limitations(meta_runtime: dict | None) -> list[str]:
    """What this trace's runtime did not report, from the set_callback
    results the collector stored: one phrase each; [] when it reported all."""
    if not isinstance(meta_runtime, dict):
        return []
    callbacks = meta_runtime.get("callbacks")
    if not isinstance(callbacks, dict):
        return []
    out = []
    for name, what in LOST_IF_MISSING.items():
        r = callbacks.get(name)
        if r is None or r == ALWAYS:
            continue
        out.append(f"{name} callback {SET_RESULTS.get(r, r)}: {what}")
    return out


def limitation_line(meta_runtime: dict | None) -> str | None:
    """One line for record and info, or None when nothing is missing."""
    lost = limitations(meta_runtime)
    if not lost:
        return None
    return f"runtime {describe(meta_runtime)} reports less: " + "; ".join(lost)
