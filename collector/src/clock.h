/* clock.h — the event timestamp: TSC ticks since the collector started (x86),
 * or CLOCK_MONOTONIC ns on other machines. The tick rate is measured once, at
 * close, against CLOCK_MONOTONIC over the whole run (metadata grainlab.clock). */
#ifndef GRAINLAB_CLOCK_H
#define GRAINLAB_CLOCK_H
#include <stdint.h>
#include <time.h>

extern uint64_t gl_clock_origin; /* raw reading at gl_clock_start() */

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
/* JSON object for grainlab.clock, measured from start to now. Writes into buf. */
void gl_clock_metadata_json(char *buf, size_t len);
#endif
