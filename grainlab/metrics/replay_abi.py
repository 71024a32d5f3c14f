"""The replay kernel's positional conventions, read from their one definition,
grainlab/native/replay.def (which grainlab/native/replay.c #includes):

    COSTS  cost names in the order of gl_replay's cost vector
    FLAGS  {name: bit} of the node flags (TASK_FIRST, SPAWN)
    EDGES  {name: code} of the edge codes (CONTINUATION, CREATION, OTHER)
    STATS  stat names in the order gl_replay writes them
"""
from __future__ import annotations

import re
from pathlib import Path

DEF_FILE = Path(__file__).resolve().parent.parent / "native" / "replay.def"
_LINE = re.compile(r"^GL_REPLAY_(COST|FLAG|EDGE|STAT)\(\s*(\w+)\s*,\s*(\d+)\s*\)$")


def read(text: str) -> dict:
    """{"COST": {name: int}, "FLAG": ..., "EDGE": ..., "STAT": ...} of the
    definition's lines (the comment aside); refuses anything else, repeated
    names or values, and vector indices that are not 0, 1, 2, ..."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = {"COST": {}, "FLAG": {}, "EDGE": {}, "STAT": {}}
    for line in filter(None, (x.strip() for x in text.splitlines())):
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"{DEF_FILE}: not a GL_REPLAY_...(name, value) line: {line!r}")
        kind, name, value = m.group(1), m.group(2), int(m.group(3))
        if name in out[kind] or value in out[kind].values():
            raise ValueError(f"{DEF_FILE}: {kind} {name} = {value} repeats a name or value")
        out[kind][name] = value
    for kind in ("COST", "STAT"):
        if sorted(out[kind].values()) != list(range(len(out[kind]))):
            raise ValueError(f"{DEF_FILE}: {kind} indices must be 0, 1, 2, ...")
    for name, bit in out["FLAG"].items():
        if bit <= 0 or bit & (bit - 1) or bit > 64:
            raise ValueError(f"{DEF_FILE}: flag {name} = {bit} is not one bit of an int8")
    return out


_DEF = read(DEF_FILE.read_text())
COSTS = tuple(sorted(_DEF["COST"], key=_DEF["COST"].get))
FLAGS = dict(_DEF["FLAG"])
EDGES = dict(_DEF["EDGE"])
STATS = tuple(sorted(_DEF["STAT"], key=_DEF["STAT"].get))
