"""Compact identities of tasks, regions, loops and chunks (issue 7, "Scale").

Every named thing is a node of one forest (`Names`): a parent node and one
*step* (tag, a, b).  A node's identity string is its root's step followed by
every step down to it (docs/trace-format.md "Identity", grainlab/tables/tasks.py):

  ROOT      "<a>"               initial task a
  EXPLICIT  ".<a>"              explicit child a of its parent
  PARALLEL  ".p<a>"             region a of the parent task / its single winner
  IMPLICIT  ".p<a>.i<b>"        implicit task b of region a of the parent
  WORKSHARE ".w<a>"             k-th worksharing construct of a region
  TASKLOOP  ".t<a>"             k-th taskloop of a task
  FIRST     "@<a>"              chunk starting at iteration a of a loop
  UNKNOWN   "?"                 a loop of a region nobody can name

Per node the forest holds a fixed number of integers: parent, tag, a, b,
level, string length and a 128-bit path hash (two uint64 lanes), computed
level by level with numpy: hash(node) = mix(hash(parent), hash(tag, a, b)),
mix being, per lane, a multiply-add followed by a 64-bit finalizer
(splitmix64's in lane 1, MurmurHash3's fmix64 in lane 2).  Nothing per node
grows with depth.

The hash depends only on the sequence of steps, which the string spells
unambiguously, so equal identity strings always have equal hashes (the same
program shape gives the same hashes in every run, whatever the schedule).
Different strings get equal hashes only by a 128-bit collision: for n
distinct identities the probability of any collision is below n^2 / 2^129
(~1.5e-23 for 10^8 identities); for a fixed parent, two siblings collide in
a lane only if their step hashes do (mix is a bijection of its second
argument for a fixed first).  Work deviation and `compare` match grains by (kind, hash).

Strings are made only on demand: `strings(nodes)` walks each requested node
up to its root (O(k x depth) for k nodes), `all_strings()` builds every
node's string top-down in Arrow (O(total characters): for exports and for
the `identity` / `lineage` columns, which are materialised only while they
are small: see `materialise`).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..sorting import argsort

ROOT, EXPLICIT, PARALLEL, IMPLICIT, WORKSHARE, TASKLOOP, FIRST, UNKNOWN = range(8)
_PREFIX = ["", ".", ".p", ".p", ".w", ".t", "@", "?"]
_NOTHING = pa.scalar("", pa.large_string())

# Identity columns (grains/contexts "identity", tasks "lineage") are
# materialised only while every identity has at most MAX_CHARS characters
# (any number of rows: shallow trees, as always) or all of them together
# have at most TOTAL_CHARS (small graphs of any depth); otherwise they are
# left out and made on demand. Either way their size never grows with depth
# beyond max(MAX_CHARS per row, TOTAL_CHARS).
DEFAULT_MAX_CHARS = 256
DEFAULT_TOTAL_CHARS = 64 << 20
# The grain graph's `identity` columns have a tighter rule (`as_column`): every
# analysis builds the graph, few outputs print more than a handful of
# identities, and a million strings cost ~0.7 s and ~100 MB each time (a real
# fib(28) trace: 1.03M grains, ~60 MB of identities).
DEFAULT_COLUMN_CHARS = 16 << 20


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        return default


def max_chars() -> int:
    """Per-identity limit (GRAINLAB_IDENTITY_MAX_CHARS overrides it)."""
    return _env_int("GRAINLAB_IDENTITY_MAX_CHARS", DEFAULT_MAX_CHARS)


def total_chars() -> int:
    """Limit on all identities of a column together
    (GRAINLAB_IDENTITY_TOTAL_CHARS overrides it)."""
    return _env_int("GRAINLAB_IDENTITY_TOTAL_CHARS", DEFAULT_TOTAL_CHARS)


def materialise(names: "Names", nodes) -> bool:
    """Whether identity strings of `nodes` become a column (see above)."""
    nodes = np.asarray(nodes, np.int64)
    nodes = nodes[nodes >= 0]
    length = names.length[nodes]
    return bool(length.max(initial=0) <= max_chars() or int(length.sum()) <= total_chars())


def as_column(names: "Names", nodes) -> bool:
    """Whether the grain graph keeps the identity strings of `nodes` as a
    column: as `materialise`, and at most GRAINLAB_IDENTITY_COLUMN_CHARS
    (default 16 Mi) characters in all; otherwise `g.identities(ids)` makes
    the ones asked for."""
    nodes = np.asarray(nodes, np.int64)
    total = int(names.length[nodes[nodes >= 0]].sum())
    return total <= _env_int("GRAINLAB_IDENTITY_COLUMN_CHARS", DEFAULT_COLUMN_CHARS) and \
        materialise(names, nodes)


_U = np.uint64
_LANES = (
    # multiplier, added constant, (shift, mul, shift, mul, shift), root seed
    (_U(0x9E3779B97F4A7C15), _U(0x632BE59BD9B4E019),
     (30, _U(0xBF58476D1CE4E5B9), 27, _U(0x94D049BB133111EB), 31), _U(0x243F6A8885A308D3)),
    (_U(0xD6E8FEB86659FD93), _U(0x8CB92BA72F3D8DD7),
     (33, _U(0xFF51AFD7ED558CCD), 33, _U(0xC4CEB9FE1A85EC53), 33), _U(0x13198A2E03707344)),
)


def _mix(h: np.ndarray, x: np.ndarray, lane) -> np.ndarray:
    mul, add, (s1, m1, s2, m2, s3), _ = lane
    with np.errstate(over="ignore"):
        z = h * mul + x + add
        z ^= z >> _U(s1)
        z *= m1
        z ^= z >> _U(s2)
        z *= m2
        z ^= z >> _U(s3)
    return z


def _step_only(tag, a, b, lane) -> np.ndarray:
    """Hash of a step alone (tag, a, b), computed for all nodes at once."""
    h = _mix(np.zeros(len(np.atleast_1d(tag)), _U), np.asarray(tag).astype(np.uint64), lane)
    h = _mix(h, np.asarray(a, np.int64).view(np.uint64), lane)
    return _mix(h, np.asarray(b, np.int64).view(np.uint64), lane)


def _step_hash(parent_h: np.ndarray, tag, a, b, lane) -> np.ndarray:
    """hash(node) = mix(hash(parent), hash of its step)."""
    return _mix(parent_h, _step_only(tag, a, b, lane), lane)


def _forest_hashes(parent, tag, a, b, level):
    """Both hash lanes of every node, level by level: a root's is its step's
    mixed into the lane's seed, any other's its step's mixed into its
    parent's (0, 0 where level < 0: no identity)."""
    n = len(parent)
    h1, h2 = np.zeros(n, _U), np.zeros(n, _U)
    named = np.flatnonzero(level >= 0)
    if not len(named):
        return h1, h2
    order = named[argsort(level[named])]
    bounds = np.searchsorted(level[order], np.arange(int(level[order[-1]]) + 2))
    s1 = _step_only(tag[order], a[order], b[order], _LANES[0])
    s2 = _step_only(tag[order], a[order], b[order], _LANES[1])
    for lv in range(len(bounds) - 1):
        at = slice(bounds[lv], bounds[lv + 1])
        nodes = order[at]
        if lv == 0:
            p1, p2 = np.full(len(nodes), _LANES[0][3]), np.full(len(nodes), _LANES[1][3])
        else:
            p = parent[nodes]
            p1, p2 = h1[p], h2[p]
        h1[nodes] = _mix(p1, s1[at], _LANES[0])
        h2[nodes] = _mix(p2, s2[at], _LANES[1])
    return h1, h2


