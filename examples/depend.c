/* depend N — tasks ordered by `depend` clauses: a chain, then diamonds.
 *
 * Inside one `single`:
 *   chain: N tasks, each depend(inout: x)                    -> x = N at the end
 *   taskwait
 *   N diamonds, one after another, on variables s, l, r:
 *     top     depend(inout: s)
 *     left    depend(in: s)    depend(out: l)
 *     right   depend(in: s)    depend(out: r)
 *     bottom  depend(in: l, r) depend(inout: s)
 *   taskwait
 * Tasks: 5N. Dependence items (one per address per task): N + 8N = 9N.
 * The printed checksums are only right if every dependence was honoured. */
#include "common.h"
#include <omp.h>

static const char *usage = "depend N   (default 100)";

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 100, 0, 10000000, usage);
  unsigned long x = 0, s = 1, l = 0, r = 0;
#pragma omp parallel
#pragma omp single
  {
    for (long i = 0; i < n; i++) {
#pragma omp task depend(inout : x) shared(x) firstprivate(i)
      {
        (void)tiny_work((unsigned long)i, 8);
        x++;
      }
    }
#pragma omp taskwait

    for (long i = 0; i < n; i++) {
#pragma omp task depend(inout : s) shared(s)
      s = s * 3 + 1;
#pragma omp task depend(in : s) depend(out : l) shared(s, l)
      {
        (void)tiny_work(s, 8);
        l = s + 1;
      }
#pragma omp task depend(in : s) depend(out : r) shared(s, r)
      {
        (void)tiny_work(s, 8);
        r = s + 2;
      }
#pragma omp task depend(in : l, r) depend(inout : s) shared(s, l, r)
      s = (l + r) % 1000003ul;
    }
#pragma omp taskwait
  }
  /* The same recurrence computed serially: what the tasks must have produced. */
  unsigned long want = 1;
  for (long i = 0; i < n; i++) {
    unsigned long t = want * 3 + 1;
    want = ((t + 1) + (t + 2)) % 1000003ul;
  }
  printf("depend(%ld): chain x=%lu, diamonds s=%lu (%s)\n", n, x, s,
         x == (unsigned long)n && s == want ? "ok" : "WRONG ORDER");
  return x == (unsigned long)n && s == want ? 0 : 1;
}
