"""Load and validate a grainlab trace (docs/trace-format.md).

`load(path)` opens the Parquet file, checks it is a grainlab trace this reader
understands, reads the events as columns and checks they do not contradict each
other. Bad input raises TraceError with one line naming the file (and, for
contradictory events, the row group and field). Damage that leaves a usable
trace (a run stopped by a signal, events dropped) gives a Trace with
`complete == False` and `problems` saying what is missing.
"""
from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import schema as S
from ..errors import TraceError

PARQUET_MAGIC = b"PAR1"


def load(path) -> "Trace":
    """Read and validate the trace at `path`. If the collector is still writing
    it (a locked `<path>.spool`), wait; if a killed run left only the spool,
    convert it first (grainlab.spool)."""
    trace = _read_trace(path)
    from .validate import validate  # validation needs the Trace's helpers
    validate(trace)
    return trace


def load_checking(path):
    """`load`, with the validation on a thread: (trace, check), `check` a
    concurrent.futures.Future. The trace can be read at once (the analysis
    builds its graph meanwhile: validation only reads the events, and numpy
    releases the GIL, so on 2 cores the two overlap); until check.result()
    returns, the trace may still turn out invalid (result() raises the
    TraceError) and its `problems` may still grow."""
    from concurrent.futures import ThreadPoolExecutor

    from .validate import validate
    trace = _read_trace(path)
    pool = ThreadPoolExecutor(1, thread_name_prefix="grainlab-check")
    check = pool.submit(validate, trace)
    pool.shutdown(wait=False)
    return trace, check


def _read_trace(path) -> "Trace":
    path = Path(path)
    parquet, meta = open_trace(path)
    from ..process_memory import fit_to_trace
    fit_to_trace(parquet.metadata.num_rows)
    events, sizes = _read_events(path, parquet, meta)
    from .dependence_waits import fold_dependence_waits
    events, folded = fold_dependence_waits(events)
    if folded:
        meta["dependence_waits"] = folded
        sizes = np.bincount(events["row_group"].to_numpy(),
                            minlength=len(sizes)).astype(np.int64)
    return Trace(path, meta, events, sizes)


def open_trace(path: Path) -> tuple[pq.ParquetFile, dict]:
    """The trace's Parquet file, open, and its metadata, checked (the file is a
    grainlab trace of a schema this reader knows, with the columns it needs):
    what `load` and grainlab.stream do before they read events."""
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


