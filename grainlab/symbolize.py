"""Code addresses -> source locations: `file:line (function)`.

A trace's `grainlab.loadmap` metadata lists every loaded object with its load
base and executable address range (docs/trace-format.md). An address inside an
object becomes an offset into that file, looked up in its DWARF line table and
ELF symbol table (pyelftools). `codeptr` values are return addresses, so the
lookup uses address - 1 (the call instruction itself).

Work is per unique address and per binary (parsed once per process, cached by
path + size + mtime), never per grain. Fallbacks, never errors:
  no debug line info                   -> `libomp.so.5+0x1a2b3 (__kmpc_taskloop)`
                                          (the function from the ELF symbol table)
  unreadable / not ELF                 -> `libomp.so.5+0x1a2b3`
  address outside every object         -> `0x7f12...`
  address 0                            -> `?`
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd


@dataclass
class _Binary:
    name: str
    line_addr: np.ndarray       # sorted row addresses of the line table
    line_file: np.ndarray       # object: file basename per row (None at end_sequence)
    line_no: np.ndarray
    func_addr: np.ndarray       # sorted FUNC symbol start addresses
    func_end: np.ndarray
    func_name: np.ndarray

    def lookup(self, offsets: np.ndarray) -> list:
        """offset (already minus 1) -> location string."""
        out = []
        li = np.searchsorted(self.line_addr, offsets, side="right") - 1
        fi = np.searchsorted(self.func_addr, offsets, side="right") - 1
        for off, a, b in zip(offsets.tolist(), li.tolist(), fi.tolist()):
            fn = None
            if b >= 0 and off < self.func_end[b]:
                fn = self.func_name[b]
            if a >= 0 and self.line_file[a] is not None:
                loc = f"{self.line_file[a]}:{self.line_no[a]}"
                out.append(f"{loc} ({fn})" if fn else loc)
            else:
                raw = f"{self.name}+0x{off + 1:x}"
                out.append(f"{raw} ({fn})" if fn else raw)
        return out


def symbolize(codeptrs, loadmap) -> np.ndarray:
    """Location string for every element of `codeptrs` (object array)."""
    codeptrs = np.asarray(codeptrs, dtype=np.uint64)
    uniq, inverse = np.unique(codeptrs, return_inverse=True)
    names = np.array([f"0x{int(c):x}" for c in uniq], dtype=object)
    names[uniq == 0] = "?"
    for entry in loadmap or ():
        try:
            path = str(entry["path"])
            base, lo, hi = int(entry["base"]), int(entry["start"]), int(entry["end"])
        except (KeyError, TypeError, ValueError):
            continue
        inside = (uniq >= np.uint64(lo)) & (uniq < np.uint64(hi))
        if not inside.any():
            continue
        offsets = (uniq[inside].astype(np.int64) - base) - 1
        binary = _load_binary(path)
        if binary is None:
            base_name = os.path.basename(path) or path
            names[inside] = [f"{base_name}+0x{o + 1:x}" for o in offsets.tolist()]
        else:
            names[inside] = binary.lookup(offsets)
    return names[inverse]


def grain_locations(g, trace_meta=None) -> pd.Series:
    """One location string per grain of `g` (index = grain id)."""
    meta = trace_meta if trace_meta is not None else getattr(g, "meta", {}) or {}
    locs = symbolize(g.grains["codeptr"].to_numpy(np.uint64), meta.get("loadmap"))
    return pd.Series(locs, index=g.grains.index, name="location")


def _load_binary(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _parse_binary(path, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=64)
def _parse_binary(path: str, _size: int, _mtime: int):
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
    except ImportError:
        return None
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            funcs = _functions(elf)
            rows = _line_rows(elf)
    except (ELFError, OSError, ValueError, KeyError, IndexError, AttributeError):
        return None
    if not rows and not funcs:
        return None
    rows.sort(key=lambda r: r[0])
    addr = np.array([r[0] for r in rows], np.int64)
    files = np.array([r[1] for r in rows], dtype=object)
    lines = np.array([r[2] for r in rows], np.int64)
    funcs.sort(key=lambda r: r[0])
    return _Binary(os.path.basename(path), addr, files, lines,
                   np.array([r[0] for r in funcs], np.int64),
                   np.array([r[1] for r in funcs], np.int64),
                   np.array([r[2] for r in funcs], dtype=object))


def _functions(elf):
    out = []
    for sec_name in (".symtab", ".dynsym"):
        sec = elf.get_section_by_name(sec_name)
        if sec is None:
            continue
        for sym in sec.iter_symbols():
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"]:
                out.append((int(sym["st_value"]), int(sym["st_value"] + max(sym["st_size"], 1)),
                            sym.name))
        if out:
            break
    return out


def _line_rows(elf):
    """(address, file basename or None at end of sequence, line) rows."""
    if not elf.has_dwarf_info():
        return []
    dwarf = elf.get_dwarf_info()
    rows = []
    for cu in dwarf.iter_CUs():
        prog = dwarf.line_program_for_CU(cu)
        if prog is None:
            continue
        files = prog["file_entry"]
        v5 = prog.header["version"] >= 5
        for entry in prog.get_entries():
            st = entry.state
            if st is None:
                continue
            if st.end_sequence:
                rows.append((st.address, None, 0))
                continue
            idx = st.file if v5 else st.file - 1
            name = files[idx].name if 0 <= idx < len(files) else b"?"
            name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
            rows.append((st.address, os.path.basename(name), st.line))
    return rows
