"""The parallel regions of a run, and choosing part of a run to analyze.

`region_table(trace)` lists every parallel region from the event columns
alone (no task tables: cheap at any size), numbered 1, 2, ... in the order
they began: what `grainlab info` shows so a user can pick one for
`grainlab analyze --region N|LOCATION`. `parse_window` reads the
`--window T0:T1` text. Times are from the trace's start (its first event),
as `info` prints them.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .. import schema as S
from ..errors import GrainlabError
from ..sorting import argsort

_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def trace_origin(trace) -> int:
    """Trace time (ns) that `info`, `--window` and the region table count from."""
    t = trace.events["time"]
    return int(t.min()) if len(t) else 0


def region_table(trace) -> pd.DataFrame:
    """One row per parallel region, index `region` = 1, 2, ... by begin time:
    id, begin_ns / end_ns (from the trace's start), duration_ns, team (its
    requested team size), nested (its encountering task is not the initial
    task), codeptr, location."""
    ev = trace.events
    code = ev["event"].to_numpy()
    rows = np.flatnonzero((code == S.PARALLEL_BEGIN) | (code == S.PARALLEL_END))
    parallel = {c: ev[c].to_numpy()[rows] for c in PARALLEL_COLUMNS}
    # an initial task's IMPLICIT_BEGIN carries TASK_INITIAL in `kind`
    imp = np.flatnonzero(code == S.IMPLICIT_BEGIN)
    initial = ev["task"].to_numpy()[imp][(ev["kind"].to_numpy()[imp] & S.TASK_INITIAL) != 0]
    return regions_of(parallel, initial, trace_origin(trace), trace.meta)


# What regions_of reads of the PARALLEL_BEGIN and PARALLEL_END rows.
PARALLEL_COLUMNS = ("event", "other", "tsc", "task", "count", "codeptr", "thread")


def regions_of(parallel: dict, initial, origin: int, meta: dict) -> pd.DataFrame:
    """region_table from the PARALLEL_BEGIN and PARALLEL_END rows alone
    (`parallel`: PARALLEL_COLUMNS, in file order), the initial tasks' ids and
    the trace's first time (ns): what `grainlab info` keeps while it streams."""
    code = parallel["event"]
    hz = float(meta["clock"]["hz"])
    time = np.rint(parallel["tsc"].astype(np.float64) * (1e9 / hz)).astype(np.int64)
    b = np.flatnonzero(code == S.PARALLEL_BEGIN)
    rid = parallel["other"][b]
    rid, first = np.unique(rid, return_index=True)
    b = b[first]
    begin = time[b] - origin
    e = np.flatnonzero(code == S.PARALLEL_END)
    end_by_id = pd.Series(time[e] - origin, index=parallel["other"][e])
    end_by_id = end_by_id[~end_by_id.index.duplicated()]
    end = end_by_id.reindex(rid).to_numpy(dtype=np.float64)
    nested = ~np.isin(parallel["task"][b], initial)
    codeptr = parallel["codeptr"][b].astype(np.uint64)
    order = argsort(begin)
    df = pd.DataFrame({
        "id": rid[order], "begin_ns": begin[order], "end_ns": end[order],
        "team": parallel["count"][b][order].astype(np.int64),
        "nested": nested[order], "codeptr": codeptr[order]})
    df["duration_ns"] = df["end_ns"] - df["begin_ns"]
    from ..symbolize import symbolize_on_threads
    thread = parallel["thread"][b][order]
    df["location"] = symbolize_on_threads(df["codeptr"].to_numpy(np.uint64), thread, meta,
                                          np.full(len(df), "parallel", dtype=object)) \
        if len(df) else []
    df.index = pd.RangeIndex(1, len(df) + 1, name="region")
    return df


def choose_regions(table: pd.DataFrame, spec) -> pd.DataFrame:
    """Rows of `table` chosen by `spec`: a region number (int or digits), or a
    source location: a region's full location, or a `file:line`, `file` or
    function it contains (every region there)."""
    if len(table) == 0:
        raise GrainlabError("the trace has no parallel region to choose from")
    text = str(spec).strip()
    if isinstance(spec, (int, np.integer)) or text.isdigit():
        n = int(text)
        if n not in table.index:
            raise GrainlabError(f"no region {n}: the trace has regions 1 to {len(table)} "
                                "(`grainlab info TRACE` lists them)")
        return table.loc[[n]]
    loc = table["location"].astype(str)
    hit = loc == text
    if not hit.any():
        # file:line, file or function (`(main, parallel)`, `(helper, inlined
        # into main, parallel)`): a whole token of the location
        pat = re.compile(r"(^|[\s(/])" + re.escape(text) + r"($|[\s):,])")
        hit = loc.map(lambda s: bool(pat.search(s)))
    if not hit.any():
        known = ", ".join(dict.fromkeys(loc.tolist()))
        if len(known) > 200:
            known = known[:200] + "..."
        raise GrainlabError(f"no parallel region at {text!r}; regions are at: {known} "
                            "(`grainlab info TRACE` lists them)")
    return table[hit.to_numpy()]


def parse_window(text) -> tuple[int | None, int | None]:
    """`T0:T1` with units ns, us, ms (default) or s, either side open:
    '100:250', '0.1s:0.25s', '120ms:' -> (t0_ns or None, t1_ns or None)."""
    if isinstance(text, (tuple, list)) and len(text) == 2:
        return tuple(None if v is None else int(v) for v in text)  # already ns
    s = str(text).strip()
    if s.count(":") != 1:
        raise GrainlabError(f"bad window {text!r}: expected T0:T1, e.g. 120ms:300ms "
                            "(units ns, us, ms, s; default ms; either side may be empty)")
    out = []
    for part in s.split(":"):
        part = part.strip()
        if not part:
            out.append(None)
            continue
        m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|ms|s)?", part)
        if not m:
            raise GrainlabError(f"bad window time {part!r}: expected a number with an "
                                "optional unit ns, us, ms or s (default ms), e.g. 120ms")
        out.append(int(round(float(m.group(1)) * _UNITS[m.group(2) or "ms"])))
    t0, t1 = out
    if t0 is not None and t1 is not None and t1 <= t0:
        raise GrainlabError(f"empty window {text!r}: its end must come after its start")
    return t0, t1


def describe_window(t0: int, t1: int) -> str:
    return f"{t0 / 1e6:.3f} ms to {t1 / 1e6:.3f} ms"
