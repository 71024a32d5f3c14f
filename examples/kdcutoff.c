/* kdcutoff N CUTOFF [fixed] — build a 2-d kd-tree over N pseudo-random points
 * with a task per subtree above a depth cutoff, and check the tree.
 *
 * THE PLANTED PROBLEM (thesis §5.3, SPEC OMP 376.kdtree): the recursive call
 * passes `depth` instead of `depth + 1` (line marked PLANTED), so the cutoff
 * test `depth < CUTOFF` never becomes false and the build makes a task for
 * every node down to the tiny leaves: grains far too small to pay for their
 * creation (grainlab's parallel_benefit problem at the task construct). With
 * the third argument `fixed` the call passes `depth + 1` and the cutoff works.
 *
 * build(n points, depth): a node with n <= LEAF (8) points is a leaf (no
 * children). Otherwise it splits the points at the median of the axis
 * (alternating x, y by tree level) into halves of floor(n/2) and n - floor(n/2)
 * points, builds the two children — as two tasks from one task construct
 * (then a taskwait) while depth < CUTOFF, serially otherwise.
 *
 * Tasks:  T(n, d) = 0 if n <= 8 or d >= CUTOFF, else 2 + T(n/2, d') + T(n - n/2, d')
 * with d' = d + 1 (fixed) or d' = d (buggy: a task per non-root node, for
 * any CUTOFF >= 1). Defaults: N = 4096, CUTOFF = 4.
 *
 * Output: `kdcutoff(N, cutoff C, fixed|buggy): <nodes> nodes, <leaves> leaves
 * verified` — or a message and exit 1 if a point is on the wrong side of a
 * split, or lost. */
#include <string.h>
#include "common.h"

#define LEAF 8
static const char *usage = "kdcutoff N CUTOFF [fixed]   (N in [1, 10000000]; 'fixed' = depth + 1)";
static int cutoff, fixed;

typedef struct { double x[2]; } point_t;
typedef struct node {
  int axis, n;
  double split;
  point_t *pts;
  struct node *child[2];
} node_t;

/* Quickselect: put the k-th smallest (by axis) at p[k], smaller ones before it. */
static void select_kth(point_t *p, int n, int k, int axis) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = p[(lo + hi) / 2].x[axis];
    int i = lo, j = hi;
    while (i <= j) {
      while (p[i].x[axis] < pivot) i++;
      while (p[j].x[axis] > pivot) j--;
      if (i <= j) {
        point_t t = p[i]; p[i] = p[j]; p[j] = t;
        i++; j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}

static node_t *build(point_t *p, int n, int axis, int depth) {
  node_t *nd = calloc(1, sizeof *nd);
  nd->n = n;
  nd->pts = p;
  nd->axis = axis;
  if (n <= LEAF)
    return nd;
  int half = n / 2;
  select_kth(p, n, half, axis);
  nd->split = p[half].x[axis];
  int next = fixed ? depth + 1 : depth; /* PLANTED: buggy run passes depth, cutoff never reached */
  if (depth < cutoff) {
    for (int c = 0; c < 2; c++) {
#pragma omp task UNTIED firstprivate(c) shared(nd, p, n, half, axis, next)
      nd->child[c] = c == 0 ? build(p, half, 1 - axis, next)
                            : build(p + half, n - half, 1 - axis, next);
    }
#pragma omp taskwait
  } else {
    nd->child[0] = build(p, half, 1 - axis, next);
    nd->child[1] = build(p + half, n - half, 1 - axis, next);
  }
  return nd;
}

/* Every point within [lo, hi] box bounds; returns the number of leaf points,
 * or -1 on a violation. Counts nodes and leaves. */
static long check(const node_t *nd, double lo[2], double hi[2], long *nodes, long *leaves) {
  ++*nodes;
  for (int i = 0; i < nd->n; i++)
    for (int a = 0; a < 2; a++)
      if (nd->pts[i].x[a] < lo[a] || nd->pts[i].x[a] > hi[a])
        return -1;
  if (!nd->child[0]) {
    ++*leaves;
    return nd->n;
  }
  double h0[2] = {hi[0], hi[1]}, l1[2] = {lo[0], lo[1]};
  h0[nd->axis] = nd->split;
  l1[nd->axis] = nd->split;
  long a = check(nd->child[0], lo, h0, nodes, leaves);
  long b = check(nd->child[1], l1, hi, nodes, leaves);
  return a < 0 || b < 0 || a + b != nd->n ? -1 : a + b;
}

static void release(node_t *nd) {
  if (!nd) return;
  release(nd->child[0]);
  release(nd->child[1]);
  free(nd);
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 4096, 1, 10000000, usage);
  cutoff = (int)arg_long(argc, argv, 2, 4, 0, 1000, usage);
  if (argc > 3) {
    if (strcmp(argv[3], "fixed") != 0 || argc > 4) {
      fprintf(stderr, "%s: bad argument '%s' (expected 'fixed')\nusage: %s\n", argv[0],
              argv[argc > 4 ? 4 : 3], usage);
      return 2;
    }
    fixed = 1;
  }
  point_t *p = malloc(sizeof(point_t) * (size_t)n);
  unsigned long seed = 12345;
  double sum = 0;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < 2; a++) {
      seed = tiny_work(seed, 2);
      p[i].x[a] = (double)(seed >> 11) / 9007199254740992.0;
      sum += p[i].x[a];
    }
  node_t *root = NULL;
#pragma omp parallel
#pragma omp single
  root = build(p, n, 0, 0);
  double lo[2] = {0, 0}, hi[2] = {1, 1}, after = 0;
  long nodes = 0, leaves = 0;
  long got = check(root, lo, hi, &nodes, &leaves);
  for (int i = 0; i < n; i++) after += p[i].x[0] + p[i].x[1];
  if (got != n || after < sum - 1e-6 * n || after > sum + 1e-6 * n) {
    fprintf(stderr, "kdcutoff(%d): tree check failed (%ld of %d points)\n", n, got, n);
    return 1;
  }
  printf("kdcutoff(%d, cutoff %d, %s): %ld nodes, %ld leaves verified\n", n, cutoff,
         fixed ? "fixed" : "buggy", nodes, leaves);
  release(root);
  free(p);
  return 0;
}
