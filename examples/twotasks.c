/* twotasks — one function with two different task constructs. Built twice:
 * `twotasks` with line information and `twotasks_nolines` without (-g0), where
 * the two constructs must still be two source locations (func+0xOFF), never
 * merged into one `file.c:0`.
 *
 *   twotasks [N]     N tasks of each construct (default 20) */
#include "common.h"

static unsigned long sum;

static void work(int n) {
  for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
    {
      unsigned long v = tiny_work((unsigned long)i, 64);
#pragma omp atomic
      sum += v & 1;
    }
#pragma omp task firstprivate(i)
    {
      unsigned long v = tiny_work((unsigned long)i + 7, 256);
#pragma omp atomic
      sum += v & 1;
    }
  }
#pragma omp taskwait
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 20, 0, 1000000, "twotasks [N]");
#pragma omp parallel
#pragma omp single
  work(n);
  printf("twotasks(%d): %d tasks, parity sum %lu\n", n, 2 * n, sum);
  return 0;
}
