"""Metric internals rewritten for scale (issue 31) against the way they were
computed before, kept here as references: the same values bit for bit on
random inputs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grainlab.sorting import lexsort


def _union_by_group_reference(group, start, end):
    """grainlab.metrics.intervals.union_by_group before its in-place rewrite."""
    keep = end > start
    group, start, end = group[keep], start[keep], end[keep]
    if len(start) == 0:
        return group, start, end
    o = lexsort((start, group))
    group, start, end = group[o], start[o], end[o]
    span = int(end.max() - start.min()) + 1
    g_rank = np.r_[0, np.cumsum(group[1:] != group[:-1])]
    shift = g_rank.astype(np.int64) * span - int(start.min())
    run_end = np.maximum.accumulate(end + shift) - shift
    new = np.r_[True, (group[1:] != group[:-1]) | (start[1:] > run_end[:-1])]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(start) - 1]
    return group[first], start[first], run_end[last]


@pytest.mark.parametrize("seed", range(40))
def test_union_by_group_equals_its_reference(seed):
    from grainlab.metrics.intervals import union_by_group
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 2000))
    group = rng.integers(0, int(rng.integers(1, 8)), n).astype(np.int64)
    start = rng.integers(0, 10_000, n).astype(np.int64)
    end = start + rng.integers(-5, 400, n)          # empty and reversed ones too
    for a, b in zip(union_by_group(group, start, end),
                    _union_by_group_reference(group, start, end)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_union_by_group_packed_and_wide_keys(seed):
    """The packed merge (group, start and row in one int64), compiled and
    its numpy twin, against the reference: int32 groups, a row mask, and
    keys too wide to pack (the lexsort path)."""
    from grainlab.metrics.intervals import _union_packed, union_by_group
    from grainlab._paths import graph_kernels_library
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 3000))
    group = rng.integers(-3, int(rng.integers(-2, 70)), n).astype(np.int32)
    base = int(rng.integers(0, 1 << 40))
    start = base + rng.integers(0, 50_000, n).astype(np.int64)
    end = start + rng.integers(-5, 900, n)
    mask = rng.random(n) < rng.choice([1.0, 0.5])
    expected = _union_by_group_reference(group[mask], start[mask], end[mask])
    keep = (end > start) & mask
    natives = (False, True) if graph_kernels_library() is not None else (False,)
    for native in natives:
        got = union_by_group(group, start, end, mask=mask, native=native)
        if keep.any():
            assert _union_packed(group, start, end, keep, native) is not None
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    far = np.where(np.arange(n) % 2 == 1, 1 << 61, 0)  # a 61-bit time range + row bits > 62
    if n > 1:
        assert _union_packed(group, start + far, end + far, np.ones(n, bool)) is None
    for a, b in zip(union_by_group(group, start + far, end + far),
                    _union_by_group_reference(group, start + far, end + far)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def _sibling_groups_reference(grains, by_construct=False):
    """grainlab.metrics.groups.sibling_groups before the groups were shared
    (and the refinement by construct skipped when there is one construct)."""
    from grainlab.metrics.contract import is_one_of
    n = len(grains)
    is_chunk = is_one_of(grains["kind"], "chunk")
    parent = grains["parent"].to_numpy(np.int64)
    join = grains["join"].to_numpy(np.int64)
    loop_code = np.zeros(n, np.int64)
    if is_chunk.any():
        loop_code[is_chunk] = pd.factorize(grains["loop"].to_numpy()[is_chunk])[0]
    a = np.where(is_chunk, loop_code, parent)
    b = np.where(is_chunk, -2, join)
    a = a - a.min()
    b = b - b.min()
    key = a * (int(b.max()) + 1) + b
    group = np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)
    if not by_construct:
        return group
    construct = np.where(is_chunk, -1, pd.factorize(grains["codeptr"].to_numpy())[0])
    key = group * (int(construct.max()) + 2) + construct + 1
    return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _group_median_reference(group, value):
    """grainlab.metrics.groups.group_median before groups of one or two
    values took (min + max) / 2: every group sorted."""
    order = lexsort((value, group))
    counts = np.bincount(group)
    ends = np.cumsum(counts)
    starts = ends - counts
    v = value[order]
    return (v[starts + (ends - starts - 1) // 2] + v[starts + (ends - starts) // 2]) / 2.0


def _load_balance_reference(gr) -> np.ndarray:
    """load_balance as it was computed before chains were numbered apart
    (one np.unique over every grain's chain key), the groups made twice and
    every group's median sorted."""
    from grainlab.metrics.contract import is_one_of
    from grainlab.metrics.groups import group_max
    n = len(gr)
    group = _sibling_groups_reference(gr, by_construct=True)
    work = gr["work"].to_numpy(np.float64)
    is_chunk = is_one_of(gr["kind"], "chunk")
    thread = gr["thread"].to_numpy(np.int64)
    chain_key = np.where(is_chunk, group * (int(thread.max()) + 2) + thread + 1,
                         -1 - np.arange(n))
    chain_id, first = np.unique(chain_key, return_index=True)
    chain_of = np.searchsorted(chain_id, chain_key)
    chain_len = np.bincount(chain_of, weights=work, minlength=len(chain_id))
    median_chain = _group_median_reference(group[first], chain_len)
    longest = group_max(group, work, int(group.max()) + 1)
    num, den = longest[group], median_chain[group]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0),
                        np.where(num > 0, np.inf, 1.0))


