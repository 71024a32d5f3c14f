"""numpy array data from a cache of already-faulted memory (issue 31).

The grain-graph build at 10^7 grains makes and frees hundreds of row-sized
arrays. glibc gives each one over 32 MiB a fresh mapping and unmaps it when
freed, so every new array faults in all its pages again: at fib 33 (45.6M
events) 49 s of a 90 s build were kernel time. `install()` makes numpy take
its array data from grainlab's allocator (grainlab/native/array_cache.c,
numpy's PyDataMem_SetHandler): blocks of 4 MiB or more are whole mappings
kept after numpy frees them and reused, split as needed, by the next arrays;
smaller ones come from malloc as before. The cache never holds more than
its arrays' most at once less what they hold now, so it adds nothing to the
peak (at most GRAINLAB_ARRAY_CACHE_MB, when set); `trim()` gives it all back.

Like numpy's own handler choice, it holds for the context it is installed in
(the calling thread: numpy keeps it in a context variable); every array
remembers its allocator, so arrays made before or on other threads are freed
correctly. `uninstall()` restores numpy's default, `trim()` unmaps what is
cached. The command line installs it for the "large" memory profile
(grainlab/process_memory.py); GRAINLAB_ARRAY_CACHE=0 turns it off and
GRAINLAB_ARRAY_CACHE_MB sets the budget. Without the compiled kernels
nothing changes.
"""
from __future__ import annotations

import ctypes
import os

from ._paths import graph_kernel

NAME = "grainlab_array_cache"
# no budget of its own: the cache holds at most the most its arrays ever held
# at once, less what they hold now (array_cache.c), so adds nothing to the peak
DEFAULT_BUDGET = (1 << 63) - 1
LARGE_MIN = 4 << 20
# numpy's C API table (numpy/__multiarray_api.h): stable since numpy 1.22
_SET_HANDLER = 304

_previous = None     # the handler install() replaced (a capsule), while installed


def available() -> bool:
    return _kernel("gl_array_cache_handler_address", [], ctypes.c_void_p) is not None


def installed() -> bool:
    import numpy as np
    return np._core.multiarray.get_handler_name() == NAME


def install(budget_bytes: int | None = None, hugepage: bool = True,
            smallest: int = LARGE_MIN) -> bool:
    """Make numpy's new arrays (this context) take data from the cache;
    False (nothing changed) when the kernels are not built or
    GRAINLAB_ARRAY_CACHE=0."""
    global _previous
    if os.environ.get("GRAINLAB_ARRAY_CACHE", "").strip() == "0" or not available():
        return False
    if budget_bytes is None:
        mb = os.environ.get("GRAINLAB_ARRAY_CACHE_MB", "").strip()
        budget_bytes = int(mb) << 20 if mb.isdigit() else DEFAULT_BUDGET
    configure(budget_bytes, hugepage, smallest)
    if installed():
        return True
    address = _kernel("gl_array_cache_handler_address", [], ctypes.c_void_p)()
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule_new.restype = ctypes.py_object
    capsule = capsule_new(address, b"mem_handler", None)
    previous = _set_handler(capsule)
    if _previous is None:
        _previous = previous
    return True


def uninstall() -> None:
    """numpy's handler from before `install()` again (cached blocks stay
    cached until `trim()`; arrays already made free into the cache)."""
    global _previous
    if _previous is not None and installed():
        _set_handler(_previous)
    _previous = None


def configure(budget_bytes: int, hugepage: bool = True, smallest: int = LARGE_MIN) -> None:
    """budget_bytes: the most freed memory kept (the cache never holds more
    than the most its arrays held at once anyway); smallest: arrays from
    this many bytes on are cached mappings (smaller ones: malloc)."""
    fn = _kernel("gl_array_cache_configure", [ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t],
                 None)
    if fn is not None:
        fn(max(0, int(budget_bytes)), int(bool(hugepage)), max(1, int(smallest)))


def trim() -> int:
    """Unmap every cached block; the bytes freed."""
    fn = _kernel("gl_array_cache_trim", [], ctypes.c_size_t)
    return int(fn()) if fn is not None else 0


def stats() -> dict:
    fn = _kernel("gl_array_cache_stats", [ctypes.POINTER(ctypes.c_uint64)], None)
    keys = ("cached_bytes", "cached_blocks", "hits", "maps", "unmaps", "bytes_reused",
            "live_bytes", "peak_live_bytes")
    if fn is None:
        return dict.fromkeys(keys, 0)
    out = (ctypes.c_uint64 * len(keys))()
    fn(out)
    return dict(zip(keys, (int(v) for v in out)))


def _kernel(symbol, argtypes, restype):
    return graph_kernel(symbol, argtypes, restype)


def _set_handler(capsule):
    """numpy's PyDataMem_SetHandler (C API table entry): returns the handler
    it replaced."""
    import numpy as np
    api = np._core._multiarray_umath._ARRAY_API
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    get_pointer.restype = ctypes.c_void_p
    table = ctypes.cast(get_pointer(api, None), ctypes.POINTER(ctypes.c_void_p))
    set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[_SET_HANDLER])
    return set_handler(capsule)
