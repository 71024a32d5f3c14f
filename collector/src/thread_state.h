/* thread_state.h — per-thread event buffers and the hot-path recording
 * primitive. Each OpenMP thread owns one gl_thread: a fixed array of events
 * (plus a parallel array of counter values), written without locks and
 * never encoded here: a full buffer is handed to the writer thread, which
 * encodes and appends it to the spool (flush.c, writer.c). All thread states
 * are kept in a registry so the end of the run (finalize, exit, signal)
 * reaches them. */
#ifndef GRAINLAB_THREAD_STATE_H
#define GRAINLAB_THREAD_STATE_H

#include <sched.h>
#include <stdint.h>
#include "clock.h"
#include "counters.h"
#include "grainlab_event.h"

#define GL_MAX_THREADS 4096 /* registry size; threads beyond it are not traced */
#define GL_NEST 16          /* nesting depth tracked for implicit tasks and loops */

/* The implicit task a thread is executing (libomp reports team size 0 at
 * implicit-task end, so begin's values are kept here). */
typedef struct gl_implicit {
  uint64_t id, region;
  uint32_t index, team;
} gl_implicit;

/* A worksharing loop in progress on this thread: enough to infer the
 * schedule(static,N) chunks libomp does not report (static_chunks.c). */
typedef struct gl_loop {
  uint64_t task, parallel; /* ids, for the inferred rows */
  uint64_t count;          /* iteration count reported at WORK_BEGIN */
  uint64_t begin_tsc;      /* WORK_BEGIN */
  uint64_t first_start, first_iters, first_tsc;
  uint32_t work_type, team, nchunks;
} gl_loop;

/* A sync region in progress on this thread (closed by the exec hook). */
typedef struct gl_sync {
  uint64_t task, region;
  const void *codeptr;
  uint32_t kind;
} gl_sync;

/* Buffers per thread: the one being filled and the ones handed to the writer
 * thread (writer.c). A thread waits only when all are still being written.
 * gl_pool_size of them: as many as fit in GL_POOL_BYTES, 2 to GL_POOL. */
#define GL_POOL 8
#define GL_POOL_BYTES (8u << 20)
enum { GL_BUF_OWNED = 0, GL_BUF_QUEUED = 1, GL_BUF_WRITING = 2 };

/* A thread's state is written by that thread on every event, and by the
 * writer thread (writer.c) once per block: the two kinds of fields sit on
 * different cache lines, and the whole state is aligned to a line
 * (gl_thread_create), so no event's store invalidates a line another thread
 * writes, and no other thread's state shares a line with this one. */
#define GL_LINE 64

typedef struct gl_thread {
  /* The owner's, read or written on every event. */
  gl_event_t *events;      /* cap + 1 slots: the last is reserved for FLUSH_BEGIN */
  int64_t *counters;       /* (cap + 1) * ncounters values, row-major */
  uint32_t pos;            /* events recorded in the current buffer */
  uint32_t limit;          /* pos at which gl_record_at leaves its fast path: cap, or the
                            * last row whose page is resident yet (gl_touch_ahead) */
  uint32_t cap;
  uint32_t index;          /* collector thread index (column `thread`) */
  uint64_t next_id;        /* per-thread object counter for ids */
  int nimplicit, nloops, nsync;
  int current;             /* the pool buffer being filled */
  uint64_t handed;         /* buffers handed off so far */
  uint32_t pool_touched[GL_POOL]; /* rows of each pool buffer made resident so far */
  int flushing;            /* inside gl_flush_full (flush.h) */
  gl_implicit implicit[GL_NEST];
  gl_loop loops[GL_NEST];
  gl_sync sync[GL_NEST];
  gl_counters_thread counter_state;
  uint64_t *page_cache;    /* GRAINLAB_PAGES: page -> NUMA node (pages.h), else NULL */

  /* The pool, as the writer thread sees it: the owner writes these once per
   * block (hand-over), the writer reads them and writes pool_state and wlock. */
  _Alignas(GL_LINE) gl_event_t *pool_events[GL_POOL];
  int64_t *pool_counters[GL_POOL];
  uint32_t pool_n[GL_POOL];   /* rows of a handed-off buffer */
  uint64_t pool_seq[GL_POOL]; /* hand-off order: the writer keeps it */
  _Alignas(GL_LINE) int pool_state[GL_POOL]; /* GL_BUF_* (atomic) */
  int wlock;                  /* held by whoever appends this thread's buffers (atomic):
                               * one writer per thread keeps its blocks in order */
} gl_thread;

/* Configuration and run state, set once in ompt_start_tool. */
extern int gl_ncounters;
extern uint32_t gl_buffer_events;
extern int gl_pool_size;
extern int gl_recording; /* 0 once the trace is being closed (atomic accesses) */

