"""Trace schema constants, mirroring collector/include/grainlab_event.h and
docs/trace-format.md (schema version 1). The one place Python names the
numbers the collector writes.

The columns themselves are not listed here: COLUMNS is read at import from
trace_columns.def, the file the converter's writer (gl_writer.cpp) compiles
its Parquet schema from, so the two cannot disagree. `arrow_schema()` is the
trace's Arrow schema for whoever writes one in Python (`grainlab synth`,
the tests' trace generator)."""
import re
from pathlib import Path

SCHEMA_VERSION = 1  # newest schema this reader understands

# Event kinds (column `event`).
THREAD_BEGIN = 1
THREAD_END = 2
PARALLEL_BEGIN = 3
PARALLEL_END = 4
IMPLICIT_BEGIN = 5
IMPLICIT_END = 6
TASK_CREATE = 7
TASK_SCHEDULE = 8
SYNC_BEGIN = 9
SYNC_END = 10
WORK_BEGIN = 11
WORK_END = 12
CHUNK = 13
DEPENDENCE = 14
TASK_DEPENDENCE = 15
FLUSH_BEGIN = 16
FLUSH_END = 17
DATA_ACCESS = 18  # grain_data() annotation (collector/include/graincollect.h)
LAST_EVENT = DATA_ACCESS
# `kind` of DATA_ACCESS rows: the annotation's mode
GRAIN_IN, GRAIN_OUT, GRAIN_INOUT = 1, 2, 3
# `kind` of FLUSH_BEGIN / FLUSH_END rows: what stalled the thread
FLUSH_BLOCK = 0   # its buffer was full: written, or handed to the writer thread
FLUSH_PAGES = 1   # its buffer's next pages were made resident

EVENT_NAMES = {globals()[name]: name for name in (
    "THREAD_BEGIN", "THREAD_END", "PARALLEL_BEGIN", "PARALLEL_END", "IMPLICIT_BEGIN",
    "IMPLICIT_END", "TASK_CREATE", "TASK_SCHEDULE", "SYNC_BEGIN", "SYNC_END", "WORK_BEGIN",
    "WORK_END", "CHUNK", "DEPENDENCE", "TASK_DEPENDENCE", "FLUSH_BEGIN", "FLUSH_END", "DATA_ACCESS")}

COLUMNS_FILE = Path(__file__).with_name("trace_columns.def")
_COLUMN_LINE = re.compile(r"^GL_COLUMN\(\s*(\w+)\s*,\s*(uint8|uint16|uint32|uint64)\s*,"
                          r"\s*(EVENT|BUFFER)\s*\)\s*$")


def _read_columns(text: str) -> dict:
    """{name: type} of the GL_COLUMN lines, in order (the comment aside)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    columns = {}
    for line in filter(None, (x.strip() for x in text.splitlines())):
        m = _COLUMN_LINE.match(line)
        if not m or m.group(1) in columns:
            raise ValueError(f"{COLUMNS_FILE}: not a new GL_COLUMN(name, type, source) line: {line!r}")
        columns[m.group(1)] = m.group(2)
    return columns


# Fixed columns, in file order, and the Arrow type each must have (counter
# columns come on top): {"event": "uint8", "thread": "uint16", ...}.
COLUMNS = _read_columns(COLUMNS_FILE.read_text())
COUNTER_PREFIX = "counter:"


def arrow_schema(counters=(), metadata=None):
    """The Arrow schema of a trace, as the converter writes it: COLUMNS (never
    null), then one `counter:<name>` column (int64, null where not read) per
    name in `counters`; `metadata`: the file's key/value metadata."""
    import pyarrow as pa
    fields = [pa.field(name, getattr(pa, type_name)(), nullable=False)
              for name, type_name in COLUMNS.items()]
    fields += [pa.field(COUNTER_PREFIX + name, pa.int64(), nullable=True) for name in counters]
    return pa.schema(fields, metadata=metadata)


# ompt thread type (THREAD_BEGIN `kind`).
THREAD_INITIAL = 1
THREAD_WORKER = 2

# ompt parallel flags (PARALLEL_* `kind`).
PARALLEL_INVOKER_PROGRAM = 0x1
PARALLEL_INVOKER_RUNTIME = 0x2
PARALLEL_LEAGUE = 0x40000000
PARALLEL_TEAM = 0x80000000

# ompt task flags (TASK_CREATE / IMPLICIT_* `kind`).
TASK_INITIAL = 0x1
TASK_IMPLICIT = 0x2
TASK_EXPLICIT = 0x4
TASK_TASKWAIT = 0x10
TASK_UNDEFERRED = 0x08000000
TASK_UNTIED = 0x10000000
TASK_FINAL = 0x20000000
TASK_MERGEABLE = 0x40000000
TASK_MERGED = 0x80000000

