"""The task table, region table, identity forest and the graph's owners,
rewritten for scale (issue 31: columns in two parts, one id index, the forest
built once, compiled tree walks), against the way they were computed before,
kept here as the reference: every column, dtype, value and index equal, on
the golden traces, synthetic traces, random programs, and the same traces
with their events shuffled (creations out of order: the sorting fallbacks)
and with tasks created twice. The compiled kernels (grainlab/native/forest.c)
against their numpy twins on random forests."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from randprog import random_program

import grainlab as gl
from grainlab import schema as S
from grainlab import synth
from grainlab._paths import graph_kernels_library
from grainlab.graph.owners import find_owners
from grainlab.idindex import IdIndex
from grainlab.sorting import argsort, lexsort
from grainlab.tables import identity as I
from grainlab.tables.tasks import TaskParts, build_task_table

GOLDEN = Path(__file__).resolve().parent / "golden" / "traces"
DATA = Path(__file__).resolve().parent / "data"
TRACES = sorted(GOLDEN.glob("*.parquet")) + sorted(DATA.glob("*.parquet"))
NATIVE = (False, True) if graph_kernels_library() is not None else (False,)


# ---------------------------------------------------------------------------
# The reference: grainlab/tables/tasks.py, identity.Names.from_tree / extend
# and grainlab/graph/owners.find_owners as they were before the rewrite.

KINDS = ["initial", "implicit", "explicit"]
INITIAL, IMPLICIT, EXPLICIT = 0, 1, 2
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def _ref_digits(x):
    x = np.asarray(x, np.int64)
    neg = x < 0
    mag = np.where(neg, -(x + 1), x)
    return np.searchsorted(_POW10, mag, side="right") + 1 + neg


def _ref_step_length(tag, a, b):
    tag = np.asarray(tag)
    n = np.array([len(p) for p in I._PREFIX], np.int64)[tag] + _ref_digits(a)
    n = np.where(tag == I.IMPLICIT, n + 2 + _ref_digits(b), n)
    return np.where(tag == I.UNKNOWN, 1, n)


def _ref_from_tree(parent, tag, a, b):
    parent = np.asarray(parent, np.int64)
    tag = np.asarray(tag, np.int8)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    n = len(parent)
    level = np.full(n, -1, np.int64)
    length = np.zeros(n, np.int64)
    step_len = _ref_step_length(tag, a, b)
    roots = np.flatnonzero((parent < 0) & ((tag == I.ROOT) | (tag == I.UNKNOWN)))
    has_parent = np.flatnonzero(parent >= 0)
    kids = has_parent[argsort(parent[has_parent])]
    count = np.bincount(parent[has_parent], minlength=n)
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    frontier, lv = roots, 0
    while len(frontier):
        plen = length[parent[frontier]] if lv else 0
        length[frontier] = plen + step_len[frontier]
        level[frontier] = lv
        counts = count[frontier]
        total = int(counts.sum())
        if total == 0:
            break
        offsets = np.repeat(first[frontier] - np.concatenate(([0], np.cumsum(counts)[:-1])),
                            counts)
        nxt = kids[offsets + np.arange(total)]
        frontier = nxt[level[nxt] < 0]
        lv += 1
    return I.Names(parent, tag, a, b, level, length)


def _ref_extend(self, parent, tag, a, b):
    parent = np.asarray(parent, np.int64)
    k = len(parent)
    tag = np.broadcast_to(np.asarray(tag, np.int8), (k,)).copy()
    a = np.broadcast_to(np.asarray(a, np.int64), (k,)).copy()
    b = np.broadcast_to(np.asarray(b, np.int64), (k,)).copy()
    p = np.maximum(parent, 0)
    known = parent >= 0
    if len(self):
        plevel = np.where(known, self.level[p] if k else p, -1)
    else:
        plevel = np.full(k, -1, np.int64)
    root = ~known & ((tag == I.ROOT) | (tag == I.UNKNOWN))
    level = np.where(root, 0, np.where(known & (plevel >= 0), plevel + 1, -1))
    ok = level >= 0
    plen = np.where(known, self.length[p] if len(self) else 0, 0)
    length = np.where(ok, plen + _ref_step_length(tag, a, b), 0)
    start = len(self)
    out = I.Names(np.concatenate([self.parent, parent]), np.concatenate([self.tag, tag]),
                  np.concatenate([self.a, a]), np.concatenate([self.b, b]),
                  np.concatenate([self.level, level]), np.concatenate([self.length, length]))
    return out, np.arange(start, start + k, dtype=np.int64)


def ref_build_task_table(events, lineage=True, times=True):
    ev = events
    regions = _ref_regions(ev)
    initial, implicit = _ref_implicit_tasks(ev, regions)
    explicit = _ref_explicit_tasks(ev)
    tasks = pd.concat([initial, implicit, explicit], ignore_index=True)
    tasks["kind"] = pd.Categorical.from_codes(tasks["kind"].to_numpy(), categories=KINDS)
    if times:
        _ref_add_execution_times(ev, tasks)
    flags = tasks["flags"].to_numpy()
    explicit = tasks["kind"].cat.codes.to_numpy() == EXPLICIT
    for name, bit in (("undeferred", S.TASK_UNDEFERRED), ("untied", S.TASK_UNTIED),
                      ("final", S.TASK_FINAL), ("mergeable", S.TASK_MERGEABLE),
                      ("merged", S.TASK_MERGED)):
        tasks[name] = explicit & ((flags & np.uint32(bit)) != 0)
    names = _ref_add_lineage(tasks, regions, lineage)
    pos = IdIndex(tasks["id"].to_numpy()).get(regions["encountering_task"].to_numpy())
    names, nodes = _ref_extend(names, pos, I.PARALLEL, regions["ordinal"].to_numpy(np.int64), 0)
    regions["identity_node"] = nodes
    regions["identity"] = names.strings(nodes)
    return tasks, regions, names


def _ref_regions(ev):
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
    regions["end_ns"] = end_ns.reindex(regions["id"].to_numpy()).to_numpy(dtype=np.float64)
    regions = regions.sort_values(["encountering_task", "_tsc"], kind="stable")
    regions["ordinal"] = regions.groupby("encountering_task").cumcount().astype(np.int64)
    return regions.sort_values("_tsc", kind="stable").drop(columns="_tsc").reset_index(drop=True)


def _ref_implicit_tasks(ev, regions):
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


def _ref_explicit_tasks(ev):
    rows = np.flatnonzero(ev["event"].to_numpy() == S.TASK_CREATE)
    task = ev["task"].to_numpy()[rows]
    rows = rows[~pd.Series(task).duplicated().to_numpy()]

    def col(name):
        return ev[name].to_numpy()[rows]
    n = len(rows)
    return pd.DataFrame({
        "id": col("task"), "parent": col("other"),
        "kind": np.full(n, EXPLICIT, dtype=np.int8),
        "flags": col("kind").astype(np.uint32), "codeptr": col("codeptr"),
        "thread": col("thread"), "region": np.zeros(n, dtype=np.uint64),
        "team_index": np.full(n, -1, dtype=np.int64),
        "team_size": np.full(n, -1, dtype=np.int64),
        "create_ns": col("time"), "has_dependences": col("value") != 0, "_tsc": col("tsc"),
    })


def _ref_first_row(n, pos):
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hit = np.flatnonzero(pos >= 0)
    np.minimum.at(out, pos[hit], hit)
    out[out == np.iinfo(np.int64).max] = -1
    return out


def _ref_add_execution_times(ev, tasks):
    ids = tasks["id"].to_numpy()
    index = IdIndex(ids)
    code = ev["event"].to_numpy()
    time = ev["time"].to_numpy()
    sched = np.flatnonzero(code == S.TASK_SCHEDULE)
    sched = sched[argsort(time[sched])]
    done = sched[np.isin(ev["kind"].to_numpy()[sched], S.STATUS_FINISHED)]
    imp_end = np.flatnonzero(code == S.IMPLICIT_END)
    imp_end = imp_end[argsort(-time[imp_end])]
    first_run = _ref_first_row(len(ids), index.get(ev["task"].to_numpy()[sched]))
    begin_ns = np.full(len(ids), np.nan)
    begin_thread = np.full(len(ids), np.nan)
    hit = first_run >= 0
    begin_ns[hit] = time[sched[first_run[hit]]]
    begin_thread[hit] = ev["thread"].to_numpy()[sched[first_run[hit]]]
    first_end = _ref_first_row(len(ids), index.get(ev["other"].to_numpy()[done]))
    end_ns = np.full(len(ids), np.nan)
    end_ns[first_end >= 0] = time[done[first_end[first_end >= 0]]]
    implicit = tasks["kind"].cat.codes.to_numpy() != EXPLICIT
    begin_ns[implicit] = tasks["create_ns"].to_numpy()[implicit]
    begin_thread[implicit] = tasks["thread"].to_numpy()[implicit]
    last_end = _ref_first_row(len(ids), index.get(ev["task"].to_numpy()[imp_end]))
    end_ns[implicit] = np.where(last_end[implicit] >= 0,
                                time[imp_end[np.maximum(last_end[implicit], 0)]]
                                if len(imp_end) else np.nan, np.nan)
    tasks["begin_ns"] = begin_ns
    tasks["end_ns"] = end_ns
    missing = np.isnan(begin_thread)
    tasks["begin_thread"] = pd.arrays.IntegerArray(
        np.where(missing, 0, begin_thread).astype(np.int64), missing)


def _ref_add_lineage(tasks, regions, with_strings=True):
    n = len(tasks)
    ids = tasks["id"].to_numpy()
    kind = tasks["kind"].cat.codes.to_numpy()
    explicit, implicit, initial = kind == EXPLICIT, kind == IMPLICIT, kind == INITIAL
    parent_pos = IdIndex(ids).get(tasks["parent"].to_numpy())
    parent_pos[initial] = -1
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
    tag = np.full(n, I.ROOT, dtype=np.int8)
    a = np.zeros(n, dtype=np.int64)
    b = np.zeros(n, dtype=np.int64)
    roots = np.flatnonzero(initial)
    a[roots] = np.arange(len(roots))
    tag[explicit] = I.EXPLICIT
    a[explicit] = child_index[explicit]
    tag[imp] = np.where(winner[imp], I.PARALLEL, I.IMPLICIT)
    a[imp] = imp_ordinal
    b[imp] = np.where(winner[imp], 0, tasks["team_index"].to_numpy()[imp])
    names = _ref_from_tree(parent_pos, np.where(initial | (parent_pos >= 0), tag, -1), a, b)
    tasks["depth"] = names.level
    if with_strings and I.materialise(names, np.arange(n)):
        tasks["lineage"] = I.string_column(names.arrow(np.arange(n)))
    del tasks["_tsc"]
    return names


def ref_find_owners(tasks, regions, names):
    from grainlab.graph.columns import I64MAX, frame, id_dtype, lookup
    categories = list(tasks["kind"].cat.categories)
    code = tasks["kind"].cat.codes.to_numpy()
    explicit = code == categories.index("explicit")
    create_ns = tasks["create_ns"].to_numpy()
    ex_rows = np.flatnonzero(explicit)
    ex_rows = ex_rows[argsort(create_ns[ex_rows])]
    cx_rows = np.flatnonzero(~explicit)
    cx_rows = cx_rows[lexsort((create_ns[cx_rows], code[cx_rows] != categories.index("initial")))]
    ex = frame({c: tasks[c].to_numpy()[ex_rows] for c in
                ("id", "parent", "flags", "codeptr", "child_index")})
    small = id_dtype(len(tasks) + 1)
    ex["child_index"] = ex["child_index"].to_numpy().astype(small, copy=False)
    ex["node"] = ex_rows.astype(small)
    ctx = frame({c: tasks[c].to_numpy()[cx_rows] for c in
                 ("id", "parent", "region", "team_index", "team_size", "thread")})
    ctx["node"] = cx_rows
    ctx["kind"] = pd.Categorical.from_codes(code[cx_rows], categories=categories)
    T, E = len(ex), len(ex) + len(ctx)
    ctx_kind = np.asarray(ctx["kind"].astype(object))
    is_initial = np.zeros(E, dtype=bool)
    is_initial[T:] = ctx_kind == "initial"
    is_implicit = np.zeros(E, dtype=bool)
    is_implicit[T:] = ctx_kind == "implicit"
    region_ids = regions["id"].to_numpy(np.uint64)
    ends = lookup(regions["end_ns"].to_numpy(np.float64), region_ids) \
        .reindex(ctx["region"].to_numpy(np.uint64)).to_numpy()
    clip = np.full(E, I64MAX, dtype=np.int64)
    ok = is_implicit[T:] & np.isfinite(ends)
    clip[T:][ok] = ends[ok].astype(np.int64) - 1
    return dict(
        explicit=ex, ctx=ctx, names=names,
        ids=IdIndex(np.concatenate([ex["id"].to_numpy(np.uint64), ctx["id"].to_numpy(np.uint64)])),
        untied=bool(tasks["untied"].to_numpy()[ex_rows].any()),
        is_initial=is_initial, is_implicit=is_implicit, clip=clip,
        region_identity=lookup(regions["identity"].to_numpy(dtype=object), region_ids),
        region_node=lookup(regions["identity_node"].to_numpy(np.int64), region_ids),
        region_codeptr=lookup(regions["codeptr"].to_numpy(np.uint64), region_ids))


# ---------------------------------------------------------------------------


class _Events:
    """A trace of given events (build_task_table and find_owners read only
    `events` and `task_tables`), its task tables built the way Trace does."""

    def __init__(self, events, built=False):
        self.events = events
        self._built = build_task_table(self) if built else None

    def task_tables(self, *, lean=False):
        if self._built is None:
            return build_task_table(self, lineage=False, times=False, frame=False)
        return self._built


def assert_same_names(a, b):
    assert len(a) == len(b)
    for s in ("parent", "tag", "a", "b", "level", "length", "h1", "h2"):
        x, y = getattr(a, s), getattr(b, s)
        assert x.dtype == y.dtype and np.array_equal(x, y), s


def assert_same_frame(a, b):
    assert list(a.columns) == list(b.columns)
    assert (a.dtypes == b.dtypes).all(), (a.dtypes, b.dtypes)
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def assert_same_tables(events):
    """build_task_table (every option) and find_owners (lean, and from a
    built table) equal the reference on these events."""
    trace = _Events(events)
    assert isinstance(trace.task_tables(lean=True)[0], TaskParts)
    for lineage, times in ((True, True), (False, False), (True, False)):
        tasks, regions, names = build_task_table(trace, lineage=lineage, times=times)
        r_tasks, r_regions, r_names = ref_build_task_table(events, lineage, times)
        assert_same_frame(tasks, r_tasks)
        assert_same_frame(regions, r_regions)
        assert_same_names(names, r_names)
    expected = ref_find_owners(r_tasks, r_regions, r_names)
    for source in (trace, _Events(events, built=True)):
        assert_same_owners(find_owners(source), expected)


def assert_same_owners(got, expected):
    for key in ("explicit", "ctx"):
        assert_same_frame(getattr(got, key), expected[key])
    for key in ("is_initial", "is_implicit", "clip"):
        x, y = getattr(got, key), expected[key]
        assert x.dtype == y.dtype and np.array_equal(x, y), key
    assert got.untied == expected["untied"]
    for key in ("region_identity", "region_node", "region_codeptr"):
        pd.testing.assert_series_equal(getattr(got, key), expected[key])
    assert_same_names(got.names, expected["names"])
    ids = np.concatenate([expected["explicit"]["id"].to_numpy(np.uint64),
                          expected["ctx"]["id"].to_numpy(np.uint64),
                          expected["explicit"]["parent"].to_numpy(np.uint64),
                          np.array([0, 1, 1 << 40, (1 << 41) + 12345, 2 ** 64 - 1], np.uint64)])
    for dtype in (np.int64, np.int32):
        x, y = got.ids.get(ids, dtype), expected["ids"].get(ids, dtype)
        assert x.dtype == y.dtype and np.array_equal(x, y)


def _shuffled(events, seed):
    """The same events in another row order: creations out of order."""
    order = np.random.default_rng(seed).permutation(len(events))
    return events.iloc[order].reset_index(drop=True)


def _created_twice(events, seed):
    """Some TASK_CREATE rows repeated (later, with another tsc and time)."""
    rng = np.random.default_rng(seed)
    creates = np.flatnonzero(events["event"].to_numpy() == S.TASK_CREATE)
    if not len(creates):
        return events
    again = events.iloc[rng.choice(creates, min(len(creates), 7))].copy()
    again["tsc"] = again["tsc"].to_numpy() + np.uint64(3)
    again["time"] = again["time"].to_numpy() + 3
    return pd.concat([events, again], ignore_index=True)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_task_tables_and_owners_equal_the_reference_on_golden_traces(path):
    events = gl.load(path).events
    assert_same_tables(events)
    assert_same_tables(_shuffled(events, 1))
    assert_same_tables(_created_twice(events, 2))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", synth.SHAPES)
def test_task_tables_and_owners_equal_the_reference_on_synthetic_traces(tmp_path, shape,
                                                                         seed):
    rng = np.random.default_rng(seed)
    path = tmp_path / "s.parquet"
    synth.generate(path, shape, int(rng.integers(1, 800)), threads=int(rng.integers(1, 5)),
                   seed=seed)
    events = gl.load(path).events
    assert_same_tables(events)
    assert_same_tables(_shuffled(events, seed))
    assert_same_tables(_created_twice(events, seed))


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_task_tables_and_owners_equal_the_reference_on_random_programs(tmp_path, seed):
    program = random_program(seed)
    events = gl.load(program.trace.write(tmp_path / "p.parquet")).events
    assert_same_tables(events)
    assert_same_tables(_shuffled(events, seed))


def test_empty_and_task_free_traces_equal_the_reference(tmp_path):
    events = gl.load(GOLDEN / "fib_t1.parquet").events
    assert_same_tables(events.iloc[:0])
    no_tasks = events[~events["event"].isin([S.TASK_CREATE])].reset_index(drop=True)
    assert_same_tables(no_tasks)


# ---------------------------------------------------------------------------
# Kernels against their numpy twins (and the reference).

def _random_forest(rng, n):
    """Parents mostly earlier nodes (trees), some later (any order), some
    missing (-1), out of range, self loops and cycles; tags of every kind and
    -1; numbers small, large and negative."""
    parent = np.where(rng.random(n) < 0.7, (rng.random(n) * np.arange(n)).astype(np.int64),
                      rng.integers(-1, max(n, 1), n))
    bad = rng.random(n)
    parent[bad < 0.03] = n + 5                      # out of range
    parent[(bad >= 0.03) & (bad < 0.05)] = np.flatnonzero((bad >= 0.03) & (bad < 0.05))
    parent[(bad >= 0.05) & (bad < 0.15)] = -1
    if n >= 4:
        c = rng.choice(n, 3, replace=False)          # a 3-cycle
        parent[c[0]], parent[c[1]], parent[c[2]] = c[1], c[2], c[0]
    tag = rng.integers(-1, 8, n).astype(np.int8)
    big = rng.random(n) < 0.1
    a = np.where(big, rng.integers(-(1 << 62), 1 << 62, n), rng.integers(0, 300, n))
    b = np.where(rng.random(n) < 0.1, rng.integers(-(1 << 62), 1 << 62, n),
                 rng.integers(0, 70000, n))
    return parent, tag, a, b


@pytest.mark.parametrize("seed", range(30))
def test_forest_levels_compiled_and_numpy_equal_the_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    parent, tag, a, b = _random_forest(rng, n)
    step = I._step_length(tag, a, b)
    assert step.dtype == np.int64 and np.array_equal(step, _ref_step_length(tag, a, b))
    ref = _ref_from_tree(parent, tag, a, b)
    for native in NATIVE:
        level, length = I.forest_levels(parent, tag, a, b, native=native)
        assert level.dtype == length.dtype == np.int64
        assert np.array_equal(level, ref.level) and np.array_equal(length, ref.length)
    assert_same_names(I.Names.from_tree(parent, tag, a, b), ref)


@pytest.mark.parametrize("native", NATIVE)
def test_a_tag_out_of_range_is_refused_as_numpy_refuses_it(native):
    with pytest.raises(IndexError):
        _ref_step_length(np.array([0, 8], np.int8), [0, 0], [0, 0])
    with pytest.raises(IndexError):
        I.forest_levels([-1, 0], np.array([0, 8], np.int8), [0, 0], [0, 0], native=native)


def test_forest_levels_of_a_deep_chain():
    n = 200_000
    parent = np.arange(-1, n - 1)
    tag = np.full(n, I.EXPLICIT, np.int8)
    tag[0] = I.ROOT
    a = np.zeros(n, np.int64)
    ref = _ref_from_tree(parent, tag, a, a)
    for native in NATIVE:
        for order in (np.arange(n), np.arange(n)[::-1]):      # children first too
            inv = np.empty(n, np.int64)
            inv[order] = np.arange(n)
            p = np.where(parent[order] >= 0, inv[np.maximum(parent[order], 0)], -1)
            level, length = I.forest_levels(p, tag[order], a, a, native=native)
            assert np.array_equal(level, ref.level[order])
            assert np.array_equal(length, ref.length[order])


def _ref_child_rank(parent, key):
    out = np.full(len(parent), -1, np.int64)
    order = lexsort((key, parent))
    if len(order):
        par = parent[order]
        start = np.r_[True, par[1:] != par[:-1]]
        run_start = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
        out[order] = np.arange(len(order)) - run_start
    return out


@pytest.mark.parametrize("seed", range(30))
def test_child_rank_compiled_and_numpy_equal_the_reference(seed):
    from grainlab.tables.tasks import _child_rank
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 5000))
    parent = rng.integers(-1, int(rng.integers(1, 400)), n).astype(np.int64)
    key = np.sort(rng.integers(0, 1 << 60, n).astype(np.uint64))
    if rng.random() < 0.5:
        key = rng.integers(0, 50, n).astype(np.uint64) + np.uint64(1 << 62)  # ties
    if rng.random() < 0.5 and n > 1:                 # some parents' keys out of order
        swap = rng.choice(n, 2, replace=False)
        key[swap] = key[swap[::-1]]
    expected = _ref_child_rank(parent, key)
    for native in NATIVE:
        out = np.full(n, -7, np.int64)
        _child_rank(parent, key, out, native=native)
        assert np.array_equal(out, expected)


@pytest.mark.parametrize("seed", range(10))
def test_a_permuted_id_index_answers_as_one_built_anew(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    if seed % 2:    # collector ids: a direct table
        ids = ((rng.integers(0, 3, n).astype(np.uint64) + np.uint64(1)) << np.uint64(40)) \
            + rng.integers(0, n + 1, n).astype(np.uint64)
        ids = np.unique(ids)
        rng.shuffle(ids)
    else:           # any ids: a sorted search
        ids = rng.permutation(np.unique(rng.integers(0, 1 << 62, n).astype(np.uint64)))
    index = IdIndex(ids)
    assert index.unique
    assert (index._table is not None) == bool(seed % 2 and len(ids))
    perm = rng.permutation(len(ids))
    queries = np.concatenate([ids, rng.integers(0, 1 << 62, 50).astype(np.uint64),
                              np.array([0, 2 ** 64 - 1], np.uint64)])
    assert np.array_equal(index.permuted(perm).get(queries), IdIndex(ids[perm]).get(queries))
    if len(ids) > 1:
        assert not IdIndex(np.concatenate([ids, ids[:1]])).unique


def _random_ids(rng, kind, n):
    """Collector ids (a direct table), with ids repeated, any ids (a
    sorted search), ids of thread slot 0 or too sparse for a table."""
    if kind == 0:
        return ((rng.integers(0, 3, n).astype(np.uint64) + np.uint64(1)) << np.uint64(40)) \
            + rng.integers(0, n + 1, n).astype(np.uint64)
    if kind == 1:
        return ((rng.integers(0, 2, n).astype(np.uint64) + np.uint64(1)) << np.uint64(40)) \
            + rng.integers(0, max(n // 3, 1), n).astype(np.uint64)
    if kind == 2:
        return rng.integers(0, 1 << 62, n).astype(np.uint64)
    return rng.integers(0, 1 << 42, n).astype(np.uint64)


@pytest.mark.parametrize("seed", range(40))
def test_id_index_compiled_and_numpy_equal(seed):
    """grainlab/native/idindex.c against its numpy twin: the same table and
    the same answers, repeated ids included (the last position wins)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    ids = _random_ids(rng, seed % 4, n)
    queries = np.concatenate([ids, rng.integers(0, 1 << 45, 100).astype(np.uint64),
                              np.array([0, 2 ** 64 - 1, (1 << 40) - 1, 1 << 40, 70000 << 40],
                                       np.uint64)])
    twin = IdIndex(ids, native=False)
    assert twin.unique == (len(np.unique(ids)) == len(ids))
    for native in NATIVE[1:]:
        index = IdIndex(ids, native=native)
        assert (index._table is None) == (twin._table is None)
        if twin._table is not None:
            for a in ("_table", "_base", "_limit"):
                x, y = getattr(index, a), getattr(twin, a)
                assert x.dtype == y.dtype and np.array_equal(x, y), a
        for dtype in (np.int64, np.int32, np.float64):
            x, y = index.get(queries, dtype), twin.get(queries, dtype)
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert index.unique == twin.unique


@pytest.mark.parametrize("native", NATIVE)
def test_id_index_answers_into_a_given_array(native):
    rng = np.random.default_rng(3)
    for kind in range(4):
        ids = _random_ids(rng, kind, 500)
        index = IdIndex(ids, native=native)
        queries = np.concatenate([ids[::-1], np.array([0, 5], np.uint64)])
        for dtype in (np.int64, np.int32):
            expected = index.get(queries, dtype)
            whole = np.full(2 * len(queries), 9, dtype)
            assert index.get(queries, out=whole[:len(queries)]) is not None
            assert np.array_equal(whole[:len(queries)], expected)
            assert (whole[len(queries):] == 9).all()
            strided = np.full(2 * len(queries), 9, dtype)
            index.get(queries, out=strided[::2])
            assert np.array_equal(strided[::2], expected) and (strided[1::2] == 9).all()
    assert np.array_equal(IdIndex([]).get([1, 2], out=np.zeros(2, np.int32)), [-1, -1])