gl_thread *gl_thread_create(void); /* allocates; never on the per-event path */
gl_thread *gl_thread_get(uint32_t index);
uint32_t gl_thread_count(void);
/* exec'd image: its threads are numbered after its earlier images' (their
 * indices, and the task ids made from them, stay unique in the one trace). */
void gl_thread_set_base(uint32_t base);
/* How many buffers each thread gets (gl_pool_size), once the buffer size and
 * counters are known. */
void gl_pool_configure(void);
/* Where gl_cpu finds the CPU number (once, at start-up). */
void gl_cpu_configure(void);
void gl_flush_full(gl_thread *t);  /* flush.c: at pos == limit */
/* Make the current buffer's rows from pos on resident a step ahead (or the
 * whole buffer, once touched) and set `limit`. */
void gl_touch_ahead(gl_thread *t);

extern __thread gl_thread *gl_self_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's state, created on first use; NULL when not recording. */
static inline gl_thread *gl_self(void) {
  if (__builtin_expect(!__atomic_load_n(&gl_recording, __ATOMIC_RELAXED), 0)) return 0;
  gl_thread *t = gl_self_tls;
  if (__builtin_expect(t == 0, 0)) t = gl_thread_create();
  return t;
}

static inline uint64_t gl_new_id(gl_thread *t) {
  return ((uint64_t)(t->index + 1) << 40) | ++t->next_id;
}

/* The CPU the calling thread runs on: the cpu_id the kernel keeps current
 * in the thread's rseq area (glibc 2.35+ registers one per thread at
 * gl_rseq_cpu_offset from the thread pointer), one load instead of a call to
 * sched_getcpu, which reads the same field behind a PLT call (2.7 ns a call
 * in a loop here, 0.1 for the load; in the callbacks, where rdtsc dominates,
 * ~0.2 ns an event). Without rseq (older glibc, valgrind), or a thread
 * whose registration failed (cpu_id < 0), sched_getcpu. */
extern long gl_rseq_cpu_offset; /* 0: no rseq area */
static inline uint16_t gl_cpu(void) {
  long off = gl_rseq_cpu_offset;
  if (__builtin_expect(off != 0, 1)) {
    int cpu = __atomic_load_n((const int *)((const char *)__builtin_thread_pointer() + off),
                              __ATOMIC_RELAXED);
    if (__builtin_expect(cpu >= 0, 1)) return (uint16_t)cpu;
  }
  return (uint16_t)sched_getcpu();
}

/* One trace row's fields (docs/trace-format.md, "Columns"), named at the
 * call site — `(gl_row){.event = GL_EV_TASK_CREATE, .task = id, .other = parent}`
 * — so no field can be passed in another's place; fields not named are 0. */
typedef struct gl_row {
  uint8_t event;
  uint64_t task, other;
  const void *codeptr;
  uint64_t value, count;
  uint32_t kind;
  uint8_t flags;
} gl_row;

/* Whether a row samples the thread's counters: rows that bound a fragment
 * do; the others hold nulls. */
typedef enum gl_sample { GL_NO_COUNTERS = 0, GL_READ_COUNTERS = 1 } gl_sample;

/* Append one row with timestamp `tsc`. */
static inline void gl_record_at(gl_thread *t, uint64_t tsc, gl_row r, gl_sample sample) {
  if (__builtin_expect(t->pos >= t->limit, 0)) {
    gl_flush_full(t);
    /* The row lands after FLUSH_END: keep the thread's rows in time order. */
    uint64_t after = t->events[t->pos - 1].tsc;
    if (tsc < after) tsc = after;
  }
  uint32_t i = t->pos;
  gl_event_t *e = &t->events[i];
  e->tsc = tsc;
  e->task = r.task;
  e->other = r.other;
  e->codeptr = (uint64_t)(uintptr_t)r.codeptr;
  e->value = r.value;
  e->count = r.count;
  e->kind = r.kind;
  e->cpu = gl_cpu();
  e->event = r.event;
  e->flags = r.flags;
  if (gl_ncounters) {
    int64_t *c = &t->counters[(size_t)i * (size_t)gl_ncounters];
    if (sample == GL_READ_COUNTERS) {
      gl_counters_read(&t->counter_state, tsc, c);
    } else {
      for (int k = 0; k < gl_ncounters; k++) c[k] = INT64_MIN;
    }
  }
  /* Publish after the row is complete: a signal handler reading `pos` from
   * another thread then sees only whole rows (best effort, see shutdown.c). */
  __atomic_store_n(&t->pos, i + 1, __ATOMIC_RELEASE);
}

/* Append one row timestamped now. */
static inline void gl_record(gl_thread *t, gl_row r, gl_sample sample) {
  gl_record_at(t, gl_clock_now(), r, sample);
}

/* Timestamp of the thread's latest row (0 if none in the current buffer). */
static inline uint64_t gl_last_tsc(const gl_thread *t) {
  return t->pos ? t->events[t->pos - 1].tsc : 0;
}
#endif