# TASK_SCHEDULE prior-task status (`kind`).
STATUS_COMPLETE = 1
STATUS_YIELD = 2
STATUS_CANCEL = 3
STATUS_DETACH = 4
STATUS_EARLY_FULFILL = 5
STATUS_LATE_FULFILL = 6
STATUS_SWITCH = 7
STATUS_TASKWAIT_COMPLETE = 8
# Statuses after which the prior task's body has finished.
STATUS_FINISHED = (STATUS_COMPLETE, STATUS_CANCEL, STATUS_DETACH)

# Sync kinds (SYNC_* `kind`).
SYNC_BARRIER = 1                      # deprecated in OpenMP 5.1
SYNC_BARRIER_IMPLICIT = 2             # deprecated in OpenMP 5.1
SYNC_BARRIER_EXPLICIT = 3
SYNC_BARRIER_IMPLEMENTATION = 4
SYNC_TASKWAIT = 5
SYNC_TASKGROUP = 6
SYNC_REDUCTION = 7
SYNC_BARRIER_IMPLICIT_WORKSHARE = 8   # a worksharing construct's end
SYNC_BARRIER_IMPLICIT_PARALLEL = 9    # a parallel region's end
SYNC_BARRIER_TEAMS = 10
SYNC_BARRIERS = (SYNC_BARRIER, SYNC_BARRIER_IMPLICIT, SYNC_BARRIER_EXPLICIT,
                 SYNC_BARRIER_IMPLEMENTATION, SYNC_BARRIER_IMPLICIT_WORKSHARE,
                 SYNC_BARRIER_IMPLICIT_PARALLEL, SYNC_BARRIER_TEAMS)

# Work types (WORK_* `kind`).
WORK_LOOP = 1
WORK_SECTIONS = 2
WORK_SINGLE_EXECUTOR = 3
WORK_SINGLE_OTHER = 4
WORK_WORKSHARE = 5
WORK_DISTRIBUTE = 6
WORK_TASKLOOP = 7
WORK_SCOPE = 8
WORK_LOOP_STATIC = 10
WORK_LOOP_DYNAMIC = 11
WORK_LOOP_GUIDED = 12
WORK_LOOP_OTHER = 13
WORK_NAMES = {
    WORK_LOOP: "loop", WORK_SECTIONS: "sections", WORK_SINGLE_EXECUTOR: "single",
    WORK_SINGLE_OTHER: "single", WORK_WORKSHARE: "workshare", WORK_DISTRIBUTE: "distribute",
    WORK_TASKLOOP: "taskloop", WORK_SCOPE: "scope", WORK_LOOP_STATIC: "static",
    WORK_LOOP_DYNAMIC: "dynamic", WORK_LOOP_GUIDED: "guided", WORK_LOOP_OTHER: "loop",
}
# Constructs whose instances carry iteration chunks (loops() rows).
WORK_WITH_CHUNKS = (WORK_LOOP, WORK_DISTRIBUTE, WORK_TASKLOOP, WORK_LOOP_STATIC,
                    WORK_LOOP_DYNAMIC, WORK_LOOP_GUIDED, WORK_LOOP_OTHER)

# Dispatch kinds (CHUNK `kind`).
DISPATCH_ITERATION = 1
DISPATCH_SECTION = 2
DISPATCH_LOOP_CHUNK = 3
DISPATCH_TASKLOOP_CHUNK = 4
DISPATCH_DISTRIBUTE_CHUNK = 5
# dispatch kinds that cover loop iterations
DISPATCH_LOOPS = (DISPATCH_ITERATION, DISPATCH_LOOP_CHUNK, DISPATCH_TASKLOOP_CHUNK,
                  DISPATCH_DISTRIBUTE_CHUNK)

CHUNK_INFERRED = 0x1

# ompt dependence type (DEPENDENCE `kind`).
DEPEND_IN = 1
DEPEND_OUT = 2
DEPEND_INOUT = 3
DEPEND_MUTEXINOUTSET = 4
DEPEND_SOURCE = 5
DEPEND_SINK = 6
DEPEND_INOUTSET = 7
DEPEND_OUT_ALL_MEMORY = 34
DEPEND_INOUT_ALL_MEMORY = 35


# Events a thread buffers before a flush (`record --buffer-events`,
# GRAINLAB_BUFFER_EVENTS): the collector's rule, GL_BUFFER_EVENTS_* in
# collector/include/grainlab_spool.h (a test checks they agree).
BUFFER_EVENTS_MIN = 64
BUFFER_EVENTS_MAX = 1 << 26
BUFFER_EVENTS_DEFAULT = 65536
