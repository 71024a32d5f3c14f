/* loop_tasks — worksharing loops whose iterations create tasks. One parallel
 * region runs, in `run_loops` (`run_loops_untied`), a `for nowait` loop and
 * then a `for` loop (both schedule(dynamic, 1)); every iteration creates
 * TASKS tasks (untied ones). Each loop must be exactly one source location,
 * its own `#pragma omp for` line, whatever its chunks' threads were doing
 * (creating or running tasks, tied or untied) when they asked for chunks.
 *
 *   loop_tasks [N [TASKS [tied|untied]]]
 *     N       iterations of each loop (default 64)
 *     TASKS   tasks created per iteration (default 2)
 *     untied  the tasks are `untied` (default tied)
 *
 * Chunks: N per loop, 2·N in all (1 per loop in a team of one); tasks:
 * 2·N·TASKS. The LOC markers name each construct for the tests
 * (tests/test_locations_nested.py). */
#include "common.h"
#include <string.h>

static const char *usage = "loop_tasks [N [TASKS [tied|untied]]]   (default: 64 2 tied)";
static unsigned long sum;

static inline void body(long i, int t) {
  unsigned long v = tiny_work((unsigned long)(i * 8 + t), 128);
#pragma omp atomic
  sum += v & 1;
}

/* Tied and untied tasks are two functions, not one `if`: in one function
 * clang merges the two branches' calls to the runtime into one instruction,
 * whose line is 0 (ambiguous), and no grain could name its pragma's line. */
__attribute__((noinline)) static void run_loops(long n, int tasks) {
#pragma omp parallel
  {
#pragma omp for schedule(dynamic, 1) nowait /* LOC loop_nowait */
    for (long i = 0; i < n; i++)
      for (int t = 0; t < tasks; t++) {
#pragma omp task firstprivate(i, t) /* LOC task_nowait */
        body(i, t);
      }
#pragma omp for schedule(dynamic, 1) /* LOC loop_barrier */
    for (long i = 0; i < n; i++)
      for (int t = 0; t < tasks; t++) {
#pragma omp task firstprivate(i, t) /* LOC task_barrier */
        body(n + i, t);
      }
  }
}

__attribute__((noinline)) static void run_loops_untied(long n, int tasks) {
#pragma omp parallel
  {
#pragma omp for schedule(dynamic, 1) nowait /* LOC loop_nowait_untied */
    for (long i = 0; i < n; i++)
      for (int t = 0; t < tasks; t++) {
#pragma omp task untied firstprivate(i, t) /* LOC task_nowait_untied */
        body(i, t);
      }
#pragma omp for schedule(dynamic, 1) /* LOC loop_barrier_untied */
    for (long i = 0; i < n; i++)
      for (int t = 0; t < tasks; t++) {
#pragma omp task untied firstprivate(i, t) /* LOC task_barrier_untied */
        body(n + i, t);
      }
  }
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 64, 0, 10000000, usage);
  int tasks = (int)arg_long(argc, argv, 2, 2, 0, 1000, usage);
  int untied = 0;
  if (argc > 3) {
    if (!strcmp(argv[3], "untied"))
      untied = 1;
    else if (strcmp(argv[3], "tied")) {
      fprintf(stderr, "%s: bad argument '%s' (expected tied or untied)\nusage: %s\n", argv[0],
              argv[3], usage);
      return 2;
    }
  }
  if (argc > 4) {
    fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
    return 2;
  }
  if (untied)
    run_loops_untied(n, tasks);
  else
    run_loops(n, tasks);
  printf("loop_tasks(%ld, %d, %s): %ld chunks, %ld tasks, parity sum %lu\n", n, tasks,
         untied ? "untied" : "tied", 2 * n, 2 * n * (long)tasks, sum);
  return 0;
}
