/* deeptree DEPTH LEAVES — a chain of DEPTH nested tasks, each creating LEAVES
 * leaf tasks: a deep, narrow task tree (the shape that made per-task identity
 * grow with depth).
 *
 * The `single` creates the chain's first task; the chain task at depth d
 * creates the next chain task (depth d+1, while d < DEPTH) and then LEAVES
 * leaves (depth d+1). No taskwait: the region-end barrier joins them all, so
 * the program's stack does not grow with the chain. Tasks: DEPTH * (LEAVES+1);
 * the deepest task is at depth DEPTH+1 when LEAVES > 0 (a leaf of the last
 * chain task), DEPTH otherwise. `deeptree 2000 500`: 1,002,000 tasks. */
#include "common.h"
#include <omp.h>

static const char *usage = "deeptree DEPTH LEAVES   (defaults 100 10)";
static int max_depth, leaves;
static unsigned long visited; /* tasks that ran: checked against the formula */

static void chain(int depth) {
#pragma omp atomic
  visited++;
  if (depth < max_depth) {
#pragma omp task UNTIED firstprivate(depth)
    chain(depth + 1);
  }
  for (int i = 0; i < leaves; i++) {
#pragma omp task UNTIED firstprivate(depth, i)
    {
      (void)tiny_work((unsigned long)depth * 1000003ul + (unsigned long)i, 16);
#pragma omp atomic
      visited++;
    }
  }
}

int main(int argc, char **argv) {
  max_depth = (int)arg_long(argc, argv, 1, 100, 1, 1000000, usage);
  leaves = (int)arg_long(argc, argv, 2, 10, 0, 1000000, usage);
#pragma omp parallel
  {
#pragma omp single nowait
    {
#pragma omp task UNTIED
      chain(1);
    }
  } /* the region-end barrier joins every task */
  unsigned long expected = (unsigned long)max_depth * ((unsigned long)leaves + 1);
  printf("deeptree(depth=%d, leaves=%d): %lu tasks\n", max_depth, leaves, visited);
  if (visited != expected) {
    fprintf(stderr, "deeptree: ran %lu tasks, expected %lu\n", visited, expected);
    return 1;
  }
  return 0;
}
