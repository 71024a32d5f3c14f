/* whatif [N [LIGHT [HEAVY]]] — two kinds of task in two functions, whose
 * costs are arguments: the ground truth for `grainlab predict --what-if`.
 * One thread creates N light and N heavy tasks (alternately) and waits for
 * them; a light task mixes LIGHT rounds of integer work, a heavy one HEAVY
 * rounds (defaults 2500 and 10000: about 10 and 40 us here). Recording
 * `whatif N 2500 10000` and predicting `--what-if "heavy=0.5"` should give
 * the time `whatif N 2500 5000` takes (benchmarks/predict_whatif.py).
 *
 * Tasks: 2N. Prints `whatif(N, LIGHT, HEAVY): 2N tasks, parity <p>`. */
#include "common.h"

static unsigned long parity;

static void light(long i, int rounds) {
#pragma omp task firstprivate(i)
  {
    unsigned long v = tiny_work((unsigned long)i, rounds);
#pragma omp atomic
    parity ^= v & 1;
  }
}

static void heavy(long i, int rounds) {
#pragma omp task firstprivate(i)
  {
    unsigned long v = tiny_work((unsigned long)i + 7, rounds);
#pragma omp atomic
    parity ^= v & 1;
  }
}

int main(int argc, char **argv) {
  static const char *usage = "whatif [N [LIGHT [HEAVY]]]";
  long n = arg_long(argc, argv, 1, 2000, 0, 10000000, usage);
  int a = (int)arg_long(argc, argv, 2, 2500, 0, 100000000, usage);
  int b = (int)arg_long(argc, argv, 3, 10000, 0, 100000000, usage);
#pragma omp parallel
#pragma omp single
  {
    for (long i = 0; i < n; i++) {
      light(i, a);
      heavy(i, b);
    }
#pragma omp taskwait
  }
  printf("whatif(%ld, %d, %d): %ld tasks, parity %lu\n", n, a, b, 2 * n, parity);
  return 0;
}
