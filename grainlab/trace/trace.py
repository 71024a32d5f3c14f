"""Load and validate a grainlab trace (docs/trace-format.md).

`load(path)` opens the Parquet file (grainlab.trace.file), checks it is a grainlab trace this reader
understands, reads the events as columns and checks they do not contradict each
other. Bad input raises TraceError with one line naming the file (and, for
contradictory events, the row group and field). Damage that leaves a usable
trace (a run stopped by a signal, events dropped) gives a Trace with
`complete == False` and `problems` saying what is missing.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import schema as S
from ..errors import TraceError, first_line
from .file import open_trace, run_state


def load(path) -> "Trace":
    """Read and validate the trace at `path`. If the collector is still writing
    it (a locked `<path>.spool`), wait; if a killed run left only the spool,
    convert it first (grainlab.trace.spool)."""
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
    parquet, meta = open_trace(path)    # waits for a spool, converts one; checks the file
    stamp = _file_stamp(path)
    from ..process_memory import fit_to_trace
    fit_to_trace(parquet.metadata.num_rows)
    events, sizes, accesses, folded = _event_tables(path, parquet, meta)
    if folded:
        meta["dependence_waits"] = folded
    return Trace(path, meta, events, sizes, accesses=accesses,
                 reread=lambda: _reread_events(path, stamp))


def _event_tables(path: Path, parquet, meta: dict):
    """(events, row group sizes, accesses, dependence waits folded): the
    event table as load() makes it."""
    events, sizes = read_events(parquet, path, meta)
    from .dependence_waits import fold_dependence_waits
    events, folded = fold_dependence_waits(events)
    if folded:
        sizes = np.bincount(events["row_group"].to_numpy(),
                            minlength=len(sizes)).astype(np.int64)
    from .accesses import split_accesses
    events, sizes, accesses = split_accesses(events, sizes)
    return events, sizes, accesses, folded


def _file_stamp(path: Path):
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _reread_events(path: Path, stamp) -> pd.DataFrame:
    """The event table of a trace whose events were released
    (Trace.release_events), read again from its file: the same rows, unless
    the file changed since it was loaded (then a TraceError, never other rows)."""
    try:
        same = _file_stamp(path) == stamp
    except OSError:
        same = False
    if not same:
        raise TraceError(f"{path}: the trace changed or is gone since it was loaded: "
                         "load it again")
    parquet, meta = open_trace(path)
    return _event_tables(path, parquet, meta)[0]


class Trace:
    """One recorded run: events as a DataFrame plus the run's metadata.

    Attributes:
      path      the file
      meta      metadata dict: keys without the `grainlab.` prefix, JSON values parsed
      events    DataFrame, one row per event in file order: the trace's columns,
                `row_group` (int32) and `time` (int64 ns since the collector started)
      complete  False if the run did not end normally or events are missing
      problems  list of one-line strings describing recoverable damage
      accesses  DataFrame of the run's grain_data() annotations (DATA_ACCESS
                rows, kept out of `events`; grainlab.trace.accesses), empty
                for a run without any
    """

    def __init__(self, path: Path, meta: dict, events: pd.DataFrame,
                 row_group_sizes: np.ndarray, *, accesses: pd.DataFrame | None = None,
                 reread=None):
        """reread: callable() -> the same event table, for a trace read whole
        from its file (load()): its events can then be released."""
        self.path = path
        self.meta = meta
        self._events = events
        self._reread = reread
        if accesses is None:
            from .accesses import empty_accesses
            accesses = empty_accesses()
        self.accesses = accesses
        self.row_group_sizes = row_group_sizes
        self.complete, self.problems = run_state(meta)

    def __repr__(self):
        if self._events is None:        # released: a repr reads no file
            return f"<grainlab.Trace {self.path} events=released complete={self.complete}>"
        return (f"<grainlab.Trace {self.path} events={len(self.events)} "
                f"threads={self.threads} complete={self.complete}>")

    @property
    def events(self) -> pd.DataFrame:
        """The event table (see the class doc); read again from the file
        when it was released."""
        if self._events is None:
            self._events = self._reread()
        return self._events

    @events.setter
    def events(self, value: pd.DataFrame) -> None:
        self._events = value

    def release_events(self) -> bool:
        """Let go of the event table (~70 bytes per event: a quarter of an
        analysis's memory at 10^7 grains, issue 31) until something reads
        `events` again, which then reads it from the file anew (the same
        rows). For a caller done with the events: the analysis, once its
        graph is built and the trace validated. The derived tables already
        made (tasks(), chunks()...) stay. False, and nothing released, for a
        trace that cannot be read again (made in memory, or a part of a file)."""
        if self._reread is None:
            return False
        self._events = None
        return True

    def has_event(self, code: int) -> bool:
        """Whether any row is of event `code`: from the held events, or, when
        they were released, from the file's `event` column alone (1 byte an
        event, instead of reading the whole table back: the web app asks this
        of every trace without data accesses)."""
        if self._events is not None or self._reread is None:
            return bool((self.events["event"].to_numpy() == code).any())
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        column = pq.read_table(self.path, columns=["event"]).column("event")
        return bool(pc.any(pc.equal(column, code)).as_py())

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
        """The identity forest of the tasks (grainlab.tables.identity.Names): node i
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

    def task_tables(self, *, lean: bool = False):
        """(tasks(), regions(), task_names()): the task tables, as the graph
        builder reads them. lean: when they have not been built yet, build
        them without lineage strings and execution times and without keeping
        them, so they are freed once the caller has read what it needs
        (~0.16 GiB per 10^6 grains), the tasks as a TaskParts (the columns
        the graph reads, no DataFrame: grainlab.tables.tasks); built ones are
        handed over as they are."""
        if lean and "_task_table" not in self.__dict__:
            from ..tables.tasks import build_task_table
            return build_task_table(self, lineage=False, times=False, frame=False)
        table = self._task_table
        return table.tasks, table.regions, table.names

    def graph(self, *, checkpoint=None, **kw):
        """The grain graph of this trace (docs/graph-model.md), built anew on
        each call: `grainlab.graph.build(self, **kw)`. `gl.analyze(trace).graph`
        is the one an analysis keeps, with its metric columns. checkpoint:
        called between the build's phases (it may raise to stop the build)."""
        from ..graph import build
        return build(self, checkpoint=checkpoint, **kw)

    def summary(self) -> dict:
        """Counts and facts about the run (what `grainlab info --json` prints)."""
        from .facts import info_of
        return info_of(self)


