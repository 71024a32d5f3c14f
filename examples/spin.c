/* spin [TASKS [ROUNDS]] — TASKS independent tasks of equal, pure CPU work:
 * each spins ROUNDS rounds of integer mixing (no memory traffic, no system
 * calls, no locks), so a task's wall time exceeds its CPU time only when its
 * thread is switched out: preempted by another thread, or its vCPU by the
 * host. One thread creates them (`single`), the team runs them, a taskwait
 * ends them. Used to test preemption (`grainlab record --cpu-time`, the
 * "preempted" problem): two threads on one CPU (`taskset -c 0`) preempt each
 * other's tasks; one CPU per thread does not.
 *
 * Tasks = TASKS; no loop chunks. Prints `spin(TASKS, ROUNDS): checksum <x>`
 * (independent of the thread count). Defaults TASKS = 16, ROUNDS = 4000000
 * (a few ms per task here). */
#include "common.h"

static const char *usage = "spin [TASKS [ROUNDS]]";

int main(int argc, char **argv) {
  int tasks = (int)arg_long(argc, argv, 1, 16, 0, 1000000, usage);
  int rounds = (int)arg_long(argc, argv, 2, 4000000, 0, 2000000000, usage);
  if (argc > 3) {
    fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
    return 2;
  }
  unsigned long *out = calloc((size_t)tasks + 1, sizeof *out);
  if (!out) return 1;
#pragma omp parallel
#pragma omp single
  {
    for (int i = 0; i < tasks; i++) {
#pragma omp task firstprivate(i)
      out[i] = tiny_work((unsigned long)i, rounds);
    }
#pragma omp taskwait
  }
  unsigned long sum = 0;
  for (int i = 0; i < tasks; i++) sum ^= out[i];
  printf("spin(%d, %d): checksum %lx\n", tasks, rounds, sum);
  free(out);
  return 0;
}
