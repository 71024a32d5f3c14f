"""Save an Analysis to a directory and open it again without rebuilding.

A saved analysis is a directory:
  analysis.json      what it was made from (trace path and content key,
                     grainlab version, thresholds, interval, reference), the
                     run facts, graph-level values and the metrics summary
  nodes.parquet, edges.parquet, grains.parquet, contexts.parquet
                     the grain graph's tables with every metric column
  locations.parquet  the source location of every grain
  names.parquet      the identity forest (grainlab.tables.identity), and
  identity.parquet   the node in it of every grain then every context

`open_saved` reads its parts (`gl.open` builds the Analysis from them). They
are trusted only when written by this grainlab version from a trace (and
reference trace) whose content key is unchanged; otherwise the analysis is
rebuilt from the trace (and re-saved), never trusted. A saved
analysis whose trace is gone is still opened: there is nothing to rebuild
from, and nothing says it is stale.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import GrainlabError
from .options import Options

FORMAT = 1
TABLES = ("nodes", "edges", "grains", "contexts")


def _version() -> str:
    from .. import __version__
    return __version__


def _key_of(path) -> str | None:
    from ..trace.file import trace_key
    try:
        return trace_key(path)
    except OSError:
        return None


def _plain(x):
    """numpy values as JSON (NaN and inf kept: Python's json reads them back)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return str(x)


def save(a, directory: Path) -> Path:
    g = a.graph
    ref = a.reference
    doc = {
        "format": FORMAT,
        "grainlab_version": _version(),
        "trace": str(Path(a.path).resolve()),
        "trace_key": _key_of(a.path),
        "reference": None if ref is None else str(Path(ref.path).resolve()),
        "reference_key": None if ref is None else _key_of(ref.path),
        **a.options.to_doc(),     # thresholds, interval, region, window, weigh
        "run": a.run,
        "graph": {"critical_path": g.critical_path.tolist(),
                  "critical_grains": g.critical_grains.tolist(),
                  "span": int(g.span),
                  "topological_order_source": g.topological_order_source},
        "metrics": json.loads(json.dumps(a.metrics, default=_plain)),
        "meta": json.loads(json.dumps(g.meta, default=_plain)),
    }
    directory.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed into place: a reader never sees half of one.
    tmp = directory / f".saving-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for name in TABLES:
            pq.write_table(pa.Table.from_pandas(getattr(g, name)), tmp / f"{name}.parquet")
        pq.write_table(pa.table({"location": pa.array(a.locations.to_numpy(), pa.string())}),
                       tmp / "locations.parquet")
        if g.identity_nodes() is not None:
            pq.write_table(names_table(g.names), tmp / "names.parquet")
            pq.write_table(pa.table({"node": g.identity_node}), tmp / "identity.parquet")
        (tmp / "analysis.json").write_text(json.dumps(doc))
        for f in tmp.iterdir():
            os.replace(f, directory / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return directory


_NAME_FIELDS = ("parent", "tag", "a", "b", "level", "length", "h1", "h2")


def names_table(names) -> pa.Table:
    """The identity forest (grainlab.tables.identity.Names) as a table."""
    return pa.table({f: getattr(names, f) for f in _NAME_FIELDS})


def names_from_table(table: pa.Table):
    from ..tables.identity import Names
    return Names(*(table.column(f).to_numpy() for f in _NAME_FIELDS))


def _read_doc(directory: Path) -> dict:
    try:
        doc = json.loads((directory / "analysis.json").read_text())
    except FileNotFoundError:
        raise GrainlabError(f"{directory}: not a saved grainlab analysis "
                            "(no analysis.json; save one with Analysis.save)") from None
    except (OSError, ValueError) as e:
        raise GrainlabError(f"{directory}/analysis.json: unreadable ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GrainlabError(f"{directory}: saved analysis of an unknown format")
    return doc


def is_current(doc: dict) -> bool:
    """Saved by this grainlab from traces whose content has not changed."""
    if doc.get("grainlab_version") != _version():
        return False
    if "joins_ns" not in doc.get("metrics", {}).get("critical_path_time", {}):
        return False      # saved before the metrics had the span's split (with joins apart)
    if "parallel_part" not in doc.get("metrics", {}):
        return False      # saved before the parallel part's parallelism (issue 32)
    for path, key in ((doc.get("trace"), doc.get("trace_key")),
                      (doc.get("reference"), doc.get("reference_key"))):
        if path and os.path.exists(path) and _key_of(path) != key:
            return False
    return True


@dataclass
class Saved:
    """What a saved analysis holds, as plain parts: what it was made from
    (trace, reference, options) and, when it can be trusted (`current`), the
    graph with its metric columns, the metric values, the run facts and the
    grains' locations (Analysis.from_saved)."""
    trace: str
    reference: str | None
    options: Options
    current: bool
    graph: object = None
    metrics: dict | None = None
    run: dict | None = None
    locations: pd.Series | None = None


def open_saved(directory: Path) -> Saved:
    """The parts of the analysis saved in `directory`; a stale one (`current`
    False) has only what it was made from, to be rebuilt from its trace."""
    doc = _read_doc(directory)
    parts = Saved(trace=doc["trace"], reference=doc.get("reference"),
                  options=Options.from_doc(doc), current=is_current(doc))
    if not parts.current:
        if not os.path.exists(parts.trace):
            raise GrainlabError(f"{directory}: saved by another grainlab version and its "
                                f"trace {parts.trace} is gone: cannot rebuild it")
        return parts
    g, locations = _read_graph(directory, doc)
    parts.graph, parts.metrics, parts.run = g, doc["metrics"], doc["run"]
    parts.locations = pd.Series(locations.astype(object), index=g.grains.index, name="location")
    return parts


def _read_graph(directory: Path, doc: dict):
    """The saved grain graph (with its metric columns) and the grains' locations."""
    from ..graph.model import GrainGraph
    try:
        tables = {name: pq.read_table(directory / f"{name}.parquet").to_pandas()
                  for name in TABLES}
        locations = pq.read_table(directory / "locations.parquet").column(0).to_numpy(
            zero_copy_only=False)
    except (OSError, pa.ArrowInvalid) as e:
        raise GrainlabError(f"{directory}: saved analysis is damaged ({e})") from None
    names = identity = None
    if (directory / "names.parquet").exists():
        try:
            names = names_from_table(pq.read_table(directory / "names.parquet"))
            identity = pq.read_table(directory / "identity.parquet").column("node").to_numpy()
        except (OSError, pa.ArrowInvalid, KeyError) as e:
            raise GrainlabError(f"{directory}: saved analysis is damaged ({e})") from None
    g = GrainGraph(meta=doc["meta"], names=names, identity_node=identity, **tables)
    gd = doc["graph"]
    g.critical_path = np.asarray(gd["critical_path"], np.int64)
    g.critical_grains = np.asarray(gd["critical_grains"], np.int64)
    g.span = int(gd["span"])
    g.topological_order_source = gd["topological_order_source"]
    return g, locations
