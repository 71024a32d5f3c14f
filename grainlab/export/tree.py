"""The task tree on columns: depth, pre-order position, subtree size and rank
among siblings of every node of a forest given by its parent array, without
a Python loop per node (pointer jumping for depth, one pass per tree level
for sizes and positions). Shared by the grain-graph drawing
(grainlab.export.drawing) and the web app's wall-clock layout
(grainlab.app.layout)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import GrainlabError


def depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest given by `parent` (-1 = root), by
    pointer jumping. Bounded to ceil(log2 n) + 2 rounds: more means a cycle."""
    n = len(parent)
    depth = (parent >= 0).astype(np.int64)
    anc = parent.astype(np.int64).copy()
    for _ in range(max(math.ceil(math.log2(max(n, 2))), 1) + 2):
        live = anc >= 0
        if not live.any():
            return depth
        up = anc[live]
        depth[live] = depth[live] + depth[up]
        anc[live] = anc[up]
    raise GrainlabError("the task tree has a cycle: a task is its own ancestor")


@dataclass
class Tree:
    parent: np.ndarray     # -1 for roots
    depth: np.ndarray
    pos: np.ndarray        # pre-order position: a subtree is pos .. pos + size - 1
    size: np.ndarray       # nodes in the subtree, the node included
    sib_rank: np.ndarray   # 0-based rank among its siblings (roots: among roots)

    @property
    def by_pos(self) -> np.ndarray:
        """Node id at every pre-order position."""
        out = np.empty(len(self.pos), np.int64)
        out[self.pos] = np.arange(len(self.pos))
        return out


def tree(parent: np.ndarray, key: np.ndarray) -> Tree:
    """Pre-order walk of the forest `parent` (-1 = root), children (and
    roots) visited in increasing `key`."""
    n = len(parent)
    parent = np.asarray(parent, np.int64)
    if n == 0:
        z = np.zeros(0, np.int64)
        return Tree(parent, z, z, z, z)
    depth = depths(parent)
    order = np.lexsort((key, parent, depth))          # by level, then parent, then key
    bounds = np.searchsorted(depth[order], np.arange(depth.max() + 2))
    size = np.ones(n, np.int64)
    for d in range(int(depth.max()), 0, -1):         # subtree sizes, deepest level first
        ents = order[bounds[d]:bounds[d + 1]]
        np.add.at(size, parent[ents], size[ents])
    pos = np.zeros(n, np.int64)
    rank = np.zeros(n, np.int64)
    for d in range(int(depth.max()) + 1):            # positions, top level first
        ents = order[bounds[d]:bounds[d + 1]]
        before = np.cumsum(size[ents]) - size[ents]  # sizes of earlier entries on this level
        par = parent[ents]
        first = np.r_[True, par[1:] != par[:-1]]      # first child of each parent
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(ents)), 0))
        offset = before - before[group_start]
        rank[ents] = np.arange(len(ents)) - group_start
        pos[ents] = offset if d == 0 else pos[par] + 1 + offset
    return Tree(parent, depth, pos, size, rank)


def preorder(parent: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Pre-order position of every node of the forest `parent` (-1 = root),
    children (and roots) visited in increasing `key`."""
    return tree(parent, key).pos
