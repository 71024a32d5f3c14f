"""Loop instances and their chunks (docs/trace-format.md "Chunks", "Loop instance").

A worksharing loop instance is (parallel region, k): the k-th worksharing
construct every implicit task of the region meets. A taskloop instance is
(encountering task, k): the k-th taskloop that task runs; its chunks are
executed by the child tasks it creates. A chunk's identity is its loop
instance plus its first iteration.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as S
from ..sorting import argsort

LOOP_COLUMNS = ["loop", "construct", "region", "encountering_task", "sequence",
                "work", "iterations", "codeptr", "begin_ns", "end_ns", "threads",
                "chunks", "chunk_iterations", "inferred_chunks"]
CHUNK_COLUMNS = ["id", "loop", "first", "iterations", "thread", "cpu", "task",
                 "start_ns", "end_ns", "inferred", "dispatch"]


def build_loops_and_chunks(trace):
    ev = trace.events
    position = np.empty(len(ev), dtype=np.int64)
    position[thread_order(ev)] = np.arange(len(ev))
    tasks = trace.tasks()
    regions = trace.regions()
    lineage = _lineage_by_id(tasks, trace.task_names())

    work = _work_rows(ev, position)
    instances = _instances(work, regions, lineage)
    chunks = _chunks(ev, position, work, tasks)
    chunks = chunks.merge(instances[["_key", "loop"]], on="_key", how="left")
    chunks["loop"] = chunks["loop"].astype(object).where(chunks["loop"].notna(), "?")
    chunks["id"] = _concat(chunks["loop"].to_numpy(dtype=object), "@",
                           chunks["first"].to_numpy())
    loops = _loop_table(instances, chunks)
    chunks = chunks.sort_values(["loop", "first"], kind="stable",
                                na_position="last").reset_index(drop=True)
    return loops, chunks[CHUNK_COLUMNS + ["work"]]


def thread_order(ev) -> np.ndarray:
    """Row positions sorted by thread, each thread's rows in file order
    (= that thread's time order: its row groups are written in order)."""
    return argsort(ev["thread"].to_numpy())


def _lineage_by_id(tasks, names):
    """task ids -> lineage strings (None: unknown task), made on demand for
    the tasks asked about (grainlab.tables.identity), never for every task."""
    from ..idindex import IdIndex
    index = IdIndex(tasks["id"].to_numpy())

    def lineage(ids):
        ids = np.asarray(ids)
        if len(ids) == 0:
            return np.empty(0, dtype=object)
        return names.strings(index.get(ids.astype(np.uint64)))
    return lineage


def _work_rows(ev, position):
    """WORK_BEGIN / WORK_END rows with their construct key: ('w', region, k)
    for worksharing constructs, ('t', encountering task, k) for taskloops."""
    rows = ev[ev["event"].isin((S.WORK_BEGIN, S.WORK_END))]
    work = pd.DataFrame({
        "event": rows["event"].to_numpy(), "task": rows["task"].to_numpy(),
        "region": rows["other"].to_numpy(), "kind": rows["kind"].to_numpy(),
        "count": rows["count"].to_numpy(), "codeptr": rows["codeptr"].to_numpy(),
        "thread": rows["thread"].to_numpy(), "time": rows["time"].to_numpy(),
        "pos": position[rows.index.to_numpy()],
    })
    work["taskloop"] = work["kind"].to_numpy() == S.WORK_TASKLOOP
    work = work.sort_values("pos", kind="stable")
    # k-th begin (and k-th end) of each task, counted separately for taskloops.
    work["sequence"] = work.groupby(["task", "taskloop", "event"]).cumcount().astype(np.int64)
    owner = np.where(work["taskloop"].to_numpy(), work["task"].to_numpy(),
                     work["region"].to_numpy())
    work["_key"] = _key(work["taskloop"].to_numpy(), owner, work["sequence"].to_numpy())
    return work


def _key(taskloop, owner, sequence):
    return _concat(np.where(taskloop, "t", "w").astype(object), ":", owner, ":", sequence)


def _instances(work, regions, lineage):
    begin = work[work["event"] == S.WORK_BEGIN]
    end = work[work["event"] == S.WORK_END]
    inst = begin.groupby("_key", sort=False).agg(
        taskloop=("taskloop", "first"), region=("region", "first"),
        encountering_task=("task", "first"), sequence=("sequence", "first"),
        kind=("kind", "first"), iterations=("count", "max"),
        codeptr=("codeptr", "first"), begin_ns=("time", "min"),
        threads=("thread", "nunique"), _pos=("pos", "min"))
    inst["end_ns"] = end.groupby("_key")["time"].max().reindex(inst.index).to_numpy(
        dtype=np.float64)
    # the instance's address: its first WORK_BEGIN that carries one (libomp
    # passes none on some threads)
    known = begin[begin["codeptr"].to_numpy() != 0].drop_duplicates("_key")
    inst["codeptr"] = pd.Series(known["codeptr"].to_numpy(np.uint64), index=known["_key"],
                                dtype="UInt64").reindex(inst.index).fillna(0).to_numpy(np.uint64)
    inst = inst.reset_index().sort_values("_pos", kind="stable")
    # Identity: region identity (or encountering task lineage) + .w<k> / .t<k>
    region_identity = pd.Series(regions["identity"].to_numpy(dtype=object),
                                index=regions["id"].to_numpy())
    region_identity = region_identity[~region_identity.index.duplicated()]
    owner_name = np.where(
        inst["taskloop"].to_numpy(),
        lineage(inst["encountering_task"].to_numpy()),
        region_identity.reindex(inst["region"].to_numpy()).to_numpy(dtype=object))
    # Worksharing outside any parallel region: name it after the encountering task.
    fallback = pd.isna(pd.Series(owner_name, dtype=object)).to_numpy()
    owner_name[fallback] = lineage(inst["encountering_task"].to_numpy()[fallback])
    unknown = pd.isna(pd.Series(owner_name, dtype=object)).to_numpy()
    owner_name[unknown] = "?"
    inst["loop"] = _concat(owner_name, np.where(inst["taskloop"], ".t", ".w").astype(object),
                           inst["sequence"].to_numpy())
    inst["construct"] = np.where(inst["taskloop"], "taskloop", "worksharing")
    inst["work"] = inst["kind"].map(S.WORK_NAMES).fillna("other").astype(object)
    return inst[inst["kind"].isin(S.WORK_WITH_CHUNKS)].drop(columns="_pos")


def _chunks(ev, position, work, tasks):
    rows = ev[(ev["event"] == S.CHUNK) & ev["kind"].isin(S.DISPATCH_LOOPS)]
    chunks = pd.DataFrame({
        "first": rows["value"].to_numpy().astype(np.int64),
        "iterations": rows["count"].to_numpy().astype(np.int64),
        "thread": rows["thread"].to_numpy(), "cpu": rows["cpu"].to_numpy(),
        "task": rows["task"].to_numpy(), "start_ns": rows["time"].to_numpy(),
        "tsc": rows["tsc"].to_numpy(),
        "inferred": (rows["flags"].to_numpy() & S.CHUNK_INFERRED) != 0,
        "dispatch": rows["kind"].to_numpy(),
        "pos": position[rows.index.to_numpy()],
    })
    taskloop = chunks["dispatch"].to_numpy() == S.DISPATCH_TASKLOOP_CHUNK
    ws = _worksharing_chunks(chunks[~taskloop], work)
    tl = _taskloop_chunks(chunks[taskloop], work, tasks)
    out = pd.concat([ws, tl], ignore_index=True)
    return out.drop(columns=["tsc", "pos"])


def _worksharing_chunks(chunks, work):
    """A chunk belongs to the last worksharing construct its task began before
    it (in the thread's row order); it ends at the thread's next chunk or
    WORK_END of that construct."""
    begins = work[(work["event"] == S.WORK_BEGIN) & ~work["taskloop"]]
    chunks = pd.merge_asof(chunks.sort_values("pos"),
                           begins[["pos", "task", "_key", "kind"]].sort_values("pos"),
                           on="pos", by="task", direction="backward")
    chunks["work"] = chunks["kind"].map(S.WORK_NAMES).astype(object)
    chunks = chunks.drop(columns="kind")
    ends = work[(work["event"] == S.WORK_END) & ~work["taskloop"]]
    marks = pd.concat([
        pd.DataFrame({"_key": chunks["_key"], "thread": chunks["thread"],
                      "time": chunks["start_ns"], "is_end": False,
                      "row": np.arange(len(chunks))}),
        pd.DataFrame({"_key": ends["_key"], "thread": ends["thread"],
                      "time": ends["time"], "is_end": True, "row": -1}),
    ], ignore_index=True).sort_values(["_key", "thread", "time", "is_end"], kind="stable")
    nxt = marks.groupby(["_key", "thread"], sort=False)["time"].shift(-1)
    is_chunk = ~marks["is_end"].to_numpy()
    end_ns = np.full(len(chunks), np.nan)
    end_ns[marks["row"].to_numpy()[is_chunk]] = nxt.to_numpy(dtype=np.float64)[is_chunk]
    chunks["end_ns"] = end_ns
    return chunks


def _taskloop_chunks(chunks, work, tasks):
    """A taskloop chunk is run by a task the taskloop created: it belongs to
    the last taskloop its parent began before creating it, and ends when that
    task's body ends."""
    if len(chunks) == 0:
        return chunks.assign(_key=pd.Series(dtype=object), work=pd.Series(dtype=object),
                             end_ns=pd.Series(dtype=np.float64))
    info = tasks.drop_duplicates("id").set_index("id")
    chunks = chunks.assign(
        parent=info["parent"].reindex(chunks["task"].to_numpy()).to_numpy(
            dtype=np.float64, na_value=0).astype(np.uint64),
        created=info["create_ns"].reindex(chunks["task"].to_numpy()).to_numpy(
            dtype=np.float64, na_value=np.inf),
        end_ns=info["end_ns"].reindex(chunks["task"].to_numpy()).to_numpy(dtype=np.float64))
    begins = work[(work["event"] == S.WORK_BEGIN) & work["taskloop"]]
    begins = begins.assign(created=begins["time"].astype(np.float64),
                           parent=begins["task"].to_numpy())
    chunks = pd.merge_asof(chunks.sort_values("created"),
                           begins[["created", "parent", "_key"]].sort_values("created"),
                           on="created", by="parent", direction="backward")
    chunks["work"] = "taskloop"
    return chunks.drop(columns=["parent", "created"])


def _loop_table(instances, chunks):
    stats = chunks.groupby("_key").agg(
        chunks=("first", "size"), chunk_iterations=("iterations", "sum"),
        inferred_chunks=("inferred", "sum"))
    loops = instances.merge(stats, left_on="_key", right_index=True, how="left")
    for col in ("chunks", "chunk_iterations", "inferred_chunks"):
        loops[col] = loops[col].fillna(0).astype(np.int64)
    loops["iterations"] = loops["iterations"].astype(np.int64)
    return loops[LOOP_COLUMNS].reset_index(drop=True)


def _concat(*parts) -> np.ndarray:
    n = max(len(p) for p in parts if not isinstance(p, str))
    out = np.full(n, "", dtype=object)
    for p in parts:
        if isinstance(p, str):
            out = out + p
        else:
            p = np.asarray(p)
            if p.dtype != object:
                p = p.astype(str).astype(object)
            out = out + p
    return out
