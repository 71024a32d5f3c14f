/* counters.h — per-thread counters read at fragment boundaries.
 * Sources: PAPI (when built with it and the machine can count) and Linux
 * software events via perf_event_open (task-clock, page-faults,
 * context-switches, cpu-migrations, ...), and off-cpu (ns the thread was not
 * running: wall minus CPU time, cumulative). Requested with
 * GRAINLAB_COUNTERS=name,name,... ; a counter that cannot be counted is
 * reported once on stderr and in the metadata, and dropped: never fatal. */
#ifndef GRAINLAB_COUNTERS_H
#define GRAINLAB_COUNTERS_H
#include <stdint.h>
#include "grainlab_event.h"

/* Process-wide set-up from the GRAINLAB_COUNTERS value (NULL or "" = none).
 * Returns the number of available counters (0..GL_MAX_COUNTERS). Never fails.
 * Returns -1 only for a malformed/unknown counter name, after printing a
 * one-line error: the collector then disables itself (the app still runs). */
int gl_counters_init(const char *spec);

/* Names of the available counters, in column order (valid after init). */
const char *const *gl_counters_names(void);

/* JSON array for metadata key grainlab.counters (every requested counter,
 * available or not, with the reason). Static storage, valid after init. */
const char *gl_counters_metadata_json(void);

/* off-cpu (counters.c): a task-clock event's mmap'd user page, whose `lock`
 * the kernel bumps each time the thread is switched back in. */
struct perf_event_mmap_page;
typedef struct gl_offcpu {
  const volatile struct perf_event_mmap_page *page; /* NULL: read the clocks every time */
  int fd;
  uint32_t seen; /* page->lock at the last read of the clocks */
  int64_t base;  /* wall minus CPU time at thread start (ns) */
  int64_t off;   /* off-CPU ns at the last read of the clocks */
  uint64_t at;   /* event clock (clock.h) at the last read of the clocks */
} gl_offcpu;

/* Per-thread state; lives inside the thread's collector state, no allocation
 * on the hot path. */
typedef struct gl_counters_thread {
  int fds[GL_MAX_COUNTERS]; /* perf: group leader is fds[first perf counter] */
  int papi_eventset;
  int started;
  gl_offcpu offcpu;
} gl_counters_thread;

/* Called on the thread itself at thread begin / end. */
void gl_counters_thread_start(gl_counters_thread *t);
void gl_counters_thread_stop(gl_counters_thread *t);

/* Read all available counters of the calling thread into out[0..n-1]
 * (cumulative values; INT64_MIN for a counter that failed to read). Hot path:
 * one group read() for perf events, one PAPI_read for PAPI, usually one load
 * for off-cpu. `tsc`: the event clock now (gl_clock_now(), the row's time). */
void gl_counters_read(gl_counters_thread *t, uint64_t tsc, int64_t *out);

/* The row read by gl_counters_read on the main thread that stands for the
 * process's start (CLOCK_MONOTONIC `start_mono`, clock.c): off-cpu is
 * counted from there on (0 in the row); the other counters were not counting
 * then: unknown in that row (INT64_MIN). On another thread all are unknown. */
void gl_counters_at_process_start(gl_counters_thread *t, uint64_t start_mono, uint64_t tsc,
                                  int64_t *out);

void gl_counters_shutdown(void);
#endif
