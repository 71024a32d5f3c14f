"""Where every grain sits in the grain-graph view (thesis §5.4.1, Fig. 5.2):
time flows down, a task's children sit beside it, a loop's chunks side by side
under the implicit task that ran them.

x is the grain's position in a pre-order walk of the task tree (contexts —
the initial and implicit tasks — are part of the tree): every subtree is a
contiguous range of columns, so children are beside their parent and a
subtree never interleaves with another. y is wall-clock time. Siblings are
ordered by start time. All of it is computed on columns: pointer jumping for
depth (O(n log depth)), one pass per tree level for subtree sizes and
positions (O(n) in total), one sort.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import GrainlabError
from ..export.tree import depths, preorder  # noqa: F401  (re-exported)
from ..metrics.contract import is_one_of


def creation_times(g) -> np.ndarray:
    """When every grain and context came to be: a task at its fork (so siblings
    keep creation order, whoever ran first), anything else at its start."""
    gr, cx = g.grains, g.contexts
    t = np.r_[gr["start"].to_numpy(np.int64), cx["start"].to_numpy(np.int64)]
    nodes = g.nodes
    fork = is_one_of(nodes["type"], "fork")
    child = nodes["child"].to_numpy(np.int64)[fork]
    ok = (child >= 0) & (child < len(t))
    t[child[ok]] = nodes["start"].to_numpy(np.int64)[fork][ok]
    return t


def grain_columns(g, key: np.ndarray | None = None) -> pd.DataFrame:
    """x column of every grain (index = grain id) and context (G..G+C-1);
    siblings ordered by `key` (default: start time)."""
    gr, cx = g.grains, g.contexts
    ids = np.r_[gr.index.to_numpy(np.int64), cx.index.to_numpy(np.int64)]
    parent = np.r_[gr["parent"].to_numpy(np.int64), cx["parent"].to_numpy(np.int64)]
    start = np.r_[gr["start"].to_numpy(np.int64), cx["start"].to_numpy(np.int64)] \
        if key is None else key
    n = len(ids)
    if n == 0:
        return pd.DataFrame({"x": np.zeros(0, np.int64)})
    # ids are 0..n-1 (grains, then contexts): parents index the same arrays
    if not np.array_equal(ids, np.arange(n)):
        raise GrainlabError("grain and context ids are not 0..n-1")
    parent = np.where((parent >= 0) & (parent < n), parent, -1)
    return pd.DataFrame({"x": preorder(parent, start)}, index=ids)


def segments(g, x: np.ndarray) -> pd.DataFrame:
    """One row per drawn segment: the execution nodes (fragments, chunks) of
    grains and contexts — owner (grain/context id), x, start, end (ns)."""
    nodes = g.nodes
    owner = nodes["grain"].to_numpy(np.int64)
    keep = is_one_of(nodes["type"], "fragment", "chunk") & (owner >= 0) & (owner < len(x))
    owner = owner[keep]
    return pd.DataFrame({"owner": owner, "x": x[owner],
                         "start": nodes["start"].to_numpy(np.int64)[keep],
                         "end": nodes["end"].to_numpy(np.int64)[keep],
                         "thread": nodes["thread"].to_numpy(np.int64)[keep]})
