"""The app's hover text, made for the ids a figure asks (grainlab.app.hover),
against a plain per-row reference written from the tables here."""
from __future__ import annotations

import numpy as np
import pytest

import grainlab
from grainlab.app.data import AppData
from grainlab.app.hover import HoverLabels, hover_text


def _reference(g, locations, i: int) -> str:
    """One label, the way a reader would write it from the tables."""
    G = len(g.grains)
    if i >= G:
        return "serial/team code " + str(g.identities(np.array([g.contexts.index[i - G]]))[0])
    row = g.grains.iloc[i]
    ident = (row["identity"] if "identity" in g.grains else
             f"depth {row['depth']}, child {row['child_number']} of #{row['parent']}")
    return (f"#{i} {row['kind']} {ident}<br>{locations[i]}<br>"
            f"work {round(row['work'] / 1e3, 1)} us")


@pytest.mark.parametrize("env", [{}, {"GRAINLAB_IDENTITY_MAX_CHARS": "0",
                                          "GRAINLAB_IDENTITY_TOTAL_CHARS": "0"}])
def test_labels_of_any_ids_equal_a_plain_reference(record, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    a = grainlab.analyze(record("fib", 9, 4, threads=2).path)
    data = AppData(a)
    g, labels = a.graph, data.hover
    assert isinstance(labels, HoverLabels) and len(labels) == len(g.grains) + len(g.contexts)
    rng = np.random.default_rng(7)
    n = len(labels)
    for ids in (np.arange(n), rng.integers(0, n, 40), rng.permutation(n)[:5],
                np.array([n - 1, 0, n - 1]), np.array([], np.int64)):
        got = labels[ids]
        assert got.dtype == object and len(got) == len(ids)
        assert list(got) == [_reference(g, data.locations, int(i)) for i in ids]
    # numpy's negative indexing, as the eager array had; out of range is an error
    assert labels[np.array([-1])][0] == _reference(g, data.locations, n - 1)
    with pytest.raises(IndexError):
        labels[np.array([n])]
    # the helper the figures use gives the same from a plain array too
    plain = labels[np.arange(n)]
    ids = rng.integers(0, n, 25)
    assert list(hover_text(plain, ids)) == list(hover_text(labels, ids))
