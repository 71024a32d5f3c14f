"""Kernel Reuse Distance (KRD): reuse between grains, from their data accesses.

Seed 001 §III (docs/locality.md): the accesses (grain_data() annotations, or
`depend` items given a size) of the CPUs that share a cache domain (a
last-level cache, a NUMA node or a core) are merged in time order; each
access's *stack distance* is the number of bytes of distinct blocks used
since the previous access to the same block in that stream (A B A: the
second A at size(B); A A: 0; a first use: INF). The histogram has
power-of-two bins (`upper_bytes` 0, 1, 2, 4, ...: a distance d falls in the
bin of the least power of two >= d) and INF; accesses are classed close (d <=
L2 size), near (<= LLC size), far (> LLC size) and inf. Per domain, summed
over domains, and per source location (the annotation's line).

Distances: O(n log n), a Fenwick tree over access positions
(grainlab/native/stack_distance.c; a slow pure-Python fallback when the
kernels are not built). Everything else is columns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import GrainlabError, UsageError
from ..sorting import argsort, lexsort

DOMAINS = ("llc", "numa", "core")
CLASSES = ("close", "near", "far", "inf")


@dataclass
class Reuse:
    """Per access, in stream order (domain, then time): its domain, stack
    distance (-1: INF), bytes and code address; with the class bounds used."""
    domain_kind: str
    domain: np.ndarray
    dist: np.ndarray
    nbytes: np.ndarray
    codeptr: np.ndarray
    l2: int
    llc: int


def cache_sizes(topology: dict | None, l2=None, llc=None) -> tuple[int, int]:
    """(L2 bytes, LLC bytes): the flags' if given, else the trace's topology
    (the level-2 cache, the largest level), else 1 MiB and 32 MiB."""
    caches = [c for c in (topology or {}).get("caches", []) if c.get("type") != "Instruction"]
    l2_top = max((c["size"] for c in caches if c.get("level") == 2), default=None)
    llc_top = max(caches, key=lambda c: (c.get("level", 0), c.get("size", 0)), default=None)
    l2 = int(l2) if l2 is not None else int(l2_top or 1 << 20)
    llc = int(llc) if llc is not None else int(llc_top["size"] if llc_top else 32 << 20)
    if l2 <= 0 or llc <= 0 or l2 > llc:
        raise UsageError(f"cache sizes: L2 {l2} and LLC {llc} bytes must be positive, "
                         "L2 no larger than the LLC")
    return l2, llc


def cpu_domains(topology: dict | None, kind: str, ncpus: int) -> np.ndarray:
    """Domain number of each CPU 0..ncpus-1. numa: its NUMA node; core: its
    (package, core); llc: the CPUs sharing cpu0's last-level cache form one
    domain per package when they span its package (the usual case), else
    consecutive runs of that many CPUs of a package (the collector records
    only cpu0's caches: docs/locality.md). Without a topology: one domain."""
    if kind not in DOMAINS:
        raise UsageError(f"--domain: {kind!r} is not one of {', '.join(DOMAINS)}")
    topo = topology or {}
    n = max(ncpus, len(topo.get("cpu_node", [])), 1)

    def column(name):
        v = np.zeros(n, np.int64)
        got = np.asarray(topo.get(name, []), np.int64)
        v[:len(got)] = got
        return v
    package = column("cpu_package")
    if kind == "numa":
        return column("cpu_node")
    if kind == "core":
        return package * (1 << 20) + column("cpu_core")
    caches = [c for c in topo.get("caches", []) if c.get("type") != "Instruction"]
    if not caches:
        return package
    shared = len(max(caches, key=lambda c: (c.get("level", 0), c.get("size", 0)))
                 .get("shared_cpus", []) or [0])
    cpus = np.arange(n)
    order = np.lexsort((cpus, package))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - np.searchsorted(package[order], package[order])
    return package * (1 << 20) + rank // max(shared, 1)


def reuse(accesses: pd.DataFrame, topology: dict | None, domain: str = "llc",
          l2=None, llc=None) -> Reuse:
    """Stack distances of every access, per domain of `domain` kind."""
    l2, llc = cache_sizes(topology, l2, llc)
    cpu = accesses["cpu"].to_numpy().astype(np.int64)
    dom_of = cpu_domains(topology, domain, int(cpu.max()) + 1 if len(cpu) else 1)
    # domain rank per CPU (few), then per access; sorted by rank, then time
    # (ties in file order; grainlab.sorting packs the keys)
    dom_values, rank_of_cpu = np.unique(dom_of, return_inverse=True)
    rank = rank_of_cpu.ravel()[cpu]
    order = _by_rank_then_time(rank, accesses["time"].to_numpy())
    rank = rank[order]
    dom = dom_values[rank]
    base = accesses["base"].to_numpy()[order].astype(np.uint64)
    nbytes = accesses["bytes"].to_numpy()[order].astype(np.int64)
    # One stream per domain: a block in two domains is two blocks (user-space
    # addresses are below 2^48, so the rank fits above them). Hashed, not sorted.
    key = (rank.astype(np.uint64) << np.uint64(48)) | (base & np.uint64((1 << 48) - 1))
    block = pd.factorize(key)[0].astype(np.int64)
    return Reuse(domain, dom, stack_distances(block, nbytes), nbytes,
                 accesses["codeptr"].to_numpy()[order], l2, llc)


def _by_rank_then_time(rank, time) -> np.ndarray:
    """Stable order by (rank, time). A trace holds each thread's rows in time
    order, in row groups: a stable sort by time merges those runs (numpy's
    timsort, ~0.05 s for 10^7), then a stable sort by the few ranks as a
    2-byte key (radix) groups the domains: ~15x faster than one sort by both."""
    by_time = argsort(time)
    if len(rank) and rank.max() < 1 << 15:
        return by_time[np.argsort(rank[by_time].astype(np.int16), kind="stable")]
    return lexsort((time, rank))


def stack_distances(block: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Bytes of distinct blocks used since each access's block was last used
    (-1: never before), for one stream in time order."""
    block = np.ascontiguousarray(block, np.int64)
    nbytes = np.ascontiguousarray(nbytes, np.int64)
    dist = np.empty(len(block), np.int64)
    nblocks = int(block.max()) + 1 if len(block) else 0
    kernel = _kernel()
    if kernel is None:
        return _python_distances(block, nbytes, nblocks, dist)
    rc = kernel(len(block), nblocks, block.ctypes.data, nbytes.ctypes.data, dist.ctypes.data)
    if rc == -1:
        raise MemoryError("the stack distances' scratch arrays")
    if rc != 0:
        raise GrainlabError("stack distances: a block id out of range (a grainlab bug)")
    return dist


def _python_distances(block, nbytes, nblocks, dist):
    """The kernel's algorithm in Python (slow: ~1 µs an access; only when the
    compiled kernels are not built)."""
    n = len(block)
    tree = [0] * (n + 1)
    last = [-1] * nblocks
    weight = [0] * nblocks
    total = 0
    for i in range(n):
        b, p = int(block[i]), last[int(block[i])]
        if p < 0:
            dist[i] = -1
        else:
            upto, k = 0, p + 1
            while k > 0:
                upto, k = upto + tree[k], k - (k & -k)
            dist[i] = total - upto
            k = p + 1
            while k <= n:
                tree[k], k = tree[k] - weight[b], k + (k & -k)
            total -= weight[b]
        k, w = i + 1, int(nbytes[i])
        while k <= n:
            tree[k], k = tree[k] + w, k + (k & -k)
        total += w
        last[b], weight[b] = i, w
    return dist


def _kernel():
    """gl_stack_distances from the compiled kernels, or None (not built, or
    GRAINLAB_NATIVE=0)."""
    import ctypes
    from .._paths import graph_kernel
    p = ctypes.c_void_p
    return graph_kernel("gl_stack_distances", [ctypes.c_int64, ctypes.c_int64, p, p, p])


def histogram(dist: np.ndarray, l2: int, llc: int) -> dict:
    """The KRD histogram of stack distances (-1: INF): `bins` (every power of
    two from 0 up to the largest distance's, then INF with upper_bytes None),
    the four classes and the number of accesses."""
    dist = np.asarray(dist, np.int64)
    inf = dist < 0
    d = dist[~inf]
    # bin 0 holds distance 0; bin m >= 1 upper bound 2^(m-1), i.e. m = 1 +
    # bit_length(d - 1) (frexp's exponent: exact below 2^53 bytes)
    k = np.zeros(len(d), np.int64)
    pos = d > 0
    k[pos] = np.frexp((d[pos] - 1).astype(np.float64))[1].astype(np.int64) + 1
    counts = np.bincount(k, minlength=1) if len(k) else np.zeros(0, np.int64)
    bins = [{"upper_bytes": 0 if i == 0 else 1 << (i - 1), "count": int(c)}
            for i, c in enumerate(counts)]
    bins.append({"upper_bytes": None, "count": int(inf.sum())})
    return {"bins": bins, "close": int((d <= l2).sum()),
            "near": int(((d > l2) & (d <= llc)).sum()), "far": int((d > llc).sum()),
            "inf": int(inf.sum()), "accesses": int(len(dist))}


def summary(r: Reuse, names=None) -> dict:
    """The whole report: summed histogram, one per domain, one per source
    location (`names`: codeptr -> location string, or None for hex)."""
    out = histogram(r.dist, r.l2, r.llc)
    out.update({"domain_kind": r.domain_kind, "l2_bytes": r.l2, "llc_bytes": r.llc})
    # accesses are sorted by domain: one slice each
    cuts = np.flatnonzero(np.diff(r.domain)) + 1
    bounds = zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(r.domain)])))
    out["domains"] = [dict(domain=i, **histogram(r.dist[a:b], r.l2, r.llc))
                      for i, (a, b) in enumerate(bounds) if b > a]
    codes, uniq = pd.factorize(r.codeptr)
    # few locations: a 2-byte key, which numpy sorts by radix
    order = np.argsort(codes.astype(np.int16), kind="stable") if len(uniq) < 1 << 15 \
        else argsort(codes)
    sorted_codes = codes[order]
    cuts = np.searchsorted(sorted_codes, np.arange(len(uniq) + 1))
    locs = []
    for i, c in enumerate(uniq):
        h = histogram(r.dist[order[cuts[i]:cuts[i + 1]]], r.l2, r.llc)
        locs.append(dict(location=names.get(int(c), hex(int(c))) if names else hex(int(c)), **h))
    out["locations"] = sorted(locs, key=lambda x: -x["accesses"])
    return out


def no_accesses(path, trace) -> str:
    """The one line saying the trace has nothing to measure, and how to fix it."""
    from .. import schema as S
    has_depend = trace.has_event(S.DEPENDENCE)
    hint = ("its tasks have `depend` items: give them a size with --depend-bytes N"
            if has_depend else
            "annotate the grains with grain_data(base, bytes, GRAIN_IN|GRAIN_OUT|GRAIN_INOUT) "
            "from collector/include/graincollect.h, or give `depend` items a size with "
            "--depend-bytes N")
    return f"{path}: the trace holds no data accesses: {hint} (docs/locality.md)"
