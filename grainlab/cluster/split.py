"""One trace analyzed in parts, each part built from its own rows
(`grainlab analyze --workers N`; docs/cluster.md "One big trace across Dask
workers").

The parts are the run's top-level parallel regions and the serial part (the
initial task's code around them). A region's end completes every task
created in it, and the initial task runs the regions one after the other, so
the parts partition the grain graph's nodes and every path crosses a region
from its forks to its `region_end` join.

What a part reads (`plan`, `read_part`): the rows of its own threads in its
own time ranges, from the row groups whose tsc statistics overlap them:
- a region: the encountering thread's rows from its PARALLEL_BEGIN to its
  PARALLEL_END; each other thread's rows from its implicit task's
  IMPLICIT_BEGIN to that task's IMPLICIT_END (libomp reports a worker's last
  barrier end and implicit-task end late, when the next region starts: they
  are the region's rows wherever they lie in time); and as context every
  thread's THREAD_BEGIN and the initial task's IMPLICIT_BEGIN.
- the serial part: every row no region takes, plus each region's
  PARALLEL_BEGIN / PARALLEL_END and its primary thread's IMPLICIT_BEGIN /
  IMPLICIT_END (a region then is a fork, one empty implicit task and its
  join, standing in for the region).

Phases (each a Dask task per part, the part's state kept by the worker that
built it; all return small values):
1. `gaps`: the part's task-creation gaps (value counts). The builder weighs
   a fork by min(gap, estimate), the estimate being the 10th percentile of
   the gaps of the WHOLE run: it is computed from all parts' counts.
2. `build_part`: the part's graph, built with that estimate; a region's
   nodes selected as `analyze --region` selects them. Returns work, span,
   counts, the threads and CPUs it ran on, its positive grain works (value
   counts: the median interval) and its critical path.
3. `place_serial`: the serial part's graph with every region standing for
   its span: the run's span and critical path (the longest path through it;
   exact, also when tasks of the initial task run beside regions), and each
   region's earliest start in the whole graph.
4. `interval_counts`: each part's grains at their earliest start in the
   whole run (its own schedule shifted by its region's start) counted on
   the run's interval grid; the counts are added.
5. `finish_part`: the per-grain metrics with the run's global parameters
   (instantaneous parallelism from the added counts, "auto" thresholds from
   the run's cores used / per socket), the problems, and per source location
   grains, work and flagged grains. Added up, they are the run's.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .. import schema as S
from ..errors import GrainlabError, UsageError
from ..trace.trace import read_events

BOUNDARY = (S.THREAD_BEGIN, S.THREAD_END, S.PARALLEL_BEGIN, S.PARALLEL_END,
            S.IMPLICIT_BEGIN, S.IMPLICIT_END)
END = np.iinfo(np.int64).max
CREATION_QUANTILE = 0.10            # grainlab.graph.build's default
_STATE: dict = {}                    # per process: (path, mtime, part) -> its state


# ---------------------------------------------------------------------------
# the plan: which rows each part reads (from the boundary rows alone)

def plan(path) -> list[dict]:
    """The parts of the trace at `path`: [serial part, region 1, region 2,
    ...], each {"kind", "index", "ordinal", "ranges": {thread: [(lo, hi)]}
    (tsc, inclusive), "points": [(thread, tsc, event)] (single rows it
    also takes)}; the serial part's "exclude" holds every region's ranges."""
    cols = ["thread", "tsc", "event", "task", "other", "kind"]
    t = pq.read_table(path, columns=cols, filters=[("event", "in", list(BOUNDARY))])
    c = {k: t.column(k).to_numpy() for k in cols}
    order = np.lexsort((c["tsc"], c["thread"]))
    c = {k: v[order] for k, v in c.items()}
    ev, thread, tsc, task, other = c["event"], c["thread"], c["tsc"].astype(np.int64), \
        c["task"], c["other"]
    initial = set(task[(ev == S.IMPLICIT_BEGIN) & ((c["kind"] & S.TASK_INITIAL) != 0)].tolist())
    pb = np.flatnonzero((ev == S.PARALLEL_BEGIN) & np.isin(task, list(initial)))
    pb = pb[np.argsort(tsc[pb], kind="stable")]
    top = other[pb]
    top_set = set(top.tolist())
    context = [(int(thread[i]), int(tsc[i]), int(ev[i])) for i in np.flatnonzero(
        (ev == S.THREAD_BEGIN) | ((ev == S.IMPLICIT_BEGIN) & np.isin(task, list(initial))))]
    imp_begin = np.flatnonzero((ev == S.IMPLICIT_BEGIN) & np.isin(other, list(top_set)))
    parts, exclude, keep_points = [], {}, []
    ordinal_of = {}
    for k, i in enumerate(pb):
        rid, m = other[i], int(thread[i])
        enc = task[i]
        ordinal_of[enc] = ordinal_of.get(enc, -1) + 1
        pe = np.flatnonzero((ev == S.PARALLEL_END) & (other == rid))
        hi = int(tsc[pe[0]]) if len(pe) else END
        ranges = {m: [(int(tsc[i]), hi)]}
        points = list(context)
        for j in imp_begin[other[imp_begin] == rid]:
            w = int(thread[j])
            if w == m:          # the primary's implicit task: inside the range
                ends = np.flatnonzero((ev == S.IMPLICIT_END) & (task == task[j]) & (thread == w))
                keep_points += [(w, int(tsc[j]), S.IMPLICIT_BEGIN)] + \
                    [(w, int(tsc[e]), S.IMPLICIT_END) for e in ends[:1]]
                continue
            ends = np.flatnonzero((ev == S.IMPLICIT_END) & (task == task[j]) & (thread == w)
                                  & (tsc >= tsc[j]))
            if len(ends):
                end = int(tsc[ends[0]])
            else:               # no end: up to the thread's next top-level region
                nxt = imp_begin[(thread[imp_begin] == w) & (tsc[imp_begin] > tsc[j])]
                end = int(tsc[nxt].min()) - 1 if len(nxt) else END
            ranges.setdefault(w, []).append((int(tsc[j]), end))
        for w, rs in ranges.items():
            exclude.setdefault(w, []).extend(rs)
        keep_points += [(m, int(tsc[i]), S.PARALLEL_BEGIN)] + \
            [(m, int(tsc[e]), S.PARALLEL_END) for e in pe[:1]]
        parts.append({"kind": "region", "index": k + 1, "region_id": int(rid), "thread": m,
                      "ordinal": ordinal_of[enc], "ranges": ranges, "points": points})
    hz = float(_meta(path)["clock"]["hz"])
    begins = {p["index"]: int(np.rint(np.float64(p["ranges"][p["thread"]][0][0]) * (1e9 / hz)))
              for p in parts}
    serial = {"kind": "serial", "index": 0, "exclude": exclude, "points": keep_points,
              "begins": begins}
    return [serial] + parts


def _in_ranges(thread, tsc, ranges: dict) -> np.ndarray:
    """Per row: inside one of `ranges` ({thread: [(lo, hi)]}, inclusive)."""
    out = np.zeros(len(tsc), bool)
    for t, rs in ranges.items():
        rs = sorted(rs)
        lo = np.array([r[0] for r in rs], np.int64)
        hi = np.array([r[1] for r in rs], np.int64)
        on = np.flatnonzero(thread == t)
        i = np.searchsorted(lo, tsc[on], side="right") - 1
        ok = i >= 0
        ok[ok] = tsc[on[ok]] <= hi[i[ok]]
        out[on[ok]] = True
    return out


def _at_points(thread, tsc, event, points) -> np.ndarray:
    out = np.zeros(len(tsc), bool)
    if not points:
        return out
    p = np.array(points, np.int64)
    key = pd.MultiIndex.from_arrays([p[:, 0], p[:, 1], p[:, 2]])
    rows = pd.MultiIndex.from_arrays([thread.astype(np.int64), tsc, event.astype(np.int64)])
    return rows.isin(key)


def _row_groups(parquet: pq.ParquetFile, part: dict) -> list[int]:
    """The row groups a part reads: by the tsc and thread statistics of each
    (a row group is one thread's buffer)."""
    md = parquet.metadata
    names = parquet.schema_arrow.names
    it, ith = names.index("tsc"), names.index("thread")
    chosen = []
    for r in range(md.num_row_groups):
        g = md.row_group(r)
        st, sth = g.column(it).statistics, g.column(ith).statistics
        if st is None or not st.has_min_max or sth is None or not sth.has_min_max:
            chosen.append(r)
            continue
        lo, hi = int(st.min), int(st.max)
        threads = range(int(sth.min), int(sth.max) + 1)
        if any(t == p[0] and lo <= p[1] <= hi for p in part["points"] for t in threads):
            chosen.append(r)
        elif part["kind"] == "region":
            if any(a <= hi and lo <= b for t in threads for a, b in part["ranges"].get(t, ())):
                chosen.append(r)
        else:       # serial: unless wholly inside one region range of its thread
            inside = len(threads) == 1 and any(
                a <= lo and hi <= b for a, b in part["exclude"].get(threads[0], ()))
            if not inside:
                chosen.append(r)
    return chosen


def read_part(path, part: dict):
    """The part's rows as a grainlab Trace (the run's metadata, the part's
    events and data accesses), read from its row groups only."""
    from ..trace.accesses import split_accesses
    from ..trace.dependence_waits import fold_dependence_waits
    from ..trace.file import open_trace
    from ..trace.trace import Trace
    path = os.fspath(path)
    parquet, meta = open_trace(Path(path))
    groups = _row_groups(parquet, part)
    # the loader's own reader, on the part's row groups: each column filled
    # in place a few row groups at a time (no Arrow table beside its copy)
    events, _ = read_events(parquet, Path(path), meta, groups)
    events, folded = fold_dependence_waits(events)
    if folded:
        meta["dependence_waits"] = folded
    th, tsc = events["thread"].to_numpy(), events["tsc"].to_numpy().astype(np.int64)
    evc = events["event"].to_numpy()
    if part["kind"] == "region":
        mine = _in_ranges(th, tsc, part["ranges"])
    else:
        mine = ~_in_ranges(th, tsc, part["exclude"])
    mine |= _at_points(th, tsc, evc, part["points"])
    events = events[mine].reset_index(drop=True)
    n_groups = parquet.metadata.num_row_groups
    sizes = np.bincount(events["row_group"].to_numpy(), minlength=n_groups).astype(np.int64)
    events, sizes, accesses = split_accesses(events, sizes)
    return Trace(Path(path), meta, events, sizes, accesses=accesses)


# ---------------------------------------------------------------------------
# exact order statistics from value counts (what parts send, not the values)

def merge_counts(pairs) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) of several parts' value counts, summed."""
    vals = [np.asarray(v, np.int64) for v, _ in pairs if len(v)]
    cnts = [np.asarray(c, np.int64) for v, c in pairs if len(v)]
    if not vals:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    v, inv = np.unique(np.concatenate(vals), return_inverse=True)
    return v, np.bincount(inv, weights=np.concatenate(cnts), minlength=len(v)).astype(np.int64)


