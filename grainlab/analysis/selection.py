"""The part of a run an analysis looks at: parallel regions (by number, as
`grainlab info` lists them, or by source location) and a time window
(`gl.analyze(..., region=, window=)`)."""
from __future__ import annotations

from ..errors import GrainlabError
from ..trace.regions import choose_regions, describe_window, region_table, trace_origin


def choose(trace, whole_graph, region, window) -> dict | None:
    """The selection (None: the whole run): description, regions (numbers as
    `grainlab info` lists them), window_ns (from the trace's start), and the
    graph ids it stands for: contexts (the chosen regions' implicit tasks in
    the whole run's graph, `whole_graph()`) and window_trace_ns."""
    if region is None and window is None:
        return None
    origin = trace_origin(trace)
    parts, out = [], {"regions": None, "window_ns": None, "contexts": None,
                      "window_trace_ns": None}
    if region is not None:
        rows = choose_regions(region_table(trace), region)
        out["regions"] = [int(i) for i in rows.index]
        out["contexts"] = _region_contexts(trace, whole_graph(), set(rows["id"].tolist()))
        where = rows["location"].iloc[0]
        parts.append(f"region {out['regions'][0]} ({where})" if len(rows) == 1 else
                     f"{len(rows)} regions at {region}")
    if window is not None:
        duration = int(trace.events["time"].max()) - origin if len(trace.events) else 0
        t0, t1 = window
        t0 = 0 if t0 is None else t0
        t1 = duration if t1 is None else t1
        if t0 >= duration or t1 <= 0:
            raise GrainlabError(f"the window {describe_window(t0, t1)} is outside the run "
                                f"(0 to {duration / 1e6:.3f} ms from its start)")
        out["window_ns"] = [t0, t1]
        out["window_trace_ns"] = (t0 + origin, t1 + origin)
        parts.append("the window " + describe_window(t0, t1))
    out["description"] = " in ".join(parts)
    return out


def _region_contexts(trace, g, ids: set):
    """Context ids of the implicit tasks of the parallel regions `ids`."""
    reg = trace.regions()
    names = set(reg.loc[reg["id"].isin(ids), "identity"].astype(str))
    ctx = g.contexts
    return ctx.index.to_numpy()[ctx["region"].astype(str).isin(names).to_numpy()
                                & (ctx["kind"].astype(str) == "implicit").to_numpy()]