_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)
_PREFIX_LEN = np.array([len(p) for p in _PREFIX], np.int64)
# Digit counts of 0..65535 by look-up: a gather instead of a binary search
# per value (the steps' numbers are child indices, ordinals and team indices,
# nearly always small: 0.19 s -> 0.02 s at 2.7M nodes)
_SMALL = 1 << 16


def _digits_search(x: np.ndarray) -> np.ndarray:
    neg = x < 0
    mag = np.where(neg, -(x + 1), x)       # no overflow at int64 min
    return np.searchsorted(_POW10, mag, side="right") + 1 + neg


_DIGITS_SMALL = _digits_search(np.arange(_SMALL, dtype=np.int64)).astype(np.int8)


def _digits(x: np.ndarray) -> np.ndarray:
    """len(str(x)) for int64 x."""
    x = np.asarray(x, np.int64)
    if x.ndim == 1 and len(x) and x.min() >= 0 and x.max() < _SMALL:
        return _DIGITS_SMALL[x].astype(np.int64)
    return _digits_search(x)


def _step_length(tag, a, b) -> np.ndarray:
    """Characters of each step's text (_step_text); tag -1 (no step) counts
    as the last prefix, as numpy's index -1 reads it."""
    tag = np.asarray(tag)
    n = _PREFIX_LEN[tag]
    n += _digits(a)
    imp = np.flatnonzero(tag == IMPLICIT)   # ".i<b>" only there: digits of those b only
    if len(imp):
        n[imp] += 2 + _digits(np.broadcast_to(np.asarray(b, np.int64), tag.shape)[imp])
    n[tag == UNKNOWN] = 1
    return n


