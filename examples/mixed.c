/* mixed — one parent creates two kinds of sibling tasks joined at one
 * taskwait: one long init task and N short compute tasks (the compute tasks
 * of one kind are equal, unless SKEW makes one of them SKEW times longer).
 * Load balance must compare like with like: balanced compute tasks beside a
 * long init task are no imbalance; one skewed compute task is.
 *
 *   mixed [N [MS [INIT_MS [SKEW]]]]      default 8 2 20 1 */
#include "common.h"

int main(int argc, char **argv) {
  const char *usage = "mixed [N [MS [INIT_MS [SKEW]]]]";
  int n = (int)arg_long(argc, argv, 1, 8, 1, 100000, usage);
  int ms = (int)arg_long(argc, argv, 2, 2, 0, 100000, usage);
  int init_ms = (int)arg_long(argc, argv, 3, 20, 0, 100000, usage);
  int skew = (int)arg_long(argc, argv, 4, 1, 1, 1000, usage);
  unsigned long parity = 0;
  long ran = 0;
#pragma omp parallel
#pragma omp single
  {
#pragma omp task shared(parity, ran)
    { /* the init task */
      unsigned long p = spin(init_ms, 1);
#pragma omp atomic
      parity ^= p;
#pragma omp atomic
      ran++;
    }
    for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i) shared(parity, ran)
      { /* a compute task; task 0 is SKEW times longer */
        unsigned long p = spin(i == 0 ? (double)ms * skew : ms, (unsigned long)i);
#pragma omp atomic
        parity ^= p;
#pragma omp atomic
        ran++;
      }
    }
#pragma omp taskwait
  }
  printf("mixed: 1 init task of %d ms + %d compute tasks of %d ms (skew %d): %ld ran, parity %lu\n",
         init_ms, n, ms, skew, ran, parity);
  return ran == n + 1 ? 0 : 1;
}
