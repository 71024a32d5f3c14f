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
"""
from __future__ import annotations

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


def build_task_table(trace, lineage: bool = True, times: bool = True) -> TaskTable:
    """The task and region tables; `lineage` False leaves out the lineage
    column (the grain graph makes its own identities from the forest), and
    `times` False the execution times begin_ns, end_ns and begin_thread (the
    graph takes its times from the events: 0.2 s of 0.67 at 1M tasks)."""
    ev = trace.events
    regions = _regions(ev)
    initial, implicit = _implicit_tasks(ev, regions)
    explicit = _explicit_tasks(ev)
    tasks = pd.concat([initial, implicit, explicit], ignore_index=True)
    # Integer codes while building (string compares on 10^7 rows are slow).
    tasks["kind"] = pd.Categorical.from_codes(tasks["kind"].to_numpy(), categories=KINDS)
    if times:
        _add_execution_times(ev, tasks)
    _add_flag_columns(tasks)
    names = _add_lineage(tasks, regions, lineage)
    names, regions["identity"] = _region_identity(tasks, regions, names)
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


def _implicit_tasks(ev, regions):
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
    return initial, frame[is_implicit]


def _explicit_tasks(ev):
    # Column by column: a boolean index of the whole event frame would first
    # consolidate all its columns (a copy of every event: 0.13 s at 4M rows).
    rows = np.flatnonzero(ev["event"].to_numpy() == S.TASK_CREATE)
    task = ev["task"].to_numpy()[rows]
    rows = rows[~pd.Series(task).duplicated().to_numpy()]    # a task's first create

    def col(name):
        return ev[name].to_numpy()[rows]
    n = len(rows)
    return pd.DataFrame({
        "id": col("task"),
        "parent": col("other"),
        "kind": np.full(n, EXPLICIT, dtype=np.int8),
        "flags": col("kind").astype(np.uint32),
        "codeptr": col("codeptr"),
        "thread": col("thread"),
        "region": np.zeros(n, dtype=np.uint64),
        "team_index": np.full(n, -1, dtype=np.int64),
        "team_size": np.full(n, -1, dtype=np.int64),
        "create_ns": col("time"),
        "has_dependences": col("value") != 0,
        "_tsc": col("tsc"),
    })


def _add_execution_times(ev, tasks):
    """begin_ns: first time the task runs (begin_thread: where); end_ns: when
    its body finished (NaN when the trace does not say, e.g. a stopped run)."""
    ids = tasks["id"].to_numpy()
    index = IdIndex(ids)
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
    implicit = tasks["kind"].cat.codes.to_numpy() != EXPLICIT
    begin_ns[implicit] = tasks["create_ns"].to_numpy()[implicit]
    begin_thread[implicit] = tasks["thread"].to_numpy()[implicit]
    last_end = _first_row(len(ids), index.get(ev["task"].to_numpy()[imp_end]))
    end_ns[implicit] = np.where(last_end[implicit] >= 0,
                                time[imp_end[np.maximum(last_end[implicit], 0)]]
                                if len(imp_end) else np.nan, np.nan)
    tasks["begin_ns"] = begin_ns
    tasks["end_ns"] = end_ns
    missing = np.isnan(begin_thread)
    tasks["begin_thread"] = pd.arrays.IntegerArray(
        np.where(missing, 0, begin_thread).astype(np.int64), missing)


def _first_row(n, pos) -> np.ndarray:
    """For each of n tasks, the first index i with pos[i] == task (-1 if none):
    rows come already sorted by the key, so no sort here."""
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hit = np.flatnonzero(pos >= 0)
    np.minimum.at(out, pos[hit], hit)
    out[out == np.iinfo(np.int64).max] = -1
    return out


def _add_flag_columns(tasks):
    flags = tasks["flags"].to_numpy()
    explicit = tasks["kind"].cat.codes.to_numpy() == EXPLICIT
    for name, bit in (("undeferred", S.TASK_UNDEFERRED), ("untied", S.TASK_UNTIED),
                      ("final", S.TASK_FINAL), ("mergeable", S.TASK_MERGEABLE),
                      ("merged", S.TASK_MERGED)):
        tasks[name] = explicit & ((flags & np.uint32(bit)) != 0)


def _add_lineage(tasks, regions, with_strings=True):
    n = len(tasks)
    ids = tasks["id"].to_numpy()
    kind = tasks["kind"].cat.codes.to_numpy()
    explicit = kind == EXPLICIT
    implicit = kind == IMPLICIT
    initial = kind == INITIAL

    parent_pos = IdIndex(ids).get(tasks["parent"].to_numpy())
    parent_pos[initial] = -1

    # Explicit children are numbered in creation order among their siblings.
    child_index = np.full(n, -1, dtype=np.int64)
    exp_rows = np.flatnonzero(explicit)
    order = exp_rows[lexsort((tasks["_tsc"].to_numpy()[exp_rows], parent_pos[exp_rows]))]
    if len(order):
        par = parent_pos[order]
        start = np.r_[True, par[1:] != par[:-1]]
        run_start = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
        child_index[order] = np.arange(len(order)) - run_start
    tasks["child_index"] = child_index
    children = np.bincount(parent_pos[explicit & (parent_pos >= 0)], minlength=n)
    tasks["children"] = children

    # Implicit suffix ".p<r>.i<i>", or ".p<r>" for the single winner: the only
    # implicit task of its region that creates explicit tasks. The "i" keeps
    # implicit task i apart from the winner's explicit child i ("L.p<r>.<i>").
    # (computed on the implicit rows only: a few per region, not 10^7 rows)
    imp = np.flatnonzero(implicit)
    imp_region = tasks["region"].to_numpy()[imp]
    ordinal = pd.Series(regions["ordinal"].to_numpy(), index=regions["id"].to_numpy())
    imp_ordinal = ordinal.reindex(imp_region).to_numpy(
        dtype=np.float64, na_value=-1).astype(np.int64)
    creators = children[imp] > 0
    creators_in_region = pd.Series(creators).groupby(imp_region).transform("sum").to_numpy()
    winner = np.zeros(n, dtype=bool)
    winner[imp] = creators & (creators_in_region == 1)

    tasks["winner"] = winner

    # Identity (grainlab.tables.identity): per task a parent row and one step, a
    # 128-bit path hash and a level, computed level by level; strings only on
    # demand (the "lineage" column only while every lineage is short).
    tag = np.full(n, ROOT, dtype=np.int8)
    a = np.zeros(n, dtype=np.int64)
    b = np.zeros(n, dtype=np.int64)
    roots = np.flatnonzero(initial)
    a[roots] = np.arange(len(roots))
    tag[explicit] = EXPLICIT_STEP
    a[explicit] = child_index[explicit]
    tag[imp] = np.where(winner[imp], PARALLEL, IMPLICIT_STEP)
    a[imp] = imp_ordinal
    # the winner's step is ".p<r>" whichever thread won: its team index is not
    # part of its name, so not of its hash either (else two runs whose single
    # went to different threads matched no grain: compare refused them)
    b[imp] = np.where(winner[imp], 0, tasks["team_index"].to_numpy()[imp])
    # a task no root reaches (no known parent: no step) has no identity
    names = Names.from_tree(parent_pos, np.where(initial | (parent_pos >= 0), tag, -1), a, b)
    tasks["depth"] = names.level
    if with_strings and materialise(names, np.arange(n)):
        tasks["lineage"] = string_column(names.arrow(np.arange(n)))
    del tasks["_tsc"]
    return names


def _region_identity(tasks, regions, names):
    """Region nodes in the identity forest ("<encountering lineage>.p<ordinal>")
    and their strings, made for the region rows only (None when the
    encountering task is unknown): (the extended forest, the strings)."""
    pos = IdIndex(tasks["id"].to_numpy()).get(regions["encountering_task"].to_numpy())
    names, nodes = names.extend(pos, PARALLEL, regions["ordinal"].to_numpy(np.int64), 0)
    regions["identity_node"] = nodes
    return names, names.strings(nodes)
