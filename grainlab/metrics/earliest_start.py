"""Earliest start of every node: the longest path from any source, on columns.

Instantaneous parallelism (thesis §5.4.2) places every fragment at the earliest
time the DAG allows, given the measured durations. That is the forward pass of a
critical-path computation: es[v] = max over predecessors u of es[u] + dur[u].

No Python loop per node: the graph is mostly long chains (a task's fragments and
forks, a thread's book-keeping -> chunk -> book-keeping ...), so
  1. chain edges (a continuation u->v where v has no other predecessor and u no
     other continuation successor) are collapsed with pointer jumping (list
     ranking, log2(longest chain) vector passes): every node learns its chain
     head and the duration summed from the head;
  2. the remaining edges (creation, synchronization, dependence, joins) link
     chain heads; a level-by-level Kahn pass over heads (one numpy step per
     level, about 2 x task-tree depth levels) gives every head's start.
If the graph already provides `nodes.earliest_start`, or `nodes.earliest_finish`
(grainlab.graph's critical-path pass: longest path to v including v), that is
used instead: start = finish - duration.
"""
from __future__ import annotations

import numpy as np

from ..errors import GrainlabError
from .contract import is_one_of
from ..sorting import argsort


def earliest_start(g) -> np.ndarray:
    """int64 array: earliest start (ns from 0) of every node of `g.nodes`."""
    if "earliest_start" in g.nodes.columns:
        return g.nodes["earliest_start"].to_numpy(np.int64)
    dur = g.nodes["duration"].to_numpy(np.int64)
    if "earliest_finish" in g.nodes.columns:
        return g.nodes["earliest_finish"].to_numpy(np.int64) - dur
    return longest_path_starts(dur, g.edges["src"].to_numpy(np.int64),
                               g.edges["dst"].to_numpy(np.int64),
                               is_one_of(g.edges["type"], "continuation"))


def longest_path_starts(dur, src, dst, is_continuation) -> np.ndarray:
    n = len(dur)
    if n == 0:
        return np.zeros(0, np.int64)
    in_deg = np.bincount(dst, minlength=n)
    cont_out = np.bincount(src[is_continuation], minlength=n)
    chain = is_continuation & (in_deg[dst] == 1) & (cont_out[src] == 1)

    head, prefix = _rank_chains(n, src[chain], dst[chain], dur)

    # Kahn by levels over chain heads, through the non-chain edges.
    jsrc, jdst = src[~chain], dst[~chain]
    jhead = head[jsrc]
    jval_offset = prefix[jsrc] + dur[jsrc]          # added to the source head's start
    order = argsort(jhead)
    jhead, jdst, jval_offset = jhead[order], jdst[order], jval_offset[order]
    heads = np.flatnonzero(head == np.arange(n))
    first = np.searchsorted(jhead, heads, side="left")
    last = np.searchsorted(jhead, heads, side="right")
    out_start = np.zeros(n, np.int64)
    out_count = np.zeros(n, np.int64)
    out_start[heads], out_count[heads] = first, last - first

    start = np.zeros(n, np.int64)
    indeg = np.bincount(jdst, minlength=n)
    frontier = heads[indeg[heads] == 0]
    done = 0
    while len(frontier):
        done += len(frontier)
        cnt = out_count[frontier]
        total = int(cnt.sum())
        if total == 0:
            break
        # indices of all out-edges of the frontier heads, without a loop
        base = np.repeat(out_start[frontier] - np.cumsum(cnt) + cnt, cnt)
        idx = base + np.arange(total)
        targets = jdst[idx]
        np.maximum.at(start, targets, start[jhead[idx]] + jval_offset[idx])
        uniq, c = np.unique(targets, return_counts=True)
        indeg[uniq] -= c
        frontier = uniq[indeg[uniq] == 0]
    if done < len(heads):
        raise GrainlabError("grain graph has a cycle: cannot place fragments in time")
    return start[head] + prefix


def _rank_chains(n, csrc, cdst, dur):
    """Pointer jumping: for every node, the head of its chain and the summed
    duration of the chain nodes before it."""
    ptr = np.arange(n, dtype=np.int64)
    ptr[cdst] = csrc
    dist = np.zeros(n, np.int64)
    dist[cdst] = dur[csrc]
    active = np.flatnonzero(ptr != np.arange(n))
    while len(active):
        p = ptr[active]
        dist[active] += dist[p]
        ptr[active] = ptr[p]
        active = active[ptr[active] != ptr[ptr[active]]]
    return ptr, dist
