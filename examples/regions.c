/* regions — consecutive parallel regions whose tasks are never waited for by
 * a taskwait: they join at the region's end (its implicit barrier, or, in a
 * team of one, where libomp reports no barrier, the region's end itself).
 *
 *   regions [REGIONS [TASKS [MS [master|single [SERIAL_MS]]]]]   default 2 8 30 master 0
 *
 * Each region: one thread (`master`, or `single nowait`) creates TASKS tasks
 * that each spin MS milliseconds. The exposed parallelism is ~TASKS and the
 * span ~REGIONS x MS, at any thread count. With SERIAL_MS, the creating
 * thread first spins that long alone in each region: the other threads have
 * nothing to run (a known idle phase of (threads - 1) x SERIAL_MS per region).
 * Prints the checksum of the tasks'
 * spin counts' parity and verifies that every task ran. */
#include <string.h>
#include <omp.h>
#include "common.h"

static const char *usage = "regions [REGIONS [TASKS [MS [master|single [SERIAL_MS]]]]]";


static long ran;
static unsigned long parity;

/* The creating thread's part of region r: spin serial_ms alone, then create
 * `tasks` tasks of `ms` each, never waited for here. */
static void create_tasks(int r, int tasks, int ms, int serial_ms) {
  parity ^= spin(serial_ms, (unsigned long)r);
  for (int i = 0; i < tasks; i++) {
#pragma omp task firstprivate(i)
    {
      unsigned long p = spin(ms, (unsigned long)(r * tasks + i));
#pragma omp atomic
      ran++;
#pragma omp atomic
      parity ^= p;
    }
  }
}

int main(int argc, char **argv) {
  int regions = (int)arg_long(argc, argv, 1, 2, 1, 1000, usage);
  int tasks = (int)arg_long(argc, argv, 2, 8, 0, 100000, usage);
  int ms = (int)arg_long(argc, argv, 3, 30, 0, 100000, usage);
  int single = argc > 4 && strcmp(argv[4], "single") == 0;
  if (argc > 4 && !single && strcmp(argv[4], "master") != 0) {
    fprintf(stderr, "%s: bad mode '%s' (master or single)\nusage: %s\n", argv[0], argv[4], usage);
    return 2;
  }
  int serial_ms = (int)arg_long(argc, argv, 5, 0, 0, 100000, usage);
  for (int r = 0; r < regions; r++) {
#pragma omp parallel
    {
      if (single) {
#pragma omp single nowait
        create_tasks(r, tasks, ms, serial_ms);
      } else {
#pragma omp master
        create_tasks(r, tasks, ms, serial_ms);
      }
    }
  }
  printf("regions %d x %d tasks of %d ms (%s): %ld tasks ran, parity %lu\n", regions, tasks, ms,
         single ? "single nowait" : "master", ran, parity);
  if (ran != (long)regions * tasks) {
    fprintf(stderr, "regions: %ld tasks ran, expected %d\n", ran, regions * tasks);
    return 1;
  }
  return 0;
}
