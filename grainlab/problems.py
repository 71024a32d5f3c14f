"""Highlight likely problems: metric values past a threshold (thesis §5.4.3).

Defaults are the thesis's, except load balance (see below); every threshold is
overridable with `--threshold name=value` (repeatable) or a TOML config file:

    # grainlab.toml
    [thresholds]
    parallel_benefit = 1.5
    work_deviation = 1.2

Each metric's direction, default threshold and meaning are declared once, in
grainlab.metrics.registry (docs/metrics.md's table is made from it). Load
balance's default is 1.5, not the thesis's 1: two siblings of 10 and 11 ns
would already be "unbalanced". "auto" thresholds are resolved from the graph:
instantaneous parallelism against the cores used, scatter against the cores
per socket.

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

import numpy as np
import pandas as pd

from .errors import UsageError
from .metrics import registry


# The rules are the registry's metrics that have a threshold
# (grainlab.metrics.registry: direction, default, meaning and floor are
# declared there once), in the order reports list them.
RULES = {m.name: m for m in registry.PROBLEMS}

# Settings: thresholds that qualify a rule (Rule.floor), not problems themselves.
SETTINGS = {"preempted_min_us": 100.0}


def describe(name: str) -> str:
    """One rule as help texts print it: "preempted > 1.5 and off_cpu_ns >=
    preempted_min_us = 100 (only when CPU time was recorded ...)"."""
    m = RULES[name]
    value = f"{m.auto.replace('_', ' ')} (auto)" if m.auto else f"{m.threshold:g}"
    text = f"{name} {'<' if m.below else '>'} {value}"
    if m.floor is not None:
        column, setting, _ = m.floor
        text += f" and {column} >= {setting} = {SETTINGS[setting]:g}"
    return text + (f" ({m.optional})" if m.optional else "")


def default_thresholds() -> dict:
    return {**{name: rule.threshold for name, rule in RULES.items()}, **SETTINGS}


def parse_value(name: str, text, origin: str):
    if name not in RULES and name not in SETTINGS:
        raise UsageError(f"{origin}: unknown threshold {name!r} "
                         f"(known: {', '.join([*RULES, *SETTINGS])})")
    if isinstance(text, str) and text.strip().lower() == "auto":
        if name in SETTINGS or RULES[name].threshold != "auto":
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
    """Replace "auto" with the graph-level value the rule names (cores used,
    cores per socket)."""
    def auto(name):     # the value the registry names; cores used when it is missing
        return float(summary.get(RULES[name].auto, summary.get("cores_used", 1)))
    return {k: auto(k) if v == "auto" else float(v) for k, v in th.items()}


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
