/* grain_data_cost N — ns per grain_data() call (collector/include/
 * graincollect.h), inside one task, for benchmarks/krd_scale.py: run it with
 * no tool, the empty tool and the collector. Prints `ns_per_call <x>`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "graincollect.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  static double blocks[64][512];
  double ns = 0;
  memset(blocks, 1, sizeof blocks); /* resident: GRAINLAB_PAGES finds their node */
#pragma omp parallel num_threads(1)
#pragma omp single
#pragma omp task shared(ns)
  {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) grain_data(blocks[i & 63], sizeof blocks[0], GRAIN_IN);
    clock_gettime(CLOCK_MONOTONIC, &b);
    ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n;
  }
  printf("ns_per_call %.2f\n", ns);
  return 0;
}
