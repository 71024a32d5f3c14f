"""Trace schema constants, mirroring collector/include/grainlab_event.h and
docs/trace-format.md (schema version 1). The one place Python names the
numbers the collector writes."""

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

EVENT_NAMES = {
    1: "THREAD_BEGIN", 2: "THREAD_END", 3: "PARALLEL_BEGIN", 4: "PARALLEL_END",
    5: "IMPLICIT_BEGIN", 6: "IMPLICIT_END", 7: "TASK_CREATE", 8: "TASK_SCHEDULE",
    9: "SYNC_BEGIN", 10: "SYNC_END", 11: "WORK_BEGIN", 12: "WORK_END",
    13: "CHUNK", 14: "DEPENDENCE", 15: "TASK_DEPENDENCE", 16: "FLUSH_BEGIN",
    17: "FLUSH_END",
}

# Fixed columns and the Arrow type each must have (counter columns come on top).
COLUMNS = {
    "event": "uint8", "thread": "uint16", "cpu": "uint16", "tsc": "uint64",
    "task": "uint64", "other": "uint64", "codeptr": "uint64", "value": "uint64",
    "count": "uint64", "kind": "uint32", "flags": "uint8",
}
COUNTER_PREFIX = "counter:"

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
SYNC_TASKWAIT = 5
SYNC_TASKGROUP = 6
SYNC_BARRIERS = (1, 2, 3, 4, 8, 9, 10)

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
    1: "loop", 2: "sections", 3: "single", 4: "single", 5: "workshare",
    6: "distribute", 7: "taskloop", 8: "scope", 10: "static", 11: "dynamic",
    12: "guided", 13: "loop",
}
# Constructs whose instances carry iteration chunks (loops() rows).
WORK_WITH_CHUNKS = (1, 6, 7, 10, 11, 12, 13)

# Dispatch kinds (CHUNK `kind`).
DISPATCH_ITERATION = 1
DISPATCH_SECTION = 2
DISPATCH_LOOP_CHUNK = 3
DISPATCH_TASKLOOP_CHUNK = 4
DISPATCH_DISTRIBUTE_CHUNK = 5
DISPATCH_LOOPS = (1, 3, 4, 5)  # dispatch kinds that cover loop iterations

CHUNK_INFERRED = 0x1

# Dependence types (DEPENDENCE `kind`).
DEP_IN = 1
DEP_OUT = 2
DEP_INOUT = 3
DEP_MUTEXINOUTSET = 4
DEP_SOURCE = 5
DEP_SINK = 6
DEP_INOUTSET = 7
DEP_OUT_ALL_MEMORY = 34
DEP_INOUT_ALL_MEMORY = 35


# Events a thread buffers before a flush (`record --buffer-events`,
# GRAINLAB_BUFFER_EVENTS): the collector's rule, GL_BUFFER_EVENTS_* in
# collector/include/grainlab_spool.h (a test checks they agree).
BUFFER_EVENTS_MIN = 64
BUFFER_EVENTS_MAX = 1 << 26
BUFFER_EVENTS_DEFAULT = 65536
