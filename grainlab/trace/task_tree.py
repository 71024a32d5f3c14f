"""The explicit tasks' parent forest walked once, compiled (grainlab/native/
task_tree.c): whether following the parent pointers loops, and the deepest task
whose chain reaches a rooted task. `walk` answers both, `depths` gives every
task's depth (the grains table's, whose twin is columns.list_rank);
validate._has_cycle and facts.explicit_depth use it when the kernel is built
(GRAINLAB_NATIVE=0: never), else their numpy twins (validate._has_cycle_numpy,
facts._explicit_depth_numpy), proven equal on random forests by
tests/test_native_task_tree.py."""
from __future__ import annotations

import ctypes

import numpy as np

from .._paths import graph_kernel

CYCLE = 1


def _kernel():
    p = ctypes.c_void_p
    return graph_kernel("gl_forest_depth",
                        [ctypes.c_int64, p, ctypes.c_int, p, p, p, p, p])


def walk(up: np.ndarray, rooted: np.ndarray | None = None):
    """(looped, deepest depth) by the kernel, or None when it is not built.
    up: parent positions (-1: none), int32 or int64; rooted: bool per task
    (None: every top is rooted)."""
    fn = _kernel()
    if fn is None:
        return None
    n = len(up)
    wide = up.dtype != np.int32
    up = np.ascontiguousarray(up, dtype=np.int64 if wide else np.int32)
    state = np.empty(n, np.uint8)
    depth = np.empty(n, up.dtype)      # 9 bytes a task of scratch while ids fit int32
    path = np.empty(n, up.dtype)
    out = np.zeros(1, np.int64)
    flags = None
    if rooted is not None:
        flags = np.ascontiguousarray(rooted, dtype=np.uint8)
    rc = fn(n, up.ctypes.data, int(wide), None if flags is None else flags.ctypes.data,
            state.ctypes.data, depth.ctypes.data, path.ctypes.data, out.ctypes.data)
    if rc == -2:
        raise ValueError("a parent position out of range")
    return rc == CYCLE, int(out[0])


def depths(up: np.ndarray):
    """Every task's depth (1: no explicit parent) by the kernel, in up's
    dtype (int32 or int64), or None when it is not built or following `up`
    loops (the caller's twin, columns.list_rank, then says so)."""
    fn = _kernel()
    if fn is None:
        return None
    n = len(up)
    wide = up.dtype != np.int32
    up = np.ascontiguousarray(up, dtype=np.int64 if wide else np.int32)
    state = np.empty(n, np.uint8)
    depth = np.empty(n, up.dtype)
    path = np.empty(n, up.dtype)
    out = np.zeros(1, np.int64)
    rc = fn(n, up.ctypes.data, int(wide), None, state.ctypes.data, depth.ctypes.data,
            path.ctypes.data, out.ctypes.data)
    if rc == -2:
        raise ValueError("a parent position out of range")
    return None if rc == CYCLE else depth
