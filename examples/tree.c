/* tree DEPTH FANOUT — a task tree with no taskwait anywhere.
 *
 * The `single nowait` creates FANOUT tasks at depth 1; a task at depth d < DEPTH
 * creates FANOUT children at depth d+1 and returns without waiting for them.
 * Nobody waits for any task until the implicit barrier at the end of the
 * parallel region, which joins them all (the grain graph's "join at the
 * enclosing barrier" case). Tasks: FANOUT + FANOUT^2 + ... + FANOUT^DEPTH. */
#include "common.h"
#include <omp.h>

static const char *usage = "tree DEPTH FANOUT   (defaults 6 4)";
static int max_depth, fanout;
static unsigned long visited; /* tasks that ran: printed so a short run shows */

static void node(int depth, unsigned long id) {
  (void)tiny_work(id, 16); /* the grain's body; kept by tiny_work's asm */
#pragma omp atomic
  visited++;
  if (depth < max_depth)
    for (int i = 0; i < fanout; i++) {
#pragma omp task UNTIED firstprivate(depth, id, i)
      node(depth + 1, id * (unsigned long)fanout + (unsigned long)i + 1);
    }
}

int main(int argc, char **argv) {
  max_depth = (int)arg_long(argc, argv, 1, 6, 0, 30, usage);
  fanout = (int)arg_long(argc, argv, 2, 4, 1, 1000, usage);
#pragma omp parallel
  {
#pragma omp single nowait
    if (max_depth >= 1)
      for (int i = 0; i < fanout; i++) {
#pragma omp task UNTIED firstprivate(i)
        node(1, (unsigned long)i + 1);
      }
  } /* the region-end barrier joins every task of the tree */
  printf("tree(depth=%d, fanout=%d): %lu tasks\n", max_depth, fanout, visited);
  return 0;
}
