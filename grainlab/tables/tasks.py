"""Tasks, parallel regions and their identity (docs/trace-format.md "Identity").

A task's lineage is the path of child numbers from the root, independent of
scheduling:
  initial task                         "0"
  implicit task i of region r of L     "L.p<r>.i<i>"  ("L.p<r>" for a single winner)
  explicit child c of L                "L.<c>"
Per task only a parent, one step and a 128-bit path hash are kept, computed
level by level (grainlab/tables/identity.py): nothing per task grows with depth.
The strings are made on demand (`trace.task_names().strings(rows)`); the
`lineage` column exists only while lineages are short or few
(grainlab.identity.materialise).

`build_task_table` returns the task table, the region table and the identity
forest side by side (a TaskTable), not hidden in `DataFrame.attrs` (pandas
deep-copies attrs into every frame derived from the table).

The table is built as columns of two parts, contexts (initial and implicit
tasks: a few per region) and explicit tasks (nearly every row), each column
made once: no DataFrame until the end, no concatenation of frames, one
IdIndex of the ids for every look-up, the identity forest built once with
its region nodes (not extended: that copied it whole). The grain graph takes
the parts as they are (`frame=False`, a TaskParts: no DataFrame at all, only
the columns it reads): at 2.7M tasks (fib(30)) find_owners took 1.4-3.1 s,
808 MiB at its peak and 3.2 GiB allocated in all; now 0.3 s, 372 MiB and
0.6 GiB (issue 31).
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import schema as S
from ..sorting import argsort, lexsort
from .identity import EXPLICIT as EXPLICIT_STEP, IMPLICIT as IMPLICIT_STEP
from .identity import PARALLEL, ROOT, Names, materialise, string_column
from ..idindex import IdIndex

KINDS = ["initial", "implicit", "explicit"]  # tasks()["kind"] categories
INITIAL, IMPLICIT, EXPLICIT = 0, 1, 2


class TaskTable(NamedTuple):
    """tasks: one row per task (Trace.tasks()); regions: one row per parallel
    region (Trace.regions()); names: the identity forest (grainlab.tables.identity),
    node i = task row i, regions["identity_node"] the regions' nodes."""
    tasks: pd.DataFrame
    regions: pd.DataFrame
    names: Names


# The columns of the two parts (kind: codes of KINDS); explicit rows have
# kind EXPLICIT, region 0, team_index and team_size -1.
CTX_COLUMNS = ("id", "parent", "kind", "flags", "codeptr", "thread", "region",
               "team_index", "team_size", "create_ns", "has_dependences")
# what the grain graph reads of the explicit tasks (grainlab.graph.owners)
LEAN_COLUMNS = ("id", "parent", "flags", "codeptr", "create_ns", "child_index")


class TaskParts(NamedTuple):
    """The task table as columns (numpy arrays) of two parts: `ctx`, the
    initial tasks (in begin order) then the implicit tasks, and `explicit`
    (rows in order of their first TASK_CREATE). `ctx` has CTX_COLUMNS,
    `explicit` LEAN_COLUMNS (child_index: read only, it may be a view of the
    forest's steps). The parts are rows 0..C-1 and C..n-1 of the table in
    that order, unless ctx_rows / ex_rows say which rows they hold
    (`of_frame`). The lean build hands the explicit tasks in creation-time
    order, without create_ns. `index`: an IdIndex of the table's ids in row
    order (None: not made)."""
    ctx: dict
    explicit: dict
    index: IdIndex | None = None
    ctx_rows: np.ndarray | None = None
    ex_rows: np.ndarray | None = None

    @classmethod
    def of_frame(cls, tasks: pd.DataFrame) -> "TaskParts":
        """The parts of a built task table (copies of its rows)."""
        code = tasks["kind"].cat.codes.to_numpy()
        explicit = code == KINDS.index("explicit")
        cx_rows, ex_rows = np.flatnonzero(~explicit), np.flatnonzero(explicit)
        ctx = {c: tasks[c].to_numpy()[cx_rows] for c in CTX_COLUMNS if c != "kind"}
        ctx["kind"] = code[cx_rows]
        ex = {c: tasks[c].to_numpy()[ex_rows] for c in LEAN_COLUMNS}
        return cls(ctx, ex, None, cx_rows, ex_rows)


