/* clock.c — start the event clock (calibrated by the converter, see clock.h)
 * at the process's start, not at the collector's.
 *
 * libomp starts its tool at the program's first OpenMP call, not when it is
 * loaded: whatever the program did before (its serial set-up) would be
 * missing. So tick 0 is put where the process started: the collector learns
 * when that was, and the first image's initial thread and initial task begin
 * there (callbacks.c). What the kernel keeps of a process's start, and what
 * each bound is worth (the true start S lies between the lower and the least
 * upper bound; the trace starts at that least upper bound):
 *   - /proc/self/stat starttime: the clock tick (1/100 s) S fell in, on
 *     CLOCK_BOOTTIME: lower bound T, upper bound T + tick.
 *   - the main thread's run time: its CPU time (its thread CPU clock, exact)
 *     plus its time waiting on a run queue (/proc/self/schedstat, exact as
 *     of its last switch-in) is at most now - S, and equal to it when the
 *     thread never blocked or slept since the fork: upper bound now - both.
 *   - under `grainlab record`: libgrainexec.so's constructor, run when the
 *     dynamic linker has loaded the image (CLOCK_MONOTONIC, exec_hooks.h).
 *     The program's own start (after the exec, not at the fork, whose child
 *     may wait long before it execs), missing only the dynamic linker's
 *     work (~1 ms): used whenever present.
 * So without `record` the start is the fork's, exact to the microsecond for
 * a process that computes until its first OpenMP call, and within one tick
 * otherwise (it waited for a disk, a sleep, or its parent before exec);
 * grainlab.process_start says which bound it is. The
 * origin is moved back by that time in TSC ticks; the tick rate is
 * calibrated here, over min(1 ms, a hundredth of that time), so its error
 * costs at most ~0.05 ns per ns a second (the converter measures the rate
 * over the whole run for every other row). */
#include "clock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "exec_hooks.h"
#include "spool.h"

uint64_t gl_clock_origin;
static uint64_t start_mono_ns, start_real_ns;
static uint64_t pre_ns, uncertain_ns;
static const char *start_method = "collector";

static uint64_t read_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A (raw clock, CLOCK_MONOTONIC) pair read close together. */
static void clock_pair(uint64_t *raw, uint64_t *mono) {
  for (int i = 0;; i++) {
    uint64_t a = read_ns(CLOCK_MONOTONIC);
    uint64_t r = gl_clock_raw();
    uint64_t b = read_ns(CLOCK_MONOTONIC);
    if (b - a < 2000 || i == 7) {
      *raw = r;
      *mono = a + (b - a) / 2;
      return;
    }
  }
}

/* Run delay (ns waiting on a run queue) of the main thread, or -1. */
static int64_t main_run_delay(void) {
  char buf[128];
  int fd = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  unsigned long long run, wait;
  if (sscanf(buf, "%llu %llu", &run, &wait) != 2) return -1;
  return (int64_t)wait;
}

/* CPU time of the main thread (the thread group leader) since the fork, or -1:
 * its CPU clock id is the kernel's MAKE_THREAD_CPUCLOCK(pid, CPUCLOCK_SCHED). */
static int64_t main_cpu(void) {
  clockid_t id = (clockid_t)((~(unsigned)getpid()) << 3) | 6;
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The latest CLOCK_MONOTONIC time at which the process can have started
 * (see the top of this file); `now` if nothing is known. */
static uint64_t process_start_mono(uint64_t now) {
  uint64_t best = now, lo = 0;
  start_method = "collector";
  uint64_t ticks = gl_spool_process_start();
  long hz = sysconf(_SC_CLK_TCK);
  if (ticks && hz > 0) {
    uint64_t tick = 1000000000ull / (uint64_t)hz;
    /* CLOCK_BOOTTIME - CLOCK_MONOTONIC: the time suspended (~0) */
    uint64_t mono = read_ns(CLOCK_MONOTONIC), boot = read_ns(CLOCK_BOOTTIME);
    int64_t suspended = (int64_t)(boot - mono), t = (int64_t)(ticks * tick) - suspended;
    if (t > 0 && (uint64_t)t < now) {
      lo = (uint64_t)t;
      if (lo + tick < best) best = lo + tick, start_method = "tick";
    }
  }
  int64_t cpu = main_cpu(), delay = main_run_delay();
  uint64_t after = read_ns(CLOCK_MONOTONIC);
  if (cpu >= 0 && delay >= 0 && (uint64_t)(cpu + delay) < after) {
    uint64_t u = after - (uint64_t)(cpu + delay);
    if (u < best) best = u, start_method = "run time";
  }
  gl_exec_hooks *hooks = (gl_exec_hooks *)dlsym(RTLD_DEFAULT, GL_EXEC_HOOKS_SYMBOL);
  uint64_t loaded = hooks ? __atomic_load_n(&hooks->image_start_ns, __ATOMIC_ACQUIRE) : 0;
  /* the program's start is its exec, not the fork that made its process:
   * a launcher's child can wait long between the two on a busy machine
   * (16 ms seen under `record`), so the loaded image's time wins */
  if (loaded && loaded < now) best = loaded, start_method = "preload";
  if (best < lo) best = lo, start_method = "tick";
  uncertain_ns = lo && best >= lo ? best - lo : 0;
  return best;
}

void gl_clock_start(void) {
  uint64_t raw0, mono0;
  clock_pair(&raw0, &mono0);
  start_real_ns = read_ns(CLOCK_REALTIME);
  uint64_t real_at = read_ns(CLOCK_MONOTONIC);
  const char *off = getenv("GRAINLAB_PROCESS_START");
  uint64_t start = off && strcmp(off, "0") == 0 ? mono0 : process_start_mono(mono0);
  if (start == mono0) start_method = "collector", uncertain_ns = 0;
  pre_ns = mono0 > start ? mono0 - start : 0;
  uint64_t ticks = pre_ns;
#if defined(__x86_64__) || defined(__i386__)
  if (pre_ns) {
    uint64_t window = pre_ns / 100 < 1000000 ? pre_ns / 100 : 1000000, raw1, mono1;
    do clock_pair(&raw1, &mono1);
    while (mono1 - mono0 < window || mono1 == mono0);
    ticks = (uint64_t)((double)pre_ns * (double)(raw1 - raw0) / (double)(mono1 - mono0));
  }
#endif
  gl_clock_origin = raw0 - ticks;
  start_mono_ns = mono0 - pre_ns;
  start_real_ns = start_real_ns - (real_at - start_mono_ns);
}

void gl_clock_continue(uint64_t origin, uint64_t monotonic_ns, uint64_t realtime_ns) {
  gl_clock_origin = origin;
  start_mono_ns = monotonic_ns;
  start_real_ns = realtime_ns;
  pre_ns = 0;
}

void gl_clock_start_pair(uint64_t *monotonic_ns, uint64_t *realtime_ns) {
  *monotonic_ns = start_mono_ns;
  *realtime_ns = start_real_ns;
}

uint64_t gl_clock_before_collector(void) { return pre_ns; }

const char *gl_clock_process_start_json(char *buf, size_t len) {
  snprintf(buf, len, "{\"method\": \"%s\", \"collector_start_ns\": %llu, "
           "\"uncertainty_ns\": %llu}", start_method, (unsigned long long)pre_ns,
           (unsigned long long)uncertain_ns);
  return buf;
}
