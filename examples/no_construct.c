/* no_construct [N] — linked with libomp (it calls omp_get_wtime to time
 * itself) but runs no OpenMP construct, so the runtime never starts and no
 * tool is ever loaded: `grainlab record` must say that, not blame the build.
 * Prints `no_construct(N): checksum <sum>`. Default N = 1000. */
#include <omp.h>
#include "common.h"

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000, 0, 100000000, "no_construct [N]");
  double t0 = omp_get_wtime();
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) sum += tiny_work((unsigned long)i, 4) & 0xff;
  printf("no_construct(%ld): checksum %lu (%.3f s)\n", n, sum, omp_get_wtime() - t0);
  return 0;
}