class Trace:
    """One recorded run: events as a DataFrame plus the run's metadata.

    Attributes:
      path      the file
      meta      metadata dict: keys without the `grainlab.` prefix, JSON values parsed
      events    DataFrame, one row per event in file order: the trace's columns,
                `row_group` (int32) and `time` (int64 ns since the collector started)
      complete  False if the run did not end normally or events are missing
      problems  list of one-line strings describing recoverable damage
    """

    def __init__(self, path: Path, meta: dict, events: pd.DataFrame,
                 row_group_sizes: np.ndarray):
        self.path = path
        self.meta = meta
        self.events = events
        self.row_group_sizes = row_group_sizes
        self.complete, self.problems = run_state(meta)
        self._graph = None

    def __repr__(self):
        return (f"<grainlab.Trace {self.path} events={len(self.events)} "
                f"threads={self.threads} complete={self.complete}>")

    # -- simple facts -----------------------------------------------------
    @property
    def thread_ids(self) -> np.ndarray:
        """Sorted collector thread indices that recorded events."""
        return np.unique(self.events["thread"].to_numpy())

    @property
    def threads(self) -> int:
        """Number of threads that recorded events."""
        return int(len(self.thread_ids))

    @property
    def counters(self) -> list[str]:
        """Names of the counters recorded as columns (`counter:<name>`)."""
        return [c[len(S.COUNTER_PREFIX):] for c in self.events.columns
                if c.startswith(S.COUNTER_PREFIX)]

    @property
    def hz(self) -> float:
        return float(self.meta["clock"]["hz"])

    def of(self, *events: int) -> pd.DataFrame:
        """Rows of the given event kinds, in file order."""
        return self.events[self.events["event"].isin(events)]

    # -- derived tables (computed once, on first use) ---------------------
    def tasks(self) -> pd.DataFrame:
        """One row per task: initial, implicit (one per team member) and explicit.

        id, parent (uint64; 0 for the initial task), kind (categorical:
        initial/implicit/explicit), flags (ompt task flags), codeptr, thread
        (creating thread; for implicit tasks the thread they run on), region
        (parallel region id of an implicit task, else 0), team_index,
        team_size (-1 for explicit), create_ns (TASK_CREATE or IMPLICIT_BEGIN),
        begin_ns (first run), end_ns (body finished; NaN if unknown),
        begin_thread (Int64), has_dependences, undeferred, untied, final,
        mergeable, merged (bools, explicit tasks only), child_index (creation
        order among siblings, -1 for non-explicit), children (explicit children
        count), winner (the implicit task named without team index), depth
        (0 = initial task), lineage (docs/trace-format.md "Identity"; a column
        only while lineages are short or few, "Compact identity": any row's is
        `trace.task_names().strings(rows)`, task row i being node i of that
        identity forest).
        """
        return self._task_table.tasks

    def task_names(self):
        """The identity forest of the tasks (grainlab.identity.Names): node i
        is row i of tasks(), regions()["identity_node"] the regions' nodes;
        `.strings(nodes)` makes lineage strings on demand."""
        return self._task_table.names

    def chunks(self) -> pd.DataFrame:
        """One row per loop chunk (worksharing loops, taskloop, distribute),
        sorted by loop and first iteration.

        id ("<loop>@<first>", the chunk's identity), loop (loop instance
        identity, as in loops()), first (first iteration), iterations, thread,
        cpu, task (implicit task of a worksharing chunk; the task running a
        taskloop chunk), start_ns, end_ns (next chunk or WORK_END of the loop on
        that thread; a taskloop chunk's task end), inferred (bool: not reported
        by libomp, inferred from schedule(static,N)), dispatch (ompt dispatch
        kind), work (static/dynamic/guided/loop/taskloop/...).
        """
        return self._loops_and_chunks[1]

    def loops(self) -> pd.DataFrame:
        """One row per loop instance (worksharing loop, distribute, taskloop),
        in order of first appearance.

        loop (identity: "<region identity>.w<k>" for the k-th worksharing
        construct of a region's implicit tasks, "<task lineage>.t<k>" for the
        k-th taskloop a task runs), construct (worksharing/taskloop), region,
        encountering_task, sequence (k), work, iterations (as reported at
        WORK_BEGIN), codeptr, begin_ns, end_ns, threads, chunks,
        chunk_iterations, inferred_chunks.
        """
        return self._loops_and_chunks[0]

    def regions(self) -> pd.DataFrame:
        """One row per parallel region: id, encountering_task,
        requested_team_size, flags, codeptr, thread, begin_ns, end_ns, ordinal
        (order among the regions of its encountering task), identity
        ("<encountering task lineage>.p<ordinal>")."""
        return self._task_table.regions

    @cached_property
    def _task_table(self):
        from ..tables.tasks import build_task_table
        return build_task_table(self)

    @cached_property
    def _loops_and_chunks(self):
        from ..tables.loops import build_loops_and_chunks
        return build_loops_and_chunks(self)

    def graph(self, *, checkpoint=None, **kw):
        """The grain graph of this trace (docs/graph-model.md):
        `grainlab.graph.build(self, **kw)`. Built once and cached when called
        without options (metric columns added to it stay); with options, built
        anew each call. checkpoint: called between the build's phases (it may
        raise to stop the build)."""
        from ..graph import build
        if kw:
            return build(self, checkpoint=checkpoint, **kw)
        if self._graph is None:
            self._graph = build(self, checkpoint=checkpoint)
        return self._graph

    def summary(self) -> dict:
        """Counts and facts about the run (what `grainlab info --json` prints)."""
        from .facts import summarize
        return summarize(self)


def _count(value) -> int:
    """A metadata count; absent or malformed counts as 0."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


# ---------------------------------------------------------------------------
# Opening and checking the file


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
            f"{path}: truncated or not a Parquet file ({_first_line(e)})") from None


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


def _first_line(e: Exception) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


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


def _read_events(path: Path, parquet: pq.ParquetFile, meta: dict):
    try:
        table = parquet.read(use_threads=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise TraceError(f"{path}: corrupt data ({_first_line(e)})") from None
    sizes = row_group_sizes(parquet)
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        if name.startswith(S.COUNTER_PREFIX):
            # Nullable Int64: counters are null on rows that do not bound a fragment.
            columns[name] = col.cast(pa.int64()).to_pandas(
                types_mapper={pa.int64(): pd.Int64Dtype()}.get).array
        else:
            columns[name] = col.to_numpy()
    events = pd.DataFrame(columns, copy=False)
    events["row_group"] = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    hz = float(meta["clock"]["hz"])
    tsc = events["tsc"].to_numpy()
    events["time"] = np.rint(tsc.astype(np.float64) * (1e9 / hz)).astype(np.int64)
    return events, sizes
