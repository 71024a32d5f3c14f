"""Scatter (thesis §5.4.2; DESIGN.md "Metrics").

  scatter = median pairwise distance between the cores that ran the grains of
            a sibling group (siblings joined at one join, or a loop instance)

Distance: the NUMA distance table of the trace's `grainlab.topology` when the
machine has more than one NUMA node, otherwise |cpu id difference| (the thesis's
"subtracting core identifiers"). Unit: core-id steps (or NUMA distance units).
A group of one grain has no pair: NaN. Computed from per-(group, cpu) counts, so a
loop of a million chunks on 2 cpus costs 3 pairs, not 10^12.
"""
from __future__ import annotations

import numpy as np

from ..sorting import lexsort

from .groups import sibling_groups

COLUMN = "scatter"


def distance_model(meta: dict):
    """(name, function cpu_a, cpu_b -> distance) for this trace's machine."""
    topo = meta.get("topology") if isinstance(meta, dict) else None
    if isinstance(topo, dict):
        nodes = topo.get("cpu_node") or []
        table = topo.get("numa_distances") or []
        if len(set(nodes)) > 1 and len(table) >= len(set(nodes)):
            node_of = np.asarray(nodes, np.int64)
            dist = np.asarray(table, np.float64)

            def numa(a, b):
                return dist[node_of[a], node_of[b]]
            return "numa_distance", numa
    return "cpu_id_difference", lambda a, b: np.abs(a - b).astype(np.float64)


def cores_per_socket(meta: dict, default: int) -> int:
    topo = meta.get("topology") if isinstance(meta, dict) else None
    if isinstance(topo, dict) and topo.get("cpu_package"):
        _, counts = np.unique(np.asarray(topo["cpu_package"]), return_counts=True)
        return int(counts.max())
    return int(default)


def compute(g, group=None) -> str:
    """group: sibling_groups(g.grains) when the caller has it."""
    gr = g.grains
    name, dist = distance_model(getattr(g, "meta", {}) or {})
    if group is None:
        group = sibling_groups(gr)
    n_groups = int(group.max()) + 1 if len(group) else 0
    cpu = gr["cpu"].to_numpy(np.int64)
    ok = cpu >= 0
    # grains per (group, cpu), sorted by group then cpu
    width = int(cpu.max()) + 1 if ok.any() else 1
    key, n = _pair_counts(group[ok] * width + cpu[ok], n_groups * width)
    grp, c = key // width, key % width
    # every pair (i <= j) of distinct cpus of one group, without a loop
    counts = np.bincount(grp, minlength=n_groups)
    group_end = np.cumsum(counts)
    i = np.arange(len(key))
    per_i = group_end[grp] - i
    ii = np.repeat(i, per_i)
    jj = ii + (np.arange(len(ii)) - np.repeat(np.cumsum(per_i) - per_i, per_i))
    na, nb = n[ii], n[jj]
    weight = np.where(ii == jj, na * (na - 1) // 2, na * nb)
    d = dist(c[ii], c[jj])
    keep = weight > 0
    med = _weighted_median_by_group(grp[ii][keep], d[keep], weight[keep], n_groups)
    gr[COLUMN] = med[group] if len(group) else np.zeros(0)
    return name


def _pair_counts(key, size):
    """np.unique(key, return_counts=True) of keys in [0, size): one bincount
    when the table is no bigger than a few times the keys (a few cpus per
    group), instead of a sort of every grain's key."""
    if size <= 4 * len(key) + 1024:
        counts = np.bincount(key, minlength=size)
        present = np.flatnonzero(counts)
        return present, counts[present]
    return np.unique(key, return_counts=True)


def _weighted_median_by_group(grp, value, weight, n_groups):
    """Median of the multiset where `value` occurs `weight` times, per group
    (mean of the two middle elements for an even count); NaN for empty groups.
    `grp` comes in runs (scatter's pairs are made group by group); weights > 0."""
    out = np.full(n_groups, np.nan)
    if len(grp) == 0:
        return out
    order = lexsort((_value_ranks(value), grp))
    grp, value, weight = grp[order], value[order], weight[order]
    cum = np.cumsum(weight)
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    ends = np.r_[starts[1:], len(grp)]
    base = np.where(starts > 0, cum[starts - 1], 0)
    total = cum[ends - 1] - base
    # the element holding the (total-1)//2-th and total//2-th unit of each
    # group (searchsorted(cum, t, "right")): weights are positive, so cum
    # increases strictly and exactly one element of the group has
    # cum before it <= t < its cum; found by one comparison per element,
    # not a binary search per group over all of cum
    seg = np.repeat(np.arange(len(starts)), ends - starts)
    before = np.empty_like(cum)
    before[0] = 0
    before[1:] = cum[:-1]

    def holding(t):
        t = t[seg]
        return np.flatnonzero((before <= t) & (t < cum))
    lo, hi = holding(base + (total - 1) // 2), holding(base + total // 2)
    out[grp[starts]] = (value[lo] + value[hi]) / 2.0
    return out


def _value_ranks(value):
    """Integers with the order of `value` (ties equal), so that the
    group-then-value sort is one packed integer sort instead of radix passes
    over 64-bit float keys: distances are small whole numbers (cpu id steps,
    NUMA distances), taken as value - min; other values are ranked among
    their distinct values (a sort); floats with NaN keep their values
    (sorted as numpy does)."""
    if len(value) == 0 or value.dtype.kind != "f":
        return value
    if np.isnan(value).any():
        return value
    lo, hi = float(value.min()), float(value.max())
    if hi - lo < 2.0 ** 40 and np.array_equal(value, np.floor(value)):
        return (value - lo).astype(np.int64)
    return np.searchsorted(np.unique(value), value)
