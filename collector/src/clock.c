/* clock.c — start the event clock (calibrated by the converter, see clock.h). */
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

void gl_clock_continue(uint64_t origin, uint64_t monotonic_ns, uint64_t realtime_ns) {
  gl_clock_origin = origin;
  start_mono_ns = monotonic_ns;
  start_real_ns = realtime_ns;
}

void gl_clock_start_pair(uint64_t *monotonic_ns, uint64_t *realtime_ns) {
  *monotonic_ns = start_mono_ns;
  *realtime_ns = start_real_ns;
}
