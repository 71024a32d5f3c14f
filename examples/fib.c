/* fib N [CUTOFF] — recursive Fibonacci with one task per recursive call, down
 * to a depth cutoff (examples/README.md gives the exact task count).
 *
 * The root call fib(N) runs at depth 0 in the implicit task that wins the
 * `single`. A call at depth d with argument n creates two tasks, fib(n-1) and
 * fib(n-2) at depth d+1, then a taskwait, while n > 1 and d < CUTOFF; past the
 * cutoff it recurses serially inside the current grain. Leaving CUTOFF out
 * means no cutoff: every call but the root is a task (the finest grains).
 *
 * Built twice from this file: `fib` with clang-19 (libomp, OMPT) and
 * `fib_gomp` with gcc (libgomp, no OMPT) for the collector's error path. */
#include "common.h"
#include <omp.h>

static const char *usage = "fib N [CUTOFF]   (N <= 45; CUTOFF omitted = a task per call)";
static int cutoff;

static long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static long fib(int n, int depth) {
  if (n < 2)
    return n;
  if (depth >= cutoff)
    return fib_serial(n);
  long x, y;
#pragma omp task UNTIED shared(x) firstprivate(n, depth)
  x = fib(n - 1, depth + 1);
#pragma omp task UNTIED shared(y) firstprivate(n, depth)
  y = fib(n - 2, depth + 1);
#pragma omp taskwait
  return x + y;
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 25, 0, 45, usage);
  /* CUTOFF >= N-1 already gives a task per call; N is "no cutoff". */
  cutoff = (int)arg_long(argc, argv, 2, n, 0, 1000, usage);
  long result = 0;
#pragma omp parallel
#pragma omp single
  result = fib(n, 0);
  printf("fib(%d) = %ld\n", n, result);
  return 0;
}
