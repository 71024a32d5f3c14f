/* imbalance [N [static|dynamic]] — PLANTED PROBLEM: a loop whose schedule
 * creates load imbalance. Iteration i costs about i^3/N^2 units of work (a
 * cost that grows steeply along the loop, as in a sweep over a growing
 * volume), and the loop uses schedule(static): each thread gets one block of
 * consecutive iterations, so the last thread's block carries most of the work
 * (2 threads: 15/16 of it; 4 threads: 175/256) while the others wait at the
 * barrier. `grainlab
 * analyze` flags load_balance at the loop's line (marked PLANTED below). The
 * fix: `imbalance N dynamic` runs the same loop with schedule(dynamic, 1).
 *
 * Chunks: static -> one per thread (min(T, N)); dynamic -> N. Prints
 * `imbalance(N, <schedule>): checksum <sum> verified`. Default N = 2000. */
#include <string.h>
#include "common.h"

static const char *usage = "imbalance [N [static|dynamic]]";

static unsigned long cost(long i, long n) {
  long rounds = 1 + (long)((double)i * (double)i * (double)i * 32.0 / ((double)n * (double)n));
  return tiny_work((unsigned long)i, (int)rounds) & 0xffff;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 2000, 1, 100000, usage);
  const char *sched = argc > 2 ? argv[2] : "static";
  int dynamic = strcmp(sched, "dynamic") == 0;
  if (!dynamic && strcmp(sched, "static") != 0) {
    fprintf(stderr, "%s: bad schedule '%s' (static or dynamic)\nusage: %s\n", argv[0], sched, usage);
    return 2;
  }
  unsigned long *a = calloc((size_t)n, sizeof *a);
  if (!a) return 1;
  if (!dynamic) {
#pragma omp parallel for schedule(static) /* PLANTED: static blocks of a growing cost */
    for (long i = 0; i < n; i++) a[i] = cost(i, n);
  } else {
#pragma omp parallel for schedule(dynamic, 1) /* the fix */
    for (long i = 0; i < n; i++) a[i] = cost(i, n);
  }
  unsigned long sum = 0, expect = 0;
  for (long i = 0; i < n; i++) sum += a[i];
  for (long i = 0; i < n; i++) expect += cost(i, n);
  if (sum != expect) {
    fprintf(stderr, "imbalance: checksum %lu, expected %lu\n", sum, expect);
    return 1;
  }
  printf("imbalance(%ld, %s): checksum %lu verified\n", n, sched, sum);
  free(a);
  return 0;
}
