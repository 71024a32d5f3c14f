"""The slots' chain order by the compiled kernels (grainlab/native/chain_order.c:
counting sorts by row then owner, sub ordered within a row) is the numpy
twin's (an argsort of the packed key, or lexsort): the same permutation on
random unique (owner, row, sub) keys of either id width, empty, one owner,
many, negative subs, strides near 2^31, and keys cut into several digits;
and the built graph is the same with and without the kernels on the golden
traces and random programs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab.errors import GrainlabError
from grainlab.graph import build as build_graph, slots
from randprog import random_program

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"
NAMES = sorted(p.stem for p in GOLDEN.glob("*.parquet"))


@pytest.fixture
def kernels(build):
    k = slots._chain_kernels()
    if k is None:
        pytest.fail("the chain order kernels are not in the built library")
    return k


def random_slots(rng, n, owners, stride, subs=(-1, 4), dtype=np.int32):
    """n slots (fewer once duplicates go) with unique keys, in random order."""
    owner = rng.integers(0, owners, n)
    row = rng.integers(0, stride, n)
    sub = rng.integers(subs[0], subs[1], n)
    # few rows, so that rows hold several slots of one owner and several owners
    key = np.stack([owner, row, sub], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    keep = rng.permutation(first)
    return dict(owner=owner[keep].astype(dtype), row=row[keep].astype(dtype),
                sub=sub[keep].astype(np.int32))


def permutation(where):
    o = np.empty(len(where), np.int64)
    o[where] = np.arange(len(where))
    return o


def kernel_order(kernel, sl, stride, limit=None):
    """The kernel's permutation, with the count array cut at `limit` (default:
    the builder's choice) to make it sort in several digits."""
    if limit is None:
        return permutation(slots._chain_where_native(sl, stride, kernel))
    n = len(sl["owner"])
    E = int(sl["owner"].max()) + 1 if n else 1
    where, perm, count = (np.empty(n, np.int32), np.empty(n, np.int32),
                          np.empty(limit, np.int32))
    rc = kernel(n, sl["owner"].ctypes.data, sl["row"].ctypes.data, sl["sub"].ctypes.data,
                int(sl["owner"].dtype == np.int64), E, stride, limit, where.ctypes.data,
                perm.ctypes.data, count.ctypes.data)
    assert rc == 0
    return permutation(where)


def assert_chain_sorted(sl, o):
    """Sorted by (owner, row, sub) lexicographically, each slot once."""
    assert np.array_equal(np.sort(o), np.arange(len(o)))
    a = np.stack([sl["owner"][o], sl["row"][o], sl["sub"][o]], axis=1).astype(np.int64)
    prev, nxt = a[:-1], a[1:]
    less = (prev[:, 0] < nxt[:, 0]) | ((prev[:, 0] == nxt[:, 0]) & (
        (prev[:, 1] < nxt[:, 1]) | ((prev[:, 1] == nxt[:, 1]) & (prev[:, 2] < nxt[:, 2]))))
    assert less.all()


