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


@pytest.mark.parametrize("seed", range(10))
def test_union_by_group_packed_and_wide_keys(seed):
    """The packed merge (group, start and row in one int64) against the
    reference, int32 groups, and keys too wide to pack (the lexsort path)."""
    from grainlab.metrics.intervals import _union_packed, union_by_group
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 3000))
    group = rng.integers(-3, int(rng.integers(-2, 70)), n).astype(np.int32)
    base = int(rng.integers(0, 1 << 40))
    start = base + rng.integers(0, 50_000, n).astype(np.int64)
    end = start + rng.integers(-5, 900, n)
    got = union_by_group(group, start, end)
    keep = end > start
    if keep.any():
        assert _union_packed(group[keep], start[keep], end[keep]) is not None
    for a, b in zip(got, _union_by_group_reference(group, start, end)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    far = np.where(np.arange(n) % 2 == 1, 1 << 61, 0)  # a 61-bit time range + row bits > 63
    if n > 1:
        assert _union_packed(group, start + far, end + far) is None
    for a, b in zip(union_by_group(group, start + far, end + far),
                    _union_by_group_reference(group, start + far, end + far)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def _load_balance_reference(gr) -> np.ndarray:
    """load_balance as it was computed before chains were numbered apart
    (one np.unique over every grain's chain key)."""
    from grainlab.metrics.contract import is_one_of
    from grainlab.metrics.groups import group_max, group_median, sibling_groups
    n = len(gr)
    group = sibling_groups(gr, by_construct=True)
    work = gr["work"].to_numpy(np.float64)
    is_chunk = is_one_of(gr["kind"], "chunk")
    thread = gr["thread"].to_numpy(np.int64)
    chain_key = np.where(is_chunk, group * (int(thread.max()) + 2) + thread + 1,
                         -1 - np.arange(n))
    chain_id, first = np.unique(chain_key, return_index=True)
    chain_of = np.searchsorted(chain_id, chain_key)
    chain_len = np.bincount(chain_of, weights=work, minlength=len(chain_id))
    median_chain = group_median(group[first], chain_len)
    longest = group_max(group, work, int(group.max()) + 1)
    num, den = longest[group], median_chain[group]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0),
                        np.where(num > 0, np.inf, 1.0))


@pytest.mark.parametrize("seed", range(10))
def test_load_balance_equals_its_reference_on_random_grains(seed):
    """Tasks and chunks mixed, groups of every size, zero work, float work
    sums: the same values bit for bit."""
    from grainlab.metrics import load_balance
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    chunk = rng.random(n) < rng.random()
    loops = np.array(["", "0.p0.w0", "0.p0.w1", "0.p1.w0"])
    gr = pd.DataFrame({
        "kind": pd.Categorical(np.where(chunk, "chunk", "task"), categories=["task", "chunk"]),
        "parent": rng.integers(0, 20, n), "join": rng.integers(-1, 30, n),
        "codeptr": rng.integers(1, 4, n).astype(np.uint64),
        "loop": pd.Categorical(np.where(chunk, loops[rng.integers(1, 4, n)], "")),
        "thread": rng.integers(0, 4, n).astype(np.int32),
        "work": (rng.integers(0, 1000, n) * (rng.random(n) < 0.9)).astype(np.int64)})

    class G:
        grains = gr.copy()
    load_balance.compute(G)
    expected = _load_balance_reference(gr)
    got = G.grains[load_balance.COLUMN].to_numpy()
    assert np.array_equal(got, expected, equal_nan=True)
    assert got.tobytes() == expected.tobytes()
