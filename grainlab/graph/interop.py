"""GrainGraph -> igraph / networkx (vertex i == node i; columns as attributes)."""
from __future__ import annotations



def _plain(values):
    """Column -> list of plain Python values (categories as strings)."""
    if hasattr(values, "cat"):
        return values.astype(object).where(values.notna(), "").tolist()
    return values.tolist()


def to_igraph(g):
    import igraph as ig
    n = len(g.nodes)
    src = g.edges["src"].to_numpy()
    dst = g.edges["dst"].to_numpy()
    graph = ig.Graph(n=n, edges=list(zip(src.tolist(), dst.tolist())), directed=True)
    for name in g.nodes.columns:
        graph.vs[name] = _plain(g.nodes[name])
    for name in g.edges.columns:
        if name not in ("src", "dst"):
            graph.es[name] = _plain(g.edges[name])
    return graph


def to_networkx(g):
    import networkx as nx
    graph = nx.DiGraph()
    cols = list(g.nodes.columns)
    values = [_plain(g.nodes[c]) for c in cols]
    graph.add_nodes_from((i, dict(zip(cols, row)))
                         for i, row in enumerate(zip(*values)) if True)
    ecols = [c for c in g.edges.columns if c not in ("src", "dst")]
    evalues = [_plain(g.edges[c]) for c in ecols]
    graph.add_edges_from((s, d, dict(zip(ecols, row))) for s, d, *row in
                         zip(g.edges["src"].tolist(), g.edges["dst"].tolist(), *evalues))
    return graph


def weighted_edge_networkx(g):
    """networkx DiGraph with node weights moved onto edges: edge u->v weighs
    w(u); a source node 'S' feeds every node and every node feeds 'T' — the
    longest S->T path then equals the node-weighted longest path."""
    import networkx as nx
    w = g.nodes["duration"].to_numpy()
    graph = nx.DiGraph()
    n = len(w)
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(
        (s, d, int(w[s])) for s, d in zip(g.edges["src"].tolist(), g.edges["dst"].tolist()))
    graph.add_weighted_edges_from(("S", i, 0) for i in range(n))
    graph.add_weighted_edges_from((i, "T", int(w[i])) for i in range(n))
    return graph
