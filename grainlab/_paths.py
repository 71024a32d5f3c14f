"""Where grainlab's native build artifacts live.

The collector and its helpers (the converter grainlab-convert among them)
are, in order:
- in `$GRAINLAB_BUILD_DIR/lib` when GRAINLAB_BUILD_DIR is set (it moves the
  whole build, examples in `$GRAINLAB_BUILD_DIR/examples`);
- in the package itself, `grainlab/_lib/`, when grainlab was installed by
  pip (`pip install .`: scikit-build-core builds and installs them there);
- in `<repo>/build/lib` in the source tree (`make build`; examples in
  `<repo>/build/examples`), the editable install's place.
GRAINLAB_COLLECTOR points at a specific collector library.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import BuildArtifactMissing

REPO_ROOT = Path(__file__).resolve().parent.parent

COLLECTOR = "libgraincollect.so"
EMPTY_TOOL = "libgrainempty.so"
CLOCK_TOOL = "libgrainclock.so"
WRITER = "libgrainwriter.so"
EXEC_HOOKS = "libgrainexec.so"
CONVERTER = "grainlab-convert"
GRAPH_KERNELS = "libgrainlab_graph.so"


# Where `pip install` puts the native parts (GRAINLAB_INSTALL_LIBDIR in CMakeLists.txt).
BUNDLED_LIB_DIR = Path(__file__).resolve().parent / "_lib"


def build_dir() -> Path:
    return Path(os.environ.get("GRAINLAB_BUILD_DIR") or REPO_ROOT / "build")


def bundled() -> bool:
    """True when the native parts come from the package (a pip install) and
    GRAINLAB_BUILD_DIR does not move them elsewhere."""
    return (not os.environ.get("GRAINLAB_BUILD_DIR")
            and (BUNDLED_LIB_DIR / COLLECTOR).is_file())


def lib_dir() -> Path:
    return BUNDLED_LIB_DIR if bundled() else build_dir() / "lib"


def examples_dir() -> Path:
    return build_dir() / "examples"


def _existing(path: Path, what: str) -> Path:
    if not path.is_file():
        raise BuildArtifactMissing(
            f"{what} not found at {path}: build grainlab first (`make` in the "
            "source tree, or `pip install` it), or set GRAINLAB_BUILD_DIR")
    return path.resolve()


def collector_library() -> Path:
    """The OMPT collector: $GRAINLAB_COLLECTOR, else libgraincollect.so in
    `lib_dir()` (the package's _lib/ or build/lib)."""
    env = os.environ.get("GRAINLAB_COLLECTOR")
    if env:
        path = Path(env)
        if not path.is_file():
            raise BuildArtifactMissing(
                f"GRAINLAB_COLLECTOR={env}: no such file")
        return path.resolve()
    return _existing(lib_dir() / COLLECTOR, "collector library " + COLLECTOR)


def graph_kernels_library() -> Path | None:
    """The analysis's compiled kernels (grainlab/native), or None when they
    are not built: the analysis then uses its slower pure-Python paths."""
    path = lib_dir() / GRAPH_KERNELS
    return path.resolve() if path.is_file() else None


_KERNELS: dict = {}     # symbol -> loaded function, or None: none to load


def graph_kernel(symbol: str, argtypes: list, restype=None):
    """A function of the compiled kernels (`graph_kernels_library`) through
    ctypes, loaded once, or None when it is not there (not built, a build
    without it) or GRAINLAB_NATIVE=0: the caller then runs its pure-Python path."""
    if os.environ.get("GRAINLAB_NATIVE", "").strip() == "0":
        return None
    if symbol not in _KERNELS:
        import ctypes
        path, fn = graph_kernels_library(), None
        if path is not None:
            try:
                fn = getattr(ctypes.CDLL(str(path)), symbol)
            except (OSError, AttributeError):    # a foreign or stale build
                fn = None
            else:
                fn.argtypes, fn.restype = argtypes, restype or ctypes.c_int
        _KERNELS[symbol] = fn
    return _KERNELS[symbol]


def empty_tool_library() -> Path:
    """An OMPT tool that registers callbacks doing nothing (overhead floor)."""
    return _existing(lib_dir() / EMPTY_TOOL, "empty OMPT tool " + EMPTY_TOOL)


def clock_tool_library() -> Path:
    """The empty tool reading the clock once per callback (the floor of any
    tool that timestamps every event)."""
    return _existing(lib_dir() / CLOCK_TOOL, "clock-floor OMPT tool " + CLOCK_TOOL)


def example(name: str) -> Path:
    """An example program built from examples/."""
    return _existing(examples_dir() / name, f"example program {name!r}")


def converter() -> Path:
    """grainlab-convert (spool -> Parquet): next to $GRAINLAB_COLLECTOR if that
    names a collector with a converter beside it, else `lib_dir()`."""
    env = os.environ.get("GRAINLAB_COLLECTOR")
    if env:
        beside = Path(env).parent / CONVERTER
        if beside.is_file():
            return beside.resolve()
    return _existing(lib_dir() / CONVERTER, "trace converter " + CONVERTER)


def exec_hooks_library() -> Path | None:
    """libgrainexec.so beside the collector (record preloads it so a run that
    exec()s stays one trace), or None when that build has none."""
    path = collector_library().parent / EXEC_HOOKS
    return path if path.is_file() else None
