"""GraphML export of a grain graph, for yEd and Cytoscape (thesis §5.4.1, §5.5).

Every attribute gets a typed `<key>` declared before the graph (GraphML types
int / long / double / boolean / string), so Cytoscape and networkx read numbers
as numbers. Each node also carries yFiles `nodegraphics` (a `y:ShapeNode`) and
each edge `edgegraphics`, so yEd draws the grain graph the way the thesis does:
fragments and chunks as rectangles whose width is proportional to their
duration, forks as green circles, joins as orange circles, book-keeping in
turquoise, and the critical path with red borders and red edges. yEd places all
nodes at the origin: apply Layout > Hierarchic (top to bottom) after opening.

Node attributes: the columns of `g.nodes` (type, grain, duration, start, end,
thread, on_critical_path, ...), the owner's `identity` and `source` location,
and every column of `g.grains` mapped onto the nodes of that grain (a name that
clashes with a node column is prefixed `grain_`: `grain_start`, ...). Values
that do not exist (NaN metrics, nodes of contexts for grain columns) are left
out, as GraphML intends. Edge attributes: type, on_critical_path (and count for
reduced graphs).

The file is written in batches of rows, each built column-wise by Arrow
kernels (see `_text`), so a graph of millions of nodes never becomes millions
of Python objects.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _text as T
from ._labels import NOT_EXPORTED, owner_identity, owner_index, source_column
from .palette import CRITICAL, EDGE_COLORS, KIND_COLORS

NS = ('xmlns="http://graphml.graphdrawing.org/xmlns" '
      'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
      'xmlns:y="http://www.yworks.com/xml/graphml" '
      'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
      'http://www.yworks.com/xml/schema/graphml/1.1/ygraphml.xsd"')

# Node look per type (thesis Fig. 5.3): (yEd shape, fill colour), in the
# colours of every other view (grainlab.export.palette).
NODE_STYLE = {
    "fragment": ("rectangle", KIND_COLORS["fragment"]),
    "chunk": ("rectangle", KIND_COLORS["chunk"]),
    "fork": ("triangle", KIND_COLORS["fork"]),
    "join": ("ellipse", KIND_COLORS["join"]),
    "bookkeeping": ("rectangle", KIND_COLORS["bookkeeping"]),
}
UNKNOWN_STYLE = ("rectangle", "#FFFFFF")
# Types whose rectangle width scales with duration.
SCALED_TYPES = ("fragment", "chunk")
MIN_WIDTH, MAX_WIDTH, HEIGHT = 20, 300, 30
CIRCLE = 24
BOOKKEEPING_SIZE = 16
EDGE_COLOUR = EDGE_COLORS

# GraphML attribute types (attr.type).
GRAPHML_TYPES = ("boolean", "int", "long", "double", "string")


@dataclass
class Key:
    """One GraphML attribute declaration."""
    id: str
    domain: str        # "node" | "edge" | "graph"
    name: str
    type: str          # one of GRAPHML_TYPES

    def declaration(self) -> str:
        return (f'  <key id="{self.id}" for="{self.domain}" '
                f'attr.name={quoteattr(self.name)} attr.type="{self.type}"/>\n')


def graphml_type(dtype) -> str:
    """GraphML attr.type for a pandas dtype."""
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        itemsize = np.dtype(getattr(dtype, "numpy_dtype", dtype)).itemsize
        signed = pd.api.types.is_signed_integer_dtype(dtype)
        return "int" if itemsize < 4 or (itemsize == 4 and signed) else "long"
    if pd.api.types.is_float_dtype(dtype):
        return "double"
    return "string"


# The graph's id columns are int32 in memory while the ids fit
# (docs/graph-model.md "Ids"), int64 above: the file says "long" for them
# either way, so its keys do not change with the graph's size.
ID_COLUMNS = frozenset({"grain", "owner", "child", "parent", "join"})


def column_type(name: str, dtype) -> str:
    """GraphML attr.type of a graph column: `graphml_type`, ids always long."""
    gtype = graphml_type(dtype)
    return "long" if gtype == "int" and name in ID_COLUMNS else gtype


def text_of(arr: pa.Array, gtype: str) -> pa.Array:
    """Values of one column as GraphML text (null where there is no value)."""
    if pa.types.is_dictionary(arr.type):
        # Categoricals: format the few categories, not every row.
        return pa.DictionaryArray.from_arrays(
            arr.indices, text_of(arr.dictionary, gtype)).dictionary_decode()
    if gtype == "boolean":
        return T.bools(arr)
    if gtype in ("int", "long"):
        return T.ints(arr)
    if gtype == "double":
        # Java's Double.parseDouble (yEd, Cytoscape) and Python's float() both
        # read "Infinity"; NaN means "no value" and is left out.
        return T.floats(arr, nan=None, inf="Infinity")
    return T.xml_escaped(arr)


def data_pieces(columns: list[tuple[Key, pa.Array]]) -> list:
    """`<data>` elements of rows, as pieces for one element-wise join: a value
    array with the constant text around it, or (for columns with missing values)
    an array that is empty where the value is missing."""
    return T.fields((f'<data key="{key.id}">', text_of(arr, key.type), "</data>")
                    for key, arr in columns)


# ---------------------------------------------------------------------------


def write_graphml(g, path, reduced: bool = False) -> dict:
    """Write grain graph `g` (or `g.reduce()` if `reduced`) as GraphML to `path`.
    Returns {"nodes", "edges", "bytes"}."""
    if reduced:
        r = g.reduce()
        nodes, edges = r.nodes, r.edges
        if "on_critical_path" not in edges.columns:
            edges = edges.assign(on_critical_path=_reduced_edge_critical(g, r))
    else:
        nodes, edges = g.nodes, g.edges
    node_ids = nodes.index.to_numpy()
    owner = nodes["grain"].to_numpy(dtype=np.int64)

    node_keys = [Key(f"n{i}", "node", name, column_type(name, nodes[name].dtype))
                 for i, name in enumerate(_node_columns(nodes))]
    owner_keys, identity_text, grain_text = _owner_blocks(
        g, {k.name for k in node_keys}, len(node_keys))
    # Grain columns describe the grain's execution: they go on its fragment and
    # chunk nodes, not on the forks/joins/book-keeping it owns.
    executes = np.isin(T.type_codes(nodes["type"], list(NODE_STYLE)),
                       [list(NODE_STYLE).index(t) for t in SCALED_TYPES])
    grain_owner = np.where(executes, owner, -1)
    edge_names = [c for c in edges.columns if c not in ("src", "dst")]
    edge_keys = [Key(f"e{i}", "edge", name, column_type(name, edges[name].dtype))
                 for i, name in enumerate(edge_names)]
    graph_facts = _graph_facts(g, reduced)
    graph_keys = [Key(f"g{i}", "graph", name, graphml_type(pd.Series([v]).dtype))
                  for i, (name, v) in enumerate(graph_facts.items())]
    graphics_node = _NodeGraphics(nodes, owner, g)
    graphics_edge = _EdgeGraphics(edges)

    path = Path(path)
    with open(path, "wb") as f:
        head = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
                f"<graphml {NS}>\n"]
        head += [k.declaration() for k in graph_keys + node_keys + owner_keys + edge_keys]
        head += ['  <key id="ng" for="node" yfiles.type="nodegraphics"/>\n',
                 '  <key id="eg" for="edge" yfiles.type="edgegraphics"/>\n',
                 '  <graph id="G" edgedefault="directed">\n']
        for k, value in zip(graph_keys, graph_facts.values()):
            text = text_of(T.to_arrow(pd.Series([value])), k.type)[0].as_py()
            head.append(f'    <data key="{k.id}">{text}</data>\n')
        f.write("".join(head).encode())

        for start, stop in T.batches(len(nodes)):
            part = nodes.iloc[start:stop]
            pieces = ['    <node id="n', T.ints(pa.array(node_ids[start:stop])), '">']
            pieces += data_pieces([(k, T.arrow_column(part[k.name])) for k in node_keys])
            who = identity_text.take(owner_index(owner[start:stop], len(identity_text)))
            what = grain_text.take(owner_index(grain_owner[start:stop], len(grain_text)))
            pieces += [pc.fill_null(who, ""), pc.fill_null(what, ""),
                       graphics_node.text(start, stop), "</node>\n"]
            T.write_rows(f, T.join(pieces))

        src = edges["src"].to_numpy()
        dst = edges["dst"].to_numpy()
        for start, stop in T.batches(len(edges)):
            part = edges.iloc[start:stop]
            pieces = ['    <edge id="e', T.ints(pa.array(np.arange(start, stop))),
                      '" source="n', T.ints(pa.array(src[start:stop])),
                      '" target="n', T.ints(pa.array(dst[start:stop])), '">']
            pieces += data_pieces([(k, T.arrow_column(part[k.name])) for k in edge_keys])
            pieces += [graphics_edge.text(start, stop), "</edge>\n"]
            T.write_rows(f, T.join(pieces))
        f.write(b"  </graph>\n</graphml>\n")
        size = f.tell()
    return {"nodes": len(nodes), "edges": len(edges), "bytes": size}


def _node_columns(nodes: pd.DataFrame) -> list[str]:
    first = [c for c in ("type", "grain") if c in nodes.columns]
    return first + [c for c in nodes.columns if c not in first]


def _owner_blocks(g, taken: set, first_index: int):
    """Keys and text of the attributes a node takes from its owner, formatted
    once per owner and then copied onto its nodes: `identity` per owner id
    (grains and contexts), and `source` plus every grain-table column per grain
    (a name clashing with a node column is prefixed `grain_`)."""
    identities = owner_identity(g)
    grains = g.grains
    keys: list[Key] = []

    def key(name, gtype):
        k = Key(f"n{first_index + len(keys)}", "node", name, gtype)
        keys.append(k)
        return k

    identity_text = _block([(key("identity", "string"), identities)])
    source = source_column(grains)
    names = [c for c in grains.columns if c not in NOT_EXPORTED and c != source]
    if source is not None:
        names.insert(0, source)
    shown_taken = set(taken) | {"identity"}
    columns = []
    for name in names:
        shown = "source" if name == source else name
        if shown in shown_taken:
            shown = f"grain_{name}"
        shown_taken.add(shown)
        arr = T.arrow_column(grains[name])
        columns.append((key(shown, column_type(name, grains[name].dtype)), arr))
    return keys, identity_text, _block(columns)


def _block(columns) -> pa.Array:
    if not columns or not len(columns[0][1]):
        return pa.array([], pa.string())
    return pc.fill_null(T.join(data_pieces(columns)), "")


def _graph_facts(g, reduced: bool) -> dict:
    facts = {"reduced": bool(reduced)}
    for name in ("work", "span", "grain_work", "parallelism"):
        value = getattr(g, name, None)
        if value is not None:
            facts[name] = value
    facts["grains"] = len(g.grains)
    return facts


def _reduced_edge_critical(g, r) -> np.ndarray:
    """A reduced edge is on the critical path when a critical original edge
    between two different groups was merged into it."""
    group = r.group.reindex(g.nodes.index).to_numpy()
    crit = g.edges[g.edges["on_critical_path"].to_numpy(dtype=bool)]
    a = group[crit["src"].to_numpy()]
    b = group[crit["dst"].to_numpy()]
    pairs = pd.MultiIndex.from_arrays([a[a != b], b[a != b]])
    mine = pd.MultiIndex.from_arrays([r.edges["src"].to_numpy(),
                                      r.edges["dst"].to_numpy()])
    return mine.isin(pairs)


class _NodeGraphics:
    """yFiles ShapeNode per node: shape/fill by type, width by duration,
    red border on the critical path, identity as label for grain nodes."""

    def __init__(self, nodes: pd.DataFrame, owner: np.ndarray, g):
        names = list(NODE_STYLE)
        code = T.type_codes(nodes["type"], names)
        self.code = code
        styles = [NODE_STYLE[n] for n in names] + [UNKNOWN_STYLE]
        self.shape = pa.array([s[0] for s in styles])
        self.fill = pa.array([s[1] for s in styles])
        duration = nodes["duration"].to_numpy(dtype=np.float64)
        scaled = np.isin(code, [names.index(t) for t in SCALED_TYPES])
        dmax = duration[scaled].max() if scaled.any() else 0.0
        width = np.full(len(code), float(CIRCLE))
        if dmax > 0:
            width[scaled] = MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * duration[scaled] / dmax
        else:
            width[scaled] = MIN_WIDTH
        width[code == names.index("bookkeeping")] = BOOKKEEPING_SIZE
        height = np.where(scaled, HEIGHT, np.where(
            code == names.index("bookkeeping"), BOOKKEEPING_SIZE, CIRCLE))
        self.width = np.rint(width).astype(np.int64)
        self.height = height.astype(np.int64)
        self.critical = nodes["on_critical_path"].to_numpy(dtype=bool)
        self.labels = T.xml_escaped(owner_identity(g))
        self.owner = owner
        self.scaled = scaled

    def text(self, start, stop) -> pa.Array:
        code = pa.array(self.code[start:stop])
        crit = pa.array(self.critical[start:stop])
        label_idx = owner_index(np.where(self.scaled[start:stop],
                                         self.owner[start:stop], -1), len(self.labels))
        label = pc.fill_null(self.labels.take(label_idx), "")
        return T.join([
            '<data key="ng"><y:ShapeNode><y:Geometry height="',
            T.ints(pa.array(self.height[start:stop])), '" width="',
            T.ints(pa.array(self.width[start:stop])), '" x="0" y="0"/><y:Fill color="',
            self.fill.take(code), '" transparent="false"/><y:BorderStyle color="',
            pc.if_else(crit, CRITICAL, "#000000"), '" type="line" width="',
            pc.if_else(crit, "3.0", "1.0"), '"/><y:NodeLabel>', label,
            '</y:NodeLabel><y:Shape type="', self.shape.take(code),
            '"/></y:ShapeNode></data>'])


class _EdgeGraphics:
    """yFiles PolyLineEdge: colour by edge type, red and thick on the critical path."""

    def __init__(self, edges: pd.DataFrame):
        names = list(EDGE_COLOUR)
        code = T.type_codes(edges["type"], names)
        self.code = code
        self.colour = pa.array(list(EDGE_COLOUR.values()) + ["#808080"])
        self.critical = (edges["on_critical_path"].to_numpy(dtype=bool)
                         if "on_critical_path" in edges.columns
                         else np.zeros(len(edges), dtype=bool))
        self.dashed = code == names.index("dependence")

    def text(self, start, stop) -> pa.Array:
        crit = pa.array(self.critical[start:stop])
        colour = pc.if_else(crit, CRITICAL, self.colour.take(pa.array(self.code[start:stop])))
        return T.join([
            '<data key="eg"><y:PolyLineEdge><y:LineStyle color="', colour,
            '" type="', pc.if_else(pa.array(self.dashed[start:stop]), "dashed", "line"),
            '" width="', pc.if_else(crit, "3.0", "1.0"),
            '"/><y:Arrows source="none" target="standard"/></y:PolyLineEdge></data>'])
