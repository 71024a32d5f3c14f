"""Event batches: the unit that checking and counting a trace work on.

A batch is a dict of numpy arrays, one per event column it was read with, plus
`pos` (int64: the row's position in the file, before dependence waits were
folded away, so it only grows from batch to batch; streamed batches only) and `rg` (int32: the row
group). Batches come in file order. `file_batches` streams a trace file in
batches of at most BATCH_ROWS rows, reading only the columns asked for, so
whatever the trace's size a reader holds one batch at a time; `loaded_batches`
cuts a loaded trace's event table (`grainlab.load`) into batches of views.

`Collected` keeps, from the batches that pass by, the few rows that counting
and checking need across the whole run — one row per task creation, implicit
task, parallel region begin or end and worksharing begin — as compact
columns: about 33 bytes per explicit task, whatever the number of events.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import schema as S
from ..errors import TraceError, first_line
from ..idindex import IdIndex

# Rows per streamed batch, at most (a bigger row group is read in slices of
# this size): ~6 MB of the fixed columns. Two collector buffers of the default
# 65,536 events do not fit, so a recorded trace is read a row group at a
# time; small row groups are read together. Big enough that the per-batch
# Python work is noise, small enough that a batch is never the peak.
BATCH_ROWS = 1 << 17


def file_batches(parquet, path, sizes, columns=None, fold=None, batch_rows=None):
    """The events of an open Parquet trace in batches (columns=None: read every
    column, though only the fixed ones are converted). `sizes`: rows per row
    group; `fold`: a grainlab.trace.dependence_waits.FoldPlan to apply. A read error is a
    TraceError naming the file, as when `grainlab.load` reads it whole.

    Whole row groups are read, several at a time up to `batch_rows` rows (a
    bigger one is read in slices): pyarrow's iter_batches would keep every
    pre-buffered column chunk of the file until the end (memory growing with
    the trace). The next piece is read on a thread while the caller works
    on this one (Arrow decodes without the GIL: on 2 cores the decoding
    and the checks overlap), so two pieces are held at a time."""
    limit = batch_rows or BATCH_ROWS
    offset = 0
    pieces = _prefetched(_pieces(parquet, sizes, limit, columns))
    while True:
        try:
            got = next(pieces, None)
            if got is None:
                break
            piece, rg = got
            batch = {name: _numpy(piece.column(name))
                     for name in piece.schema.names if name in S.COLUMNS}
        except (pa.ArrowException, OSError, ValueError) as e:
            raise TraceError(f"{path}: corrupt data ({first_line(e)})") from None
        n = piece.num_rows
        del piece
        batch["pos"] = np.arange(offset, offset + n, dtype=np.int64)
        batch["rg"] = rg
        offset += n
        if fold is not None:
            batch = fold.apply(batch)
        yield batch


def _numpy(column) -> np.ndarray:
    """A fixed column of a piece as numpy: a view of Arrow's buffer when it is
    one chunk without nulls (ChunkedArray.to_numpy copies: 1.1 of info's 8 s
    at 28M events), else a copy."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if len(chunks) == 1 and not chunks[0].null_count:
        return chunks[0].to_numpy(zero_copy_only=True)
    return column.to_numpy()


def _pieces(parquet, sizes, limit, columns):
    """(Arrow table, row group of each row) of the file's pieces, in order."""
    sizes = np.asarray(sizes)
    for group in _row_group_runs(sizes, limit):
        if len(group) == 1 and sizes[group[0]] > limit:
            # a row group bigger than `limit` rows, in record batches of `limit` rows
            for piece in parquet.iter_batches(batch_size=limit, row_groups=group,
                                              columns=columns, use_threads=True):
                yield piece, np.full(piece.num_rows, group[0], np.int32)
        else:
            piece = parquet.read_row_groups(group, columns=columns, use_threads=True)
            rg = np.repeat(np.asarray(group, np.int32), sizes[group])
            if len(rg) != piece.num_rows:
                raise ValueError(f"{piece.num_rows} rows read where the footer says {len(rg)}")
            yield piece, rg


def _prefetched(items):
    """The items of an iterator, each next one fetched on a thread while the
    caller holds the current one. An error fetching an item is raised where
    that item is asked for; closing the generator waits for the fetch in
    flight (at most one)."""
    from concurrent.futures import ThreadPoolExecutor
    items = iter(items)
    with ThreadPoolExecutor(1, thread_name_prefix="grainlab-read") as pool:
        ahead = pool.submit(next, items, None)
        while True:
            item = ahead.result()
            if item is None:
                return
            ahead = pool.submit(next, items, None)
            yield item


def _row_group_runs(sizes, limit):
    """Consecutive row groups, as few together as keeps each run <= limit rows."""
    run, rows = [], 0
    for i, n in enumerate(np.asarray(sizes).tolist()):
        if run and rows + n > limit:
            yield run
            run, rows = [], 0
        run.append(i)
        rows += n
    if run:
        yield run


def loaded_batches(events, columns=None, batch_rows=None):
    """A loaded trace's events (DataFrame, already folded) as batches of at
    most `batch_rows` (default LOADED_BATCH_ROWS) rows: views of its columns
    (`columns`, default the fixed ones, and `rg`), no copies, so a check's
    row-sized temporaries are a batch's, not the whole table's. No `pos`:
    only the fold reads it, and a loaded trace is folded already."""
    names = [c for c in (columns or S.COLUMNS) if c not in ("rg", "pos")]
    whole = {c: events[c].to_numpy() for c in names}
    whole["rg"] = events["row_group"].to_numpy()
    step = batch_rows or LOADED_BATCH_ROWS
    n = len(events)
    for start in range(0, n, step):
        yield {c: v[start:start + step] for c, v in whole.items()}
    if not n:
        yield whole


