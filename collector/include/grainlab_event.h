/* grainlab_event.h — the one contract between the collector's hot path, the
 * spool (grainlab_spool.h) and the Parquet writer. One gl_event_t per trace
 * row; docs/trace-format.md documents every field per event kind. Keep this file, the writer shim and the doc in step:
 * bump GL_SCHEMA_VERSION when a column's meaning changes. */
#ifndef GRAINLAB_EVENT_H
#define GRAINLAB_EVENT_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GL_SCHEMA_VERSION 1
#define GL_MAX_COUNTERS 8

/* Event kinds (column `event`). Values are grainlab's own and stable across
 * libomp versions; OMPT enum values (sync kinds, work types, task flags,
 * dependence types) are stored as the OpenMP 5.2 spec numbers them. */
enum gl_event_kind {
  GL_EV_THREAD_BEGIN = 1,
  GL_EV_THREAD_END = 2,
  GL_EV_PARALLEL_BEGIN = 3,
  GL_EV_PARALLEL_END = 4,
  GL_EV_IMPLICIT_BEGIN = 5,   /* implicit or initial task begins on this thread */
  GL_EV_IMPLICIT_END = 6,
  GL_EV_TASK_CREATE = 7,
  GL_EV_TASK_SCHEDULE = 8,    /* one row per ompt task_schedule callback */
  GL_EV_SYNC_BEGIN = 9,       /* taskwait, taskgroup, barriers, reduction */
  GL_EV_SYNC_END = 10,
  GL_EV_WORK_BEGIN = 11,      /* worksharing construct (loop, sections, single, taskloop...) */
  GL_EV_WORK_END = 12,
  GL_EV_CHUNK = 13,           /* dispatch: a thread starts a loop chunk / section / taskloop chunk */
  GL_EV_DEPENDENCE = 14,      /* one row per `depend` item of a task */
  GL_EV_TASK_DEPENDENCE = 15, /* runtime-resolved edge: `other` must finish before `task` */
  GL_EV_FLUSH_BEGIN = 16,     /* the collector stalls the thread: discount this time */
  GL_EV_FLUSH_END = 17,
  GL_EV_DATA_ACCESS = 18,     /* grain_data() annotation (graincollect.h): a block the task touches */
};

/* `kind` of GL_EV_FLUSH_BEGIN / GL_EV_FLUSH_END rows: what the stall was. */
#define GL_FLUSH_BLOCK 0u /* the buffer is full: written, or handed to the writer thread */
#define GL_FLUSH_PAGES 1u /* the buffer's next pages made resident (thread_state.c) */

/* Bits of `flags` on GL_EV_CHUNK rows (the OMPT dispatch kind is in `kind`). */
#define GL_CHUNK_INFERRED 0x1u /* not reported by libomp, inferred from schedule(static,N) stride */

/* One event as held in a per-thread buffer. 56 bytes; the thread index is
 * per buffer (every row of one flush belongs to one thread). */
typedef struct gl_event {
  uint64_t tsc;     /* clock ticks since the collector started (see metadata grainlab.clock) */
  uint64_t task;    /* id of the task the event is about (0 = none) */
  uint64_t other;   /* second id: parent, prior task, dependence source, parallel region */
  uint64_t codeptr; /* return address into the application (0 = unknown) */
  uint64_t value;   /* kind-specific: first iteration, dependence address, team index */
  uint64_t count;   /* kind-specific: iterations, team size */
  uint32_t kind;    /* kind-specific OMPT enum: task flags, schedule status, sync kind, work type */
  uint16_t cpu;     /* sched_getcpu() at the event */
  uint8_t event;    /* enum gl_event_kind */
  uint8_t flags;    /* GL_CHUNK_* bits, endpoint-independent extras */
} gl_event_t;

/* ---- Writer shim ABI (collector/writer, C++ on libarrow/libparquet). ----
 * Used by grainlab-convert (collector/convert), after the run, in its own
 * process: the application never loads C++ or Arrow. One thread at a time:
 * the shim need not be thread-safe. */
typedef struct gl_writer gl_writer;

/* Open `path` for writing. `counter_names` become int64 columns named
 * "counter:<name>". Returns NULL and fills `err` on failure. */
typedef gl_writer *(*gl_writer_open_fn)(const char *path, int ncounters,
                                        const char *const *counter_names,
                                        char *err, size_t errlen);
/* Append one row group: `n` events of thread `thread`; `counters` holds
 * n*ncounters values (row-major), INT64_MIN meaning null; may be NULL when
 * ncounters == 0. Returns 0 on success. */
typedef int (*gl_writer_write_fn)(gl_writer *w, uint32_t thread,
                                  const gl_event_t *events,
                                  const int64_t *counters, size_t n,
                                  char *err, size_t errlen);
/* One block's events as columns: one array of n values per gl_event_t
 * field, and the counters column by column (counter k's n values at
 * counters + k*n, INT64_MIN meaning null; NULL when ncounters == 0). */
typedef struct gl_event_columns {
  uint64_t *tsc, *task, *other, *codeptr, *value, *count;
  uint32_t *kind;
  uint16_t *cpu;
  uint8_t *event, *flags;
  int64_t *counters;
} gl_event_columns;
/* gl_writer_write for events already in columns (what the converter decodes
 * compact blocks into): the same row group, without the transposition. */
typedef int (*gl_writer_write_columns_fn)(gl_writer *w, uint32_t thread,
                                          const gl_event_columns *columns, size_t n,
                                          char *err, size_t errlen);
/* Write the footer with key/value file metadata and close. Returns 0 on success. */
typedef int (*gl_writer_close_fn)(gl_writer *w, size_t nkv,
                                  const char *const *keys,
                                  const char *const *values, char *err,
                                  size_t errlen);

#define GL_WRITER_OPEN_SYM "gl_writer_open"
#define GL_WRITER_WRITE_SYM "gl_writer_write"
#define GL_WRITER_WRITE_COLUMNS_SYM "gl_writer_write_columns"
#define GL_WRITER_CLOSE_SYM "gl_writer_close"

#ifdef __cplusplus
}
#endif
#endif
