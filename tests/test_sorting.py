"""grainlab.sorting equals numpy's stable sorts exactly (a stable order is
unique, so the permutations must be identical), on the packed path and on
every fallback."""
import numpy as np
import pytest

from grainlab import sorting


def _cases():
    rng = np.random.default_rng(7)
    n = 5000
    yield "random int64", rng.integers(-(1 << 40), 1 << 40, n)
    yield "many ties", rng.integers(0, 5, n)
    yield "sorted", np.arange(n)
    yield "sorted with ties", np.repeat(np.arange(n // 10), 10)
    yield "reversed", np.arange(n)[::-1].copy()
    yield "two sorted runs", np.r_[np.arange(0, n, 2), np.arange(1, n, 2)]
    yield "constant", np.full(n, 42)
    yield "negative", rng.integers(-1000, -990, n)
    yield "uint64 above int64", (np.uint64(1) << np.uint64(63)) + rng.integers(0, 1000, n).astype(np.uint64)
    yield "uint16", rng.integers(0, 1 << 16, n).astype(np.uint16)
    yield "int8", rng.integers(-128, 128, n).astype(np.int8)
    yield "bool", rng.random(n) < 0.3
    yield "too wide: fallback", rng.integers(-(1 << 62), 1 << 62, n)
    yield "float: fallback", rng.random(n).round(2)
    yield "two rows", np.array([3, 3])
    yield "one row", np.array([9])
    yield "empty", np.zeros(0, np.int64)


@pytest.mark.parametrize("name,key", list(_cases()), ids=[c[0] for c in _cases()])
def test_argsort_equals_numpys_stable_sort(name, key):
    got = sorting.argsort(key)
    assert np.array_equal(got, np.argsort(key, kind="stable"))
    assert got.dtype.kind == "i"


def test_lexsort_equals_numpys_lexsort():
    rng = np.random.default_rng(11)
    for trial in range(30):
        n = int(rng.integers(2, 3000))
        nkeys = int(rng.integers(1, 4))
        keys = []
        for _ in range(nkeys):
            width = int(rng.choice([1, 3, 100, 1 << 20, 1 << 40]))
            k = rng.integers(-width, width, n)
            keys.append(k.astype(rng.choice([np.int64, np.int32])) if width < (1 << 30) else k)
        assert np.array_equal(sorting.lexsort(keys), np.lexsort(keys)), trial


def test_lexsort_mixed_dtypes_and_fallback():
    rng = np.random.default_rng(3)
    n = 4000
    keys = [rng.integers(0, 1 << 30, n), rng.random(n) < 0.5, rng.integers(0, 7, n).astype(np.uint8)]
    assert np.array_equal(sorting.lexsort(keys), np.lexsort(keys))
    wide = [rng.integers(0, 1 << 40, n), rng.integers(0, 1 << 40, n)]   # 80 bits: fallback
    assert np.array_equal(sorting.lexsort(wide), np.lexsort(wide))


def test_wide_keys_take_digit_passes_and_stay_exact():
    """Keys too wide for one packed sort (range + index bits > 63) are cut into
    digits: still numpy's exact stable order, also for uint64 and floats."""
    rng = np.random.default_rng(5)
    n = 6000
    cases = [
        [rng.integers(0, 1 << 55, n)],                                   # one wide key
        [rng.integers(0, 1 << 50, n), rng.integers(0, 1 << 30, n)],      # 80 bits
        [rng.integers(-(1 << 61), 1 << 61, n)],                          # signed, 62 bits
        [rng.integers(0, 1 << 62, n).astype(np.uint64) + np.uint64(1 << 63)],
        [rng.random(n) * 1e9, rng.integers(0, 50, n)],                   # float, then group
        [np.abs(rng.standard_normal(n)).round(3)],                       # float ties
        [np.r_[np.zeros(n // 2), -np.zeros(n - n // 2)]],                # -0.0 equals 0.0
        [rng.integers(0, 3, n), rng.random(n) * 1e-300],                 # subnormal ranges
    ]
    for keys in cases:
        expect = np.lexsort(keys)
        assert np.array_equal(sorting.lexsort(keys), expect)
        if len(keys) == 1:
            assert np.array_equal(sorting.argsort(keys[0]), np.argsort(keys[0], kind="stable"))
    # NaN and mixed-sign float ranges fall back, still exact
    x = rng.standard_normal(n)
    x[::7] = np.nan
    assert np.array_equal(sorting.argsort(x), np.argsort(x, kind="stable"))


def test_random_sweep_against_numpy():
    rng = np.random.default_rng(1234)
    for trial in range(200):
        n = int(rng.integers(2, 400))
        keys = []
        for _ in range(int(rng.integers(1, 4))):
            bits = int(rng.integers(0, 63))
            k = rng.integers(0, (1 << bits) + 1, n) - (1 << bits) // 2 * int(rng.integers(0, 2))
            kind = rng.integers(0, 4)
            keys.append(k.astype(np.float64) if kind == 0 and bits < 50 else
                        k.astype(np.int32) if kind == 1 and bits < 30 else k)
        assert np.array_equal(sorting.lexsort(keys), np.lexsort(keys)), (trial, keys)