# Rows per batch of a loaded trace (views: no reading, only the checks'
# temporaries, ~40 bytes per row, scale with it).
LOADED_BATCH_ROWS = 1 << 20


def fed_with_all(trace, reader):
    """A loaded trace's events, batch by batch, fed to a `Collected` and to
    `reader` (a Checks or Facts): (source, collected rows); `source(columns)`
    gives the batches again (for the checks' later passes)."""
    creates = int(np.count_nonzero(trace.events["event"].to_numpy() == S.TASK_CREATE))
    rows = Collected({"create": creates})
    for batch in loaded_batches(trace.events):
        rows.feed(batch)
        reader.feed(batch)

    def source(columns):
        return loaded_batches(trace.events, columns)
    return source, rows


def take(batch: dict, rows) -> dict:
    """The batch restricted to `rows` (a mask or positions)."""
    return {k: v[rows] for k, v in batch.items()}


class Collected:
    """Rows kept from every batch, in file order, as arrays:

    create    TASK_CREATE: task, other (the parent), tsc, rg, kind (flags),
              dependences (bool: `value` != 0)
    implicit  IMPLICIT_BEGIN: task, kind
    parallel  PARALLEL_BEGIN and PARALLEL_END: event, other (region id), tsc,
              task, count, codeptr, thread
    work      WORK_BEGIN: thread, kind, task, other
    """

    KEEP = {
        "create": ((S.TASK_CREATE,), ("task", "other", "tsc", "rg", "kind", "value")),
        "implicit": ((S.IMPLICIT_BEGIN,), ("task", "kind")),
        "parallel": ((S.PARALLEL_BEGIN, S.PARALLEL_END),
                     ("event", "other", "tsc", "task", "count", "codeptr", "thread")),
        "work": ((S.WORK_BEGIN,), ("thread", "kind", "task", "other")),
    }

    def __init__(self, expect: dict | None = None):
        """expect: {kind: at most how many rows} known beforehand (the
        footer's counts, or counted): those kinds' columns are made at that
        size once and filled in place, instead of kept in pieces and joined
        at the end. At 10^8 tasks the pieces and the joined columns were
        2 x 3.8 GB, each faulted in (~2 s/GiB here): `info` of fib 38 spent
        10 s joining. Unfilled space is never touched, so it costs no memory;
        more rows than expected (a footer that lies) go on in pieces."""
        self._parts = {name: [] for name in self.KEEP}
        self._done: dict = {}
        self._filling: dict = {}      # kind -> [columns made at the expected size, rows in them]
        for name, n in (expect or {}).items():
            if n > 0:
                self._filling[name] = [{c: np.empty(int(n), _DTYPES[c])
                                        for c in self._columns(name)}, 0]

    def _columns(self, name):
        return [c if c != "value" else "dependences" for c in self.KEEP[name][1]]

    def feed(self, batch: dict) -> None:
        code = batch["event"]
        for name, (events, columns) in self.KEEP.items():
            hit = code == events[0]
            for e in events[1:]:
                hit |= code == e
            rows = np.flatnonzero(hit)
            if not len(rows):
                continue
            filling = self._filling.get(name)
            if filling is not None:
                cols, at = filling
                k = len(rows)
                if at + k <= len(cols[self._columns(name)[0]]):
                    for c in columns:
                        if c == "value":
                            cols["dependences"][at:at + k] = batch[c][rows] != 0
                        else:
                            cols[c][at:at + k] = batch[c][rows]
                    filling[1] = at + k
                    continue
                # more than expected: what is filled becomes the first piece
                self._parts[name].append({c: v[:at] for c, v in cols.items()})
                del self._filling[name]
            part = {c: batch[c][rows] for c in columns}
            if "value" in part:
                part["dependences"] = part.pop("value") != 0
            self._parts[name].append(part)

    def __getattr__(self, name) -> dict:
        """collected.create etc.: that kind's columns, concatenated once (column
        by column, each column's pieces freed before the next is joined)."""
        if name.startswith("_") or name not in self.KEEP:
            raise AttributeError(name)
        if name not in self._done:
            parts = self._parts.pop(name)
            filling = self._filling.pop(name, None)
            done = {}
            for c in self._columns(name):
                if filling is not None:      # filled in place, never past the expected size
                    done[c] = filling[0][c][:filling[1]]
                    continue
                pieces = [p.pop(c) for p in parts]
                done[c] = np.concatenate(pieces) if pieces else np.zeros(0, _DTYPES[c])
                del pieces
            self._done[name] = done
        return self._done[name]

    def create_index(self) -> IdIndex:
        """IdIndex of the created tasks' ids (grainlab.idindex), made once."""
        if "create_index" not in self._done:
            self._done["create_index"] = IdIndex(self.create["task"])
        return self._done["create_index"]

    def creates_unique(self) -> bool:
        """No task id is created twice (the usual case)."""
        if "creates_unique" not in self._done:
            # the index says it without looking every id up again (at 10^8
            # tasks a look-up and an arange of 1 GB each)
            self._done["creates_unique"] = self.create_index().unique
        return self._done["creates_unique"]


_DTYPES = {**{c: np.dtype(t) for c, t in S.COLUMNS.items()}, "rg": np.dtype(np.int32),
           "dependences": np.dtype(bool)}