def build_task_table(trace, lineage: bool = True, times: bool = True,
                     frame: bool = True) -> TaskTable:
    """The task and region tables; `lineage` False leaves out the lineage
    column (the grain graph makes its own identities from the forest), and
    `times` False the execution times begin_ns, end_ns and begin_thread (the
    graph takes its times from the events: 0.2 s of 0.67 at 1M tasks).
    `frame` False: the tasks as a TaskParts, only the columns the graph
    reads, no DataFrame (times and lineage are then left out)."""
    ev = trace.events
    regions = _regions(ev)
    ctx = _implicit_tasks(ev, regions)
    ex, rows, index = _explicit_tasks(ev, ctx["id"], full=frame)
    C, T = len(ctx["id"]), len(ex["id"])
    n = C + T
    names, child_index, children, winner = _identity(ctx, ex, index, regions, frame)
    # region nodes follow the task nodes (_identity made them)
    nodes = np.arange(n, len(names), dtype=np.int64)
    regions["identity_node"] = nodes
    regions["identity"] = names.strings(nodes)
    if not frame:
        del ctx["_tsc"]
        return TaskTable(_lean_parts(ev, ctx, ex, rows, child_index, index), regions, names)

    def col(name):
        return np.concatenate([ctx[name], ex[name]])
    cols = {c: col(c) for c in CTX_COLUMNS}
    # Integer codes while building (string compares on 10^7 rows are slow).
    cols["kind"] = pd.Categorical.from_codes(cols["kind"], categories=KINDS)
    if times:
        cols["begin_ns"], cols["end_ns"], cols["begin_thread"] = _execution_times(
            ev, cols["id"], index, C, cols["create_ns"], cols["thread"])
    for name, bit in (("undeferred", S.TASK_UNDEFERRED), ("untied", S.TASK_UNTIED),
                      ("final", S.TASK_FINAL), ("mergeable", S.TASK_MERGEABLE),
                      ("merged", S.TASK_MERGED)):
        flag = np.zeros(n, dtype=bool)
        flag[C:] = (ex["flags"] & np.uint32(bit)) != 0
        cols[name] = flag
    cols["child_index"] = child_index
    cols["children"] = children
    cols["winner"] = winner
    cols["depth"] = names.level[:n].copy()
    if lineage and materialise(names, np.arange(n)):
        cols["lineage"] = string_column(names.arrow(np.arange(n)))
    with warnings.catch_warnings():
        # pandas 3 deprecates copy=False (CoW makes it lazy) but still honours
        # it: the columns are this table's own, no copy of them needed
        warnings.simplefilter("ignore")
        tasks = pd.DataFrame(cols, copy=False)
    return TaskTable(tasks, regions, names)


# ---------------------------------------------------------------------------


def _regions(ev) -> pd.DataFrame:
    begin = ev[ev["event"] == S.PARALLEL_BEGIN]
    regions = pd.DataFrame({
        "id": begin["other"].to_numpy(),
        "encountering_task": begin["task"].to_numpy(),
        "requested_team_size": begin["count"].to_numpy(),
        "flags": begin["kind"].to_numpy(),
        "codeptr": begin["codeptr"].to_numpy(),
        "thread": begin["thread"].to_numpy(),
        "begin_ns": begin["time"].to_numpy(),
        "_tsc": begin["tsc"].to_numpy(),
    }).drop_duplicates("id")
    end = ev[ev["event"] == S.PARALLEL_END]
    end_ns = pd.Series(end["time"].to_numpy(), index=end["other"].to_numpy())
    end_ns = end_ns[~end_ns.index.duplicated()]
    regions["end_ns"] = end_ns.reindex(regions["id"].to_numpy()).to_numpy(
        dtype=np.float64)
    # Regions are numbered in the order they begin on their encountering task.
    regions = regions.sort_values(["encountering_task", "_tsc"], kind="stable")
    regions["ordinal"] = regions.groupby("encountering_task").cumcount().astype(np.int64)
    return regions.sort_values("_tsc", kind="stable").drop(columns="_tsc").reset_index(drop=True)


