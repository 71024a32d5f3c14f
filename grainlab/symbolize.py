"""Code addresses -> source locations: `file:line (function, construct)`.

A trace's `grainlab.loadmap` metadata lists every loaded object with its load
base and executable address range (docs/trace-format.md). An address inside an
object becomes an offset into that file, looked up in its DWARF line table and
ELF symbol table (pyelftools). `codeptr` values are return addresses, so the
lookup uses address - 1 (the call instruction itself).

- The file is shown as the shortest path suffix unique among the trace's
  locations (`sparselu.c`, or `a/sparselu.c` and `b/sparselu.c`).
- The function is the programmer's: compiler-outlined bodies
  (`run.omp_outlined.13`, `.omp_task_entry..15`) are named after the function
  they came from; the construct (task, parallel for, taskloop) stands beside it.
- Distinct code addresses never merge: without a line, `file (func+0xOFF)`.

Work is per unique address and per binary (parsed once per process, cached by
path + size + mtime), never per grain. Fallbacks, never errors:
  no debug line info                   -> `libomp.so.5 (__kmpc_taskloop+0x1a3)`
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
    line_file: np.ndarray       # object: full source path per row (None at end_sequence)
    line_no: np.ndarray
    func_addr: np.ndarray       # sorted FUNC symbol start addresses
    func_end: np.ndarray
    func_name: np.ndarray

    def lookup(self, offsets: np.ndarray) -> list:
        """offset (already minus 1) -> (source path or None, line or 0,
        function or None, offset into the function, binary+offset text)."""
        out = []
        li = np.searchsorted(self.line_addr, offsets, side="right") - 1
        fi = np.searchsorted(self.func_addr, offsets, side="right") - 1
        for off, a, b in zip(offsets.tolist(), li.tolist(), fi.tolist()):
            fn, foff = None, 0
            if b >= 0 and off < self.func_end[b]:
                fn, foff = self.func_name[b], off + 1 - int(self.func_addr[b])
            path = self.line_file[a] if a >= 0 else None
            line = int(self.line_no[a]) if path is not None else 0
            out.append((path, line, fn, foff, f"{self.name}+0x{off + 1:x}"))
        return out


def user_function(name):
    """The programmer's function behind a compiler-outlined one: clang names a
    parallel region's body `f.omp_outlined.N` (or `.omp_outlined.` at file
    scope) and a task's body `.omp_task_entry..N`; None when no user name is
    left."""
    if not name:
        return None
    for marker in (".omp_outlined", ".omp_task_entry", ".omp_task_privates_map"):
        i = name.find(marker)
        if i >= 0:
            return name[:i] or None
    return name


def _unique_suffixes(paths) -> dict:
    """path -> its shortest trailing part (whole components) that no other of
    the paths ends with: `sparselu.c` alone, `a/sparselu.c` and
    `b/sparselu.c` when two files share a basename."""
    parts = {p: p.strip("/").split("/") for p in paths}
    out = {}
    for p, comps in parts.items():
        for k in range(1, len(comps) + 1):
            tail = comps[-k:]
            if not any(q != p and other[-k:] == tail for q, other in parts.items()):
                break
        out[p] = "/".join(comps[-k:])
    return out


def format_locations(pieces, constructs=None) -> np.ndarray:
    """Location strings for looked-up pieces (see `_Binary.lookup`; None for
    an address outside every object): `file:line (function[, construct])`,
    the file as the shortest path suffix unique among these pieces; without a
    line, `file (function+0xOFF)` so that distinct code addresses never merge."""
    suffix = _unique_suffixes({p[0] for p in pieces if p is not None and p[0]})
    out = np.empty(len(pieces), dtype=object)
    for i, p in enumerate(pieces):
        construct = constructs[i] if constructs is not None else None
        if p is None:
            out[i] = None
            continue
        path, line, fn, foff, raw = p
        user = user_function(fn)
        if path and line > 0:
            what = ", ".join(x for x in (user or fn, construct) if x)
            out[i] = f"{suffix[path]}:{line}" + (f" ({what})" if what else "")
        elif fn:
            where = suffix[path] if path else raw.split("+")[0]
            # the offset is into the symbol itself (outlined or not)
            what = ", ".join(x for x in (f"{fn}+0x{foff:x}", construct) if x)
            out[i] = f"{where} ({what})"
        else:
            out[i] = raw + (f" ({construct})" if construct else "")
    return out


def symbolize(codeptrs, loadmap, constructs=None) -> np.ndarray:
    """Location string for every element of `codeptrs` (object array).
    `constructs` (optional, one per element): the construct to name beside
    the function (task, parallel for, taskloop)."""
    codeptrs = np.asarray(codeptrs, dtype=np.uint64)
    if constructs is None:
        codes, names = locate(codeptrs, loadmap)
    else:
        cons_codes, cons_names = pd.factorize(np.asarray(constructs, dtype=object).astype(str))
        codes, names = locate(codeptrs, loadmap, cons_codes, list(cons_names))
    return names[codes]


def locate(codeptrs, loadmap, construct_codes=None, construct_names=None):
    """(codes, names): the location of element i is names[codes[i]]; names
    are unique, in order of first appearance. A location is a (code address,
    construct) pair looked up once, so a million grains cost as much as
    their few distinct addresses (no per-element strings)."""
    codeptrs = np.asarray(codeptrs, dtype=np.uint64)
    cp_codes, cp_uniq = pd.factorize(codeptrs)
    cp_uniq = np.asarray(cp_uniq, dtype=np.uint64)
    if construct_codes is None:
        inverse, uniq, ucons = cp_codes, cp_uniq, None
    else:
        # the pair as one integer (a MultiIndex of a million pairs costs half
        # a second to build)
        k = max(len(construct_names), 1)
        inverse, pairs = pd.factorize(cp_codes.astype(np.int64) * k + construct_codes)
        uniq = cp_uniq[pairs // k]
        ucons = np.asarray(construct_names, dtype=object)[pairs % k]
    names = _pair_names(uniq, ucons, loadmap)
    # distinct pairs can share a string (two addresses of one line)
    same, unique_names = pd.factorize(names)
    return same[inverse], np.asarray(unique_names, dtype=object)


def _pair_names(uniq, ucons, loadmap) -> np.ndarray:
    """The location string of each distinct (address, construct) pair."""
    pieces = [None] * len(uniq)
    for entry in loadmap or ():
        try:
            path = str(entry["path"])
            base, lo, hi = int(entry["base"]), int(entry["start"]), int(entry["end"])
        except (KeyError, TypeError, ValueError):
            continue
        inside = np.flatnonzero((uniq >= np.uint64(lo)) & (uniq < np.uint64(hi)))
        if not len(inside):
            continue
        offsets = (uniq[inside].astype(np.int64) - base) - 1
        binary = _load_binary(path)
        if binary is None:
            base_name = os.path.basename(path) or path
            for j, o in zip(inside.tolist(), offsets.tolist()):
                pieces[j] = (None, 0, None, 0, f"{base_name}+0x{o + 1:x}")
        else:
            for j, piece in zip(inside.tolist(), binary.lookup(offsets)):
                pieces[j] = piece
    names = format_locations(pieces, ucons)
    for j in np.flatnonzero(pd.isna(names)):
        c = f" ({ucons[j]})" if ucons is not None and ucons[j] else ""
        names[j] = ("?" if uniq[j] == 0 else f"0x{int(uniq[j]):x}") + c
    return names


def as_categorical(locations) -> pd.Categorical:
    """Location strings as a Categorical (few distinct locations, a million
    grains: codes instead of a million strings through every group-by)."""
    values = np.asarray(locations, dtype=object)
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))


def _image_of(threads, meta: dict):
    """The image (`meta["images"]`) that ran each thread, or None for one image."""
    images = meta.get("images") if isinstance(meta.get("images"), list) else None
    if not images:
        return None, None
    firsts = np.array([int(i.get("first_thread", 0)) if isinstance(i, dict) else 0
                       for i in images])
    which = np.clip(np.searchsorted(firsts, np.asarray(threads), side="right") - 1,
                    0, len(images) - 1)
    return images, which


def symbolize_on_threads(codeptrs, threads, meta: dict, constructs=None) -> np.ndarray:
    """symbolize() with the load map of the image that ran each element: a
    run that exec()s is one trace of several images (`meta["images"]`, each
    with its own load map and its first thread), whose code addresses mean
    nothing in another image's map. One image: the trace's load map."""
    images, which = _image_of(threads, meta)
    if images is None:
        return symbolize(codeptrs, meta.get("loadmap"), constructs)
    codeptrs = np.asarray(codeptrs, dtype=np.uint64)
    cons = None if constructs is None else np.asarray(constructs, dtype=object)
    out = np.empty(len(codeptrs), dtype=object)
    for k in np.unique(which):
        m = which == k
        image = images[k] if isinstance(images[k], dict) else {}
        out[m] = symbolize(codeptrs[m], image.get("loadmap"), None if cons is None else cons[m])
    return out


CONSTRUCTS = ["task", "parallel for", "taskloop"]


def grain_locations(g, trace_meta=None) -> pd.Series:
    """One location string per grain of `g` (index = grain id; categorical), with the
    construct beside the function. A loop instance has one location: chunks
    whose event carried no return address (libomp passes none on some
    threads) take the one another chunk of the same instance has."""
    meta = trace_meta if trace_meta is not None else getattr(g, "meta", {}) or {}
    gr = g.grains
    codeptr = gr["codeptr"].to_numpy(np.uint64)
    is_chunk = (gr["kind"] == "chunk").to_numpy(bool) if len(gr) else np.zeros(0, bool)
    if is_chunk.any() and "loop" in gr.columns:
        loop = gr["loop"].to_numpy()[is_chunk]
        best = pd.Series(codeptr[is_chunk]).groupby(loop, dropna=False).transform("max")
        codeptr = codeptr.copy()
        codeptr[is_chunk] = np.where(codeptr[is_chunk] == 0, best.to_numpy(np.uint64),
                                     codeptr[is_chunk])
    construct = np.where(is_chunk, 1, 0).astype(np.int64)
    if "iterations" in gr.columns:
        construct[(~is_chunk) & (gr["iterations"].to_numpy() >= 0)] = 2
    images, which = _image_of(gr["thread"].to_numpy(), meta) if "thread" in gr.columns \
        else (None, None)
    if images is None:
        codes, names = locate(codeptr, meta.get("loadmap"), construct, CONSTRUCTS)
        cat = pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))
    else:
        cat = as_categorical(symbolize_on_threads(
            codeptr, gr["thread"].to_numpy(), meta, np.asarray(CONSTRUCTS, object)[construct]))
    return pd.Series(cat, index=gr.index, name="location")


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
        paths = _file_paths(cu, prog)
        v5 = prog.header["version"] >= 5
        for entry in prog.get_entries():
            st = entry.state
            if st is None:
                continue
            if st.end_sequence:
                rows.append((st.address, None, 0))
                continue
            idx = st.file if v5 else st.file - 1
            rows.append((st.address, paths[idx] if 0 <= idx < len(paths) else "?", st.line))
    return rows


def _text(v) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _file_paths(cu, prog) -> list:
    """Full path of every file entry of a line program (DWARF 4 and 5)."""
    top = cu.get_top_DIE()
    comp = top.attributes.get("DW_AT_comp_dir")
    comp_dir = _text(comp.value) if comp else ""
    dirs = [_text(d) for d in prog["include_directory"]]
    v5 = prog.header["version"] >= 5
    out = []
    for fe in prog["file_entry"]:
        di = fe.dir_index if v5 else fe.dir_index - 1
        d = dirs[di] if 0 <= di < len(dirs) else comp_dir
        out.append(os.path.normpath(os.path.join(comp_dir, d, _text(fe.name))))
    return out
