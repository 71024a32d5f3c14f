"""Collected's kept rows are the same whether its create columns are made
beforehand at an expected size (the footer's count: filled in place) or
joined from pieces at the end; an expectation that is too small (a footer
that lies) or too large changes nothing but where the rows are kept."""
from __future__ import annotations

import numpy as np
import pytest

from grainlab import schema as S
from grainlab.trace.batches import Collected


def random_batches(seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(rng.integers(1, 7))):
        n = int(rng.integers(0, 300))
        b = {c: rng.integers(0, 250, n).astype(np.dtype(t)) for c, t in S.COLUMNS.items()}
        b["event"] = rng.choice([S.TASK_CREATE, S.TASK_SCHEDULE, S.IMPLICIT_BEGIN,
                                 S.PARALLEL_BEGIN, S.WORK_BEGIN], n).astype(np.uint8)
        b["value"] = rng.choice([0, 0, 3], n).astype(np.uint64)
        b["rg"] = rng.integers(0, 9, n).astype(np.int32)
        out.append(b)
    return out


def collected(batches, expect):
    rows = Collected(expect)
    for b in batches:
        rows.feed(b)
    return {name: getattr(rows, name) for name in Collected.KEEP}


@pytest.mark.parametrize("seed", range(30))
def test_expected_sizes_change_nothing(seed):
    batches = random_batches(seed)
    creates = sum(int(np.count_nonzero(b["event"] == S.TASK_CREATE)) for b in batches)
    plain = collected(batches, None)
    assert len(plain["create"]["task"]) == creates
    for expect in (creates, creates + 17, max(creates // 2, 1), 1):
        got = collected(batches, {"create": expect})
        for name, cols in plain.items():
            assert list(got[name]) == list(cols), name
            for c, v in cols.items():
                assert got[name][c].dtype == v.dtype, (name, c)
                np.testing.assert_array_equal(got[name][c], v, err_msg=f"{name}.{c}")


def test_the_dependence_flag_is_the_value_not_zero():
    b = random_batches(1)[0]
    b["event"][:] = S.TASK_CREATE
    b["value"][:] = np.arange(len(b["value"])) % 2
    got = collected([b], {"create": len(b["value"])})["create"]["dependences"]
    np.testing.assert_array_equal(got, np.arange(len(b["value"])) % 2 == 1)