def _implicit_tasks(ev, regions) -> dict:
    """The context rows (CTX_COLUMNS and _tsc): the initial tasks in begin
    order, then the implicit tasks (a few per region: a frame is cheap here)."""
    begin = ev[ev["event"] == S.IMPLICIT_BEGIN].drop_duplicates("task")
    flags = begin["kind"].to_numpy()
    frame = pd.DataFrame({
        "id": begin["task"].to_numpy(),
        "parent": np.zeros(len(begin), dtype=np.uint64),
        "kind": np.where((flags & S.TASK_INITIAL) != 0, INITIAL, IMPLICIT).astype(np.int8),
        "flags": flags.astype(np.uint32),
        "codeptr": begin["codeptr"].to_numpy(),
        "thread": begin["thread"].to_numpy(),
        "region": begin["other"].to_numpy(),
        "team_index": begin["value"].to_numpy().astype(np.int64),
        "team_size": begin["count"].to_numpy().astype(np.int64),
        "create_ns": begin["time"].to_numpy(),
        "has_dependences": np.zeros(len(begin), dtype=bool),
        "_tsc": begin["tsc"].to_numpy(),
    })
    is_implicit = frame["kind"].to_numpy() == IMPLICIT
    encountering = pd.Series(regions["encountering_task"].to_numpy(),
                             index=regions["id"].to_numpy())
    parent = encountering.reindex(frame["region"].to_numpy()).to_numpy(
        dtype=np.float64, na_value=0)
    frame.loc[is_implicit, "parent"] = parent[is_implicit].astype(np.uint64)
    initial = frame[~is_implicit].sort_values("_tsc", kind="stable")
    implicit = frame[is_implicit]
    return {c: np.concatenate([initial[c].to_numpy(), implicit[c].to_numpy()])
            for c in frame.columns}


def _explicit_tasks(ev, ctx_ids, full=True):
    """The explicit rows (a task's first TASK_CREATE) as columns (CTX_COLUMNS
    and _tsc; `full` False: only id, parent, flags, codeptr, create_ns and
    _tsc), and the IdIndex of every task id (contexts first)."""
    # Column by column: a boolean index of the whole event frame would first
    # consolidate all its columns (a copy of every event: 0.13 s at 4M rows).
    rows = np.flatnonzero(ev["event"].to_numpy() == S.TASK_CREATE)
    task = ev["task"].to_numpy()[rows]
    # The index of the ids serves every look-up of the table; when it finds
    # no id twice, no task was created twice and there is nothing to drop
    # (a hash of 10^7 ids spared)
    index = IdIndex(np.concatenate([ctx_ids, task]))
    if not index.unique:
        first = ~pd.Series(task).duplicated().to_numpy()   # a task's first create
        if not first.all():
            rows, task = rows[first], task[first]
            index = IdIndex(np.concatenate([ctx_ids, task]))

    def col(name):
        return ev[name].to_numpy()[rows]
    n = len(rows)
    out = {"id": task, "parent": col("other"), "create_ns": col("time"), "_tsc": col("tsc")}
    if full:
        out.update({
            "flags": col("kind").astype(np.uint32, copy=False),
            "codeptr": col("codeptr"),
            "kind": np.full(n, EXPLICIT, dtype=np.int8),
            "thread": col("thread"),
            "region": np.zeros(n, dtype=np.uint64),
            "team_index": np.full(n, -1, dtype=np.int64),
            "team_size": np.full(n, -1, dtype=np.int64),
            "has_dependences": col("value") != 0,
        })
    return out, rows, index


def _lean_parts(ev, ctx, ex, rows, child_index, index) -> TaskParts:
    """The graph's TaskParts: the explicit tasks in creation-time order (the
    graph's owner order: ex_rows says which rows they are, None when that
    is already their row order), the columns it reads taken from the events
    in that order straight away (not in row order first, then reordered)."""
    create_ns = ex["create_ns"]
    order = argsort(create_ns) if np.any(create_ns[1:] < create_ns[:-1]) else None

    def take(x):
        return x if order is None else x[order]
    rows = take(rows)
    # (no create_ns: the order says it)
    explicit = {"id": take(ex["id"]), "parent": take(ex["parent"]),
                "flags": ev["kind"].to_numpy()[rows].astype(np.uint32, copy=False),
                "codeptr": ev["codeptr"].to_numpy()[rows], "child_index": take(child_index)}
    C = len(ctx["id"])
    return TaskParts(ctx, explicit, index, None, None if order is None else order + C)


