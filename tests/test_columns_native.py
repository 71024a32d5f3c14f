"""gl_first_per_key (grainlab/native/columns.c) gives what its numpy twin
(columns.first_per_key with native=False: a ufunc.at minimum) gives, on
random keys of both widths, repeated or not, absent keys included; and the
compiled pass is the one that ran."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab.graph.columns import _first_per_key_native, first_per_key


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_first_per_key_compiled_equals_twin(seed, dtype):
    rng = np.random.default_rng(seed)
    n_keys = int(rng.integers(1, 500))
    n = int(rng.integers(0, 3000))
    keys = rng.integers(0, n_keys, n).astype(dtype)
    assert _first_per_key_native(keys, n_keys) is not None
    got = first_per_key(keys, n_keys)
    want = first_per_key(keys, n_keys, native=False)
    np.testing.assert_array_equal(got, want)
    # and what it means: each present key's first position, keys in order
    present = np.unique(keys)
    np.testing.assert_array_equal(keys[got], present)
    for k, pos in zip(present[:20], got[:20]):
        assert pos == np.flatnonzero(keys == k)[0]


def test_a_key_out_of_range_takes_the_twin():
    keys = np.array([0, 5], np.int64)
    assert _first_per_key_native(keys, 3) is None
    with pytest.raises(IndexError):
        first_per_key(keys, 3)
