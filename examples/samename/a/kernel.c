/* samename/a/kernel.c — one of two files named kernel.c (see samename/main.c). */
#include "../../common.h"

unsigned long kernel_a(int n) {
  unsigned long s = 0;
  for (int i = 0; i < n; i++) {
#pragma omp task firstprivate(i) shared(s)
    {
      unsigned long v = tiny_work((unsigned long)i, 32) & 1;
#pragma omp atomic
      s += v;
    }
  }
#pragma omp taskwait
  return s;
}