CASES = [  # (slots, owners, stride, subs)
    (0, 1, 2, (-1, 2)),
    (1, 1, 2, (0, 1)),
    (500, 1, 40, (-1, 4)),             # one owner
    (3000, 5, 300, (-1, 3)),           # few rows: runs of subs per row
    (3000, 2000, 4000, (-1, 2)),       # many owners
    (5000, 50, 10**4, (-1, 70)),       # a team's forks at one row
    (2000, 300, (1 << 31) - 3, (-1, 3)),   # strides near 2^31: rows in two digits
    (2000, (1 << 31) - 5, 1000, (-1, 3)),  # owners near 2^31
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", CASES)
def test_kernel_is_the_twin(kernels, case, dtype, seed):
    n, owners, stride, subs = case
    sl = random_slots(np.random.default_rng(seed), n, owners, stride, subs, dtype)
    twin = slots._chain_permutation(sl, stride)
    got = kernel_order(kernels[0], sl, stride)
    np.testing.assert_array_equal(got, twin)
    np.testing.assert_array_equal(got, np.lexsort((sl["sub"], sl["row"], sl["owner"])))
    assert_chain_sorted(sl, got)


@pytest.mark.parametrize("limit", [2, 3, 5, 16, 1000])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_kernel_in_several_digits(kernels, limit, dtype):
    """Counts cut far below the keys' range: an odd and an even number of
    passes, digits of one bit up."""
    for seed, stride in enumerate((7, 64, 1000, 1 << 20)):
        sl = random_slots(np.random.default_rng(seed), 3000, 40, stride, (-1, 5), dtype)
        got = kernel_order(kernels[0], sl, stride, limit)
        np.testing.assert_array_equal(got, slots._chain_permutation(sl, stride))


@pytest.mark.parametrize("seed", range(5))
def test_sorted_by_row_and_sub_not_only_owner(kernels, seed):
    """Inputs where an order by owner alone, or by (owner, row) alone, is not
    the chain order (rows shuffled, a row's subs in falling order), so a
    kernel ignoring the row or the sub fails here whatever the twin says."""
    rng = np.random.default_rng(seed)
    sl = random_slots(rng, 4000, 30, 200, (-1, 6))
    by_owner = np.argsort(sl["owner"], kind="stable")
    by_owner_row = np.lexsort((sl["row"], sl["owner"]))
    with pytest.raises(AssertionError):
        assert_chain_sorted(sl, by_owner)
    with pytest.raises(AssertionError):
        assert_chain_sorted(sl, by_owner_row)
    assert_chain_sorted(sl, kernel_order(kernels[0], sl, 200))


def test_out_of_range_is_an_error(kernels):
    sl = dict(owner=np.array([0, 1], np.int32), row=np.array([0, 5], np.int32),
              sub=np.zeros(2, np.int32))
    with pytest.raises(GrainlabError):
        slots._chain_where_native(sl, 5, kernels[0])


@pytest.mark.parametrize("size,dtype", [(1, np.int8), (1, bool), (4, np.int32), (8, np.int64)])
def test_scatter(kernels, size, dtype):
    rng = np.random.default_rng(size)
    where = rng.permutation(1000).astype(np.int32)
    parts = [(300, rng.integers(0, 2, 300).astype(dtype)), (0, np.array(1, dtype)),
             (400, np.array(1, dtype)), (300, rng.integers(0, 2, 300).astype(dtype))]
    got = slots._scatter_parts(parts, where, dtype, kernels[1])
    want = np.empty(1000, dtype)
    at = 0
    for m, v in parts:
        want[where[at:at + m]] = v
        at += m
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def assert_both_paths_equal(trace, monkeypatch):
    native = build_graph(trace)
    with monkeypatch.context() as m:
        m.setattr(slots, "_chain_kernels", lambda: None)
        twin = build_graph(trace)
    for table in ("nodes", "edges", "grains", "contexts"):
        pd.testing.assert_frame_equal(getattr(native, table), getattr(twin, table))
    assert native.span == twin.span and native.work == twin.work
    np.testing.assert_array_equal(native.critical_path, twin.critical_path)
    np.testing.assert_array_equal(native.topological_order, twin.topological_order)


@pytest.mark.parametrize("name", NAMES)
def test_golden(kernels, monkeypatch, name):
    assert_both_paths_equal(gl.load(GOLDEN / f"{name}.parquet"), monkeypatch)


@pytest.mark.parametrize("seed", range(6))
def test_random_programs(kernels, tmp_path, monkeypatch, seed):
    program = random_program(seed)
    assert_both_paths_equal(gl.load(program.trace.write(tmp_path / "p.parquet")), monkeypatch)


def test_sparse_keys_of_many_slots_go_to_the_twin(kernels, monkeypatch):
    """Keys needing several digits are sorted by the twin past
    DIGITS_MAX_SLOTS slots (measured slower there), by the kernel below."""
    sl = random_slots(np.random.default_rng(0), 2000, 300, (1 << 31) - 3)
    assert slots._chain_where_native(sl, (1 << 31) - 3, kernels[0]) is not None
    monkeypatch.setattr(slots, "DIGITS_MAX_SLOTS", 100)
    assert slots._chain_where_native(sl, (1 << 31) - 3, kernels[0]) is None
    dense = random_slots(np.random.default_rng(0), 2000, 300, 1000)
    assert slots._chain_where_native(dense, 1000, kernels[0]) is not None
