/* setup_kernel — a parallel kernel drowned by serial code around it, as in
 * programs whose set-up and self-check take longer than their parallel part.
 *
 *   setup_kernel [SETUP_MS [TASKS [TASK_MS [CHECK_MS]]]]   default 300 16 20 300
 *
 * 1. a tiny parallel region that asks the team size (many programs do);
 * 2. SETUP_MS of serial set-up (no parallel region);
 * 3. the kernel: one parallel region whose `single` creates TASKS tasks of
 *    TASK_MS each and waits for them (exposed parallelism ~TASKS, span
 *    ~TASK_MS);
 * 4. CHECK_MS of serial self-check.
 * Over the whole run the parallelism is ~1 (the serial code dominates); over
 * the kernel region alone (`grainlab analyze --region kernel`) it is ~TASKS.
 * Prints the team size, the tasks that ran and a parity of their work. */
#include <omp.h>
#include "common.h"

static int team_size(void) {
  int n = 0;
#pragma omp parallel
#pragma omp single
  n = omp_get_num_threads();
  return n;
}

static long kernel(int tasks, int task_ms, unsigned long *parity) {
  long ran = 0;
#pragma omp parallel
#pragma omp single
  {
    for (int i = 0; i < tasks; i++) {
#pragma omp task firstprivate(i) shared(ran, parity)
      {
        unsigned long p = spin(task_ms, (unsigned long)i);
#pragma omp atomic
        ran++;
#pragma omp atomic
        *parity ^= p;
      }
    }
#pragma omp taskwait
  }
  return ran;
}

int main(int argc, char **argv) {
  const char *usage = "setup_kernel [SETUP_MS [TASKS [TASK_MS [CHECK_MS]]]]";
  int setup_ms = (int)arg_long(argc, argv, 1, 300, 0, 100000, usage);
  int tasks = (int)arg_long(argc, argv, 2, 16, 0, 100000, usage);
  int task_ms = (int)arg_long(argc, argv, 3, 20, 0, 100000, usage);
  int check_ms = (int)arg_long(argc, argv, 4, 300, 0, 100000, usage);
  int threads = team_size();
  unsigned long parity = spin(setup_ms, 1);           /* serial set-up */
  long ran = kernel(tasks, task_ms, &parity);
  parity ^= spin(check_ms, 2);                        /* serial self-check */
  printf("setup_kernel: %d threads, %ld of %d tasks ran, parity %lu\n", threads, ran, tasks,
         parity);
  return ran == tasks ? 0 : 1;
}
