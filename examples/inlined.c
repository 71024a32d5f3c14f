/* inlined — static helpers holding task and for constructs that clang
 * inlines at -O2, so their code runs inside another function's:
 *
 *   producer  called once by main's `single`: inlined into main's parallel
 *             region body; its task construct is `producer, inlined into main`
 *   spawn     called in producer's task body: inlined into that task's
 *             outlined entry; its task is `spawn, inlined into producer`
 *   sweep     called by every thread of main's parallel region: inlined there;
 *             its loop is `sweep, inlined into main, parallel for`
 *
 * A location must name the helper, with the function it was inlined into
 * beside it (DWARF DW_TAG_inlined_subroutine), never the caller alone.
 * tests/test_locations_nested.py checks the build really inlined them.
 *
 *   inlined [N [M]]   N producer tasks (default 8), each creating 2 spawn
 *                     tasks; a loop of M iterations (default 64) in chunks of 4
 *
 * Tasks: 3·N. Chunks: ceil(M/4) (1 in a team of one). */
#include "common.h"

static unsigned long sum;
static unsigned long a[1 << 16];

static inline void spawn(int i, int k) {
#pragma omp task firstprivate(i, k) /* LOC spawn_task */
  {
    unsigned long v = tiny_work((unsigned long)(i * 2 + k), 64);
#pragma omp atomic
    sum += v & 1;
  }
}

static void producer(int n) {
  for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i) /* LOC producer_task */
    {
      spawn(i, 0);
      spawn(i, 1);
#pragma omp taskwait
    }
  }
#pragma omp taskwait
}

static void sweep(long m) {
#pragma omp for schedule(dynamic, 4) /* LOC sweep_for */
  for (long i = 0; i < m; i++)
    a[i] = tiny_work((unsigned long)i, 32) & 0xff;
}

int main(int argc, char **argv) {
  static const char *usage = "inlined [N [M]]   (default: 8 64)";
  int n = (int)arg_long(argc, argv, 1, 8, 0, 100000, usage);
  long m = arg_long(argc, argv, 2, 64, 0, 1 << 16, usage);
#pragma omp parallel
  {
#pragma omp single
    producer(n);
    sweep(m);
  }
  unsigned long check = 0;
  for (long i = 0; i < m; i++)
    check += a[i];
  printf("inlined(%d, %ld): %d tasks, parity sum %lu, checksum %lu\n", n, m, 3 * n, sum, check);
  return 0;
}