def value_counts(x) -> tuple[list, list]:
    v, c = np.unique(np.asarray(x, np.int64), return_counts=True)
    return v, c


def order_stat(values, counts, i: int) -> int:
    """The i-th smallest (0-based) of the multiset."""
    return int(values[np.searchsorted(np.cumsum(counts), i, side="right")])


def quantile_of_counts(values, counts, q: float) -> int:
    """int(round(np.quantile(multiset, q))) exactly as the builder computes
    it: the two order statistics around the quantile, interpolated by numpy
    itself on a 2-element stand-in array with the same fraction."""
    n = int(counts.sum())
    if n == 0:
        return 0
    full = np.repeat(values, counts)            # exact: numpy's own interpolation
    return int(round(float(np.quantile(full, q))))


def median_of_counts(values, counts) -> int:
    """int(np.median(multiset)) (the median interval), from order statistics."""
    n = int(counts.sum())
    if n == 0:
        return 0
    a = order_stat(values, counts, (n - 1) // 2)
    b = order_stat(values, counts, n // 2)
    return int(np.mean(np.array([a, b], np.int64)))


# ---------------------------------------------------------------------------
# the phases (run on a worker; each part's state kept between them)

class _Gaps(Exception):
    def __init__(self, gap):
        self.gap = gap


def _key(path, part):
    return (os.fspath(path), os.stat(path).st_mtime_ns, part["index"])


def _state(path, part) -> dict:
    key = _key(path, part)
    st = _STATE.get(key)
    if st is None:
        st = _STATE[key] = {"trace": read_part(path, part)}
    return st


def gaps(path, part: dict) -> dict:
    """Phase 1: the part's creation gaps, as value counts."""
    from ..graph import build
    from .worker import start_task
    start_task()
    st = _state(path, part)

    def stop(gap):
        raise _Gaps(np.asarray(gap, np.int64))
    try:
        build(st["trace"], creation_cost=stop)
        gap = np.zeros(0, np.int64)     # no explicit task: the builder never asks
    except _Gaps as g:
        gap = g.gap
    return {"index": part["index"], "gaps": value_counts(gap)}


def _top_contexts(g) -> np.ndarray:
    ctx = g.contexts
    kind = ctx["kind"].astype(str).to_numpy()
    initial = set(ctx.index[kind == "initial"].tolist())
    return ctx.index.to_numpy()[(kind == "implicit") & ctx["parent"].isin(initial).to_numpy()]


def _fix_identity(part, names, region=None):
    """A region part's identities say region <L>.p0 (its own trace has one
    region per initial task): the run's ordinal put back. region: the
    part's own region identity (`<L>.p0`)."""
    if part["kind"] != "region" or part["ordinal"] == 0 or not region:
        return list(names)
    true = region[:-1] + str(part["ordinal"])
    n0 = len(region)
    out = []
    for n in names:
        if n is not None and n.startswith(region) and (len(n) == n0 or n[n0] in ".@"):
            n = true + n[n0:]
        out.append(n)
    return out


def build_part(path, part: dict, estimate: int) -> dict:
    """Phase 2: the part's graph, with the run's creation-cost estimate."""
    from ..graph import build
    from ..graph.select import region_nodes, select
    from ..metrics import work as W
    from ..metrics.contract import grain_exec_mask
    from .worker import start_task
    start_task()
    st = _state(path, part)
    g = build(st["trace"], creation_cost=lambda _gap: estimate)
    st["estimate"] = estimate
    ctx = _top_contexts(g)
    if part["kind"] == "region":
        sub = select(g, region_contexts=ctx)
        keep = np.ones(len(sub.nodes), bool)
    else:
        sub = g
        keep = ~region_nodes(g, ctx) if len(ctx) else np.ones(len(g.nodes), bool)
    st["graph"], st["serial_nodes"] = sub, keep
    st["region"] = str(g.contexts.loc[ctx[0], "region"]) if len(ctx) else None
    nodes = sub.nodes
    dur = nodes["duration"].to_numpy(np.int64)
    thread = nodes["thread"].to_numpy(np.int64)[keep]
    cpu = nodes["cpu"].to_numpy(np.int64)[keep] if "cpu" in nodes else np.zeros(0, np.int64)
    tot = W.totals(sub)
    work = sub.grains["work"].to_numpy(np.int64)
    out = {"index": part["index"], **{k: tot[k] for k in ("grains", "tasks", "chunks",
                                                        "grain_work_ns")},
           "work_ns": int(dur[keep].sum()),
           "threads": sorted(set(thread[thread >= 0].tolist())),
           "cpus": sorted(set(cpu[cpu >= 0].tolist())),
           "work_counts": value_counts(work[work > 0]),
           "min_work": int(work[work > 0].min()) if (work > 0).any() else 0}
    if part["kind"] == "region":
        out["span_ns"] = int(sub.span)
        out["critical_path"] = _fix_identity(part, list(sub.identities(
            np.asarray(sub.critical_grains, np.int64))), st["region"])
        out["critical_path_time"] = {k: v for k, v in W.critical_path_time(sub).items()
                                     if k != "contexts"}
        m = grain_exec_mask(sub)
        es = nodes["earliest_finish"].to_numpy(np.int64) - dur
        st["es"] = es
        out["placed"] = (int(es[m].min()), int((es + dur)[m].max())) if m.any() else None
    return out


def place_serial(path, part: dict, spans: dict) -> dict:
    """Phase 3 (serial part): the run's longest path, each region standing
    for its span ({region index: span}); each region's earliest start."""
    from ..graph.critical_path import longest_path, node_arrays
    from ..metrics.contract import grain_exec_mask
    from .worker import start_task
    start_task()
    st = _state(path, part)
    g, serial = st["graph"], st["serial_nodes"]
    nodes = g.nodes
    ctx = _top_contexts(g)
    # which region each top context stands for: by its fork's time (the
    # region's PARALLEL_BEGIN)
    child = nodes["child"].to_numpy(np.int64)
    fork_start = nodes["start"].to_numpy(np.int64)
    index_at = {t: k for k, t in part["begins"].items()}
    region_of_ctx = {}
    for c in ctx:
        forks = np.flatnonzero(child == c)
        if len(forks) and int(fork_start[forks[0]]) in index_at:
            region_of_ctx[int(c)] = index_at[int(fork_start[forks[0]])]
    arrays = node_arrays(nodes)
    w = np.where(serial, arrays["duration"], 0).astype(np.int64)
    G = len(g.grains)
    join = g.contexts["join"].to_numpy(np.int64)
    end_of = {}
    for c, k in region_of_ctx.items():
        j = int(join[c - G])
        if j >= 0:
            w[j] = spans[k]
            end_of[j] = k
    arrays["duration"] = w
    path_nodes, span, finish, _ = longest_path(**arrays, src=g.edges["src"].to_numpy(),
                                               dst=g.edges["dst"].to_numpy())
    offsets = {}
    for c, k in region_of_ctx.items():
        forks = np.flatnonzero(child == c)
        if len(forks):
            f = int(forks.min())
            offsets[k] = min(offsets.get(k, END), int(finish[f] - w[f]))
    es = finish - w
    st["es"], st["weights"] = es, w
    # the path: serial grains and regions, in order
    grain = nodes["grain"].to_numpy(np.int64)
    pieces, on_path_regions = [], []
    crit_grains = np.zeros(G, bool)
    ptime = {"grains_ns": 0, "joins_ns": 0, "contexts_ns": 0, "barriers_ns": 0}
    is_join = (nodes["type"].astype(str) == "join").to_numpy()
    for v in path_nodes.tolist():       # as metrics.work.critical_path_time splits it
        if v in end_of:
            pieces.append(("region", end_of[v]))
            on_path_regions.append(end_of[v])
            continue
        if not serial[v]:
            continue
        gi = int(grain[v])
        if 0 <= gi < G:
            crit_grains[gi] = True
            if not pieces or pieces[-1] != ("grain", gi):
                pieces.append(("grain", gi))
            ptime["joins_ns" if is_join[v] else "grains_ns"] += int(w[v])
        elif gi >= G:
            ptime["contexts_ns"] += int(w[v])
        else:
            ptime["barriers_ns"] += int(w[v])
    st["on_path"] = crit_grains
    names = list(g.identities(np.array([p[1] for p in pieces if p[0] == "grain"], np.int64)))
    it = iter(names)
    pieces = [("grain", next(it)) if p[0] == "grain" else p for p in pieces]
    m = grain_exec_mask(g)
    dur = w
    return {"span_ns": int(span), "offsets": offsets, "pieces": pieces,
            "regions_on_path": on_path_regions, "critical_path_time": ptime,
            "placed": (int(es[m].min()), int((es + dur)[m].max())) if m.any() else None}


def _placed(st, offset):
    from ..metrics.instantaneous_parallelism import placed_fragments
    g = st["graph"]
    if "weights" in st:         # the serial part: its own weights
        es = st["es"]
        grain, start, end = placed_fragments(_with_duration(g, st["weights"]), es)
    else:
        grain, start, end = placed_fragments(g, st["es"])
    return grain, start + offset, end + offset


def _with_duration(g, w):
    import copy
    h = copy.copy(g)
    h.nodes = g.nodes.assign(duration=w)
    return h


def interval_counts(path, part: dict, grid: dict) -> dict:
    """Phase 4: the part's grains counted on the run's interval grid
    {origin, length, k, offset}: the counts over the intervals it touches."""
    from ..metrics.instantaneous_parallelism import _counts
    from .worker import start_task
    start_task()
    st = _state(path, part)
    grain, start, end = _placed(st, grid["offset"])
    origin, length, k = grid["origin"], grid["length"], grid["k"]
    opt, cons, lo, hi, owner = _counts(grain, start - origin, end - origin, length, k)
    st["pieces"] = (lo, hi, owner)
    st["first_start"] = (grain, start)
    if len(lo) == 0:
        return {"index": part["index"], "range": None}
    a, b = int(lo.min()), int(hi.max())
    return {"index": part["index"], "range": (a, b), "opt": opt[a:b + 1], "cons": cons[a:b + 1]}


def finish_part(path, part: dict, final: dict) -> dict:
    """Phase 5: the part's per-grain metrics with the run's parameters, its
    problems and per-location sums. final: opt/cons counts over the part's
    range ("range"), thresholds (resolved), on_path (its region is on the
    run's critical path), grains (True: also the grain table, for tests)."""
    from .. import problems as P
    from ..metrics import instantaneous_parallelism as ip
    from ..metrics.registry import METRICS, Context
    from ..symbolize import grain_locations
    from .worker import start_task
    start_task()
    st = _state(path, part)
    g = st["graph"]
    gr = g.grains
    n = len(gr)
    ctx = Context(g, accesses=st["trace"].accesses)
    # the per-grain metrics (graph-level values are composed by the
    # coordinator); instantaneous parallelism and scatter take the run's
    # parameters below
    skip = {"instantaneous_parallelism", "scatter"}
    for m in METRICS:
        if m.compute is not None and m.columns and not m.by_graph and m.name not in skip:
            m.compute(ctx)
    from ..metrics import scatter
    scatter.compute(g, ctx.sibling_groups().plain)    # the groups load balance made
    lo, hi, owner = st["pieces"]
    opt_c = np.zeros(0, np.int64)
    if final.get("range") is not None:
        a, _ = final["range"]
        opt_c, cons_c = np.asarray(final["opt"]), np.asarray(final["cons"])
        gr[ip.COLUMN] = ip._grain_min(opt_c, lo - a, hi - a, owner, n)
        gr[ip.COLUMN_CONSERVATIVE] = ip._grain_min(cons_c, lo - a, hi - a, owner, n)
    else:
        gr[ip.COLUMN] = np.nan
        gr[ip.COLUMN_CONSERVATIVE] = np.nan
    grain, start = st["first_start"]
    ids, first, _ = ip.grain_spans(grain, start, start)
    placed = np.full(n, -1, np.int64)
    placed[ids] = first
    gr[ip.COLUMN_START] = placed
    if part["kind"] == "region":
        crit = gr["on_critical_path"].to_numpy(bool) & bool(final["on_path"])
    else:
        crit = st["on_path"]
    gr["on_critical_path"] = crit
    th = final["thresholds"]
    locations = grain_locations(g, g.meta)
    codes, names = P.location_codes(locations)
    work = gr["work"].to_numpy(np.int64)
    df = pd.DataFrame({"location": codes, "work": work})
    problems = {}
    for name in P.RULES:
        if name not in gr.columns:
            problems[name] = None
            continue
        hit = P.flagged(gr, name, th)
        df[name] = hit
        df[name + "@work"] = np.where(hit, work, 0)
        problems[name] = {"grains": int(hit.sum()), "on_critical_path": int((hit & crit).sum()),
                          "work_ns": int(work[hit].sum())}
    agg = df.groupby("location", sort=False).sum()
    agg["grains"] = df.groupby("location", sort=False).size()
    agg.index = [str(names[c]) for c in agg.index]
    out = {"index": part["index"], "problems": problems, "locations": agg}
    if final.get("grains"):
        keep = [c for c in gr.columns if c not in ("identity",)]
        table = gr[keep].copy()
        table["identity"] = _fix_identity(part, list(g.identities(gr.index.to_numpy())),
                                          st.get("region"))
        table["location"] = locations.to_numpy(dtype=object)
        out["grains_table"] = table
    _STATE.pop(_key(path, part), None)      # the last phase: the part is done
    return out


# ---------------------------------------------------------------------------
# the coordinator

def analyze_split(path, *, workers: int | None = None, scheduler: str | None = None,
                  thresholds=None, interval="median", progress=None, grains=False,
                  top: int = 10) -> dict:
    """The run's analysis composed from its parts (see the module doc):
    work, span, critical path, cores used, problems (counts, critical
    path, work) and the per-location table equal the single-process
    analysis's. On Dask (workers / scheduler) or here."""
    from .. import problems as P
    from ..metrics import scatter
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise GrainlabError(f"{path}: no such trace")
    if isinstance(interval, str) and interval not in ("median", "min"):
        raise UsageError(f"--interval {interval} is not composed across parts (it pairs grains "
                         "of different parts): median, min or a number of ns")
    say = progress or (lambda _m: None)
    parts = plan(path)
    say(f"{len(parts) - 1} top-level parallel region(s) and the serial part")
    with _Runner(workers, scheduler, say) as run:
        g1 = run.each("creation gaps", gaps, [(path, p) for p in parts])
        estimate = quantile_of_counts(*merge_counts([r["gaps"] for r in g1]),
                                      CREATION_QUANTILE)
        built = run.each("grain graphs", build_part, [(path, p, estimate) for p in parts])
        spans = {r["index"]: r["span_ns"] for r in built[1:]}
        serial = run.one("serial part", place_serial, (path, parts[0], spans), 0)
        # the interval grid of instantaneous parallelism
        placed = [serial["placed"]] + [
            None if r["placed"] is None else
            (r["placed"][0] + serial["offsets"].get(r["index"], 0),
             r["placed"][1] + serial["offsets"].get(r["index"], 0)) for r in built[1:]]
        placed = [p for p in placed if p is not None]
        origin = min(p[0] for p in placed) if placed else 0
        horizon = (max(p[1] for p in placed) - origin) if placed else 0
        wv, wc = merge_counts([r["work_counts"] for r in built])
        candidates = {"median": median_of_counts(wv, wc),
                      "min": int(wv[0]) if len(wv) else 0}
        length, k, info = _grid(candidates, interval, horizon)
        grids = [{"origin": origin, "length": length, "k": k,
                  "offset": 0 if p["kind"] == "serial" else serial["offsets"].get(p["index"], 0)}
                 for p in parts]
        counted = run.each("interval counts", interval_counts,
                           [(path, p, gd) for p, gd in zip(parts, grids)])
        opt, cons = np.zeros(k, np.int64), np.zeros(k, np.int64)
        for r in counted:
            if r["range"] is not None:
                a, b = r["range"]
                opt[a:b + 1] += r["opt"]
                cons[a:b + 1] += r["cons"]
        threads = set().union(*[r["threads"] for r in built])
        cpus = set().union(*[r["cpus"] for r in built])
        cores = _cores(len(threads), len(cpus), path)
        meta = _meta(path)
        summary = {"cores_used": cores, "threads_used": len(threads),
                   "cores_per_socket": scatter.cores_per_socket(meta, cores)}
        th = P.resolve(thresholds if thresholds is not None else P.thresholds(), summary)
        on_path = set(serial["regions_on_path"])
        finals = []
        for p, r in zip(parts, counted):
            f = {"thresholds": th, "on_path": p["index"] in on_path, "grains": grains,
                 "range": r["range"]}
            if r["range"] is not None:
                a, b = r["range"]
                f["opt"], f["cons"] = opt[a:b + 1], cons[a:b + 1]
            finals.append(f)
        done = run.each("metrics and problems", finish_part,
                        [(path, p, f) for p, f in zip(parts, finals)])
    return _compose(path, parts, built, serial, done, summary, th, info, top, grains)


def _grid(candidates, interval, horizon):
    """The interval length and count, as instantaneous_parallelism._choose_length."""
    from ..metrics.instantaneous_parallelism import MAX_INTERVALS
    if isinstance(interval, str):
        choice, length = interval, candidates[interval]
    else:
        choice, length = "ns", int(interval)
    info = {"interval_choice": choice, "note": None}
    if length <= 0:
        length = max(horizon, 1)
        info["note"] = f"interval choice {choice!r} is undefined for this graph: one interval"
    if horizon > 0 and -(-horizon // length) > MAX_INTERVALS:
        length = -(-horizon // MAX_INTERVALS)
        info["note"] = f"coarsened to {length} ns ({MAX_INTERVALS} intervals)"
    k = max(-(-horizon // length), 1)
    info.update(interval_ns=int(length), intervals=int(k))
    return length, k, info


def _cores(threads: int, cpus: int, path) -> int:
    """metrics.contract.cores_used from the parts' union of threads and CPUs."""
    n = threads
    if cpus:
        n = min(n, cpus)
    if n == 0:
        n = int(_meta(path).get("threads", 1) or 1)
    return max(n, 1)


def _meta(path) -> dict:
    from ..trace.file import open_trace
    return open_trace(Path(path))[1]


def _compose(path, parts, built, serial, done, summary, th, info, top, grains) -> dict:
    from .. import problems as P
    work = sum(r["work_ns"] for r in built)
    span = serial["span_ns"]
    by_index = {r["index"]: r for r in built}
    path_ids = []
    ptime = dict(serial["critical_path_time"])
    for kind, what in serial["pieces"]:
        if kind == "grain":
            path_ids.append(what)
        else:
            r = by_index[what]
            path_ids.extend(r["critical_path"])
            for key in ptime:
                ptime[key] += r["critical_path_time"].get(key, 0)
    n_grains = sum(r["grains"] for r in built)
    problems = {}
    for name, rule in P.RULES.items():
        got = [d["problems"][name] for d in done if d["problems"][name] is not None]
        entry = {"threshold": th[name], "direction": "<" if rule.below else ">",
                 "available": bool(got) and len(got) == len(done)}
        count = sum(x["grains"] for x in got)
        entry.update(grains=count if entry["available"] else 0,
                     percent=100.0 * count / n_grains if n_grains and entry["available"] else 0.0,
                     on_critical_path=sum(x["on_critical_path"] for x in got)
                     if entry["available"] else 0,
                     work_ns=sum(x["work_ns"] for x in got) if entry["available"] else 0)
        problems[name] = entry
    frames = [d["locations"] for d in done if len(d["locations"])]
    loc = pd.concat(frames).groupby(level=0, sort=False).sum() if frames else pd.DataFrame()
    locations = []
    if len(loc):
        loc = loc.sort_values("work", ascending=False, kind="stable")
        total = max(int(loc["work"].sum()), 1)
        flags = [n for n in P.RULES if problems[n]["available"] and n in loc.columns]
        for name, r in loc.iterrows():
            locations.append({"location": name, "grains": int(r["grains"]),
                              "work_ns": int(r["work"]),
                              "work_percent": 100.0 * float(r["work"]) / total,
                              "problem_grains": {f: int(r[f]) for f in flags}})
    out = {"trace": path, "parts": len(parts), "regions": len(parts) - 1,
           "grains": n_grains, "tasks": sum(r["tasks"] for r in built),
           "chunks": sum(r["chunks"] for r in built), "work_ns": int(work),
           "grain_work_ns": sum(r["grain_work_ns"] for r in built), "span_ns": int(span),
           "parallelism": float(work / span) if span > 0 else 1.0,
           "critical_path": path_ids, "critical_path_time": ptime,
           **summary, "thresholds": th, "problems": problems,
           "instantaneous_parallelism": info,
           "locations": locations if top is None else locations[:top],
           "all_locations": locations}
    if grains:
        out["grains_table"] = pd.concat([d["grains_table"] for d in done], ignore_index=True)
    return out


class _Runner:
    """Runs a phase's calls here, or on Dask keeping each part on the worker
    that holds its state (the part's later phases are sent where its first
    ran; elsewhere they would rebuild it, correctly but slower)."""

    def __init__(self, workers, scheduler, say):
        self.workers, self.scheduler, self.say = workers, scheduler, say
        self.client = None
        self.where: dict = {}

    def __enter__(self):
        if self.workers is not None or self.scheduler is not None:
            from .engine import client_for
            self._ctx = client_for(self.workers, self.scheduler, self.say)
            self.client = self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.client is not None:
            return self._ctx.__exit__(*exc)
        return False

    def one(self, what, fn, args, i):
        return self.each(what, fn, [args], at=[i])[0]

    def each(self, what, fn, calls, at=None):
        at = list(range(len(calls))) if at is None else at
        self.say(f"{what}: {len(calls)} part(s)")
        if self.client is None:
            return [fn(*args) for args in calls]
        futures = []
        for i, args in zip(at, calls):
            where = self.where.get(i)
            place = {"workers": [where], "allow_other_workers": True} if where else {}
            futures.append(self.client.submit(fn, *args, pure=False, **place))
        try:
            results = self.client.gather(futures)
        except Exception as e:  # noqa: BLE001 - one kind named, the rest re-raised
            if type(e).__name__ != "KilledWorker":
                raise
            raise GrainlabError(
                f"{what}: the Dask workers running a part died each time it was tried, "
                f"most likely out of memory ({_worker_memory(self.client)} per worker): "
                "use fewer, larger workers (--workers 1, or --scheduler with workers of "
                "more memory), or analyze without --workers") from None
        who = self.client.who_has(futures)
        for i, f in zip(at, futures):
            if i not in self.where and who.get(f.key):
                self.where[i] = who[f.key][0]
        return results


def _worker_memory(client) -> str:
    """The smallest worker memory limit, as "N.N GiB" ("no limit" or "unknown")."""
    try:
        limits = [w.get("memory_limit") or 0 for w in
                  client.scheduler_info(n_workers=-1).get("workers", {}).values()]
    except Exception:  # noqa: BLE001 - only words an error message
        return "unknown"
    limits = [x for x in limits if x]
    return f"{min(limits) / 2 ** 30:.1f} GiB" if limits else "no limit"
