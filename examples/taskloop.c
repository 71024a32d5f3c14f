/* taskloop N GRAINSIZE — a taskloop over N iterations with grainsize(GRAINSIZE).
 *
 * One `single` runs `#pragma omp taskloop grainsize(G)` over i = 0..N-1; each
 * iteration does a little work and stores its result in a[i], summed after.
 * OpenMP splits the loop into max(1, floor(N/G)) tasks (for N > 0) of G to
 * 2G-1 iterations; examples/README.md has libomp's exact split. The taskloop is
 * wrapped in its implicit taskgroup (no `nogroup`). */
#include "common.h"
#include <omp.h>

static const char *usage = "taskloop N GRAINSIZE   (defaults 10000 1000)";

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 10000, 0, 100000000, usage);
  long g = arg_long(argc, argv, 2, 1000, 1, 100000000, usage);
  unsigned long *a = calloc((size_t)n + 1, sizeof *a);
  if (!a) {
    fprintf(stderr, "taskloop: out of memory for %ld iterations\n", n);
    return 1;
  }
#pragma omp parallel
#pragma omp single
  {
#pragma omp taskloop grainsize(g)
    for (unsigned long i = 0; i < (unsigned long)n; i++)
      a[i] = tiny_work(i, 8) & 0xff;
  }
  unsigned long sum = 0;
  for (long i = 0; i < n; i++)
    sum += a[i];
  free(a);
  printf("taskloop(%ld, grainsize %ld): checksum %lu\n", n, g, sum);
  return 0;
}
