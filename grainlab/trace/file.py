"""The trace file: opening it, checking it is a grainlab trace this reader
understands (docs/trace-format.md), its metadata, and a cheap key of its
content. Bad input raises TraceError with one line naming the file."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import schema as S
from ..errors import TraceError, first_line

PARQUET_MAGIC = b"PAR1"


def open_trace(path: Path) -> tuple[pq.ParquetFile, dict]:
    """The trace's Parquet file, open, and its metadata, checked (the file is a
    grainlab trace of a schema this reader knows, with the columns it needs):
    what `load` and grainlab.trace.scan do before they read events."""
    from .spool import ensure_trace
    ensure_trace(path)
    parquet = _open_parquet(path)
    meta = _parse_metadata(path, parquet)
    _check_columns(path, parquet)
    return parquet, meta


def row_group_sizes(parquet: pq.ParquetFile) -> np.ndarray:
    return np.array([parquet.metadata.row_group(i).num_rows
                     for i in range(parquet.metadata.num_row_groups)], dtype=np.int64)


def run_state(meta: dict) -> tuple[bool, list[str]]:
    """(complete, problems) as the metadata alone tells them: a run that did
    not end normally, events dropped by the collector."""
    complete = bool(meta.get("complete", False))
    problems = []
    if not complete:
        problems.append(
            "run did not end normally (end reason: "
            f"{meta.get('end_reason', 'unknown')}): trace is incomplete")
    if _count(meta.get("dropped_events")) > 0:
        complete = False
        problems.append(f"{meta['dropped_events']} events were dropped by the collector")
    return complete, problems


def _count(value) -> int:
    """A metadata count; absent or malformed counts as 0."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def _open_parquet(path: Path) -> pq.ParquetFile:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from None
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace file")
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(max(size - 4, 0))
            tail = f.read(4)
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from None
    if size < 12 or head != PARQUET_MAGIC:
        raise TraceError(f"{path}: truncated or not a Parquet file "
                         f"({size} bytes, no Parquet header)")
    if tail != PARQUET_MAGIC:
        raise TraceError(
            f"{path}: truncated or not a Parquet file (no Parquet footer: the "
            "recording was cut short, e.g. by SIGKILL, before the collector "
            "finished the file)")
    try:
        return pq.ParquetFile(_arrow_path(path))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise TraceError(
            f"{path}: truncated or not a Parquet file ({first_line(e)})") from None


def _arrow_path(path: Path) -> str:
    """A name Arrow can open: Arrow takes UTF-8 strings, and a Linux file name
    is any bytes (Python keeps undecodable ones as surrogates). Such a file is
    opened here and read through /proc/self/fd; the descriptor lives as long
    as the process (a trace is opened once or a few times)."""
    text = str(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        fd = os.open(os.fsencode(text), os.O_RDONLY | os.O_CLOEXEC)
        return f"/proc/self/fd/{fd}"


def _parse_metadata(path: Path, parquet: pq.ParquetFile) -> dict:
    raw = parquet.metadata.metadata or {}
    kv = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
          for k, v in raw.items()}
    if "grainlab.schema_version" not in kv:
        raise TraceError(
            f"{path}: a Parquet file but not a grainlab trace "
            "(no grainlab.schema_version in its metadata)")
    version_text = kv["grainlab.schema_version"]
    try:
        version = int(version_text)
    except ValueError:
        raise TraceError(f"{path}: metadata grainlab.schema_version is "
                         f"{version_text!r}, not an integer") from None
    if version > S.SCHEMA_VERSION:
        raise TraceError(
            f"{path}: trace schema version {version} is newer than this grainlab "
            f"reads (up to {S.SCHEMA_VERSION}): upgrade grainlab")
    if version < 1:
        raise TraceError(f"{path}: invalid trace schema version {version}")
    meta = {}
    for key, text in kv.items():
        if not key.startswith("grainlab."):
            continue
        name = key[len("grainlab."):]
        meta[name] = _parse_value(text)
    meta["schema_version"] = version
    meta["complete"] = kv.get("grainlab.complete", "false").strip().lower() == "true"
    clock = meta.get("clock")
    hz = clock.get("hz") if isinstance(clock, dict) else None
    if not isinstance(hz, (int, float)) or not np.isfinite(hz) or hz <= 0:
        raise TraceError(f"{path}: metadata grainlab.clock has no valid `hz` "
                         "(cannot convert ticks to time)")
    return meta


def _parse_value(text: str):
    """Metadata values are JSON where structured, plain strings otherwise."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check_columns(path: Path, parquet: pq.ParquetFile) -> None:
    arrow_schema = parquet.schema_arrow
    names = set(arrow_schema.names)
    missing = [c for c in S.COLUMNS if c not in names]
    if missing:
        raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
    for column, type_name in S.COLUMNS.items():
        actual = arrow_schema.field(column).type
        if str(actual) != type_name:
            raise TraceError(f"{path}: column {column} has type {actual}, "
                             f"expected {type_name}")
    for name in names:
        if name.startswith(S.COUNTER_PREFIX):
            actual = arrow_schema.field(name).type
            if not pa.types.is_integer(actual):
                raise TraceError(f"{path}: counter column {name} has type "
                                 f"{actual}, expected int64")


def trace_key(path) -> str:
    """A cheap content key of a trace file: its size and a hash of its Parquet
    footer (row-group statistics and the run's metadata change with any
    content change)."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(size - 8, 0))
        tail = f.read(8)
        footer_len = int.from_bytes(tail[:4], "little") if len(tail) == 8 else 0
        start = max(size - 8 - footer_len, 0)
        f.seek(start)
        footer = f.read(size - start)
    return f"{size}-{hashlib.sha256(footer).hexdigest()[:32]}"
