"""The OpenMP runtime a recorded program runs on (`grainlab record --runtime`).

A program picks its OpenMP runtime when it is loaded: the loader resolves its
`libomp.so.5` (or `libiomp5.so`) by name. To run it on another runtime,
record puts a private folder first on `LD_LIBRARY_PATH` whose `libomp.so.5`,
`libiomp5.so` (and, for `--gomp-compat`, `libgomp.so.1`) are links to the
chosen library, and preloads that library when it is an LLVM libomp (its
soname is `libomp.so.5`, so a program whose RPATH names another folder still
gets it). The collector stores the file the runtime really was
(`grainlab.runtime.library`); record compares it with the one asked for.

Runtimes are named by their file, or by a short name:

  llvm-N   LLVM libomp N: /usr/lib/llvm-N/lib/libomp.so.5 (Debian, Ubuntu,
           apt.llvm.org), or the copy `make build` fetches into
           build/runtimes/llvm-N/ (Debian's libomp5-14 and -15 conflict with
           libomp5-19, so they cannot be installed side by side)
  intel    Intel's libiomp5.so: from the `intel-openmp` package on PyPI in this
           Python environment (`pip install intel-openmp`), a conda
           environment, or oneAPI ($CMPLR_ROOT, /opt/intel/oneapi)

What each runtime reports differently is read from the trace's
`grainlab.runtime.callbacks` (set_callback results), never from version
strings: libomp 14..19 all call themselves "LLVM OMP version: 5.0.20140926".
docs/compatibility.md has what was measured.
"""
from __future__ import annotations

import glob
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import _paths
from ..errors import RecordError
from ..trace.runtime_info import short_name as _short_name

@dataclass(frozen=True)
class Runtime:
    name: str       # llvm-N, intel, or the file's name
    path: str       # the library file, links followed

    @property
    def is_intel(self) -> bool:
        return os.path.basename(self.path).startswith("libiomp5")


def _llvm_candidates(version: str) -> list[str]:
    return [f"/usr/lib/llvm-{version}/lib/libomp.so.5",
            str(_paths.build_dir() / "runtimes" / f"llvm-{version}" / "libomp.so.5")]


