"""Highlight likely problems: metric values past a threshold (thesis §5.4.3).

Defaults are the thesis's, except load balance (see below); every threshold is
overridable with `--threshold name=value` (repeatable) or a TOML config file:

    # grainlab.toml
    [thresholds]
    parallel_benefit = 1.5
    work_deviation = 1.2

| metric                        | problem when | default                                 |
|-------------------------------|--------------|-----------------------------------------|
| parallel_benefit              | <            | 1                                       |
| load_balance                  | >            | 1.5 (thesis: 1; but two siblings of     |
|                               |              | 10 and 11 ns would already be "unbalanced") |
| work_deviation                | >            | 2                                       |
| instantaneous_parallelism     | <            | cores used ("auto")                     |
| scatter                       | >            | cores per socket ("auto")               |
| memory_hierarchy_utilization  | <            | 2                                       |
| numa_locality                 | <            | 0.5: byte-weighted share of the grain's |
|                               |              | annotated data on its CPU's NUMA node   |
|                               |              | (needs GRAINLAB_PAGES=1; docs/locality.md) |
| preempted                     | >            | 1.5, and off the CPU >= preempted_min_us |
|                               |              | (100 µs): wall time / CPU time          |

A rule may also need a second column past a *setting* (a threshold that is
not a problem of its own, set the same ways): a grain is preempted when its
wall time is over 1.5 × its CPU time AND its thread was off the CPU for at
least `preempted_min_us` (default 100 µs). 1.5: a thread that shares its CPU
with one other busy thread runs about half the time (wall ≈ 2 × CPU), so any
real contention crosses it, while a grain that merely paid for a page fault or
an interrupt stays near 1. 100 µs: below it a grain cannot move a critical
path that matters, and a switch-out that short is a kernel thread or an
interrupt, not another program's time slice (the scheduler's slices are
~0.75-3 ms); it also keeps microsecond grains, whose ratio a few µs of noise
doubles, from being flagged.

For each problem: how many grains (and what % of all grains) cross the threshold,
how many of them are on the critical path, and the source locations responsible,
ranked by the work the affected grains carry (thesis Fig. 5.8). A metric whose
column is absent (no counters, no reference run) is reported as unavailable.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import UsageError


@dataclass(frozen=True)
class Rule:
    metric: str
    below: bool          # problem when value < threshold (else value > threshold)
    default: object      # float, or "auto" (resolved from the graph)
    meaning: str
    # (grain column, setting, scale): a problem only where the column is also
    # >= the setting's value x scale (NaN never is)
    floor: tuple | None = None


RULES = {r.metric: r for r in (
    Rule("parallel_benefit", True, 1.0, "grain work does not pay for its creation and sync"),
    Rule("load_balance", False, 1.5, "one grain approaches the makespan of its sibling group"),
    Rule("work_deviation", False, 2.0, "grain takes longer than in the reference run"),
    Rule("instantaneous_parallelism", True, "auto", "too little parallelism to feed the cores"),
    Rule("scatter", False, "auto", "siblings run on cores far apart"),
    Rule("memory_hierarchy_utilization", True, 2.0, "grain mostly waits for memory"),
    Rule("numa_locality", True, 0.5, "most of the grain's annotated data is on another NUMA "
         "node than the CPU it ran on"),
    Rule("preempted", False, 1.5, "grain's thread was off the CPU (preempted or blocked) for "
         "much of its wall time", floor=("off_cpu_ns", "preempted_min_us", 1e3)),
)}

# Settings: thresholds that qualify a rule (Rule.floor), not problems themselves.
SETTINGS = {"preempted_min_us": 100.0}


def default_thresholds() -> dict:
    return {**{name: rule.default for name, rule in RULES.items()}, **SETTINGS}


def parse_value(name: str, text, origin: str):
    if name not in RULES and name not in SETTINGS:
        raise UsageError(f"{origin}: unknown threshold {name!r} "
                         f"(known: {', '.join([*RULES, *SETTINGS])})")
    if isinstance(text, str) and text.strip().lower() == "auto":
        if name in SETTINGS or RULES[name].default != "auto":
            raise UsageError(f"{origin}: threshold {name} has no automatic value")
        return "auto"
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"{origin}: threshold {name} must be a number, got {text!r}") from None
    if math.isnan(value):
        raise UsageError(f"{origin}: threshold {name} must be a number, got {text!r}")
    return value


def load_config(path) -> dict:
    """Thresholds from a TOML file: a [thresholds] table (or top-level keys)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such config file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read config file ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML ({e})") from None
    table = data.get("thresholds", data)
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [thresholds] must be a table of name = value")
    return {k: parse_value(k, v, str(path)) for k, v in table.items()}


def parse_flags(items) -> dict:
    """`--threshold name=value` flags (later ones win)."""
    out = {}
    for item in items or ():
        name, sep, value = str(item).partition("=")
        if not sep:
            raise UsageError(f"--threshold {item!r}: expected name=value")
        out[name.strip()] = parse_value(name.strip(), value.strip(), "--threshold")
    return out


