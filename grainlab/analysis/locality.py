"""Data locality of one analysis: the run's data accesses and their Kernel
Reuse Distance histograms (`grainlab krd`; docs/locality.md). The per-grain
NUMA locality is a metric of the registry (grainlab.metrics.numa_locality)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import GrainlabError


def accesses(a, depend_bytes=None) -> pd.DataFrame:
    """The data accesses of the Analysis `a` (grainlab.trace.accesses): its
    grain_data() annotations, or, when it has none and `depend_bytes` is
    given, its `depend` items, each that many bytes."""
    from ..trace.accesses import from_dependences, parse_depend_bytes
    nbytes = None if depend_bytes is None else parse_depend_bytes(depend_bytes)
    trace = a.trace
    if len(trace.accesses) or nbytes is None:
        return trace.accesses
    return from_dependences(trace.events, nbytes)


def krd(a, domain: str = "llc", *, l2=None, llc=None, depend_bytes=None) -> dict:
    """Analysis.krd of the Analysis `a` (its docstring says the rest)."""
    from ..metrics import krd as K
    from ..symbolize import symbolize
    acc = accesses(a, depend_bytes)
    if not len(acc):
        raise GrainlabError(K.no_accesses(a.path, a.trace))
    r = K.reuse(acc, a.trace.meta.get("topology"), domain, l2, llc)
    codes = np.unique(r.codeptr)
    names = dict(zip(codes.tolist(), symbolize(codes, a.trace.meta.get("loadmap", []))))
    return K.summary(r, names)