def _random_grains(rng, id_type=np.int64):
    """Tasks and chunks mixed; sibling groups of every size (mostly pairs,
    as in a recursive program, or a few large ones); one task construct or
    several; float-summed work with zeros; ids of `id_type`."""
    n = int(rng.integers(1, 3000))
    chunk = rng.random(n) < rng.random() * rng.integers(0, 2)
    loops = np.array(["", "0.p0.w0", "0.p0.w1", "0.p1.w0"])
    parents = int(rng.choice([20, max(n // 2, 1), n]))
    constructs = int(rng.choice([1, 3]))
    return pd.DataFrame({
        "kind": pd.Categorical(np.where(chunk, "chunk", "task"), categories=["task", "chunk"]),
        "parent": rng.integers(0, parents, n).astype(id_type),
        "join": rng.integers(-1, int(rng.choice([1, 30])), n).astype(id_type),
        "codeptr": rng.integers(1, 1 + constructs, n).astype(np.uint64),
        "loop": pd.Categorical(np.where(chunk, loops[rng.integers(1, 4, n)], "")),
        "thread": rng.integers(0, 4, n).astype(np.int32),
        "cpu": rng.integers(-1, int(rng.choice([2, 4, 64])), n).astype(np.int32),
        "work": (rng.integers(0, 1000, n) * (rng.random(n) < 0.9)).astype(np.int64)})


@pytest.mark.parametrize("seed", range(30))
def test_load_balance_equals_its_reference_on_random_grains(seed):
    """The same values bit for bit, computed alone or from shared groups,
    with int64 or int32 ids."""
    from grainlab.metrics import load_balance
    from grainlab.metrics.groups import SiblingGroups
    rng = np.random.default_rng(seed)
    gr = _random_grains(rng, np.int32 if seed % 2 else np.int64)

    class G:
        grains = gr.copy()
    load_balance.compute(G)
    expected = _load_balance_reference(gr)
    got = G.grains[load_balance.COLUMN].to_numpy()
    assert np.array_equal(got, expected, equal_nan=True)
    assert got.tobytes() == expected.tobytes()
    load_balance.compute(G, SiblingGroups(gr).by_construct)
    assert G.grains[load_balance.COLUMN].to_numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("seed", range(30))
def test_sibling_groups_are_the_former_labels(seed):
    from grainlab.metrics.groups import SiblingGroups, sibling_groups
    gr = _random_grains(np.random.default_rng(seed), np.int32 if seed % 2 else np.int64)
    shared = SiblingGroups(gr)
    for by_construct, labels in ((False, shared.plain), (True, shared.by_construct)):
        expected = _sibling_groups_reference(gr, by_construct)
        assert np.array_equal(labels, expected)
        assert np.array_equal(sibling_groups(gr, by_construct), expected)


@pytest.mark.parametrize("seed", range(30))
def test_group_median_equals_its_reference(seed):
    """Groups of one, two and more values, ties, -0.0, infinities, NaN."""
    from grainlab.metrics.groups import group_median
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    group = rng.integers(0, int(rng.choice([n, max(n // 2, 1), 10])), n)
    group = np.unique(group, return_inverse=True)[1].reshape(-1)     # every label present
    value = rng.integers(-5, 5, n).astype(np.float64) * rng.choice([1.0, 0.37])
    value[rng.random(n) < 0.05] = -0.0
    if seed % 3 == 0:
        value[rng.random(n) < 0.02] = np.inf
    if seed % 7 == 0:
        value[rng.random(n) < 0.02] = np.nan
    got, expected = group_median(group, value), _group_median_reference(group, value)
    assert got.tobytes() == expected.tobytes()


def _scatter_reference(gr, meta):
    """scatter before the shared groups, the bincount of (group, cpu) keys,
    the integer-ranked distances and the median found without searchsorted."""
    from grainlab.metrics.scatter import distance_model
    name, dist = distance_model(meta)
    group = _sibling_groups_reference(gr)
    n_groups = int(group.max()) + 1
    cpu = gr["cpu"].to_numpy(np.int64)
    ok = cpu >= 0
    width = int(cpu.max()) + 1 if ok.any() else 1
    key, n = np.unique(group[ok] * width + cpu[ok], return_counts=True)
    grp, c = key // width, key % width
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
    grp, value, weight = grp[ii][keep], d[keep], weight[keep]
    out = np.full(n_groups, np.nan)
    if len(grp):
        order = lexsort((value, grp))
        grp, value, weight = grp[order], value[order], weight[order]
        cum = np.cumsum(weight)
        starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
        ends = np.r_[starts[1:], len(grp)]
        base = np.where(starts > 0, cum[starts - 1], 0)
        total = cum[ends - 1] - base
        lo = np.searchsorted(cum, base + (total - 1) // 2, side="right")
        hi = np.searchsorted(cum, base + total // 2, side="right")
        out[grp[starts]] = (value[lo] + value[hi]) / 2.0
    return out[group], name


@pytest.mark.parametrize("seed", range(30))
def test_scatter_equals_its_reference_on_random_grains(seed):
    """By cpu id difference and by a NUMA table; shared groups or not."""
    from grainlab.metrics import scatter
    from grainlab.metrics.groups import SiblingGroups
    rng = np.random.default_rng(seed)
    gr = _random_grains(rng, np.int32 if seed % 2 else np.int64)
    meta = {}
    if seed % 3 == 1:
        cpus = int(gr["cpu"].max()) + 1
        nodes = (np.arange(max(cpus, 1)) * 2 // max(cpus, 1)).tolist()
        meta = {"topology": {"cpu_node": nodes, "numa_distances": [[10, 21], [21, 10]]}}

    class G:
        grains = gr.copy()
    G.meta = meta
    expected, name = _scatter_reference(gr, meta)
    for groups in (None, SiblingGroups(gr).plain):
        assert scatter.compute(G, groups) == name
        assert G.grains[scatter.COLUMN].to_numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_distinct_non_negative_is_the_unique_count(seed):
    from grainlab.metrics.contract import distinct_non_negative
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 500))
    for dtype in (np.int32, np.int64):
        x = rng.integers(-2, int(rng.choice([1, 3, 70, 1 << 30])), n).astype(dtype)
        assert distinct_non_negative(x) == len(np.unique(x[x >= 0]))
    assert distinct_non_negative(np.zeros(0)) == 0          # a float column, empty


@pytest.mark.parametrize("seed", range(20))
def test_dense_ranks_are_unique_inverse(seed):
    from grainlab.metrics.groups import dense_ranks
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    size = int(rng.choice([3, n, 50 * n]))          # the table, and np.unique past it
    key = rng.integers(0, size, n).astype(np.int64)
    got = dense_ranks(key, size)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.unique(key, return_inverse=True)[1].reshape(-1))


def test_scatter_value_ranks_keep_order_and_ties():
    """Whole distances, fractional ones, NaN: the order and ties of the values."""
    from grainlab.metrics.scatter import _value_ranks
    rng = np.random.default_rng(7)
    for value in (rng.integers(0, 64, 500).astype(np.float64),
                  rng.integers(0, 64, 500) * 0.25 - 3.0,
                  np.r_[rng.random(50), np.nan, 1.0]):
        r = _value_ranks(value)
        i, j = rng.integers(0, len(value), (2, 2000))
        ok = ~(np.isnan(value[i]) | np.isnan(value[j]))
        assert np.array_equal((r[i] < r[j])[ok], (value[i] < value[j])[ok])
        assert np.array_equal((r[i] == r[j])[ok], (value[i] == value[j])[ok])
