/* not_openmp [N] — a plain C program with no OpenMP at all. The collector is
 * never loaded into it (no libomp, so no OMPT): `grainlab record` must say so
 * in one line instead of writing an empty trace. */
#include "common.h"

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000, 0, 100000000, "not_openmp [N]   (default 1000)");
  unsigned long sum = 0;
  for (long i = 0; i < n; i++)
    sum += tiny_work((unsigned long)i, 8) & 0xff;
  printf("not_openmp(%ld): checksum %lu\n", n, sum);
  return 0;
}
