/* late_start — a long serial set-up before the first parallel region, so the
 * OpenMP runtime (and a tool it loads) starts late in the process.
 *
 *   late_start [SETUP [TASKS [TAIL]]]   default 100 8 10
 *
 * 1. SETUP million rounds of integer work, serial, before any OpenMP call
 *    (a computation, not a sleep: the CPU is busy the whole time);
 * 2. one parallel region whose `single` creates TASKS tasks of 100,000
 *    rounds each and waits for them;
 * 3. TAIL million rounds of serial work after it.
 * Prints its own CLOCK_MONOTONIC (ns) at main's start and just before it
 * returns, so a trace can be checked against the process's own measure of
 * its lifetime. */
#include <omp.h>
#include <stdio.h>
#include <time.h>
#include "common.h"

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static unsigned long rounds(long millions, unsigned long x) {
  for (long m = 0; m < millions; m++)
    for (int i = 0; i < 1000; i++) x = tiny_work(x, 1000);
  return x;
}

int main(int argc, char **argv) {
  unsigned long long start = mono_ns();
  const char *usage = "late_start [SETUP [TASKS [TAIL]]]";
  long setup = arg_long(argc, argv, 1, 100, 0, 100000, usage);
  long tasks = arg_long(argc, argv, 2, 8, 0, 100000, usage);
  long tail = arg_long(argc, argv, 3, 10, 0, 100000, usage);
  unsigned long x = rounds(setup, 1);
  long ran = 0;
  int threads = 0;
#pragma omp parallel
#pragma omp single
  {
    threads = omp_get_num_threads();
    for (long t = 0; t < tasks; t++) {
#pragma omp task shared(ran, x) firstprivate(t)
      {
        unsigned long y = tiny_work((unsigned long)t, 100000);
#pragma omp atomic
        ran++;
#pragma omp atomic
        x ^= y & 1;
      }
    }
#pragma omp taskwait
  }
  x = rounds(tail, x);
  unsigned long long end = mono_ns();
  printf("late_start: %d threads, %ld of %ld tasks ran, parity %lu, main %llu %llu\n", threads,
         ran, tasks, x & 1, start, end);
  return 0;
}