def _execution_times(ev, ids, index, C, create_ns, thread):
    """begin_ns: first time the task runs (begin_thread: where); end_ns: when
    its body finished (NaN when the trace does not say, e.g. a stopped run).
    Rows 0..C-1 are the initial and implicit tasks."""
    code = ev["event"].to_numpy()
    time = ev["time"].to_numpy()
    sched = np.flatnonzero(code == S.TASK_SCHEDULE)
    # One time sort of the schedule rows serves both searches below (the
    # finishing rows are a subset, so their order is a filter of it).
    sched = sched[argsort(time[sched])]
    done = sched[np.isin(ev["kind"].to_numpy()[sched], S.STATUS_FINISHED)]
    imp_end = np.flatnonzero(code == S.IMPLICIT_END)
    imp_end = imp_end[argsort(-time[imp_end])]

    first_run = _first_row(len(ids), index.get(ev["task"].to_numpy()[sched]))
    begin_ns = np.full(len(ids), np.nan)
    begin_thread = np.full(len(ids), np.nan)
    hit = first_run >= 0
    begin_ns[hit] = time[sched[first_run[hit]]]
    begin_thread[hit] = ev["thread"].to_numpy()[sched[first_run[hit]]]
    first_end = _first_row(len(ids), index.get(ev["other"].to_numpy()[done]))
    end_ns = np.full(len(ids), np.nan)
    end_ns[first_end >= 0] = time[done[first_end[first_end >= 0]]]

    # Implicit and initial tasks run from IMPLICIT_BEGIN to IMPLICIT_END.
    implicit = np.zeros(len(ids), dtype=bool)
    implicit[:C] = True
    begin_ns[implicit] = create_ns[implicit]
    begin_thread[implicit] = thread[implicit]
    last_end = _first_row(len(ids), index.get(ev["task"].to_numpy()[imp_end]))
    end_ns[implicit] = np.where(last_end[implicit] >= 0,
                                time[imp_end[np.maximum(last_end[implicit], 0)]]
                                if len(imp_end) else np.nan, np.nan)
    missing = np.isnan(begin_thread)
    return begin_ns, end_ns, pd.arrays.IntegerArray(
        np.where(missing, 0, begin_thread).astype(np.int64), missing)


def _first_row(n, pos) -> np.ndarray:
    """For each of n tasks, the first index i with pos[i] == task (-1 if none):
    rows come already sorted by the key, so no sort here."""
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hit = np.flatnonzero(pos >= 0)
    np.minimum.at(out, pos[hit], hit)
    out[out == np.iinfo(np.int64).max] = -1
    return out


