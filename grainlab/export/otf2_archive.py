"""OTF2 archive of a grain graph, for Vampir and the Score-P tools
(`grainlab export TRACE --otf2 DIR`; docs/exports.md).

Written with the OTF2 library's own Python bindings (`import otf2`: Debian's
python3-otf2, which `make setup` makes importable in .venv through a .pth
file; see docs/exports.md), never by hand. Layout:

- one location group (the process: command and pid) on one system-tree node
  (the host); one location (CPU thread) per collector thread, "thread N".
- regions (paradigm OpenMP):
  * one per source location of the grains (role `task`, `task untied`, or
    `loop` for chunks; source file and line filled in when the location
    reads `file:line (function)`); a grain without one is named by its kind;
  * the code of the initial and implicit tasks themselves ("initial task
    code", "implicit task code") and the implicit task as a whole
    ("parallel region (implicit task)", role `parallel`; "program (initial
    task)");
  * the runtime: `create` (task creation), the joins by kind (`taskwait`,
    `taskgroup`, `barrier`, `region_end`, `program_end`), `bookkeeping`
    (obtaining the next chunk) and `idle` (a thread in a parallel region
    that runs nothing of the graph: waiting for work or in a team barrier).
- events per location, in time order and properly nested: Enter/Leave for
  every fragment and chunk node of the graph that thread ran (zero-length
  ones included), for the runtime nodes of that thread, for each
  implicit/initial task, and for idle gaps; OmpTaskCreate (task id = grain
  index) when a fork starts, OmpTaskComplete when the task's last fragment
  ends. Timestamps are the trace's ns (timer resolution 1e9).

Intervals of one thread nest by construction (a child task runs inside its
parent's join or creation); where the recorded times disagree by a few ns an
inner interval is cut at its parent's end, and `clipped` counts them.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np

from ..errors import GrainlabError
from ._labels import source_column

# What the archive's parts are called inside DIR (the anchor file is DIR/traces.otf2).
ARCHIVE_NAME = "traces"
ARCHIVE_FILES = {"traces.otf2", "traces.def", "traces"}

# interval kinds, in the order ties at one start time are entered (outermost first)
K_CONTEXT, K_RUNTIME, K_GRAIN = 0, 1, 2
_LOCATION = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+)\b")


def import_otf2():
    """The OTF2 bindings, or a one-line error saying how to get them."""
    try:
        import otf2
        return otf2
    except ImportError as e:
        raise GrainlabError(
            f"--otf2 needs the OTF2 library's Python bindings, which this Python cannot import "
            f"({e}): on Debian/Ubuntu `apt-get install python3-otf2 otf2-tools` and `pip install "
            "six`, then `make setup` links them into .venv (docs/exports.md)") from None


def prepare_directory(out: Path) -> None:
    """DIR must be new, empty, or hold only an earlier OTF2 export (replaced)."""
    if out.exists() and not out.is_dir():
        raise GrainlabError(f"{out}: not a directory (--otf2 writes an archive directory)")
    if out.is_dir():
        present = set(os.listdir(out))
        if present - ARCHIVE_FILES:
            raise GrainlabError(f"{out}: not empty and not an OTF2 export (holds "
                                f"{', '.join(sorted(present - ARCHIVE_FILES)[:3])}); "
                                "give a new directory")
        for name in present:
            p = out / name
            shutil.rmtree(p) if p.is_dir() else p.unlink()


def write_otf2(g, out) -> dict:
    """Write `g` as an OTF2 archive in directory `out` (anchor file
    out/traces.otf2). Returns counts: {"locations", "regions", "events",
    "fragments" (per thread), "clipped", "anchor"}."""
    otf2 = import_otf2()
    out = Path(out)
    prepare_directory(out)
    plan = _plan(g)
    meta = getattr(g, "meta", None) or {}
    command = meta.get("command")
    process = " ".join(map(str, command)) if isinstance(command, list) else str(command or "program")
    host = str(meta.get("host") or "host")
    events = 0
    with otf2.writer.open(str(out), archive_name=ARCHIVE_NAME, timer_resolution=1_000_000_000) as trace:
        defs = trace.definitions
        machine = defs.system_tree_node("machine")
        node = defs.system_tree_node(host, parent=machine)
        group = defs.location_group(f"{process} (pid {meta.get('pid', '?')})",
                                    system_tree_parent=node)
        regions = [_region(otf2, defs, r) for r in plan["regions"]]
        for thread, rows in plan["threads"].items():
            w = trace.event_writer(f"thread {thread}", group=group)
            for kind, time, value in rows:
                if kind == 0:
                    w.enter(int(time), regions[value])
                elif kind == 1:
                    w.leave(int(time), regions[value])
                elif kind == 2:
                    w.omp_task_create(int(time), int(value))
                else:
                    w.omp_task_complete(int(time), int(value))
            events += len(rows)
    return {"locations": len(plan["threads"]), "regions": len(regions), "events": events,
            "fragments": plan["fragments"], "clipped": plan["clipped"],
            "anchor": str(out / f"{ARCHIVE_NAME}.otf2")}


def _region(otf2, defs, spec):
    name, role, source = spec
    kwargs = {"paradigm": otf2.Paradigm.OPENMP, "region_role": getattr(otf2.RegionRole, role)}
    m = _LOCATION.match(source or "")
    if m:
        kwargs.update(source_file=m.group("file"), begin_line_number=int(m.group("line")))
    return defs.region(name, **kwargs)


class _Regions:
    def __init__(self):
        self.specs, self.index = [], {}

    def get(self, name: str, role: str, source: str | None = None) -> int:
        key = (name, role)
        if key not in self.index:
            self.index[key] = len(self.specs)
            self.specs.append((name, role, source))
        return self.index[key]


def _grain_regions(grains, regions: _Regions):
    """Region index of each grain (one per source location, or per kind),
    and each grain's kind."""
    n = len(grains)
    src_col = source_column(grains)
    src = grains[src_col].astype(object).to_numpy() if src_col else np.full(n, None, object)
    kind = grains["kind"].astype(str).to_numpy() if "kind" in grains.columns \
        else np.full(n, "task", object)
    untied = (grains["flags"].to_numpy(dtype=np.int64) & 0x10000000) != 0 \
        if "flags" in grains.columns else np.zeros(n, bool)
    grain_region = np.empty(n, np.int64)
    for i in range(n):
        where = src[i] if isinstance(src[i], str) and src[i] and src[i] != "?" \
            and not src[i].startswith("0x") else None
        role = "LOOP" if kind[i] == "chunk" else ("TASK_UNTIED" if untied[i] else "TASK")
        label = where or ("chunk" if kind[i] == "chunk" else "task")
        grain_region[i] = regions.get(label, role, where)

    return grain_region, kind


