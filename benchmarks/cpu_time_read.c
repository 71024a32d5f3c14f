/* cpu_time_read.c — what one read of the calling thread's CPU time costs, per
 * source a collector could read at every fragment boundary. Built and run by
 * benchmarks/cpu_time_read.py (see there); also on its own:
 *
 *   cc -O2 -Icollector/src -Icollector/include -o cpu_time_read \
 *      benchmarks/cpu_time_read.c collector/src/counters.c -lpthread
 *   ./cpu_time_read [READS [REPS]]   # ns per read: one JSON line per source
 *   ./cpu_time_read --check MS       # two threads spinning MS ms of wall each
 *                                    # (pin them to one CPU with taskset -c 0):
 *                                    # each source's CPU time, and off-cpu
 *
 * Sources:
 *   perf-read            read() of a perf task-clock event (PERF_FORMAT_GROUP)
 *   thread-cputime       clock_gettime(CLOCK_THREAD_CPUTIME_ID): no vDSO path, a syscall
 *   rusage-thread        getrusage(RUSAGE_THREAD), user + system (a syscall, µs resolution)
 *   perf-mmap            the task-clock event's mmap'd user page read without a syscall
 *                        (time_enabled + TSC time since the last update): only where the
 *                        kernel sets cap_user_time, which it does not on these VMs
 *   collector:task-clock the collector's own read (collector/src/counters.c, linked in)
 *                        of GRAINLAB_COUNTERS=task-clock
 *   collector:off-cpu    the collector's read of GRAINLAB_COUNTERS=off-cpu (`grainlab
 *                        record --cpu-time`): one load while the thread has not been
 *                        switched out since the last read, both clocks after a switch
 * and, for scale, the event clock the collector reads anyway:
 *   rdtsc, monotonic (clock_gettime(CLOCK_MONOTONIC), vDSO)
 *
 * Each source is timed over READS back-to-back reads, REPS times; the median
 * repetition is printed, with the thread's context switches during the
 * timed reads (each costs off-cpu one read of the clocks). */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include "clock.h"
#include "counters.h"

/* per thread: each thread counts its own task-clock */
static __thread int perf_fd = -1;
static __thread struct perf_event_mmap_page *page;
static __thread gl_counters_thread collector_thread;

static uint64_t ns_of(struct timespec ts) {
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t src_perf_read(void) {
  uint64_t buf[2];
  if (read(perf_fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 0;
  return buf[1];
}

static uint64_t src_thread_cputime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ns_of(ts);
}

static uint64_t src_rusage(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ((uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ull +
          (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)) * 1000ull;
}

/* The kernel's documented user-space read (include/uapi/linux/perf_event.h):
 * enabled time plus the TSC-converted time since the page was last updated. */
static uint64_t src_perf_mmap(void) {
  uint32_t seq;
  uint64_t enabled, delta = 0;
  do {
    seq = page->lock;
    __asm__ __volatile__("" ::: "memory");
    enabled = page->time_enabled;
    uint64_t cyc = __rdtsc();
    uint64_t quot = cyc >> page->time_shift;
    uint64_t rem = cyc & (((uint64_t)1 << page->time_shift) - 1);
    delta = page->time_offset + quot * page->time_mult +
            ((rem * page->time_mult) >> page->time_shift);
    __asm__ __volatile__("" ::: "memory");
  } while (page->lock != seq);
  return enabled + delta;
}

static uint64_t src_collector(void) {
  int64_t out[GL_MAX_COUNTERS];
  gl_counters_read(&collector_thread, gl_clock_raw(), out);
  return (uint64_t)out[0];
}

static uint64_t src_rdtsc(void) { return __rdtsc(); }

static uint64_t src_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ns_of(ts);
}

typedef struct {
  const char *name;
  uint64_t (*read)(void);
  const char *collector_spec; /* collector sources: GRAINLAB_COUNTERS */
} source;

static const source sources[] = {
    {"perf-read", src_perf_read, NULL},
    {"thread-cputime", src_thread_cputime, NULL},
    {"rusage-thread", src_rusage, NULL},
    {"perf-mmap", src_perf_mmap, NULL},
    {"collector:task-clock", src_collector, "task-clock"},
    {"collector:off-cpu", src_collector, "off-cpu"},
    {"rdtsc", src_rdtsc, NULL},
    {"monotonic", src_monotonic, NULL},
};
#define NSOURCES (int)(sizeof sources / sizeof sources[0])

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int open_task_clock(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.read_format = PERF_FORMAT_GROUP;
  int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) { /* kernel.perf_event_paranoid >= 2, unprivileged */
    attr.exclude_kernel = attr.exclude_hv = 1;
    fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  }
  return fd;
}

/* Why a source cannot be read on this thread, or NULL; opens what it needs. */
static const char *prepare(const source *s) {
  if (s->collector_spec) {
    if (gl_counters_init(s->collector_spec) != 1) return "the collector cannot count it here";
    gl_counters_thread_start(&collector_thread);
    return NULL;
  }
  if (s->read == src_perf_read || s->read == src_perf_mmap) {
    if (perf_fd < 0) perf_fd = open_task_clock();
    if (perf_fd < 0) return "perf_event_open refused";
  }
  if (s->read == src_perf_mmap) {
    if (!page) {
      void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, perf_fd, 0);
      if (p == MAP_FAILED) return "mmap of the event refused";
      page = p;
    }
    if (!page->cap_user_time) return "no cap_user_time (the kernel cannot convert the TSC here)";
  }
  return NULL;
}

