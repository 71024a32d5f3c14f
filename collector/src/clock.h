/* clock.h — the event timestamp: TSC ticks since the collector started (x86),
 * or CLOCK_MONOTONIC ns on other machines. The tick rate is measured by the
 * converter against CLOCK_MONOTONIC over the whole run, from the start pair
 * in the spool header and the (tsc, monotonic) pair of the last block or the
 * trailer (metadata grainlab.clock). */
#ifndef GRAINLAB_CLOCK_H
#define GRAINLAB_CLOCK_H
#include <stdint.h>
#include <time.h>

extern uint64_t gl_clock_origin; /* raw reading at the process's start (clock.c) */

static inline uint64_t gl_clock_raw(void) {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Ticks since start. Clamped at 0: a core whose TSC lags the starting core by a
 * few ticks must not produce a wrapped-around, huge timestamp. */
static inline uint64_t gl_clock_now(void) {
  int64_t d = (int64_t)(gl_clock_raw() - gl_clock_origin);
  return d < 0 ? 0 : (uint64_t)d;
}

void gl_clock_start(void);
/* An exec'd image continues its earlier image's clock (spool.c, "exec"):
 * the same origin (TSC and CLOCK_MONOTONIC are machine-wide) and start pair. */
void gl_clock_continue(uint64_t origin, uint64_t monotonic_ns, uint64_t realtime_ns);
/* CLOCK_MONOTONIC and CLOCK_REALTIME ns at tsc 0: the process's start. */
void gl_clock_start_pair(uint64_t *monotonic_ns, uint64_t *realtime_ns);
/* ns from the process's start (tsc 0) to the collector's (0 in an exec'd
 * image, which continues its first image's clock). */
uint64_t gl_clock_before_collector(void);
/* JSON for grainlab.process_start: how the start was found (clock.c). */
#include <stddef.h>
const char *gl_clock_process_start_json(char *buf, size_t len);
#endif
