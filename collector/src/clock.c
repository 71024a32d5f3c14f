/* clock.c — start the event clock and calibrate it at the end of the run. */
#include <stdio.h>
#include "clock.h"

uint64_t gl_clock_origin;
static uint64_t start_mono_ns, start_real_ns;

static uint64_t read_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gl_clock_start(void) {
  start_real_ns = read_ns(CLOCK_REALTIME);
  start_mono_ns = read_ns(CLOCK_MONOTONIC);
  gl_clock_origin = gl_clock_raw();
}

void gl_clock_metadata_json(char *buf, size_t len) {
#if defined(__x86_64__) || defined(__i386__)
  /* Whole-run calibration: ticks elapsed / ns elapsed. Reading the TSC right
   * after CLOCK_MONOTONIC keeps the pairing error to tens of ns, negligible
   * against a run of milliseconds or more. */
  uint64_t mono = read_ns(CLOCK_MONOTONIC);
  uint64_t ticks = gl_clock_raw() - gl_clock_origin;
  double elapsed_ns = (double)(mono - start_mono_ns);
  double hz = elapsed_ns > 0 ? (double)ticks * 1e9 / elapsed_ns : 0.0;
  const char *source = "tsc";
#else
  double hz = 1e9;
  const char *source = "monotonic";
#endif
  snprintf(buf, len,
           "{\"source\": \"%s\", \"hz\": %.1f, \"start_monotonic_ns\": %llu, "
           "\"start_realtime_ns\": %llu}",
           source, hz, (unsigned long long)start_mono_ns,
           (unsigned long long)start_real_ns);
}