static void finish(const source *s) {
  if (s->collector_spec) {
    gl_counters_thread_stop(&collector_thread);
    gl_counters_shutdown();
  }
}

static long switches(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int bench(long reads, int reps) {
  volatile uint64_t sink = 0;
  for (int s = 0; s < NSOURCES; s++) {
    const char *why = prepare(&sources[s]);
    if (why) {
      printf("{\"source\": \"%s\", \"ns_per_read\": null, \"why\": \"%s\"}\n", sources[s].name,
             why);
      continue;
    }
    double *per = calloc((size_t)reps, sizeof *per);
    long sw = 0;
    for (int r = 0; r < reps; r++) {
      long sw0 = switches();
      uint64_t a = src_monotonic();
      for (long i = 0; i < reads; i++) sink += sources[s].read();
      uint64_t b = src_monotonic();
      sw += switches() - sw0;
      per[r] = (double)(b - a) / (double)reads;
    }
    finish(&sources[s]);
    qsort(per, (size_t)reps, sizeof *per, cmp_double);
    printf("{\"source\": \"%s\", \"ns_per_read\": %.1f, \"min\": %.1f, \"max\": %.1f, "
           "\"reads\": %ld, \"context_switches\": %ld}\n",
           sources[s].name, per[reps / 2], per[0], per[reps - 1], reads * reps, sw);
    free(per);
  }
  (void)sink;
  return 0;
}

/* --check: each thread spins for `ms` of wall time, reading the CPU-time
 * sources and the collector's counters at the start and at the end. */
#define NCHECK 3 /* perf-read, thread-cputime, rusage-thread */
typedef struct {
  long ms;
  uint64_t wall, cpu[NCHECK];
  int64_t collector[2]; /* off-cpu, task-clock */
} check_arg;

static void *check_thread(void *p) {
  check_arg *a = p;
  perf_fd = open_task_clock();
  gl_counters_thread_start(&collector_thread);
  uint64_t t0[NCHECK], t1[NCHECK];
  int64_t c0[2], c1[2];
  uint64_t w0 = src_monotonic();
  gl_counters_read(&collector_thread, gl_clock_raw(), c0);
  for (int s = 0; s < NCHECK; s++) t0[s] = sources[s].read();
  volatile double x = 0;
  while (src_monotonic() - w0 < (uint64_t)a->ms * 1000000ull)
    for (int i = 0; i < 10000; i++) x += i * 0.5;
  for (int s = 0; s < NCHECK; s++) t1[s] = sources[s].read();
  gl_counters_read(&collector_thread, gl_clock_raw(), c1);
  a->wall = src_monotonic() - w0;
  for (int s = 0; s < NCHECK; s++) a->cpu[s] = t1[s] - t0[s];
  for (int k = 0; k < 2; k++) a->collector[k] = c1[k] - c0[k];
  gl_counters_thread_stop(&collector_thread);
  return NULL;
}

static int check(long ms) {
  if (gl_counters_init("off-cpu,task-clock") != 2) {
    fprintf(stderr, "cpu_time_read: the collector cannot count off-cpu,task-clock here\n");
    return 1;
  }
  pthread_t th[2];
  check_arg args[2] = {{.ms = ms}, {.ms = ms}};
  for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, check_thread, &args[k]);
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < 2; k++) {
    printf("{\"thread\": %d, \"wall_ns\": %llu", k, (unsigned long long)args[k].wall);
    for (int s = 0; s < NCHECK; s++)
      printf(", \"%s\": %llu", sources[s].name, (unsigned long long)args[k].cpu[s]);
    printf(", \"collector:off-cpu\": %lld, \"collector:task-clock\": %lld}\n",
           (long long)args[k].collector[0], (long long)args[k].collector[1]);
  }
  gl_counters_shutdown();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "--check") == 0) return check(atol(argv[2]));
  long reads = argc > 1 ? atol(argv[1]) : 200000;
  int reps = argc > 2 ? atoi(argv[2]) : 9;
  if (reads < 1 || reps < 1) {
    fprintf(stderr, "usage: cpu_time_read [READS [REPS]] | --check MS\n");
    return 2;
  }
  return bench(reads, reps);
}
