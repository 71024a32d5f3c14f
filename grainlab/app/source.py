"""Source lines for a grain's location, from files named in the trace's debug
information only.

The set of readable files is built from the DWARF line programs of the
objects in the trace's load map (the same binaries `grainlab.symbolize`
reads). A location string (`dir/file.c:28 (func)`) selects a line; the file is
the one of those whose path ends with the location's file part. Nothing
else is ever opened: no URL or input can name a path.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

LOCATION = re.compile(r"^(?P<file>[^:()]+):(?P<line>\d+)\b")


@lru_cache(maxsize=16)
def _dwarf_files(path: str, _size: int, _mtime: int) -> frozenset:
    try:
        from elftools.elf.elffile import ELFFile
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if not elf.has_dwarf_info():
                return frozenset()
            dwarf = elf.get_dwarf_info()
            out = set()
            for cu in dwarf.iter_CUs():
                top = cu.get_top_DIE()
                comp = top.attributes.get("DW_AT_comp_dir")
                comp_dir = comp.value.decode(errors="replace") if comp else ""
                lp = dwarf.line_program_for_CU(cu)
                if lp is None:
                    continue
                dirs = [d.decode(errors="replace") if isinstance(d, bytes) else str(d)
                        for d in lp["include_directory"]]
                v5 = lp.header.version >= 5
                for fe in lp["file_entry"]:
                    name = fe.name.decode(errors="replace") if isinstance(fe.name, bytes) \
                        else str(fe.name)
                    di = fe.dir_index if v5 else fe.dir_index - 1
                    d = dirs[di] if 0 <= di < len(dirs) else comp_dir
                    full = os.path.normpath(os.path.join(comp_dir, d, name))
                    out.add(full)
            return frozenset(out)
    except Exception:  # an unreadable or odd object offers no source: never an error
        return frozenset()


def source_files(loadmap) -> frozenset:
    """Absolute paths of the source files named in the debug information of
    every object in the trace's load map."""
    out = set()
    for obj in loadmap or ():
        path = obj.get("path") if isinstance(obj, dict) else None
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        out |= _dwarf_files(path, st.st_size, st.st_mtime_ns)
    return frozenset(out)


def lines_around(location: str, loadmap, context: int = 4):
    """(path, first line number, [lines], highlighted line number) for the
    location, or None when its file is not named by the debug info or unreadable."""
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
