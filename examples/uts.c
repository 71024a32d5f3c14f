/* uts geo|deep [SIZE [WIDTH [CUTOFF]]] — unbalanced tree search: count the
 * nodes of a tree that exists only as a rule (each node's children follow
 * from a hash of its identity), one task per node below the root down to
 * depth CUTOFF (default: every node), then a taskwait per node.
 *
 *   geo   depth limit SIZE: a node above it has (hash % (2 WIDTH + 1))
 *         children (WIDTH on average): a bushy, unbalanced tree.
 *   deep  a spine SIZE nodes deep: spine node d has the next spine node (if
 *         d < SIZE - 1) and (hash % (WIDTH + 1)) leaves: a narrow tree whose
 *         depth reaches the thousands (the deep-tree case of issue 7).
 *
 * Hash: splitmix64. The root's hash is splitmix64(1); child c of a node with
 * hash h has hash splitmix64(h ^ (c + 1) * 0x9E3779B97F4A7C15). The node count
 * is checked against a sequential traversal. Tasks = the nodes at depth 1 ..
 * CUTOFF (tests/test_examples_b.py recomputes them from the same rule).
 * Prints `uts(SHAPE, SIZE, WIDTH, CUTOFF): <nodes> nodes, depth <d> verified`.
 * Defaults: geo 7 3, deep 1000 4; CUTOFF = no cutoff. */
#include <string.h>
#include "common.h"

static const char *usage = "uts geo|deep [SIZE [WIDTH [CUTOFF]]]";
static int deep, size, width;
static long cutoff;

static unsigned long mix(unsigned long x) {
  x += 0x9E3779B97F4A7C15ul;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ul;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBul;
  return x ^ (x >> 31);
}

static int children(unsigned long h, int depth, int spine) {
  if (deep) return spine ? (depth < size - 1) + (int)(h % (unsigned long)(width + 1)) : 0;
  return depth < size ? (int)(h % (unsigned long)(2 * width + 1)) : 0;
}

/* In `deep`, child 0 of a spine node is the next spine node. */
static long count_seq(unsigned long h, int depth, int spine, int *maxd) {
  if (depth > *maxd) *maxd = depth;
  long n = 1;
  int k = children(h, depth, spine);
  for (int c = 0; c < k; c++)
    n += count_seq(mix(h ^ (unsigned long)(c + 1) * 0x9E3779B97F4A7C15ul), depth + 1,
                   deep && spine && c == 0 && depth < size - 1, maxd);
  return n;
}

static long count_par(unsigned long h, int depth, int spine) {
  long n = 1;
  int k = children(h, depth, spine);
  /* per-child counts: on the stack for a few children; a wide node's on the
   * heap (a deep spine of wide nodes would overflow a thread's stack) */
  long local[64];
  long *sub = k <= 64 ? local : malloc((size_t)k * sizeof *sub);
  if (!sub) abort();
  for (int c = 0; c < k; c++) {
    unsigned long hc = mix(h ^ (unsigned long)(c + 1) * 0x9E3779B97F4A7C15ul);
    int sc = deep && spine && c == 0 && depth < size - 1;
    if (depth < cutoff) {
#pragma omp task UNTIED shared(sub) firstprivate(hc, sc, c)
      sub[c] = count_par(hc, depth + 1, sc);
    } else {
      sub[c] = count_par(hc, depth + 1, sc);
    }
  }
#pragma omp taskwait
  for (int c = 0; c < k; c++) n += sub[c];
  if (sub != local) free(sub);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "geo") && strcmp(argv[1], "deep"))) {
    fprintf(stderr, "%s: shape must be geo or deep\nusage: %s\n", argv[0], usage);
    return 2;
  }
  deep = strcmp(argv[1], "deep") == 0;
  size = (int)arg_long(argc, argv, 2, deep ? 1000 : 7, 1, 1000000, usage);
  width = (int)arg_long(argc, argv, 3, deep ? 4 : 3, 0, 100000, usage);
  cutoff = arg_long(argc, argv, 4, 1L << 40, 0, 1L << 40, usage);
  unsigned long root = mix(1);
  long nodes = 0;
#pragma omp parallel
#pragma omp single
  nodes = count_par(root, 0, 1);
  int maxd = 0;
  long expect = count_seq(root, 0, 1, &maxd);
  if (nodes != expect) {
    fprintf(stderr, "uts: %ld nodes, sequential count %ld\n", nodes, expect);
    return 1;
  }
  printf("uts(%s, %d, %d, %ld): %ld nodes, depth %d verified\n", argv[1], size, width,
         cutoff == (1L << 40) ? -1 : cutoff, nodes, maxd);
  return 0;
}
