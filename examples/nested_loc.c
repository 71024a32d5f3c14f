/* nested_loc — tasks created inside other tasks' bodies, three levels deep,
 * all written in the programmer's function `producer`, plus tasks created by
 * `consumer`, a separate (not inlined) function that a level-2 task calls.
 * Every task's source location must name `producer` or `consumer`, never the
 * compiler's outlined task entries (.omp_task_entry..N, .omp_outlined.).
 *
 *   nested_loc [N]   N level-1 tasks (default 4)
 *
 * Tasks: N at level 1, 2 per level-1 task at level 2, 2 per level-2 task at
 * level 3, and 1 `consumer` task per level-2 task (at level 3 too): 9·N in
 * all. The LOC markers name each construct for the tests
 * (tests/test_locations_nested.py). */
#include "common.h"

static unsigned long sum;

__attribute__((noinline)) static void consumer(unsigned long seed) {
#pragma omp task firstprivate(seed) /* LOC consumer */
  {
    unsigned long v = tiny_work(seed, 32);
#pragma omp atomic
    sum += v & 1;
  }
#pragma omp taskwait
}

__attribute__((noinline)) static void producer(int n) {
  for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i) /* LOC level1 */
    {
      for (int j = 0; j < 2; j++) {
#pragma omp task firstprivate(i, j) /* LOC level2 */
        {
          for (int k = 0; k < 2; k++) {
#pragma omp task firstprivate(i, j, k) /* LOC level3 */
            {
              unsigned long v = tiny_work((unsigned long)(i * 4 + j * 2 + k), 64);
#pragma omp atomic
              sum += v & 1;
            }
          }
          consumer((unsigned long)(i * 2 + j));
#pragma omp taskwait
        }
      }
#pragma omp taskwait
    }
  }
#pragma omp taskwait
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 4, 0, 100000, "nested_loc [N]");
#pragma omp parallel
#pragma omp single
  producer(n);
  printf("nested_loc(%d): %d tasks, parity sum %lu\n", n, 9 * n, sum);
  return 0;
}