def _step_text(tag: int, a: int, b: int) -> str:
    if tag == IMPLICIT:
        return f".p{a}.i{b}"
    if tag == UNKNOWN:
        return "?"
    return f"{_PREFIX[tag]}{a}"


def forest_levels(parent, tag, a, b, native=None):
    """(level, length) of every node of a forest: parent[i] (< 0: none),
    step (tag[i], a[i], b[i]); roots are the parentless nodes tagged ROOT or
    UNKNOWN; level -1 and length 0 where no root reaches a node. The
    compiled kernel (grainlab/native/forest.c: one walk up per node, O(n),
    no sort, step lengths on the way) when built, else the numpy twin;
    `native` forces one (tests)."""
    kernel = _levels_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled forest kernel is not built")
    parent = np.ascontiguousarray(parent, np.int64)
    n = len(parent)
    tag, a, b = (np.ascontiguousarray(np.broadcast_to(np.asarray(x, t), (n,)))
                 for x, t in ((tag, np.int8), (a, np.int64), (b, np.int64)))
    if kernel is not None:
        level = np.empty(n, np.int64)
        length = np.empty(n, np.int64)
        if kernel(n, parent.ctypes.data, tag.ctypes.data, a.ctypes.data, b.ctypes.data,
                  level.ctypes.data, length.ctypes.data) == 0:
            return level, length
        del level, length       # a tag out of range: numpy says which
    root = (parent < 0) & ((tag == ROOT) | (tag == UNKNOWN))
    return _levels_numpy(parent, root, _step_length(tag, a, b))


def _levels_kernel():
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_forest_levels", [i, p, p, p, p, p, p])


def _levels_numpy(parent, root, step_len):
    """forest_levels' numpy twin: the nodes sorted by parent, named level by
    level from the roots down."""
    n = len(parent)
    level = np.full(n, -1, np.int64)
    length = np.zeros(n, np.int64)
    roots = np.flatnonzero(root)
    has_parent = np.flatnonzero(parent >= 0)
    kids = has_parent[argsort(parent[has_parent])]
    count = np.bincount(parent[has_parent], minlength=n)
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    frontier, lv = roots, 0
    while len(frontier):
        plen = length[parent[frontier]] if lv else 0
        length[frontier] = plen + step_len[frontier]
        level[frontier] = lv
        counts = count[frontier]
        total = int(counts.sum())
        if total == 0:
            break
        offsets = np.repeat(first[frontier] - np.concatenate(([0], np.cumsum(counts)[:-1])),
                            counts)
        nxt = kids[offsets + np.arange(total)]
        frontier = nxt[level[nxt] < 0]   # guard against malformed cycles
        lv += 1
    return level, length


