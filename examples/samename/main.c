/* samename — a program with two source files of the same name in different
 * directories (a/kernel.c, b/kernel.c), each with a task construct: source
 * locations must tell them apart (a/kernel.c:8 vs b/kernel.c:8), not show two
 * `kernel.c:8`.
 *
 *   samename [N]     N tasks from each file (default 10) */
#include "../common.h"

unsigned long kernel_a(int n);
unsigned long kernel_b(int n);

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 10, 0, 1000000, "samename [N]");
  unsigned long s = 0;
#pragma omp parallel
#pragma omp single
  s = kernel_a(n) + kernel_b(n);
  printf("samename(%d): %d tasks, %lu\n", n, 2 * n, s);
  return 0;
}
