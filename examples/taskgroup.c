/* taskgroup N — a taskgroup that must wait for grandchildren too.
 *
 * Inside one `single`, a taskgroup holds N child tasks; each child creates two
 * grandchildren and does not wait for them. Unlike taskwait (children only),
 * the end of the taskgroup waits for every descendant: all 3N tasks join there.
 * Tasks: 3N. Taskgroups: 1. Taskwaits: 0. */
#include "common.h"
#include <omp.h>

static const char *usage = "taskgroup N   (default 200)";
static unsigned long ran; /* tasks that ran */

static void body(unsigned long seed) {
  (void)tiny_work(seed, 16);
#pragma omp atomic
  ran++;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 200, 0, 10000000, usage);
#pragma omp parallel
#pragma omp single
  {
#pragma omp taskgroup
    {
      for (long i = 0; i < n; i++) {
#pragma omp task firstprivate(i)
        {
          body((unsigned long)i);
          for (int j = 0; j < 2; j++) {
#pragma omp task firstprivate(i, j)
            body((unsigned long)(3 * i + j));
          }
        }
      }
    } /* waits for children and grandchildren */
    printf("taskgroup(%ld): %lu tasks\n", n, ran);
  }
  return 0;
}