class Names:
    """The identity forest: node i has parent[i] (-1: a root), step (tag[i],
    a[i], b[i]), level[i] (0 for roots; -1: no identity, e.g. a task whose
    parent the trace does not name), length[i] (characters of its string)
    and hash lanes h1[i], h2[i] (0, 0 when it has no identity).  Immutable:
    `extend` returns a new forest (copies share nothing mutable)."""

    __slots__ = ("parent", "tag", "a", "b", "level", "length", "_h1", "_h2")

    def __init__(self, parent, tag, a, b, level, length, h1=None, h2=None):
        self.parent, self.tag, self.a, self.b = parent, tag, a, b
        self.level, self.length, self._h1, self._h2 = level, length, h1, h2

    # The hash lanes are computed when first asked for (compare, work
    # deviation, saved analyses, export labels): an analysis of one run never
    # needs them, and they cost ~0.25 s and 16 bytes per node (10^6 tasks).
    @property
    def h1(self) -> np.ndarray:
        if self._h1 is None:
            self._h1, self._h2 = _forest_hashes(self.parent, self.tag, self.a, self.b,
                                                self.level)
        return self._h1

    @property
    def h2(self) -> np.ndarray:
        self.h1  # noqa: B018  (computes both lanes)
        return self._h2

    def __len__(self):
        return len(self.parent)

    def __deepcopy__(self, memo):   # pandas copies DataFrame.attrs deeply
        return self

    def __repr__(self):
        return f"<Names {len(self)} nodes, max level {int(self.level.max(initial=-1))}>"

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, s).nbytes for s in self.__slots__
                   if getattr(self, s) is not None)

    # -- construction ---------------------------------------------------------
    @classmethod
    def empty(cls) -> "Names":
        z = np.zeros(0, np.int64)
        return cls(z, np.zeros(0, np.int8), z, z, z, z, np.zeros(0, _U), np.zeros(0, _U))

    @classmethod
    def from_tree(cls, parent, tag, a, b) -> "Names":
        """Forest of n nodes given parent positions (-1: none) and steps;
        nodes are named level by level from the ROOT / UNKNOWN nodes (a
        node no root reaches gets no identity)."""
        parent = np.asarray(parent, np.int64)
        tag = np.asarray(tag, np.int8)
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        level, length = forest_levels(parent, tag, a, b)
        return cls(parent, tag, a, b, level, length)

    def extend(self, parent, tag, a, b) -> tuple["Names", np.ndarray]:
        """A forest with new nodes appended whose parents are existing nodes
        (-1 with tag UNKNOWN / ROOT: a new root); returns it and the new
        nodes' positions."""
        parent = np.asarray(parent, np.int64)
        k = len(parent)
        tag = np.broadcast_to(np.asarray(tag, np.int8), (k,)).copy()
        a = np.broadcast_to(np.asarray(a, np.int64), (k,)).copy()
        b = np.broadcast_to(np.asarray(b, np.int64), (k,)).copy()
        p = np.maximum(parent, 0)
        known = parent >= 0
        if len(self):
            plevel = np.where(known, self.level[p] if k else p, -1)
        else:
            plevel = np.full(k, -1, np.int64)
        root = ~known & ((tag == ROOT) | (tag == UNKNOWN))
        level = np.where(root, 0, np.where(known & (plevel >= 0), plevel + 1, -1))
        ok = level >= 0
        plen = np.where(known, self.length[p] if len(self) else 0, 0)
        length = np.where(ok, plen + _step_length(tag, a, b), 0)
        start = len(self)
        out = Names(np.concatenate([self.parent, parent]), np.concatenate([self.tag, tag]),
                    np.concatenate([self.a, a]), np.concatenate([self.b, b]),
                    np.concatenate([self.level, level]),
                    np.concatenate([self.length, length]))     # hashes when asked for
        return out, np.arange(start, start + k, dtype=np.int64)

    # -- queries ----------------------------------------------------------------
    def valid(self, nodes) -> np.ndarray:
        nodes = np.asarray(nodes, np.int64)
        ok = nodes >= 0
        ok[ok] = self.level[nodes[ok]] >= 0
        return ok

    def hashes(self, nodes) -> tuple[np.ndarray, np.ndarray]:
        """The two hash lanes of `nodes` (0, 0 for -1 / no identity)."""
        nodes = np.asarray(nodes, np.int64)
        ok = nodes >= 0
        h1, h2 = np.zeros(len(nodes), _U), np.zeros(len(nodes), _U)
        h1[ok], h2[ok] = self.h1[nodes[ok]], self.h2[nodes[ok]]
        return h1, h2

    def max_length(self, nodes) -> int:
        nodes = np.asarray(nodes, np.int64)
        nodes = nodes[nodes >= 0]
        return int(self.length[nodes].max(initial=0))

    def strings(self, nodes) -> np.ndarray:
        """Identity strings of `nodes` (object array; None where a node is -1
        or has no identity), each made by walking up to its root: O(k x
        depth) for k nodes, nothing for the others."""
        nodes = np.asarray(nodes, np.int64).ravel()
        out = np.full(len(nodes), None, dtype=object)
        ok = self.valid(nodes)
        rows = np.flatnonzero(ok)
        if len(rows) > 4096 and len(rows) * 4 > len(self):
            # many of them: one top-down pass over the forest is cheaper
            out[rows] = self.all_strings().take(pa.array(nodes[rows])).to_numpy(
                zero_copy_only=False)
            return out
        parts = [[] for _ in rows]
        active = np.arange(len(rows))
        cur = nodes[rows]
        while len(active):
            texts = [_step_text(t, x, y) for t, x, y in
                     zip(self.tag[cur].tolist(), self.a[cur].tolist(), self.b[cur].tolist())]
            for i, s in zip(active.tolist(), texts):
                parts[i].append(s)
            cur = self.parent[cur]
            more = cur >= 0
            active, cur = active[more], cur[more]
        out[rows] = ["".join(reversed(p)) for p in parts]
        return out

    def all_strings(self) -> pa.LargeStringArray:
        """Every node's identity (null where it has none), built top-down one
        level at a time in Arrow (not kept: callers take what they need)."""
        return self._top_down(np.arange(len(self), dtype=np.int64))

    def arrow(self, nodes) -> pa.LargeStringArray:
        """Identity strings of `nodes` as an Arrow array (null: none)."""
        nodes = np.asarray(nodes, np.int64)
        if len(nodes) > 4096 and len(nodes) * 4 > len(self):
            return self._top_down(nodes)
        return pa.array(self.strings(nodes), pa.large_string())

    def short(self, nodes, steps: int = 4) -> pa.LargeStringArray:
        """A fixed-size label per node for outputs that name every node of a
        huge deep graph (exports): the full identity when it has at most
        `steps` steps, else "…" + its last `steps` steps; then " #" and the
        32 hex digits of its 128-bit hash (the same in every run, so labels
        still match across runs). Null where a node has no identity. Cost
        O(k x steps) for k nodes, whatever the depth."""
        nodes = np.asarray(nodes, np.int64)
        ok = self.valid(nodes)
        cur = np.where(ok, nodes, -1)
        text = pa.array(np.full(len(nodes), "", dtype=object), pa.large_string())
        for _ in range(steps):
            live = cur >= 0
            if not live.any():
                break
            c = np.maximum(cur, 0)
            step = _arrow_steps(self.tag[c], self.a[c], self.b[c])
            text = pc.if_else(pa.array(live), pc.binary_join_element_wise(step, text, _NOTHING),
                              text)
            cur = np.where(live, self.parent[c], -1)
        cut = cur >= 0       # more steps above: abbreviated
        text = pc.if_else(pa.array(cut), pc.binary_join_element_wise(
            pa.scalar("\u2026", pa.large_string()), text, _NOTHING), text)
        h1, h2 = self.hashes(nodes)
        digits = pa.array([f" #{x:016x}{y:016x}" for x, y in zip(h1.tolist(), h2.tolist())],
                          pa.large_string())
        out = pc.binary_join_element_wise(text, digits, _NOTHING)
        return pc.if_else(pa.array(ok), out, pa.scalar(None, pa.large_string()))

    def _top_down(self, nodes: np.ndarray) -> pa.LargeStringArray:
        """Strings of `nodes` from one top-down pass over the whole forest:
        each level's strings = its parents' (the level above) + its steps,
        taken straight from the per-level arrays into `nodes` order."""
        n = len(self)
        order = np.flatnonzero(self.level >= 0)
        order = order[argsort(self.level[order])]
        bounds = np.searchsorted(self.level[order], np.arange(int(self.level.max(initial=-1)) + 2))
        in_level = np.full(n, -1, np.int64)   # position of a node within its level
        levels = []
        for lv in range(len(bounds) - 1):
            level_nodes = order[bounds[lv]:bounds[lv + 1]]
            step = _arrow_steps(self.tag[level_nodes], self.a[level_nodes], self.b[level_nodes])
            if lv > 0:   # a node's parent is on the level above
                step = pc.binary_join_element_wise(
                    levels[-1].take(pa.array(in_level[self.parent[level_nodes]])), step, _NOTHING)
            in_level[level_nodes] = np.arange(len(level_nodes))
            levels.append(step.cast(pa.large_string()))
        where = np.full(n, -1, np.int64)
        where[order] = np.arange(len(order))
        ok = self.valid(nodes)
        at = np.where(ok, where[np.where(ok, nodes, 0)], 0)
        every = pa.chunked_array(levels, type=pa.large_string())
        del levels, in_level, where, order
        out = every.take(pa.array(at, mask=~ok))
        return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _arrow_steps(tag, a, b) -> pa.Array:
    """Step strings of many nodes at once, in Arrow."""
    tag = np.asarray(tag)
    prefix = pa.array(_PREFIX, pa.large_string()).take(pa.array(tag.astype(np.int64)))
    a_text = pc.cast(pa.array(np.asarray(a, np.int64)), pa.large_string())
    a_text = pc.if_else(pa.array(tag == UNKNOWN), _NOTHING, a_text)
    imp = tag == IMPLICIT
    if imp.any():
        b_text = pc.binary_join_element_wise(
            pa.scalar(".i", pa.large_string()),
            pc.cast(pa.array(np.asarray(b, np.int64)), pa.large_string()), _NOTHING)
        b_text = pc.if_else(pa.array(imp), b_text, _NOTHING)
        return pc.binary_join_element_wise(prefix, a_text, b_text, _NOTHING)
    return pc.binary_join_element_wise(prefix, a_text, _NOTHING)


def string_column(arrow: pa.Array):
    """A pandas string column (as the identity columns always were) from
    Arrow strings."""
    import pandas as pd
    return pd.array(pa.chunked_array([arrow.cast(pa.large_string())]),
                    dtype=pd.StringDtype("pyarrow", na_value=np.nan))