def _plan(g) -> dict:
    """Per thread, the (kind, time, value) rows to write: 0 enter / 1 leave
    (value = region index), 2 task create / 3 task complete (value = task id)."""
    nodes, grains = g.nodes, g.grains
    n = len(grains)
    regions = _Regions()
    ntype = nodes["type"].astype(str).to_numpy()
    owner = nodes["grain"].to_numpy(dtype=np.int64)
    thread = nodes["thread"].to_numpy(dtype=np.int64)
    start = nodes["start"].to_numpy(dtype=np.int64)
    end = np.maximum(nodes["end"].to_numpy(dtype=np.int64), start)

    grain_region, kind = _grain_regions(grains, regions)
    contexts = getattr(g, "contexts", None)
    ckind = contexts["kind"].astype(str).to_numpy() if contexts is not None and len(contexts) \
        else np.array([], object)
    code_region = {"initial": regions.get("initial task code", "FUNCTION"),
                   "implicit": regions.get("implicit task code", "FUNCTION")}
    context_region = {"initial": regions.get("program (initial task)", "FUNCTION"),
                      "implicit": regions.get("parallel region (implicit task)", "PARALLEL")}
    idle = regions.get("idle", "ARTIFICIAL")
    create = regions.get("create", "TASK_CREATE")
    bookkeeping = regions.get("bookkeeping", "ARTIFICIAL")
    join_role = {"taskwait": "TASK_WAIT", "taskgroup": "TASK_WAIT", "barrier": "BARRIER"}

    # last fragment of each task grain: where and when it completes
    frag = np.flatnonzero(((ntype == "fragment") | (ntype == "chunk")) & (thread >= 0))
    last_end = np.full(n, -1, np.int64)
    last_node = np.full(n, -1, np.int64)
    gown = owner[frag]
    isg = (gown >= 0) & (gown < n)
    for i in frag[isg][np.lexsort((end[frag[isg]], owner[frag[isg]]))]:
        last_end[owner[i]], last_node[owner[i]] = end[i], i   # sorted: the last one wins

    # intervals: (thread, start, end, tie rank, region, create id, complete id)
    iv = {t: [] for t in np.unique(thread[thread >= 0]).tolist()}
    fragments = {t: 0 for t in iv}
    for i in frag:
        o = owner[i]
        if 0 <= o < n:
            r = grain_region[o]
            done = o if last_node[o] == i and kind[o] != "chunk" else -1
        else:
            c = o - n
            r = code_region.get(ckind[c] if 0 <= c < len(ckind) else "implicit",
                                code_region["implicit"])
            done = -1
        iv[int(thread[i])].append((int(start[i]), int(end[i]), K_GRAIN, r, -1, done))
        fragments[int(thread[i])] += 1
    jk = nodes["join_kind"].astype(object).to_numpy() if "join_kind" in nodes.columns \
        else np.full(len(nodes), None, object)
    child = nodes["child"].to_numpy(dtype=np.int64) if "child" in nodes.columns \
        else np.full(len(nodes), -1, np.int64)
    for i in np.flatnonzero(np.isin(ntype, ["fork", "join", "bookkeeping"]) & (thread >= 0)):
        if ntype[i] == "fork":
            r, made = create, int(child[i]) if 0 <= child[i] < n else -1
        elif ntype[i] == "bookkeeping":
            r, made = bookkeeping, -1
        else:
            name = str(jk[i]) if isinstance(jk[i], str) else "join"
            r, made = regions.get(name, join_role.get(name, "IMPLICIT_BARRIER")), -1
        iv[int(thread[i])].append((int(start[i]), int(end[i]), K_RUNTIME, r, made, -1))
    if contexts is not None and len(contexts):
        ct = contexts["thread"].to_numpy(dtype=np.int64)
        cs, ce = contexts["start"].to_numpy(dtype=np.int64), contexts["end"].to_numpy(dtype=np.int64)
        for c in np.flatnonzero(ct >= 0):
            iv.setdefault(int(ct[c]), [])
            fragments.setdefault(int(ct[c]), 0)
            iv[int(ct[c])].append((int(cs[c]), int(max(ce[c], cs[c])), K_CONTEXT,
                                   context_region.get(ckind[c], context_region["implicit"]), -1, -1))

    threads, clipped = {}, 0
    implicit_ctx = context_region["implicit"]
    for t in sorted(iv):
        rows, clip = _nest(iv[t], idle, implicit_ctx)
        threads[t] = rows
        clipped += clip
    return {"regions": regions.specs, "threads": threads, "fragments": fragments,
            "clipped": clipped}


