"""Chrome trace-event JSON of a grain graph, for ui.perfetto.dev (and chrome://tracing).

Layout (one process, one track per collector thread):
- metadata: `process_name` (program and pid), `thread_name` / `thread_sort_index`
  per collector thread. tid = collector thread index + 1 (tid 0 is special to
  trace viewers: the idle task), named "thread <index>".
- slices (`"ph": "X"`, ts/dur in microseconds with three decimals, i.e. exact ns):
  * every grain once (cat `task` / `chunk`), named by its source location when
    the grain table has one, else by identity, on the thread that started it,
    from its start to its last node on that thread; `args` hold identity, grain
    id and every grain-table column (metrics included; NaN/inf left out). A
    grain that continues on other threads (untied tasks) gets one more slice per
    such thread (cat `task-part`).
  * the initial and implicit tasks (cat `context`) so each thread's timeline
    shows which region it worked for;
  * runtime work that takes wall time (cat `runtime`): task creation (`create`), joins
    with a waiting thread (`taskwait`, `taskgroup`, ...) and book-keeping.
    Barriers shared by a whole team have no single thread and are not drawn.
  Slices of one thread nest (a child run inside a taskwait is inside the join
  slice, inside the parent's slice); they are written sorted by (thread, start,
  longest first) so equal-start parents precede their children.
- flows (`"ph": "s"` / `"ph": "f"`, `"bp": "e"`): one arrow per creation,
  synchronization and dependence edge whose two ends ran on known threads,
  from the creating fork (or the grain's last moment) to the child's first node
  (or the join's completion). Each arrow has its own id.

No `displayTimeUnit`: Perfetto would read it as the unit of `ts`.
The file is written in batches built column-wise (see `_text`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _text as T
from ._labels import NOT_EXPORTED, owner_identity, owner_index, source_column
from ..sorting import argsort

RUNTIME_NAMES = {"fork": "create", "bookkeeping": "bookkeeping"}
FLOW_TYPES = ("creation", "synchronization", "dependence")
# Tie-break for equal (thread, start, duration): enclosing kinds first.
RANK_CONTEXT, RANK_GRAIN, RANK_PART, RANK_RUNTIME = 0, 1, 2, 3


def write_perfetto(g, path) -> dict:
    """Write `g` as Chrome trace-event JSON to `path`.
    Returns counts: {"slices", "grain_slices", "flows", "bytes"}."""
    nodes = g.nodes
    pid = _pid(g)
    slices = _Slices()
    identities = owner_identity(g)
    _add_grains(g, slices, identities)
    _add_contexts(g, slices, identities)
    _add_runtime(g, slices, identities)
    flows = _flows(g)

    path = Path(path)
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[\n')
        n_slices = slices.write(f, pid)
        n_flows = _write_flows(f, flows, pid)
        threads = np.unique(np.concatenate(
            [nodes["thread"].to_numpy(dtype=np.int64), g.grains["thread"].to_numpy(dtype=np.int64)]))
        threads = threads[threads >= 0]
        meta = [_meta("thread_name", pid, t + 1, {"name": f"thread {t}"}) for t in threads]
        meta += [_meta("thread_sort_index", pid, t + 1, {"sort_index": int(t)}) for t in threads]
        meta.append(_meta("process_name", pid, None, {"name": _process_name(g, pid)}))
        f.write(",\n".join(meta).encode())
        f.write(b'\n],"otherData":{"generator":"grainlab export --perfetto"}}\n')
        size = f.tell()
    return {"slices": n_slices, "grain_slices": slices.grain_slices,
            "flows": n_flows, "bytes": size}


# ---------------------------------------------------------------------------
# Slices


class _Slices:
    """Slice groups: time columns now, text later. Only the numeric columns of
    all slices are held (to sort them); each group formats its name and args
    for the rows of one output batch at a time, so memory does not grow with
    the text of millions of slices."""

    def __init__(self):
        self.groups = []       # (numpy columns, text(rows) -> (cat, name, args))
        self.grain_slices = 0

    def add(self, thread, start, end, rank, text):
        start = np.asarray(start, dtype=np.int64)
        end = np.maximum(np.asarray(end, dtype=np.int64), start)
        self.groups.append((dict(thread=np.asarray(thread, dtype=np.int64), start=start,
                                 dur=end - start, rank=np.full(len(start), rank, np.int8)),
                            text))

    def write(self, f, pid) -> int:
        if not self.groups:
            return 0
        col = {k: np.concatenate([g[0][k] for g in self.groups])
               for k in ("thread", "start", "dur", "rank")}
        group = np.concatenate([np.full(len(g[0]["start"]), i, np.int32)
                                for i, g in enumerate(self.groups)])
        local = np.concatenate([np.arange(len(g[0]["start"])) for g in self.groups])
        order = np.lexsort((col["rank"], -col["dur"], col["start"], col["thread"]))
        prefix = f'{{"ph":"X","pid":{pid},"tid":'
        for a, b in T.batches(len(order)):
            idx = order[a:b]
            cat, name, args = self._text(group[idx], local[idx])
            T.write_rows(f, T.join([
                prefix, T.ints(pa.array(col["thread"][idx] + 1)),
                ',"ts":', T.us(col["start"][idx]), ',"dur":', T.us(col["dur"][idx]),
                ',"cat":"', cat, '","name":"', name, '","args":{', args, "}},\n"]))
        return len(order)

    def _text(self, group, local):
        """cat, name, args of the given slices, in the given order."""
        parts, where = [], []
        for gi in np.unique(group):
            sel = np.flatnonzero(group == gi)
            parts.append(self.groups[gi][1](local[sel]))
            where.append(sel)
        back = pa.array(argsort(np.concatenate(where)))
        return tuple(pa.concat_arrays([p[k].cast(pa.string()) for p in parts]).take(back)
                     for k in range(3))


def _fixed(cat: str, name: pa.Array, args: pa.Array):
    """Text function for a small group formatted up front."""
    def text(rows):
        take = pa.array(rows)
        return (pa.array(np.full(len(rows), cat, dtype=object), pa.string()),
                name.take(take), args.take(take))
    return text


def _add_grains(g, slices: _Slices, identities: pa.Array) -> None:
    grains = g.grains
    n = len(grains)
    if n == 0:
        return
    nodes = g.nodes
    owner = nodes["grain"].to_numpy(dtype=np.int64)
    mine = (owner >= 0) & (owner < n)
    home = grains["thread"].to_numpy(dtype=np.int64)

    # Per (grain, thread): time range of the grain's nodes recorded there.
    per = pd.DataFrame({"grain": owner[mine],
                        "thread": nodes["thread"].to_numpy(dtype=np.int64)[mine],
                        "start": nodes["start"].to_numpy(dtype=np.int64)[mine],
                        "end": nodes["end"].to_numpy(dtype=np.int64)[mine]})
    per = per[per["thread"] >= 0].groupby(["grain", "thread"], sort=False).agg(
        start=("start", "min"), end=("end", "max")).reset_index()
    at_home = per["thread"].to_numpy() == home[per["grain"].to_numpy()]
    home_end = np.full(n, -1, dtype=np.int64)
    home_end[per["grain"].to_numpy()[at_home]] = per["end"].to_numpy()[at_home]
    start = grains["start"].to_numpy(dtype=np.int64)
    end = np.where(home_end >= 0, home_end, grains["end"].to_numpy(dtype=np.int64))

    ident = identities.slice(0, n)
    source = source_column(grains)
    src = (T.to_arrow(grains[source].astype(object)).cast(pa.string())
           if source is not None else None)
    kind = (T.type_codes(grains["kind"], ["task", "chunk"]) if "kind" in grains.columns
            else np.zeros(n, np.int32))
    kind_names = pa.array(["task", "chunk", "task"])

    def names(rows) -> pa.Array:
        take = pa.array(rows)
        who = ident.take(take)
        if src is None:
            return T.json_escaped(who)
        where = src.take(take)
        # An address the symbolizer could not resolve ("0x...", "?") names
        # nothing a reader knows: use the identity then.
        known = pc.and_(pc.greater(pc.utf8_length(where), 0),
                        pc.and_not(pc.invert(pc.starts_with(where, "0x")),
                                   pc.equal(where, "?")))
        return T.json_escaped(pc.if_else(pc.fill_null(known, False), where, who))

    def text(rows):
        return (kind_names.take(pa.array(kind[rows])), names(rows),
                _grain_args(grains.iloc[rows], ident.take(pa.array(rows)), rows))

    slices.add(home, start, end, RANK_GRAIN, text)
    slices.grain_slices = n

    parts = per[~at_home]
    if len(parts):
        pg = parts["grain"].to_numpy()
        args = T.join(['"identity":"', T.json_escaped(ident.take(pa.array(pg))),
                       '","grain":', T.ints(pa.array(pg))])
        slices.add(parts["thread"].to_numpy(), parts["start"].to_numpy(),
                   parts["end"].to_numpy(), RANK_PART, _fixed("task-part", names(pg), args))


def _grain_args(grains: pd.DataFrame, ident: pa.Array, ids: np.ndarray) -> pa.Array:
    """`"identity":...,"grain":...,"<column>":<value>,...` per grain; values
    that do not exist (NaN, inf: JSON has neither) are left out."""
    pieces = ['"identity":"', T.json_escaped(ident), '","grain":', T.ints(pa.array(ids))]
    fields = []
    for name in grains.columns:
        if name in NOT_EXPORTED:
            continue
        arr = T.arrow_column(grains[name])
        if isinstance(arr, pa.DictionaryArray):  # the few categories are formatted, not every row
            text = pa.DictionaryArray.from_arrays(arr.indices, _json_value(arr.dictionary)).dictionary_decode()
        else:
            text = _json_value(arr)
        key = name.replace("\\", "\\\\").replace('"', '\\"')
        fields.append((f',"{key}":', text, ""))
    pieces += T.fields(fields)
    return T.join(pieces)


def _json_value(arr: pa.Array) -> pa.Array:
    kind = T.kind_of(arr)
    if kind == "bool":
        return T.bools(arr)
    if kind == "int":
        return T.ints(arr)
    if kind == "float":
        return T.floats(arr, nan=None, inf=None)   # JSON has no NaN/inf
    return pc.binary_join_element_wise('"', T.json_escaped(arr), '"', "")


def _add_contexts(g, slices: _Slices, identities: pa.Array) -> None:
    contexts = getattr(g, "contexts", None)
    if contexts is None or not len(contexts):
        return
    kind = contexts["kind"].astype(str).to_numpy() if "kind" in contexts.columns \
        else np.full(len(contexts), "implicit")
    ident = identities.slice(len(g.grains))
    label = pa.array(np.where(kind == "initial", "initial task ", "implicit task "))
    names = T.json_escaped(pc.binary_join_element_wise(label, ident, ""))
    work = contexts["work"].to_numpy(dtype=np.int64) if "work" in contexts.columns \
        else np.zeros(len(contexts), np.int64)
    args = T.join(['"identity":"', T.json_escaped(ident), '","context":',
                   T.ints(pa.array(contexts.index.to_numpy(dtype=np.int64))),
                   ',"work":', T.ints(pa.array(work))])
    thread = contexts["thread"].to_numpy(dtype=np.int64)
    keep = thread >= 0
    slices.add(thread[keep], contexts["start"].to_numpy()[keep], contexts["end"].to_numpy()[keep],
               RANK_CONTEXT, _fixed("context", names.filter(pa.array(keep)),
                                    args.filter(pa.array(keep))))


def _add_runtime(g, slices: _Slices, identities: pa.Array) -> None:
    nodes = g.nodes
    code = T.type_codes(nodes["type"], ["fork", "join", "bookkeeping"])
    thread = nodes["thread"].to_numpy(dtype=np.int64)
    # Shown where they take wall time (a join's weight excludes waiting, its
    # slice does not).
    wall = nodes["end"].to_numpy(dtype=np.int64) - nodes["start"].to_numpy(dtype=np.int64)
    idx = np.flatnonzero((code < 3) & (thread >= 0) & (wall > 0))
    if not len(idx):
        return
    sub = nodes.iloc[idx]
    labels = ["create", "join", "bookkeeping"]
    label = code[idx].astype(np.int32)
    if "join_kind" in sub.columns:
        kinds = list(pd.Series(sub["join_kind"]).astype("category").cat.categories.astype(str))
        jk = T.type_codes(sub["join_kind"], kinds)
        label = np.where(label == 1, 3 + jk, label)   # joins named by their kind
        labels += kinds + ["join"]
    labels = pa.array(labels)
    owner = sub["grain"].to_numpy(dtype=np.int64)
    values = {"duration_ns": sub["duration"].to_numpy(dtype=np.int64)}
    for name in ("child", "sync_time", "n_waited"):
        if name in sub.columns:
            values[name] = sub[name].to_numpy(dtype=np.int64)

    def text(rows):
        who = pc.fill_null(T.json_escaped(identities.take(
            owner_index(owner[rows], len(identities)))), "")
        pieces = ['"node":', T.ints(pa.array(idx[rows])), ',"owner":"', who, '"']
        for name, v in values.items():
            pieces += [f',"{name}":', T.ints(pa.array(v[rows]))]
        return (pa.array(np.full(len(rows), "runtime", dtype=object), pa.string()),
                labels.take(pa.array(label[rows])), T.join(pieces))

    slices.add(thread[idx], sub["start"].to_numpy(), sub["end"].to_numpy(), RANK_RUNTIME, text)


# ---------------------------------------------------------------------------
# Flows


def _flows(g) -> dict:
    nodes, edges = g.nodes, g.edges
    etype = np.array(list(FLOW_TYPES) + [""], dtype=object)[
        T.type_codes(edges["type"], list(FLOW_TYPES))]
    keep = etype != ""
    src = edges["src"].to_numpy()[keep]
    dst = edges["dst"].to_numpy()[keep]
    etype = etype[keep]
    ids = np.flatnonzero(keep)
    thread = nodes["thread"].to_numpy(dtype=np.int64)
    start = nodes["start"].to_numpy(dtype=np.int64)
    end = nodes["end"].to_numpy(dtype=np.int64)
    ok = (thread[src] >= 0) & (thread[dst] >= 0)
    src, dst, etype, ids = src[ok], dst[ok], etype[ok], ids[ok]
    creation = etype == "creation"
    # Creation leaves when the fork starts; a finished grain (sync / dependence
    # source) leaves at its last moment. Arrows arrive at the child's first node,
    # or when a join completes (inside its slice).
    s_ts = np.where(creation, start[src], np.maximum(end[src] - 1, start[src]))
    f_ts = np.where(etype == "synchronization",
                    np.maximum(end[dst] - 1, start[dst]), start[dst])
    return dict(id=ids, type=etype, s_tid=thread[src] + 1, s_ts=s_ts,
                f_tid=thread[dst] + 1, f_ts=f_ts)


def _write_flows(f, flows: dict, pid: int) -> int:
    n = len(flows["id"])
    for a, b in T.batches(n):
        ids = T.ints(pa.array(flows["id"][a:b]))
        cat = pa.array(flows["type"][a:b], pa.string())
        T.write_rows(f, T.join([
            '{"ph":"s","id":', ids, ',"pid":', str(pid), ',"tid":',
            T.ints(pa.array(flows["s_tid"][a:b])), ',"ts":', T.us(flows["s_ts"][a:b]),
            ',"cat":"', cat, '","name":"', cat, '"},\n',
            '{"ph":"f","bp":"e","id":', ids, ',"pid":', str(pid), ',"tid":',
            T.ints(pa.array(flows["f_tid"][a:b])), ',"ts":', T.us(flows["f_ts"][a:b]),
            ',"cat":"', cat, '","name":"', cat, '"},\n']))
    return n


# ---------------------------------------------------------------------------


def _pid(g) -> int:
    try:
        pid = int((getattr(g, "meta", None) or {}).get("pid", 1))
    except (TypeError, ValueError):
        pid = 1
    return pid if pid > 0 else 1


def _process_name(g, pid) -> str:
    command = (getattr(g, "meta", None) or {}).get("command")
    if isinstance(command, list) and command:
        name = " ".join(str(c) for c in command)
    elif isinstance(command, str) and command:
        name = command
    else:
        name = "grainlab trace"
    return f"{name} (pid {pid})"


def _meta(name, pid, tid, args) -> str:
    import json
    event = {"ph": "M", "name": name, "pid": pid}
    if tid is not None:
        event["tid"] = int(tid)
    event["args"] = args
    return json.dumps(event)