def _intel_candidates() -> list[str]:
    dirs = [os.path.join(sys.prefix, "lib")]
    for var in ("CONDA_PREFIX", "CMPLR_ROOT"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib"))
    dirs.append("/opt/intel/oneapi/compiler/latest/lib")
    return [os.path.join(d, "libiomp5.so") for d in dirs]


def resolve(spec: str) -> Runtime:
    """`--runtime SPEC` as a Runtime, or a one-line RecordError saying where
    it was looked for and how to get it."""
    spec = spec.strip()
    m = re.fullmatch(r"(?:llvm-?|libomp-?)(\d+)", spec)
    if m:
        version = m.group(1)
        for c in _llvm_candidates(version):
            if os.path.isfile(c):
                return Runtime(f"llvm-{version}", os.path.realpath(c))
        raise RecordError(
            f"--runtime {spec}: LLVM libomp {version} not found (looked in "
            f"{', '.join(_llvm_candidates(version))}); install Debian's libomp5-{version}, "
            f"run `make build` (it fetches libomp 14, 15 and 16), or give the library's path")
    if spec in ("intel", "iomp5", "libiomp5"):
        for c in _intel_candidates():
            if os.path.isfile(c):
                return Runtime("intel", os.path.realpath(c))
        raise RecordError(
            f"--runtime {spec}: Intel's libiomp5.so not found (looked in "
            f"{', '.join(_intel_candidates())}); `pip install intel-openmp` into this "
            "environment, or give the library's path")
    path = Path(spec).expanduser()
    if path.is_dir():
        found = [path / n for n in ("libomp.so.5", "libomp.so", "libiomp5.so") if (path / n).is_file()]
        if not found:
            raise RecordError(f"--runtime {spec}: no libomp.so.5, libomp.so or libiomp5.so in it")
        path = found[0]
    if not path.is_file():
        raise RecordError(f"--runtime {spec}: no such file (give llvm-N, intel, or the "
                          "path of an OpenMP runtime library)")
    real = os.path.realpath(path)
    if not _exports(real, "ompt_start_tool") and not _exports(real, "__kmpc_fork_call"):
        raise RecordError(f"--runtime {spec}: {real} is not an LLVM or Intel OpenMP runtime "
                          "(it exports no __kmpc_fork_call)")
    return Runtime(_short_name(real), real)


def _exports(path: str, symbol: str) -> bool:
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            return bool(dynsym and dynsym.get_symbol_by_name(symbol))
    except Exception:  # not an ELF library: the caller says so
        return False


def _soname(path: str) -> str | None:
    try:
        from elftools.elf.dynamic import DynamicSection
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            for s in ELFFile(f).iter_sections():
                if isinstance(s, DynamicSection):
                    for t in s.iter_tags():
                        if t.entry.d_tag == "DT_SONAME":
                            return t.soname
    except Exception:
        return None
    return None


def check_program(program: Path, runtime: Runtime) -> None:
    """A program compiled by a newer compiler than the runtime calls entry
    points the runtime lacks (clang-19's dynamic loops call
    __kmpc_dispatch_deinit, new in libomp 18): the loader would stop it at
    the first such call. Refuse in one line before the run instead."""
    needed = _runtime_imports(str(program))
    if not needed:
        return
    missing = sorted(needed - _dynamic_symbols(runtime.path))
    if missing:
        raise RecordError(
            f"{program} calls {', '.join(missing)}, which the runtime {runtime.name} "
            f"({runtime.path}) lacks: it was compiled for a newer OpenMP runtime (rebuild it "
            "with that runtime's compiler, or record it on a newer runtime)")


def _runtime_imports(path: str) -> set[str]:
    """The OpenMP entry points a program imports (__kmpc_*, omp_*, GOMP_*)."""
    names = set()
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            if dynsym is None:
                return names
            for sym in dynsym.iter_symbols():
                if sym["st_shndx"] == "SHN_UNDEF" and sym.name.startswith(
                        ("__kmpc_", "omp_", "GOMP_", "ompt_")):
                    names.add(sym.name)
    except Exception:  # not ELF (a script): its interpreter decides
        return set()
    return names


def _dynamic_symbols(path: str) -> set[str]:
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        return {s.name for s in dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"} \
            if dynsym else set()


def available() -> list[Runtime]:
    """Every runtime a short name finds on this machine: llvm-N for each
    LLVM libomp under /usr/lib/llvm-*/lib or build/runtimes, then intel."""
    versions = set()
    for pattern in ("/usr/lib/llvm-*/lib/libomp.so.5",
                    str(_paths.build_dir() / "runtimes" / "llvm-*" / "libomp.so.5")):
        for p in glob.glob(pattern):
            m = re.search(r"llvm-(\d+)", p)
            if m:
                versions.add(int(m.group(1)))
    found = []
    for v in sorted(versions):
        found.append(resolve(f"llvm-{v}"))
    try:
        found.append(resolve("intel"))
    except RecordError:
        pass
    return found


def use(runtime: Runtime | None, env: dict, *, gomp: str | None = None):
    """Point the program's loader at `runtime` (and, with `gomp` the path of
    an LLVM libomp, libgomp.so.1 at it: --gomp-compat). Changes `env`;
    returns the cleanup to call after the run."""
    links = {}
    if runtime is not None:
        links.update({"libomp.so.5": runtime.path, "libiomp5.so": runtime.path})
    if gomp is not None:
        links["libgomp.so.1"] = gomp
    if not links:
        return None
    shim = tempfile.mkdtemp(prefix="grainlab-runtime-")
    for name, target in links.items():
        os.symlink(target, os.path.join(shim, name))
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = shim + (":" + old if old else "")
    if runtime is not None and _soname(runtime.path) == "libomp.so.5":
        # the loader matches the program's libomp.so.5 to the preloaded one by
        # soname, even where an RPATH would find another first
        env["LD_PRELOAD"] = " ".join(p for p in (env.get("LD_PRELOAD", ""), runtime.path) if p)

    def cleanup():
        for name in links:
            os.unlink(os.path.join(shim, name))
        os.rmdir(shim)
    return cleanup
