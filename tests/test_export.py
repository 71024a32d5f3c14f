"""grainlab export: GraphML (yEd / Cytoscape) and Perfetto trace-event JSON.

Each export is read back with an independent reader (networkx.read_graphml,
xml.etree, json) and compared with the grain graph it came from: node and edge
counts, typed attributes, the critical path, metric values, slice nesting per
thread and flow pairing. Inputs: synthetic traces of every shape (grainlab.synth)
and a real fib run recorded through libomp (fails if the build is missing).
"""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict

import networkx as nx
import numpy as np
import pandas as pd
import pytest

import grainlab as gl
from grainlab.export import write_graphml, write_perfetto
from grainlab.export.graphml import NODE_STYLE
from grainlab.export.palette import CRITICAL
from conftest import assert_one_line_error, grainlab

GML = "{http://graphml.graphdrawing.org/xmlns}"
Y = "{http://www.yworks.com/xml/graphml}"
GRAPHML_TYPES = {"boolean", "int", "long", "float", "double", "string"}
SYNTH = [("fork-join", 120), ("spine", 150), ("loop", 64), ("random", 200)]


def graph_of(path):
    """The grain graph with every metric column, as `grainlab export` has it."""
    a = gl.analyze(path)
    a.metrics  # noqa: B018  (adds the metric columns)
    return a.graph


@pytest.fixture(scope="module", params=SYNTH, ids=[s for s, _ in SYNTH])
def synth_graph(request, tmp_path_factory):
    from grainlab.synth import generate
    shape, grains = request.param
    path = tmp_path_factory.mktemp("synth") / f"{shape}.parquet"
    generate(path, shape, grains, threads=2, seed=3)
    return graph_of(path)


@pytest.fixture(scope="module")
def fib_graph(record):
    t = record("fib", 20, 5, threads=2)
    return graph_of(t.path)


# ---------------------------------------------------------------------------
# GraphML


def check_graphml(g, path):
    """Everything a GraphML export of the full graph `g` must satisfy."""
    # Structure: keys declared (typed, unique) before the graph uses them.
    root = ET.parse(path).getroot()
    assert root.tag == GML + "graphml"
    children = list(root)
    kinds = [c.tag for c in children]
    assert kinds.count(GML + "graph") == 1
    graph_at = kinds.index(GML + "graph")
    assert all(k == GML + "key" for k in kinds[:graph_at]), "keys must precede the graph"
    keys = {}
    for k in children[:graph_at]:
        assert k.get("id") not in keys, f"duplicate key id {k.get('id')}"
        if k.get("yfiles.type") is None:
            assert k.get("attr.type") in GRAPHML_TYPES, k.attrib
            assert k.get("attr.name")
        keys[k.get("id")] = k
    graph = children[graph_at]
    assert graph.get("edgedefault") == "directed"
    node_ids = set()
    for el in graph:
        if el.tag not in (GML + "node", GML + "edge"):
            continue
        domain = "node" if el.tag == GML + "node" else "edge"
        if domain == "node":
            node_ids.add(el.get("id"))
        else:   # nodes are all written before the edges that use them
            assert el.get("source") in node_ids and el.get("target") in node_ids, el.attrib
        for d in el.findall(GML + "data"):
            key = keys.get(d.get("key"))
            assert key is not None, f"data key {d.get('key')} not declared"
            assert key.get("for") == domain, (d.get("key"), key.get("for"), domain)

    # Read back with networkx: counts, types, values, the critical path.
    G = nx.read_graphml(path)
    assert G.number_of_nodes() == len(g.nodes)
    assert G.number_of_edges() == len(g.edges)
    nodes = g.nodes
    ids = [f"n{i}" for i in nodes.index]
    got_type = [G.nodes[n]["type"] for n in ids]
    assert got_type == nodes["type"].astype(str).tolist()
    got_duration = [G.nodes[n]["duration"] for n in ids]
    assert all(type(v) is int for v in got_duration)
    assert got_duration == nodes["duration"].astype(int).tolist()
    assert [G.nodes[n]["start"] for n in ids] == nodes["start"].astype(int).tolist()
    assert [G.nodes[n]["thread"] for n in ids] == nodes["thread"].astype(int).tolist()
    crit = {n for n in ids if G.nodes[n]["on_critical_path"] is True}
    assert all(type(G.nodes[n]["on_critical_path"]) is bool for n in ids)
    assert crit == {f"n{i}" for i in np.asarray(g.critical_path)}
    path_edges = set(zip((f"n{i}" for i in g.critical_path),
                         (f"n{i}" for i in g.critical_path[1:])))
    crit_edges = {(u, v) for u, v, d in G.edges(data=True) if d["on_critical_path"]}
    assert crit_edges == path_edges
    assert Counter(d["type"] for _, _, d in G.edges(data=True)) == \
        Counter(g.edges["type"].astype(str))
    assert {(u, v) for u, v in G.edges()} == {
        (f"n{s}", f"n{d}") for s, d in zip(g.edges["src"], g.edges["dst"])}

    # Identity on every node that has an owner; grain columns on execution nodes.
    owners = nodes["grain"].to_numpy()
    G_count = len(g.grains)
    identity = g.grains["identity"].tolist() + g.contexts["identity"].tolist()
    for n, owner, _typ in zip(ids, owners, got_type):
        if owner >= 0:
            assert G.nodes[n]["identity"] == identity[owner]
    numeric = [c for c in g.grains.columns
               if pd.api.types.is_numeric_dtype(g.grains[c].dtype)
               and not pd.api.types.is_bool_dtype(g.grains[c].dtype)
               and c not in nodes.columns]
    assert "work" in numeric
    execution = [(n, o) for n, o, t in zip(ids, owners, got_type)
                 if t in ("fragment", "chunk") and 0 <= o < G_count]
    assert execution
    for column in numeric:
        values = g.grains[column].to_numpy()
        for n, o in execution:
            want = values[o]
            have = G.nodes[n].get(column)
            if isinstance(want, float) and math.isnan(want):
                assert have is None, (column, n)
            else:
                assert have == pytest.approx(want, rel=1e-15, abs=0), (column, n)
                float_col = pd.api.types.is_float_dtype(g.grains[column].dtype)
                assert isinstance(have, float if float_col else int), (column, type(have))

    # yEd graphics: fill by type, red border exactly on the critical path,
    # width of fragments and chunks growing with their duration.
    widths = []
    for el in graph.findall(GML + "node"):
        shape = el.find(f"{GML}data/{Y}ShapeNode")
        assert shape is not None
        i = int(el.get("id")[1:])
        typ = str(nodes["type"].iloc[i])
        assert shape.find(Y + "Fill").get("color") == NODE_STYLE[typ][1]
        assert shape.find(Y + "Shape").get("type") == NODE_STYLE[typ][0]
        border = shape.find(Y + "BorderStyle").get("color")
        assert (border == CRITICAL) == bool(nodes["on_critical_path"].iloc[i])
        if typ in ("fragment", "chunk"):
            widths.append((int(nodes["duration"].iloc[i]),
                           float(shape.find(Y + "Geometry").get("width"))))
    widths.sort()
    assert all(w1 <= w2 for (_, w1), (_, w2) in zip(widths, widths[1:]))
    assert widths[-1][1] > widths[0][1] or widths[-1][0] == widths[0][0]
    return G


