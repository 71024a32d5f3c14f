"""Code addresses -> source locations: `file:line (function, construct)`.

A trace's `grainlab.loadmap` metadata lists every loaded object with its load
base and executable address range (docs/trace-format.md). An address inside an
object becomes an offset into that file, looked up in its DWARF line table,
its DWARF subprogram / inlined-subroutine records and its ELF symbol table
(pyelftools). `codeptr` values are return addresses, so the lookup uses
address - 1 (the call instruction itself).

- The file is shown as the shortest path suffix unique among the trace's
  locations (`sparselu.c`, or `a/sparselu.c` and `b/sparselu.c`).
- The function is the programmer's, at any depth of nesting: compiler-outlined
  bodies (`run.omp_outlined.13`, `.omp_task_entry..15`, the body of a task
  created inside another task, `__omp_offloading_..._f_l12`) are named after
  the function whose source text holds them (DWARF: the function declared
  last before that line in that file; without DWARF records, the symbol's
  prefix: `run` of `run.omp_outlined.13`). The construct (task, parallel for,
  taskloop) stands beside it.
- A function the compiler inlined keeps its name, with its caller beside it
  (`kernel.c:42 (producer, inlined into main, task)`), from DWARF's
  DW_TAG_inlined_subroutine records as perf and gdb read them.
- Distinct code addresses never merge: without a line, `file (func+0xOFF)`,
  or `file (function, binary+0xADDR)` when the symbol is not the
  programmer's function (an outlined body, an inlined helper).

Work is per unique address and per binary (parsed once per process, cached by
path + size + mtime; DWARF records only of the compile units holding a looked-up
address), never per grain. Fallbacks, never errors:
  no debug line info                   -> `libomp.so.5 (__kmpc_taskloop+0x1a3)`
                                          (the function from the ELF symbol table)
  unreadable / not ELF                 -> `libomp.so.5+0x1a2b3`
  address outside every object         -> `0x7f12...`
  address 0                            -> `?`
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pandas as pd


class _Piece(NamedTuple):
    """What one code address is: its source file and line (None, 0 when
    unknown), the ELF symbol it is in and the offset into it, `binary+0xOFF`,
    the programmer's function (None: unknown) and the function it was inlined
    into (None: not inlined)."""
    path: str | None
    line: int
    symbol: str | None
    symbol_offset: int
    raw: str
    function: str | None = None
    caller: str | None = None


@dataclass
class _Binary:
    name: str
    line_addr: np.ndarray       # sorted row addresses of the line table
    line_file: np.ndarray       # object: full source path per row (None at end_sequence)
    line_no: np.ndarray
    func_addr: np.ndarray       # sorted FUNC symbol start addresses
    func_end: np.ndarray
    func_name: np.ndarray
    path: str = ""
    cu_lo: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cu_hi: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cu_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cus: dict = field(default_factory=dict)   # CU offset -> _Scopes (parsed on demand)
    files: frozenset = frozenset()            # every source file its line programs name
    spans: dict | None = None                 # path -> symbols' line spans (made on demand)

    def lookup(self, offsets: np.ndarray) -> list:
        """offset (already minus 1) -> _Piece."""
        out = []
        li = np.searchsorted(self.line_addr, offsets, side="right") - 1
        fi = np.searchsorted(self.func_addr, offsets, side="right") - 1
        scopes = self._scopes_of(offsets)
        for off, a, b, sc in zip(offsets.tolist(), li.tolist(), fi.tolist(), scopes):
            sym, soff = None, 0
            if b >= 0 and off < self.func_end[b]:
                sym, soff = self.func_name[b], off + 1 - int(self.func_addr[b])
            path = self.line_file[a] if a >= 0 else None
            line = int(self.line_no[a]) if path is not None else 0
            fn, caller = sc.function_at(off, path, line, self.enclosing_by_symbols) \
                if sc is not None else (None, None)
            if fn is None:
                fn, caller = user_function(sym), None
                if fn is None and is_outlined(sym):
                    fn = self.enclosing_by_symbols(path, line)
            out.append(_Piece(path, line, sym, soff, f"{self.name}+0x{off + 1:x}", fn, caller))
        return out

    def enclosing_by_symbols(self, path, line):
        """The programmer's function whose text holds `path:line`, for debug
        info without declaration lines (-gline-tables-only): each
        non-outlined symbol spans the lines of its own file its code has;
        the narrowest span holding the line wins. None when none does."""
        if not path or not line:
            return None
        if self.spans is None:
            self.spans = self._symbol_spans()
        lo, hi, names = self.spans.get(path, (None, None, None))
        if lo is None:
            return None
        hold = np.flatnonzero((lo <= line) & (line <= hi))
        return names[hold[np.argmin(hi[hold] - lo[hold])]] if len(hold) else None

    def _symbol_spans(self) -> dict:
        out = {}
        for a, b, name in zip(self.func_addr.tolist(), self.func_end.tolist(),
                              self.func_name.tolist()):
            if not name or is_outlined(name):
                continue
            i, j = np.searchsorted(self.line_addr, [a, b])     # rows of its code
            files, lines = self.line_file[i:j], self.line_no[i:j]
            mine = lines > 0
            if not mine.any():
                continue
            home = files[np.argmax(mine)]       # its first row's file
            mine &= files == home
            if home is None or not mine.any():
                continue
            out.setdefault(home, []).append((int(lines[mine].min()), int(lines[mine].max()), name))
        return {p: (np.array([x[0] for x in v], np.int64), np.array([x[1] for x in v], np.int64),
                    [x[2] for x in v]) for p, v in out.items()}

    def _scopes_of(self, offsets: np.ndarray) -> list:
        """The parsed DWARF scopes of the compile unit holding each offset
        (None: no unit holds it); each unit is parsed once, when first asked."""
        out = [None] * len(offsets)
        if not len(self.cu_lo) or not len(offsets):
            return out
        inside = (self.cu_lo[None, :] <= offsets[:, None]) & (offsets[:, None] < self.cu_hi[None, :])
        has = inside.any(axis=1)
        which = np.where(has, self.cu_offset[inside.argmax(axis=1)], -1)
        missing = sorted({int(c) for c in which[has]} - set(self.cus))
        if missing:
            self.cus.update(_parse_cus(self.path, missing))
        return [self.cus.get(int(c)) if c >= 0 else None for c in which.tolist()]


_OUTLINED = re.compile(r"\.omp[._]|\._omp_(?:fn|cpyfn)\.")
_OFFLOAD = re.compile(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_(?P<fn>.+)_l\d+(?:\..*)?$")


def user_function(name):
    """The programmer's function behind a compiler-outlined one, from the
    symbol's name alone: clang names a parallel region's body
    `f.omp_outlined.N` (or `.omp_outlined.` at file scope), a task's body
    `.omp_task_entry..N` and a target region `__omp_offloading_<ids>_f_lN`;
    GCC `f._omp_fn.N`. None when no user name is left."""
    if not name:
        return None
    m = _OFFLOAD.match(name)
    if m:
        return user_function(m.group("fn"))
    m = _OUTLINED.search(name)
    if m:
        return name[:m.start()] or None
    return name


def is_outlined(name) -> bool:
    """Whether a function name is the compiler's, not the programmer's."""
    return bool(name) and user_function(name) != name


class _Scopes:
    """The DWARF records of one compile unit that name code: every
    subprogram and inlined subroutine with its address ranges (an address's
    frames, outermost first), and every function the programmer wrote with
    the line it is declared at (the function whose text holds a line)."""

    def __init__(self, lo, hi, scope, depth, names, artificial, inlined, call_pos, decl_pos,
                 functions):
        self.lo, self.hi, self.scope = lo, hi, scope        # one row per address range
        self.depth, self.names, self.artificial = depth, names, artificial   # per scope
        self.inlined, self.call_pos, self.decl_pos = inlined, call_pos, decl_pos
        # path -> (sorted declaration lines, names)
        self.functions = functions

    def enclosing(self, path, line, fallback=None):
        """The programmer's function whose source text holds `path:line`: the
        one declared last at or before that line in that file (C functions do
        not nest; an outlined body's text lies inside its function's).
        Without declaration lines for that file: `fallback(path, line)`."""
        if not path or not line:
            return None
        if path not in self.functions:
            return fallback(path, line) if fallback else None
        lines, names = self.functions[path]
        i = int(np.searchsorted(lines, line, side="right")) - 1
        return names[i] if i >= 0 else None

    def function_at(self, off, path, line, fallback=None):
        """(function, inlined-into caller or None) of the code at `off`
        whose line-table row is `path:line`; (None, None) when the unit has
        no record of it."""
        hit = np.flatnonzero((self.lo <= off) & (off < self.hi))
        if not len(hit):
            return None, None
        chain = self.scope[hit]
        chain = chain[np.argsort(self.depth[chain], kind="stable")]   # outermost first
        inner = int(chain[-1])
        if not self.artificial[inner]:
            fn, caller = self.names[inner], None
            if self.inlined[inner]:
                caller = self.enclosing(*self.call_pos[inner], fallback)
                if caller is None and len(chain) > 1:
                    outer = self.names[int(chain[-2])]
                    caller = user_function(outer)
            return fn, (caller if caller != fn else None)
        # compiler-made code (an outlined body, at any depth of nesting): the
        # function whose text holds its line, else the frames' own positions
        positions = [(path, line)]
        for s in chain[::-1].tolist():
            positions.append(self.call_pos[s] if self.inlined[s] else self.decl_pos[s])
        for p in positions:
            fn = self.enclosing(*p, fallback)
            if fn is not None:
                return fn, None
        for s in chain[::-1].tolist():
            fn = user_function(self.names[s])
            if fn is not None:
                return fn, None
        return None, None


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
    """Location strings for looked-up pieces (`_Piece`s; None for an address
    outside every object): `file:line (function[, inlined into caller][,
    construct])`, the file as the shortest path suffix unique among these
    pieces. Without a line, distinct code addresses must still not merge:
    `file (symbol+0xOFF, ...)` when the symbol is the programmer's function,
    else `file (function, binary+0xADDR, ...)`."""
    suffix = _unique_suffixes({p.path for p in pieces if p is not None and p.path})
    out = np.empty(len(pieces), dtype=object)
    for i, p in enumerate(pieces):
        construct = constructs[i] if constructs is not None else None
        if p is None:
            out[i] = None
            continue
        inlined = f"inlined into {p.caller}" if p.caller else None
        if p.path and p.line > 0:
            what = ", ".join(x for x in (p.function, inlined, construct) if x)
            out[i] = f"{suffix[p.path]}:{p.line}" + (f" ({what})" if what else "")
            continue
        where = suffix[p.path] if p.path else p.raw.split("+")[0]
        if p.symbol and p.function == p.symbol and not p.caller:
            # the offset is into the programmer's own function
            what = (f"{p.symbol}+0x{p.symbol_offset:x}", construct)
        elif p.function:
            what = (p.function, inlined, p.raw, construct)
        elif p.path:
            what = (p.raw, construct)
        else:
            out[i] = p.raw + (f" ({construct})" if construct else "")
            continue
        out[i] = f"{where} ({', '.join(x for x in what if x)})"
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
                pieces[j] = _Piece(None, 0, None, 0, f"{base_name}+0x{o + 1:x}")
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


CONSTRUCTS = ["task", "parallel for", "taskloop", "for"]


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
        codeptr = codeptr.copy()
        codeptr[is_chunk] = _one_per_loop(gr["loop"].array[is_chunk], codeptr[is_chunk])
    construct = np.where(is_chunk, 1, 0).astype(np.int64)
    if is_chunk.any():
        construct[is_chunk] = np.where(_combined_loops(g, meta, codeptr[is_chunk], is_chunk),
                                       1, 3)
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


def _combined_loops(g, meta, loop_codeptr, is_chunk) -> np.ndarray:
    """Per chunk: is its loop a combined `#pragma omp parallel for` (the
    loop's call on the region's fork line, or on the `for` statement right
    under it), rather than a `for` inside a separate `#pragma omp parallel`
    (further down)? A `parallel` whose only statement is a `for` on the next
    line is the same thing and named so. Without line information for both,
    or in a run of several images, it stays `parallel for`."""
    combined = np.ones(len(loop_codeptr), bool)
    ctx = getattr(g, "contexts", None)
    if ctx is None or "region_codeptr" not in ctx.columns or "parent" not in g.grains.columns \
            or isinstance(meta.get("images"), list):
        return combined
    G = len(g.grains)
    parent = g.grains["parent"].to_numpy(np.int64)[is_chunk] - G
    ok = (parent >= 0) & (parent < len(ctx))
    region_cp = np.zeros(len(parent), np.uint64)
    region_cp[ok] = ctx["region_codeptr"].to_numpy(np.uint64)[parent[ok]]
    pairs, inverse = np.unique(np.stack([np.asarray(loop_codeptr, np.uint64), region_cp]),
                               axis=1, return_inverse=True)
    names = symbolize(pairs.ravel(), meta.get("loadmap"))
    lines = [LOCATION.match(str(n)) for n in names]
    where = [(m.group("file"), m.group("line")) if m else None for m in lines]
    k = pairs.shape[1]
    # the loop's call is on the pragma's line or the `for` statement's under it
    same = np.array([where[i] is None or where[k + i] is None
                     or (where[i][0] == where[k + i][0]
                         and 0 <= int(where[i][1]) - int(where[k + i][1]) <= 1)
                     for i in range(k)], bool)      # a few distinct loops, not grains
    return same[np.asarray(inverse).ravel()]


def _one_per_loop(loop, codeptr) -> np.ndarray:
    """Each chunk's code address made its loop instance's: the address most
    of the instance's chunks carry (their threads' WORK_BEGIN), ignoring 0
    (libomp passes none on some threads); ties go to the lowest address. A
    loop instance is thus one location, whatever its threads were doing when
    they asked for chunks."""
    codes = pd.factorize(loop, use_na_sentinel=False)[0]
    codeptr = np.asarray(codeptr, np.uint64)
    nz = codeptr != 0
    if not nz.any():
        return codeptr
    counts = pd.DataFrame({"loop": codes[nz], "cp": codeptr[nz]}).value_counts().reset_index()
    counts = counts.sort_values(["loop", "count", "cp"], ascending=[True, False, True],
                                kind="stable")
    best = counts.drop_duplicates("loop")
    table = np.zeros(int(codes.max()) + 1, np.uint64)     # no float: 64-bit addresses
    table[best["loop"].to_numpy(np.int64)] = best["cp"].to_numpy(np.uint64)
    return table[codes]


# ---------------------------------------------------------------------------
# Source lines, from files named in the trace's debug information only


LOCATION = re.compile(r"^(?P<file>[^:()]+):(?P<line>\d+)\b")


def source_files(loadmap) -> frozenset:
    """Absolute paths of the source files named in the debug information of
    every object in the trace's load map (the line programs read once per
    binary, with its symbols: `_parse_binary`)."""
    out = set()
    for obj in loadmap or ():
        path = obj.get("path") if isinstance(obj, dict) else None
        b = _load_binary(path) if path else None
        if b is not None:
            out |= b.files
    return frozenset(out)


def source_lines(location: str, loadmap, context: int = 4):
    """(path, first line number, [lines], highlighted line number) around a
    location string (`dir/file.c:28 (func)`), or None when its file is not
    named by the debug info or is unreadable. The file is the one of those
    whose path ends with the location's file part: nothing else is ever
    opened, so no URL or input can name a path."""
    m = LOCATION.match(str(location))
    if not m:
        return None
    want, line = m.group("file"), int(m.group("line"))
    candidates = sorted(p for p in source_files(loadmap)
                        if p == want or p.endswith("/" + want.lstrip("/")))
    for path in candidates:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read().splitlines()
        except OSError:
            continue
        lo = max(line - context, 1)
        return path, lo, text[lo - 1:line + context], line
    return None


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
            rows, units, sources = _line_rows(elf)
    except (ELFError, OSError, ValueError, KeyError, IndexError, AttributeError):
        return None
    if not rows and not funcs:
        return None
    # an end of sequence before a row at the same address (the next sequence's start)
    rows.sort(key=lambda r: (r[0], r[1] is not None))
    addr = np.array([r[0] for r in rows], np.int64)
    files = np.array([r[1] for r in rows], dtype=object)
    lines = np.array([r[2] for r in rows], np.int64)
    funcs.sort(key=lambda r: r[0])
    return _Binary(os.path.basename(path), addr, files, lines,
                   np.array([r[0] for r in funcs], np.int64),
                   np.array([r[1] for r in funcs], np.int64),
                   np.array([r[2] for r in funcs], dtype=object),
                   path=path,
                   cu_lo=np.array([u[0] for u in units], np.int64),
                   cu_hi=np.array([u[1] for u in units], np.int64),
                   cu_offset=np.array([u[2] for u in units], np.int64),
                   files=frozenset(sources))


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
    """(address, full source path or None at end of sequence, line) rows,
    (low, high, CU offset) of every address range of every compile unit, and
    the full path of every file the line programs name."""
    if not elf.has_dwarf_info():
        return [], [], set()
    dwarf = elf.get_dwarf_info()
    rows, units, files = [], [], set()
    for cu in dwarf.iter_CUs():
        try:
            units.extend((lo, hi, cu.cu_offset) for lo, hi in _ranges(dwarf, cu.get_top_DIE(), 0))
        except Exception:   # noqa: BLE001  (odd range data: the unit just names no functions)
            pass
        prog = dwarf.line_program_for_CU(cu)
        if prog is None:
            continue
        paths = _file_paths(cu, prog)
        files.update(paths)
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
    return rows, units, files


def _ranges(dwarf, die, cu_base: int) -> list:
    """[(low, high)] of a DIE's code: DW_AT_low_pc/high_pc or DW_AT_ranges
    (DWARF 4 .debug_ranges or 5 .debug_rnglists); [] when it has none."""
    a = die.attributes
    if "DW_AT_low_pc" in a and "DW_AT_high_pc" in a:
        lo = int(a["DW_AT_low_pc"].value)
        hi_attr = a["DW_AT_high_pc"]
        hi = int(hi_attr.value)
        if not hi_attr.form.startswith("DW_FORM_addr"):
            hi += lo          # DWARF 4+: a length
        return [(lo, hi)] if hi > lo else []
    if "DW_AT_ranges" not in a:
        return []
    from elftools.dwarf.ranges import BaseAddressEntry
    lists = dwarf.range_lists()
    if lists is None:
        return []
    if "DW_AT_low_pc" in a:
        cu_base = int(a["DW_AT_low_pc"].value)
    base, out = cu_base, []
    for e in lists.get_range_list_at_offset(int(a["DW_AT_ranges"].value), cu=die.cu):
        if isinstance(e, BaseAddressEntry):
            base = int(e.base_address)
        elif e.is_absolute:
            out.append((int(e.begin_offset), int(e.end_offset)))
        else:
            out.append((base + int(e.begin_offset), base + int(e.end_offset)))
    return [(lo, hi) for lo, hi in out if hi > lo]


_FRAMES = ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine")
_INSIDE = ("DW_TAG_lexical_block", "DW_TAG_namespace")


# pyelftools reads a compile unit's DIEs at ~6 us per byte of .debug_info
# (a 440 KB C++ unit with <regex>: 62k DIEs, ~2.5 s); a unit larger than this
# is not read (its addresses are named from the symbol table: no inlining,
# outlined bodies by their symbol's prefix). GRAINLAB_DWARF_UNIT_MAX_BYTES.
DEFAULT_UNIT_MAX_BYTES = 2 << 20


def _unit_max_bytes() -> int:
    text = os.environ.get("GRAINLAB_DWARF_UNIT_MAX_BYTES", "").strip()
    try:
        return int(text) if text else DEFAULT_UNIT_MAX_BYTES
    except ValueError:
        return DEFAULT_UNIT_MAX_BYTES


def _parse_cus(path: str, offsets) -> dict:
    """CU offset -> _Scopes for the compile units at `offsets` (None for one
    that cannot be read, or is too large to: its addresses fall back to the
    symbol table)."""
    out = {int(o): None for o in offsets}
    limit = _unit_max_bytes()
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            dwarf = ELFFile(f).get_dwarf_info()
            for o in out:
                try:
                    cu = dwarf.get_CU_at(o)
                    if cu.header.unit_length <= limit:
                        out[o] = _cu_scopes(dwarf, cu)
                except Exception:   # noqa: BLE001  (odd DWARF: never an error, see above)
                    out[o] = None
    except Exception:   # noqa: BLE001
        pass
    return out


def _cu_scopes(dwarf, cu) -> _Scopes:
    """Walk one compile unit's DIE tree (subprograms, their lexical blocks and
    inlined subroutines; namespaces): see _Scopes."""
    top = cu.get_top_DIE()
    cu_base = int(top.attributes["DW_AT_low_pc"].value) if "DW_AT_low_pc" in top.attributes else 0
    paths_of = {}

    def file_path(unit, index):
        if unit.cu_offset not in paths_of:
            prog = dwarf.line_program_for_CU(unit)
            paths_of[unit.cu_offset] = (_file_paths(unit, prog),
                                        prog.header["version"] >= 5) if prog else ([], True)
        paths, v5 = paths_of[unit.cu_offset]
        i = index if v5 else index - 1
        return paths[i] if 0 <= i < len(paths) else None

    lo, hi, scope = [], [], []
    depth, names, artificial, inlined, call_pos, decl_pos = [], [], [], [], [], []
    functions = []      # (path, line, name)

    def visit(die, level):
        for child in die.iter_children():
            tag = child.tag
            if tag in _INSIDE:
                visit(child, level)
                continue
            if tag not in _FRAMES:
                continue
            name, art, decl = _describe(child)
            pos = (file_path(decl[0], decl[1]), decl[2]) if decl else (None, 0)
            a = child.attributes
            if (tag == "DW_TAG_subprogram" and name and not art and not is_outlined(name)
                    and "DW_AT_declaration" not in a and pos[0] and pos[1]):
                functions.append((pos[0], pos[1], name))
            ranges = _ranges(dwarf, child, cu_base)
            if not ranges:
                continue          # no code of its own here (abstract, declaration)
            k = len(depth)
            for r in ranges:
                lo.append(r[0])
                hi.append(r[1])
                scope.append(k)
            depth.append(level)
            names.append(name)
            artificial.append(bool(art or not name or is_outlined(name)))
            inl = tag == "DW_TAG_inlined_subroutine"
            inlined.append(inl)
            call = (file_path(child.cu, int(a["DW_AT_call_file"].value)),
                    int(a["DW_AT_call_line"].value)) \
                if inl and "DW_AT_call_file" in a and "DW_AT_call_line" in a else (None, 0)
            call_pos.append(call)
            decl_pos.append(pos)
            visit(child, level + 1)

    visit(top, 0)
    by_path = {}
    for p, line, name in sorted(functions, key=lambda f: (f[0], f[1])):
        by_path.setdefault(p, ([], []))
        by_path[p][0].append(line)
        by_path[p][1].append(name)
    by_path = {p: (np.array(ls, np.int64), ns) for p, (ls, ns) in by_path.items()}
    return _Scopes(np.array(lo, np.int64), np.array(hi, np.int64), np.array(scope, np.int64),
                   np.array(depth, np.int64), names, np.array(artificial, bool), inlined,
                   call_pos, decl_pos, by_path)


def _describe(die):
    """(name, artificial, (unit, decl_file, decl_line) or None) of a
    subprogram / inlined subroutine, through DW_AT_abstract_origin and
    DW_AT_specification (an inlined instance names its function there)."""
    name, art, decl = None, False, None
    for _ in range(8):
        a = die.attributes
        if name is None and "DW_AT_name" in a:
            name = _text(a["DW_AT_name"].value)
        art = art or bool(a.get("DW_AT_artificial") and a["DW_AT_artificial"].value)
        if decl is None and "DW_AT_decl_file" in a and "DW_AT_decl_line" in a:
            decl = (die.cu, int(a["DW_AT_decl_file"].value), int(a["DW_AT_decl_line"].value))
        ref = next((k for k in ("DW_AT_abstract_origin", "DW_AT_specification") if k in a), None)
        if ref is None:
            break
        die = die.get_DIE_from_attribute(ref)
    return name, art, decl


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
