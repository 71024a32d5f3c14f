/* loop_dynamic [N [EVERY [FACTOR]]] — the thesis's Freqmine case: a
 * `parallel for schedule(dynamic, 1)` over N iterations of very uneven cost:
 * every EVERY-th iteration (i % EVERY == 0) is FACTOR times heavier than the
 * others. Dynamic scheduling balances the threads, but every iteration is its
 * own chunk: N chunks, most of them tiny (parallel benefit is the question).
 *
 * Chunks = N (one loop instance). Prints `loop_dynamic(N, EVERY, FACTOR):
 * checksum <sum> verified`. Defaults N = 4000, EVERY = 97, FACTOR = 400. */
#include "common.h"

static const char *usage = "loop_dynamic [N [EVERY [FACTOR]]]";

static unsigned long body(long i, long every, long factor) {
  int rounds = (int)(i % every == 0 ? 4 * factor : 4);
  return tiny_work((unsigned long)i, rounds) & 0xffff;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 4000, 1, 10000000, usage);
  long every = arg_long(argc, argv, 2, 97, 1, 10000000, usage);
  long factor = arg_long(argc, argv, 3, 400, 1, 1000000, usage);
  unsigned long *a = calloc((size_t)n, sizeof *a);
  if (!a) return 1;
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < n; i++) a[i] = body(i, every, factor);
  unsigned long sum = 0, expect = 0;
  for (long i = 0; i < n; i++) sum += a[i], expect += body(i, every, factor);
  if (sum != expect) {
    fprintf(stderr, "loop_dynamic: checksum %lu, expected %lu\n", sum, expect);
    return 1;
  }
  printf("loop_dynamic(%ld, %ld, %ld): checksum %lu verified\n", n, every, factor, sum);
  free(a);
  return 0;
}