# Rows read from the file per step, at most (whole row groups, several
# together up to this many; a bigger one alone): the Arrow table of one step
# (~15 MB) is all the reader holds beside the columns it fills. At 28M
# events 1 << 20 rows took the same CPU and 70 MB more at the peak.
READ_ROWS = 1 << 18


def read_events(parquet: pq.ParquetFile, path: Path, meta: dict,
                groups=None) -> tuple[pd.DataFrame, np.ndarray]:
    """(events, rows per row group) of the row groups `groups` (default: all)
    of an open trace: the DataFrame `Trace.events` describes, before
    dependence waits are folded and data accesses split off.

    Each column is allocated once, at its final size and dtype (the file's:
    uint8 ... uint64; counters nullable Int64), and filled a few row groups
    at a time, straight from that step's Arrow buffers, which are freed
    before the next step: the peak is the columns once plus one step, not
    Arrow's whole table beside its numpy copy (3.86 GiB at 28M events
    before). `time` is made step by step too, with no row-sized float
    temporary. A read error is a TraceError naming the file."""
    md = parquet.metadata
    groups = np.arange(md.num_row_groups) if groups is None else np.asarray(groups, np.int64)
    sizes = np.array([md.row_group(int(g)).num_rows for g in groups], np.int64)
    n = int(sizes.sum())
    names = parquet.schema_arrow.names
    counters = [c for c in names if c.startswith(S.COUNTER_PREFIX)]
    fixed = {c: np.empty(n, np.dtype(S.COLUMNS[c])) for c in names if c in S.COLUMNS}
    values = {c: np.empty(n, np.int64) for c in counters}
    nulls = {c: np.empty(n, bool) for c in counters}
    row_group = np.empty(n, np.int32)
    time = np.empty(n, np.int64)
    scale = 1e9 / float(meta["clock"]["hz"])
    scratch = np.empty(0, np.float64)
    at = 0
    for run in _runs(sizes, READ_ROWS):
        try:
            table = parquet.read_row_groups(groups[run].tolist(), columns=[*fixed, *counters],
                                            use_threads=True)
            m = table.num_rows
            if m != int(sizes[run].sum()):
                raise ValueError(f"{m} rows read where the footer says {int(sizes[run].sum())}")
            for name, out in fixed.items():
                _fill(out[at:at + m], table.column(name), path, name)
            for name in counters:
                _fill_counter(values[name][at:at + m], nulls[name][at:at + m],
                              table.column(name))
        except (pa.ArrowException, OSError, ValueError) as e:
            raise TraceError(f"{path}: corrupt data ({first_line(e)})") from None
        del table           # this step's Arrow buffers, before the next step's
        row_group[at:at + m] = np.repeat(groups[run].astype(np.int32), sizes[run])
        # time = rint(tsc * 1e9 / hz): the same float64 operations as one
        # expression over the whole column, a step at a time
        if len(scratch) < m:
            scratch = np.empty(m, np.float64)
        ticks = scratch[:m]
        np.multiply(fixed["tsc"][at:at + m], scale, out=ticks)
        np.rint(ticks, out=ticks)
        time[at:at + m] = ticks
        at += m
    del scratch
    columns = {}
    for name in names:
        columns[name] = (fixed[name] if name in fixed else
                         pd.arrays.IntegerArray(values[name], nulls[name]))
    columns["row_group"] = row_group
    columns["time"] = time
    # copy=False: pandas keeps each array as its own block (no consolidation copy)
    return pd.DataFrame(columns, copy=False), sizes


def _runs(sizes: np.ndarray, limit: int):
    """Index ranges (slices) of consecutive row groups of <= limit rows together
    (a bigger row group alone)."""
    start, rows = 0, 0
    for i, k in enumerate(sizes.tolist()):
        if i > start and rows + k > limit:
            yield slice(start, i)
            start, rows = i, 0
        rows += k
    if start < len(sizes):
        yield slice(start, len(sizes))


def _fill(out: np.ndarray, column: pa.ChunkedArray, path, name) -> None:
    """Copy a fixed column's chunks into `out` (their dtype is the file's,
    checked by open_trace)."""
    at = 0
    for chunk in column.chunks:
        if chunk.null_count:
            raise TraceError(f"{path}: column {name} has null values (a trace's "
                             "fixed columns never do)")
        out[at:at + len(chunk)] = chunk.to_numpy(zero_copy_only=True)
        at += len(chunk)


def _fill_counter(values: np.ndarray, nulls: np.ndarray, column: pa.ChunkedArray) -> None:
    """A counter column (any integer type; null where not read) as int64 values and nulls."""
    at = 0
    for chunk in column.chunks:
        chunk = chunk.cast(pa.int64())
        k = len(chunk)
        nulls[at:at + k] = chunk.is_null().to_numpy(zero_copy_only=False)
        values[at:at + k] = chunk.fill_null(0).to_numpy(zero_copy_only=True)
        at += k