def _nest(intervals, idle: int, implicit_ctx: int):
    """Enter/leave rows of one thread's intervals, properly nested; idle
    gaps directly inside an implicit task filled in. Returns (rows, clipped)."""
    # at one start time: zero-length intervals first (they close before a
    # longer one opens), then the longest, then the outermost kind
    intervals.sort(key=lambda v: (v[0], v[1] > v[0], -v[1], v[2]))
    rows, stack = [], []
    state = {"last": None, "clipped": 0}

    def idle_until(t):
        last = state["last"]
        if stack and stack[-1][3] == implicit_ctx and last is not None and last < t:
            rows.append((0, last, idle))
            rows.append((1, t, idle))
            state["last"] = t

    def close_top():
        e = stack[-1][1]
        idle_until(e)
        _, _, _, r, _, done = stack.pop()
        rows.append((1, e, r))
        if done >= 0:
            rows.append((3, e, done))
        state["last"] = e

    for s, e, k, r, made, done in intervals:
        while stack and stack[-1][1] <= s:
            close_top()
        if stack and e > stack[-1][1]:          # recorded times overlap by a little
            e = stack[-1][1]
            state["clipped"] += 1
        idle_until(s)
        rows.append((0, s, r))
        if made >= 0:
            rows.append((2, s, made))
        state["last"] = s
        stack.append((s, e, k, r, made, done))
    while stack:
        close_top()
    return rows, state["clipped"]
