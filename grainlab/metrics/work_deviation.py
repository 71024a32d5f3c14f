"""Work deviation (thesis §5.4.2; DESIGN.md "Metrics").

  work_deviation = work of the grain in run B / work of the same grain in run A

Grains are matched by identity (`kind` + `identity`: task lineage, or chunk loop
instance + first iteration), which does not depend on scheduling. Run A is the
reference (usually 1 thread). Equal work gives exactly 1.0 (also 0/0); a grain
with no work in A but some in B gives inf; grains of B missing from A give NaN.
Problem: > 2 (work inflation).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .contract import is_one_of

COLUMN = "work_deviation"


def match(grains_a: pd.DataFrame, grains_b: pd.DataFrame, hashes_a=None,
          hashes_b=None) -> np.ndarray:
    """For every grain of B, the row position of the same grain in A, or -1.

    With both graphs' identity hashes (GrainGraph.identity_hashes(): h1, h2,
    valid per grain row) grains match by (kind, 128-bit identity hash)
    (grainlab.tables.identity: equal identities have equal hashes; no string is
    made); otherwise by (kind, identity string). Grains without an identity
    match nothing."""
    if hashes_a is not None and hashes_b is not None:
        def key(gr, hashes):
            h1, h2, valid = hashes
            return (pd.MultiIndex.from_arrays([is_one_of(gr["kind"], "chunk"), h1, h2]),
                    valid)
    else:
        def key(gr, hashes):
            ident = gr["identity"]
            return (pd.MultiIndex.from_arrays([is_one_of(gr["kind"], "chunk"),
                                               ident.to_numpy()]),
                    ident.notna().to_numpy())
    (ka, ok_a), (kb, ok_b) = key(grains_a, hashes_a), key(grains_b, hashes_b)
    keep = ~ka.duplicated(keep="first") & ok_a
    lookup = pd.Series(np.arange(len(ka))[keep], index=ka[keep])
    pos = lookup.reindex(kb).fillna(-1).to_numpy(np.int64).copy()
    pos[~ok_b] = -1
    return pos


def hashes_of(g):
    """g.identity_hashes(), or None for a graph without an identity forest."""
    return g.identity_hashes() if hasattr(g, "identity_hashes") else None


def ratio(work_b: np.ndarray, work_a: np.ndarray) -> np.ndarray:
    work_b = work_b.astype(np.float64)
    work_a = work_a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = work_b / work_a
    r[work_a == work_b] = 1.0
    return r


def compute(g_b, g_a) -> dict:
    """Add `work_deviation` to g_b.grains (against reference g_a); return counts."""
    pos = match(g_a.grains, g_b.grains, hashes_of(g_a), hashes_of(g_b))
    matched = pos >= 0
    dev = np.full(len(pos), np.nan)
    wa = g_a.grains["work"].to_numpy(np.int64)
    wb = g_b.grains["work"].to_numpy(np.int64)
    dev[matched] = ratio(wb[matched], wa[pos[matched]])
    g_b.grains[COLUMN] = dev
    return {"matched": int(matched.sum()), "grains_b": int(len(pos)),
            "grains_a": int(len(g_a.grains)),
            "work_a_matched_ns": int(wa[pos[matched]].sum()),
            "work_b_matched_ns": int(wb[matched].sum())}
