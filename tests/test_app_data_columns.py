"""Columns the web app prepares once per trace, against what they replaced:
the per-grain locations (grainlab.app.data.Locations: category codes, for a
numpy string array) give each grain's location, a batch of them for the
hover labels and the grains at one location (the "by source location"
view's colouring); the threads view's row of each fragment (a look-up
table, for a dict map)."""
import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab import synth
from grainlab.app.data import LOCATION_VIEW, AppData, Locations, _distinct_threads


@pytest.mark.parametrize("seed", range(20))
def test_locations_match_a_string_array(seed):
    rng = np.random.default_rng(seed)
    names = [f"f{i}.c:{rng.integers(1, 999)} (fn{i}, task)" for i in range(rng.integers(1, 9))]
    n = int(rng.integers(0, 400))
    values = pd.Series(pd.Categorical(rng.choice(names, n) if n else [], categories=names))
    strings = values.to_numpy().astype(str)
    for series in (values, values.astype(str)):          # categorical or not
        loc = Locations(series)
        assert len(loc) == n
        for i in rng.integers(0, max(n, 1), 10) if n else []:
            assert loc[int(i)] == strings[i] and isinstance(loc[int(i)], str)
        gid = rng.integers(0, n, 30) if n else np.zeros(0, int)
        np.testing.assert_array_equal(loc[gid].astype(str), strings[gid])
        for name in names + ["nowhere.c:1 (x, task)"]:
            np.testing.assert_array_equal(loc.where(name), strings == name)
        np.testing.assert_array_equal(np.asarray(loc).astype(str), strings)
        want = np.unique(strings, return_counts=True)
        got = loc.counts()
        np.testing.assert_array_equal(got[0].astype(str), want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_the_location_view_colours_the_grains_at_the_location(tmp_path):
    path = tmp_path / "t.parquet"
    synth.generate(path, "random", 300, threads=2, seed=4)
    a = gl.analyze(path)
    data = AppData(a)
    where = a.locations.astype(str).to_numpy()
    for location in sorted(set(where)):
        sev, count = data.severity(LOCATION_VIEW, None, location)
        np.testing.assert_array_equal(sev, (where == location).astype(float))
        assert count == int((where == location).sum())
    assert data.grain_details(0)["location"] == where[0]


@pytest.mark.parametrize("seed", range(20))
def test_thread_rows_match_a_dict_map(seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice([0, 1, 2, 5, 9, 40, 2 ** 21], int(rng.integers(1, 6)), replace=False)
    thread = rng.choice(np.r_[ids, -1], int(rng.integers(0, 500))).astype(np.int64)
    threads = _distinct_threads(thread)
    assert threads == sorted(set(thread.tolist()) - {-1})
    rows = {t: i for i, t in enumerate(threads)}
    data = AppData.__new__(AppData)          # only the look-up under test
    data.thread_rows = rows
    want = pd.Series(thread).map(rows).fillna(-1).astype(np.int64).to_numpy()
    np.testing.assert_array_equal(data._rows(thread), want)
    # ids the view has no row for (another trace's threads, negatives)
    other = np.array([-7, -1, 3, 10 ** 6], np.int64)
    np.testing.assert_array_equal(data._rows(other),
                                  pd.Series(other).map(rows).fillna(-1).astype(np.int64))


def _chunk_labels_reference(gr):
    """The former labelling: a label made for every grain, kept for chunks."""
    first = gr["first_iteration"].to_numpy(np.int64)
    n = gr["iterations"].to_numpy(np.int64)
    lab = pd.Series(first).astype(str) + "-" + pd.Series(first + n - 1).astype(str) \
        if (first >= 0).any() else pd.Series(np.full(len(gr), "", dtype=object))
    chunk = gr["kind"].astype(str).to_numpy() == "chunk"
    out = np.full(len(gr), "", dtype=object)
    out[chunk & (n > 0)] = lab.to_numpy(dtype=object)[chunk & (n > 0)]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_chunk_labels_match_the_former_labelling(seed):
    from grainlab.export.drawing import _chunk_labels
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    kind = rng.choice(["task", "chunk"], n, p=[0.6, 0.4] if seed % 3 else [1.0, 0.0])
    first = np.where(kind == "chunk", rng.integers(-1, 10 ** 6, n), -1)
    gr = pd.DataFrame({"kind": pd.Categorical(kind, categories=["task", "chunk"])
                       if seed % 2 else kind, "first_iteration": first,
                       "iterations": np.where(kind == "chunk", rng.integers(0, 50, n), -1)})
    np.testing.assert_array_equal(_chunk_labels(gr), _chunk_labels_reference(gr))


@pytest.mark.parametrize("seed", range(10))
def test_ranks_by_one_sort_equal_the_double_argsort(seed):
    """The by-value colouring's ranks (AppData.severity) are the inverse of one
    stable sort: the same as the argsort of the argsort, ties included."""
    rng = np.random.default_rng(seed)
    bad = rng.integers(0, 5 if seed % 2 else 10 ** 6, int(rng.integers(0, 500))).astype(float)
    rank = np.empty(len(bad), np.int64)
    rank[np.argsort(bad, kind="stable")] = np.arange(len(bad))
    np.testing.assert_array_equal(rank, np.argsort(np.argsort(bad, kind="stable"),
                                                   kind="stable"))


def test_by_value_severity_is_the_rank_in_fifths(record):
    """Most grains flagged (a task per call: parallel benefit): each flagged
    grain's severity is its rank among them, mildest to worst, over their number."""
    from grainlab import problems as P
    data = AppData(gl.analyze(record("fib", 16, threads=2).path))
    checked = 0
    for problem in data.problems:
        th = data.default_threshold(problem)
        if not data.by_value(problem, th):
            continue
        sev, count = data.severity(problem, th)
        col = data.grains[problem].to_numpy(np.float64)
        hit = sev > 0
        assert count == hit.sum() > 0
        bad = -col[hit] if P.RULES[problem].below else col[hit]
        want = (np.argsort(np.argsort(bad, kind="stable"), kind="stable") + 1) / hit.sum()
        np.testing.assert_allclose(sev[hit], want)
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize("seed", range(20))
def test_ranks_among_a_kept_order_equal_sorting_the_flagged_alone(seed):
    from grainlab.app.data import ranks_among
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    v = rng.integers(0, 4 if seed % 2 else 10 ** 6, n).astype(float)
    v[rng.random(n) < 0.1] = np.nan                       # unmeasured grains
    for bad in (v, -v):
        hit = (rng.random(n) < rng.random()) & ~np.isnan(bad)
        got = ranks_among(np.argsort(bad, kind="stable").astype(np.int32), hit)
        want = np.argsort(np.argsort(bad[hit], kind="stable"), kind="stable")
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("categorical", [False, True])
def test_coded_columns_give_back_the_names(categorical):
    """The layout keeps node and edge types as int8 codes (Coded,
    _codes_and_names): indexing gives the same names the object arrays held."""
    from grainlab.export.drawing import Coded, _codes_and_names
    rng = np.random.default_rng(3)
    names = np.array(["creation", "continuation", "synchronization", "dependence"])
    col = pd.Series(rng.choice(names, 1000))
    if categorical:
        col = col.astype("category")
    codes, got = _codes_and_names(col)
    assert codes.dtype == np.int8
    np.testing.assert_array_equal(got[codes].astype(str), col.astype(str).to_numpy())
    typ = Coded(codes, got)
    idx = rng.integers(0, 1000, 50)
    assert len(typ) == 1000
    np.testing.assert_array_equal(typ[idx].astype(str), col.astype(str).to_numpy()[idx])


def test_layout_heights_made_for_the_shown_nodes_equal_the_whole(tmp_path):
    """GrainLayout.y keeps node tops as Less (base - less for the indexed
    nodes only): the same values as the whole differences it held before."""
    from grainlab.export.drawing import GrainLayout, Less
    path = tmp_path / "t.parquet"
    synth.generate(path, "random", 300, threads=2, seed=8)
    g = gl.analyze(path).graph
    lay = GrainLayout(g)
    n = g.nodes
    ef, dur = n["earliest_finish"].to_numpy(np.int64), n["duration"].to_numpy(np.int64)
    start, end = n["start"].to_numpy(np.int64), n["end"].to_numpy(np.int64)
    want = {"dag": (ef - dur, ef), "wall": (start - start.min(), end - start.min())}
    idx = np.random.default_rng(1).integers(0, len(n), 200)
    for mode, (w0, w1) in want.items():
        y0, y1 = lay.y[mode]
        np.testing.assert_array_equal(Less.whole(y0), w0)
        np.testing.assert_array_equal(Less.whole(y1), w1)
        np.testing.assert_array_equal(y0[idx], w0[idx])
        np.testing.assert_array_equal(y1[idx], w1[idx])