def _identity(ctx, ex, index, regions, full=True):
    """The identity forest, task rows then one node per region ("<encountering
    lineage>.p<ordinal>", after the tasks), and the columns it is made of:
    (names, child_index, children, winner). `full` False: child_index only
    for the explicit rows (a view of the forest's `a`), children and winner
    None."""
    C, T, R = len(ctx["id"]), len(ex["id"]), len(regions)
    n = C + T
    N = n + R
    initial = np.flatnonzero(ctx["kind"] == INITIAL)
    imp = np.flatnonzero(ctx["kind"] == IMPLICIT)

    # parent rows (-1: none, an initial task's or one the trace does not name)
    parent = np.empty(N, np.int64)
    index.get(ctx["parent"], out=parent[:C])
    parent[initial] = -1
    index.get(ex["parent"], out=parent[C:n])
    parent[n:] = index.get(regions["encountering_task"].to_numpy())
    ex_parent = parent[C:n]

    # Steps (grainlab.tables.identity): per task a parent row and one step, a
    # 128-bit path hash and a level, computed level by level; strings only on
    # demand (the "lineage" column only while every lineage is short).
    a = np.zeros(N, dtype=np.int64)
    b = np.zeros(N, dtype=np.int64)
    # Explicit children are numbered in creation order among their siblings.
    _child_rank(ex_parent, ex["_tsc"], out=a[C:n])
    # children per task (the graph needs those of the contexts only: a few)
    m = n if full else C
    children = np.bincount(ex_parent[(ex_parent >= 0) & (ex_parent < m)], minlength=m)

    # Implicit suffix ".p<r>.i<i>", or ".p<r>" for the single winner: the only
    # implicit task of its region that creates explicit tasks. The "i" keeps
    # implicit task i apart from the winner's explicit child i ("L.p<r>.<i>").
    # (computed on the implicit rows only: a few per region, not 10^7 rows)
    imp_region = ctx["region"][imp]
    ordinal = pd.Series(regions["ordinal"].to_numpy(), index=regions["id"].to_numpy())
    imp_ordinal = ordinal.reindex(imp_region).to_numpy(
        dtype=np.float64, na_value=-1).astype(np.int64)
    creators = children[imp] > 0
    creators_in_region = pd.Series(creators).groupby(imp_region).transform("sum").to_numpy()
    imp_winner = creators & (creators_in_region == 1)

    tag = np.full(N, ROOT, dtype=np.int8)
    a[initial] = np.arange(len(initial))
    tag[C:n] = EXPLICIT_STEP
    tag[imp] = np.where(imp_winner, PARALLEL, IMPLICIT_STEP)
    a[imp] = imp_ordinal
    # the winner's step is ".p<r>" whichever thread won: its team index is not
    # part of its name, so not of its hash either (else two runs whose single
    # went to different threads matched no grain: compare refused them)
    b[imp] = np.where(imp_winner, 0, ctx["team_index"][imp])
    # a task no root reaches (no known parent: no step) has no identity
    named = parent[:n] >= 0
    named[initial] = True
    tag[:n][~named] = -1
    # regions: ".p<ordinal>" of their encountering task (b = 0)
    tag[n:] = PARALLEL
    a[n:] = regions["ordinal"].to_numpy(np.int64)
    names = Names.from_tree(parent, tag, a, b)
    if not full:
        return names, a[C:n], None, None
    child_index = np.full(n, -1, dtype=np.int64)
    child_index[C:] = a[C:n]
    winner = np.zeros(n, dtype=bool)
    winner[imp] = imp_winner
    return names, child_index, children, winner


def _child_rank(parent, key, out, native=None) -> None:
    """out[i] = the rank of row i among the rows with its parent, in (key,
    row) order (explicit tasks: their tsc at creation). The compiled kernel
    (grainlab/native/forest.c: a running count per parent, when keys never
    decrease within a parent in row order) when built, else the numpy twin;
    either sorts when the keys are out of order; `native` forces one (tests)."""
    kernel = _rank_kernel() if native is not False else None
    if native and kernel is None:
        raise RuntimeError("the compiled forest kernel is not built")
    n = len(parent)
    if kernel is not None and 0 < n < (1 << 31) - 1:
        parent = np.ascontiguousarray(parent, np.int64)
        key = np.ascontiguousarray(key, np.uint64)
        rank = out if out.flags.c_contiguous and out.dtype == np.int64 else \
            np.empty(n, np.int64)
        m = max(int(parent.max()) + 1, 0)
        count, last = np.empty(m + 1, np.int32), np.empty(m + 1, np.int32)   # scratch
        rc = kernel(n, parent.ctypes.data, key.ctypes.data, m, rank.ctypes.data,
                    count.ctypes.data, last.ctypes.data)
        del count, last
        if rc == 0:
            if rank is not out:
                out[:] = rank
            return
    _child_rank_numpy(parent, key, out)


def _rank_kernel():
    import ctypes
    from .._paths import graph_kernel
    i, p = ctypes.c_int64, ctypes.c_void_p
    return graph_kernel("gl_child_rank", [i, p, p, i, p, p, p])


def _child_rank_numpy(parent, key, out) -> None:
    """_child_rank's numpy twin: rows sorted by parent (stable), by (key,
    parent) only when some parent's keys are out of row order; then ranks
    within the runs of one parent."""
    n = len(parent)
    if not n:
        return
    order = argsort(parent)
    p = parent[order]
    same = p[1:] == p[:-1]
    k = key[order]
    if (k[1:][same] < k[:-1][same]).any():
        order = lexsort((key, parent))
        p = parent[order]
    del k, same
    start = np.r_[True, p[1:] != p[:-1]]
    run_start = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    out[order] = np.arange(n) - run_start
