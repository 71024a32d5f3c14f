"""Inspect a program before recording it: does it exist, can it run, and which
OpenMP runtime does it use? Only LLVM's libomp (and Intel's libiomp5, the same
code) implements OMPT; GCC's libgomp has no tool interface."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import RecordError

LLVM = "libomp"
GNU = "libgomp"
NONE = "none"
UNKNOWN = "unknown"

LIBOMP_CANDIDATES = (
    "/usr/lib/llvm-19/lib/libomp.so.5",
    "/usr/lib/x86_64-linux-gnu/libomp.so.5",
    "/usr/lib/llvm-19/lib/libomp.so",
)


@dataclass
class Program:
    path: Path          # resolved executable
    runtime: str        # LLVM, GNU, NONE or UNKNOWN (scripts, unreadable)
    runtime_path: str | None = None


def find_executable(name: str) -> Path:
    """argv[0] as the shell would find it, or a one-line RecordError."""
    if "/" in name:
        path = Path(name)
        if not path.exists():
            raise RecordError(f"{name}: no such file")
    else:
        found = shutil.which(name)
        if not found:
            raise RecordError(f"{name}: command not found")
        path = Path(found)
    if path.is_dir():
        raise RecordError(f"{name}: is a directory, not a program")
    if not os.access(path, os.X_OK):
        raise RecordError(f"{name}: not executable (chmod +x?)")
    return path


def inspect(name: str) -> Program:
    path = find_executable(name)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"\x7fELF":
        return Program(path, UNKNOWN)  # a script: its interpreter decides
    libs = _linked_libraries(path)
    if libs is None:  # static executable: look at its own symbols
        return Program(path, _runtime_from_symbols(path))
    runtime, where = NONE, None
    for name_, resolved in libs:
        kind = _classify(name_, resolved)
        if kind == LLVM:
            return Program(path, LLVM, resolved)
        if kind == GNU:
            runtime, where = GNU, resolved
    return Program(path, runtime, where)


def _linked_libraries(path: Path):
    """(soname, resolved path) of every shared library the program loads,
    transitively, as the dynamic loader resolves them; None if static."""
    try:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return _needed_from_elf(path)
    text = out.stdout + out.stderr
    if "not a dynamic executable" in text or "statically linked" in text:
        return None
    libs = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if m:
            libs.append((m.group(1), m.group(2)))
        else:
            m = re.match(r"\s*(/\S+)\s+\(", line)
            if m:
                libs.append((os.path.basename(m.group(1)), m.group(1)))
    return libs


def _needed_from_elf(path: Path):
    from elftools.elf.elffile import ELFFile
    from elftools.elf.dynamic import DynamicSection
    with open(path, "rb") as f:
        elf = ELFFile(f)
        dyn = next((s for s in elf.iter_sections() if isinstance(s, DynamicSection)), None)
        if dyn is None:
            return None
        return [(t.needed, t.needed) for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED"]


def _classify(soname: str, resolved: str) -> str | None:
    real = os.path.basename(os.path.realpath(resolved)) if resolved.startswith("/") else soname
    for name in (real, soname):
        if name.startswith(("libomp.", "libomp-", "libiomp5", "libomp5")):
            return LLVM
    if soname.startswith("libgomp.") or real.startswith("libgomp."):
        # A libgomp.so that is really libomp (e.g. LLVM's compatibility symlink).
        if resolved.startswith("/") and _exports(resolved, "__kmpc_fork_call"):
            return LLVM
        return GNU
    return None


def _exports(path: str, symbol: str) -> bool:
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            return bool(dynsym and dynsym.get_symbol_by_name(symbol))
    except Exception:  # unreadable library: not ours to diagnose
        return False


def _runtime_from_symbols(path: Path) -> str:
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            elf = ELFFile(f)
            names = set()
            for section in (".symtab", ".dynsym"):
                s = elf.get_section_by_name(section)
                if s is not None:
                    names.update(sym.name for sym in s.iter_symbols())
    except Exception:
        return UNKNOWN
    if "__kmpc_fork_call" in names:
        return LLVM
    if any(n.startswith("GOMP_") for n in names):
        return GNU
    return NONE


def find_libomp() -> str | None:
    """LLVM's libomp, for running libgomp programs on its GOMP compatibility layer."""
    env = os.environ.get("GRAINLAB_LIBOMP")
    if env:
        return env if os.path.isfile(env) else None
    for candidate in LIBOMP_CANDIDATES:
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None