def thresholds(config=None, flags=None) -> dict:
    """Defaults, overridden by the config file, overridden by flags."""
    t = default_thresholds()
    if config:
        t.update(load_config(config))
    t.update(parse_flags(flags))
    return t


def resolve(th: dict, summary: dict) -> dict:
    """Replace "auto" with the graph's cores used / cores per socket."""
    auto = {"instantaneous_parallelism": summary.get("cores_used", 1),
            "scatter": summary.get("cores_per_socket", summary.get("cores_used", 1))}
    return {k: float(auto[k]) if v == "auto" else float(v) for k, v in th.items()}


def crossing(values, metric: str, threshold: float) -> np.ndarray:
    """Per value: past `threshold` in the problem direction of `metric` (NaN never is)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (v < threshold) if RULES[metric].below else (v > threshold)


def floor_mask(grains, metric: str, th: dict) -> np.ndarray | None:
    """Per grain: past the rule's floor (Rule.floor), or None for a rule
    without one."""
    floor = RULES[metric].floor
    if floor is None:
        return None
    column, setting, scale = floor
    if column not in grains.columns:
        return np.zeros(len(grains), bool)
    v = grains[column].to_numpy(np.float64)
    with np.errstate(invalid="ignore"):
        return v >= float(th.get(setting, SETTINGS[setting])) * scale


def flagged(grains, metric: str, th: dict) -> np.ndarray:
    """Per grain: a problem by `metric` at the thresholds `th` (its value past
    th[metric], and past the rule's floor)."""
    hit = crossing(grains[metric], metric, th[metric])
    floor = floor_mask(grains, metric, th)
    return hit if floor is None else hit & floor


def severity(values, metric: str, threshold: float) -> np.ndarray:
    """0 where not a problem, else how far past the threshold, relative to it,
    in (0, 1] (1 = twice the threshold, or zero for "below" metrics)."""
    v = np.asarray(values, dtype=np.float64)
    hit = crossing(v, metric, threshold)
    scale = abs(threshold) if threshold else 1.0
    with np.errstate(invalid="ignore"):
        far = (threshold - v) if RULES[metric].below else (v - threshold)
    return np.where(hit, np.clip(far / scale, 1e-6, 1.0), 0.0)


def evaluate(g, th: dict, locations: pd.Series | None = None, top: int = 10) -> dict:
    """metric -> {grains, percent, on_critical_path, threshold, direction,
    available, work_ns, locations: [{location, grains, work_ns, of_location_grains}]}.

    `locations`: one source-location string per grain (index = grain id); when
    None the hex codeptr is used."""
    gr = g.grains
    n = len(gr)
    if locations is None:
        locations = gr["codeptr"].map(lambda c: f"0x{int(c):x}") if n else pd.Series([], dtype=str)
    loc = location_codes(locations)
    crit = gr["on_critical_path"].to_numpy(bool)
    work = gr["work"].to_numpy(np.int64)
    out = {}
    for name, rule in RULES.items():
        th_value = th[name]
        entry = {"threshold": th_value, "direction": "<" if rule.below else ">",
                 "meaning": rule.meaning}
        if rule.floor is not None:
            column, setting, scale = rule.floor
            entry["floor"] = {"column": column, "setting": setting,
                              "value": float(th.get(setting, SETTINGS[setting])) * scale}
        if name not in gr.columns:
            out[name] = {**entry, "available": False, "grains": 0, "percent": 0.0,
                         "on_critical_path": 0, "work_ns": 0, "locations": []}
            continue
        hit = flagged(gr, name, th)
        count = int(hit.sum())
        out[name] = {**entry, "available": True, "grains": count,
                     "percent": 100.0 * count / n if n else 0.0,
                     "on_critical_path": int((hit & crit).sum()),
                     "work_ns": int(work[hit].sum()),
                     "locations": _rank_locations(loc, hit, work, top)}
    return out


def location_codes(locations) -> tuple[np.ndarray, np.ndarray]:
    """(code per grain, location string per code), codes numbered in order of
    first appearance: group-bys over the codes list locations in the same
    order a group-by over the strings would, without hashing a million
    strings when `locations` is categorical (Analysis.locations is)."""
    values = locations.array if isinstance(locations, pd.Series) else locations
    if not isinstance(values, (np.ndarray, pd.api.extensions.ExtensionArray)):
        values = np.asarray(values, dtype=object)
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def _rank_locations(loc, hit, work, top):
    if not hit.any():
        return []
    codes, names = loc
    df = pd.DataFrame({"location": codes, "hit": hit, "work": work,
                       "hit_work": np.where(hit, work, 0)})
    by = df.groupby("location", sort=False).agg(
        grains=("hit", "sum"), all_grains=("hit", "size"), work_ns=("hit_work", "sum"))
    by = by[by["grains"] > 0].sort_values(["work_ns", "grains"], ascending=False).head(top)
    return [{"location": str(names[code]), "grains": int(r.grains), "work_ns": int(r.work_ns),
             "of_location_grains": float(100.0 * r.grains / r.all_grains)}
            for code, r in by.iterrows()]
