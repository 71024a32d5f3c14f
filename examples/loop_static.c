/* loop_static [N [REPS]] — a regular loop: REPS instances of a
 * `parallel for schedule(static)` over N iterations of equal cost (a
 * vector update y = a*x + y in integers). The balanced, coarse-grained case.
 *
 * Chunks = REPS x min(T, N) (static: one block per thread). Prints
 * `loop_static(N, REPS): checksum <sum> verified`. Defaults N = 200000,
 * REPS = 4. */
#include "common.h"

static const char *usage = "loop_static [N [REPS]]";

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 200000, 1, 100000000, usage);
  long reps = arg_long(argc, argv, 2, 4, 1, 10000, usage);
  unsigned long *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  unsigned long *r = malloc((size_t)n * sizeof *r);
  if (!x || !y || !r) return 1;
  for (long i = 0; i < n; i++) x[i] = (unsigned long)i * 2654435761u, y[i] = r[i] = (unsigned long)i;
  for (long k = 0; k < reps; k++) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) y[i] = 3 * x[i] + y[i] + (tiny_work((unsigned long)i, 2) & 1);
  }
  for (long k = 0; k < reps; k++)
    for (long i = 0; i < n; i++) r[i] = 3 * x[i] + r[i] + (tiny_work((unsigned long)i, 2) & 1);
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) {
    if (y[i] != r[i]) {
      fprintf(stderr, "loop_static: y[%ld] = %lu, expected %lu\n", i, y[i], r[i]);
      return 1;
    }
    sum += y[i];
  }
  printf("loop_static(%ld, %ld): checksum %lu verified\n", n, reps, sum);
  free(x), free(y), free(r);
  return 0;
}