def test_graphml_synthetic(synth_graph, tmp_path):
    out = tmp_path / "g.graphml"
    info = write_graphml(synth_graph, out)
    assert info["nodes"] == len(synth_graph.nodes)
    check_graphml(synth_graph, out)


def test_graphml_real_fib(fib_graph, tmp_path):
    out = tmp_path / "fib.graphml"
    write_graphml(fib_graph, out)
    G = check_graphml(fib_graph, out)
    # A real run has tasks on both threads and a non-trivial critical path.
    assert len({d["thread"] for _, d in G.nodes(data=True) if d["thread"] >= 0}) == 2
    assert len(fib_graph.critical_path) > 3


def test_graphml_reduced(fib_graph, tmp_path):
    out = tmp_path / "fib-reduced.graphml"
    r = fib_graph.reduce()
    info = write_graphml(fib_graph, out, reduced=True)
    G = nx.read_graphml(out)
    assert info["nodes"] == len(r.nodes) == G.number_of_nodes()
    assert G.number_of_edges() == len(r.edges)
    assert len(r.nodes) < len(fib_graph.nodes)
    # Every reduced node holding a critical node is marked, and only those.
    group = r.group.reindex(fib_graph.nodes.index).to_numpy()
    want = {f"n{k}" for k in group[np.asarray(fib_graph.critical_path)]}
    assert {n for n, d in G.nodes(data=True) if d["on_critical_path"]} == want
    # Member weights are kept: the reduced durations sum to the graph's work.
    assert sum(d["duration"] for _, d in G.nodes(data=True)) == fib_graph.work


def test_graphml_escapes_text(synth_graph, tmp_path):
    """Source locations with XML metacharacters (C++ templates) stay well-formed."""
    g = synth_graph
    g.grains["source"] = [f'a<b&"c">.cpp:{i} (f<int>)' for i in range(len(g.grains))]
    try:
        out = tmp_path / "esc.graphml"
        write_graphml(g, out)
        G = nx.read_graphml(out)
        first = [n for n, d in G.nodes(data=True) if d.get("type") in ("fragment", "chunk")
                 and 0 <= d["grain"] < len(g.grains)][0]
        assert G.nodes[first]["source"] == g.grains["source"].iloc[G.nodes[first]["grain"]]
        out = tmp_path / "esc.json"
        write_perfetto(g, out)
        names = {e["name"] for e in json.load(open(out))["traceEvents"]
                 if e.get("cat") in ("task", "chunk")}
        assert names == set(g.grains["source"])
    finally:
        del g.grains["source"]


