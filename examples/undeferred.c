/* undeferred N — tasks the runtime may run immediately instead of deferring.
 *
 * Three phases inside one `single`, each ended by a taskwait:
 *   A. N tasks with if(0): undeferred, run at once by the creating thread.
 *   B. one task with final(1) that creates N children, each creating one
 *      grandchild: every descendant of a final task is final and *included*
 *      (run immediately, in the creator's data environment). 1 + 2N tasks.
 *   C. N tasks with `mergeable` (the runtime may merge them; libomp defers them).
 * Tasks: N + (1 + 2N) + N = 4N + 1. Taskwaits: 3. A grain graph must have the
 * same shape whatever the runtime decided to do with these tasks. */
#include "common.h"
#include <omp.h>

static const char *usage = "undeferred N   (default 100)";
static unsigned long ran; /* tasks that ran */

static void body(unsigned long seed) {
  (void)tiny_work(seed, 16);
#pragma omp atomic
  ran++;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 100, 0, 10000000, usage);
#pragma omp parallel
#pragma omp single
  {
    for (long i = 0; i < n; i++) { /* A: undeferred */
#pragma omp task if (0) firstprivate(i)
      body((unsigned long)i);
    }
#pragma omp taskwait

#pragma omp task final(1) /* B: an included subtree under one final task */
    {
      body(0);
      for (long i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
        {
          body((unsigned long)i);
#pragma omp task firstprivate(i)
          body((unsigned long)i + 1);
        }
      }
    }
#pragma omp taskwait

    for (long i = 0; i < n; i++) { /* C: mergeable */
#pragma omp task mergeable firstprivate(i)
      body((unsigned long)i);
    }
#pragma omp taskwait
  }
  printf("undeferred(%ld): %lu tasks\n", n, ran);
  return 0;
}
