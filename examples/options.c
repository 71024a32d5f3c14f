/* options — a program that, like some benchmark suites, overwrites its own
 * argv while parsing options (each parsed flag becomes "-*"), then runs fib
 * with tasks. `grainlab record` must store the command line it launched, not
 * the one /proc/self/cmdline shows afterwards.
 *
 *   options -n N [-c CUTOFF]        fib(N) with a task per call above CUTOFF */
#include <string.h>
#include "common.h"

static const char *usage = "options -n N [-c CUTOFF]";
static int cutoff;

static long fib(int n, int depth) {
  if (n < 2) return n;
  if (depth >= cutoff) return fib(n - 1, depth + 1) + fib(n - 2, depth + 1);
  long x, y;
#pragma omp task shared(x)
  x = fib(n - 1, depth + 1);
#pragma omp task shared(y)
  y = fib(n - 2, depth + 1);
#pragma omp taskwait
  return x + y;
}

int main(int argc, char **argv) {
  int n = -1;
  cutoff = 1000;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      n = (int)arg_long(argc, argv, i + 1, 0, 0, 40, usage);
    } else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
      cutoff = (int)arg_long(argc, argv, i + 1, 0, 0, 1000, usage);
    } else {
      fprintf(stderr, "%s: unknown option '%s'\nusage: %s\n", argv[0], argv[i], usage);
      return 2;
    }
    strcpy(argv[i], "-*"); /* what the suite does: the flag is consumed */
  }
  if (n < 0) {
    fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  long r = 0;
#pragma omp parallel
#pragma omp single
  r = fib(n, 0);
  printf("fib(%d) = %ld\n", n, r);
  return 0;
}
