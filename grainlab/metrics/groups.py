"""Sibling groups shared by load balance and scatter.

A task's group is its siblings joined at the same join (same parent, same waiter
join node); a chunk's group is its loop instance. Returns one int64 group label
per grain (labels are arbitrary but equal within a group).
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def sibling_groups(grains: pd.DataFrame) -> np.ndarray:
    is_chunk = (grains["kind"].astype(str) == "chunk").to_numpy()
    parent = grains["parent"].to_numpy(np.int64)
    join = grains["join"].to_numpy(np.int64)
    loop = grains["loop"].astype(str).to_numpy() if "loop" in grains else np.full(len(grains), "")
    # Tasks: (parent, join). Chunks: loop instance (its own key space).
    key = pd.DataFrame({
        "c": is_chunk,
        "a": np.where(is_chunk, 0, parent),
        "b": np.where(is_chunk, 0, join),
        "l": np.where(is_chunk, loop, ""),
    })
    return key.groupby(["c", "a", "b", "l"], sort=False, observed=True).ngroup().to_numpy(np.int64)
