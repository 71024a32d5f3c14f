/* depend_if0 [N [EVERY]] — a chain of N tasks on one variable, each
 * `depend(inout: x)`, where every EVERY-th task (i % EVERY == EVERY - 1) is
 * undeferred (`if(0)`), then a `taskwait depend(in: x)` before reading x.
 *
 * libomp reports each wait for an undeferred task's predecessors, and the
 * `taskwait depend`, as a pseudo-task of its own (ompt_task_taskwait): a
 * trace of this program must still count exactly N tasks and keep the chain
 * 0 -> 1 -> ... -> N-1 of dependences (grainlab/depwait.py).
 *
 * Tasks = N; undeferred tasks = N / EVERY; dependence waits reported by
 * libomp = N / EVERY + 1. Prints `depend_if0(N, EVERY): x = <x> verified`.
 * Defaults N = 30, EVERY = 3. */
#include "common.h"

static const char *usage = "depend_if0 [N [EVERY]]";

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 30, 1, 1000000, usage);
  long every = arg_long(argc, argv, 2, 3, 1, 1000000, usage);
  unsigned long x = 1, expect = 1;
  for (long i = 0; i < n; i++) expect = tiny_work(expect + (unsigned long)i, 8);
#pragma omp parallel
#pragma omp single
  {
    for (long i = 0; i < n; i++) {
#pragma omp task depend(inout: x) if (i % every != every - 1) firstprivate(i) shared(x)
      x = tiny_work(x + (unsigned long)i, 8);
    }
#pragma omp taskwait depend(in: x)
    if (x != expect) {
      fprintf(stderr, "depend_if0: x = %lu, expected %lu\n", x, expect);
      exit(1);
    }
#pragma omp taskwait
  }
  printf("depend_if0(%ld, %ld): x = %lu verified\n", n, every, x);
  return 0;
}