# ---------------------------------------------------------------------------
# Perfetto


def ns(v) -> int:
    return round(v * 1000)


def check_perfetto(g, path):
    data = json.load(open(path))
    events = data["traceEvents"]
    assert "displayTimeUnit" not in data   # Perfetto would rescale ts
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert e["pid"] > 0 and e["tid"] > 0
    # Exact ns: three decimals survive a float round trip.
    assert all(abs(e["ts"] * 1000 - ns(e["ts"])) < 1e-3 for e in slices)

    grains = [e for e in slices if e["cat"] in ("task", "chunk")]
    assert len(grains) == len(g.grains)
    assert sorted(e["args"]["grain"] for e in grains) == list(range(len(g.grains)))
    by_grain = {e["args"]["grain"]: e for e in grains}
    for gid, row in zip(range(len(g.grains)), g.grains.itertuples()):
        e = by_grain[gid]
        assert e["args"]["identity"] == row.identity
        assert e["args"]["work"] == row.work
        assert ns(e["ts"]) == row.start
        assert e["tid"] == row.thread + 1
        assert e["cat"] == row.kind

    # Slices of one thread nest or are disjoint (a stack per thread).
    per_thread = defaultdict(list)
    for e in slices:
        per_thread[e["tid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for tid, spans in per_thread.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for a, b, name in spans:
            while stack and stack[-1][1] <= a:
                stack.pop()
            assert not stack or b <= stack[-1][1], \
                f"tid {tid}: {name} [{a},{b}] overlaps {stack[-1]}"
            stack.append((a, b, name))

    # Flows: s and f pair up by id; each end lies inside a slice of its thread.
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == sum(e["ph"] == "s" for e in events)
    assert len(finishes) == sum(e["ph"] == "f" for e in events)
    assert starts.keys() == finishes.keys()
    assert all(e.get("bp") == "e" for e in finishes.values())
    for e in list(starts.values()) + list(finishes.values()):
        t = ns(e["ts"])
        assert any(a <= t <= b for a, b, _ in per_thread[e["tid"]]), e
    # One flow per creation / synchronization / dependence edge between
    # nodes on known threads (team barriers have none).
    th = g.nodes["thread"].to_numpy()
    kinds = g.edges["type"].astype(str).to_numpy()
    known = (th[g.edges["src"].to_numpy()] >= 0) & (th[g.edges["dst"].to_numpy()] >= 0)
    expect = Counter(kinds[known & np.isin(kinds, ["creation", "synchronization",
                                                   "dependence"])])
    assert Counter(e["cat"] for e in starts.values()) == expect
    created = (g.edges["type"].astype(str) == "creation").sum()
    assert expect["creation"] >= len(g.grains[g.grains["kind"] == "task"]) or created == 0

    # Thread metadata for every track.
    named = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(per_thread) <= named
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    return data


def test_perfetto_synthetic(synth_graph, tmp_path):
    out = tmp_path / "t.json"
    info = write_perfetto(synth_graph, out)
    assert info["grain_slices"] == len(synth_graph.grains)
    check_perfetto(synth_graph, out)


def test_perfetto_real_fib(fib_graph, tmp_path):
    out = tmp_path / "fib.json"
    write_perfetto(fib_graph, out)
    data = check_perfetto(fib_graph, out)
    # Both threads ran an implicit task of the region; tasks ran on them only.
    contexts = {e["tid"] for e in data["traceEvents"] if e.get("cat") == "context"}
    assert contexts == {1, 2}
    tasks = {e["tid"] for e in data["traceEvents"] if e.get("cat") == "task"}
    assert tasks and tasks <= contexts
    runtime = Counter(e["name"] for e in data["traceEvents"] if e.get("cat") == "runtime")
    assert runtime["taskwait"] > 0 and runtime["create"] > 0


# ---------------------------------------------------------------------------
# The command


def test_cli_exports_both(record, tmp_path):
    t = record("fib", 20, 5, threads=2)
    gml, js = tmp_path / "f.graphml", tmp_path / "f.json"
    r = grainlab("export", t.path, "--graphml", gml, "--perfetto", js)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert nx.read_graphml(gml).number_of_nodes() > 0
    assert json.load(open(js))["traceEvents"]
    assert str(gml) in r.stdout and str(js) in r.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_cli_errors(record, tmp_path, cli):
    t = record("fib", 20, 5, threads=2)
    assert_one_line_error(cli("export", t.path), "--graphml")
    assert_one_line_error(cli("export", t.path, "--perfetto", tmp_path / "x.json",
                                   "--reduced"), "--reduced")
    assert_one_line_error(cli("export", t.path, "--graphml",
                                   tmp_path / "missing" / "x.graphml"), "does not exist")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a trace")
    assert_one_line_error(cli("export", bad, "--graphml", tmp_path / "x.graphml"),
                          str(bad))
    assert not (tmp_path / "x.graphml").exists()
