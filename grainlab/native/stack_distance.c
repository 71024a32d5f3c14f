/* stack_distance.c — reuse (stack) distances in bytes, for `grainlab krd`
 * (grainlab/metrics/krd.py; docs/locality.md).
 *
 * The distance of an access is the number of bytes of distinct blocks used
 * since the previous access to the same block (A B A: size(B); A A: 0); a
 * first use has none (INF, written as -1). O(n log n): a Fenwick tree over
 * access positions holds, at each block's latest use, that block's size
 * (and 0 elsewhere), so the bytes of distinct blocks used after position p
 * are the running total minus the prefix sum up to p. */
#include <stdint.h>
#include <stdlib.h>

/* n accesses in time order: block[i] in [0, nblocks), bytes[i] its size then.
 * Out: dist[i] (-1 for a first use). Returns 0; -1 when out of memory; -2
 * when a block id is out of range (nothing written out of bounds). */
int gl_stack_distances(int64_t n, int64_t nblocks, const int64_t *block, const int64_t *bytes,
                       int64_t *dist) {
  for (int64_t i = 0; i < n; i++)
    if (block[i] < 0 || block[i] >= nblocks) return -2;
  int64_t *tree = calloc((size_t)n + 1, sizeof *tree);
  int64_t *last = malloc((size_t)(nblocks ? nblocks : 1) * sizeof *last);
  int64_t *weight = malloc((size_t)(nblocks ? nblocks : 1) * sizeof *weight);
  if (!tree || !last || !weight) {
    free(tree), free(last), free(weight);
    return -1;
  }
  for (int64_t b = 0; b < nblocks; b++) last[b] = -1;
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t b = block[i], p = last[b];
    if (p < 0) {
      dist[i] = -1;
    } else {
      int64_t upto = 0; /* sum of positions 0..p */
      for (int64_t k = p + 1; k > 0; k -= k & -k) upto += tree[k];
      dist[i] = total - upto;
      for (int64_t k = p + 1; k <= n; k += k & -k) tree[k] -= weight[b];
      total -= weight[b];
    }
    for (int64_t k = i + 1; k <= n; k += k & -k) tree[k] += bytes[i];
    total += bytes[i];
    last[b] = i;
    weight[b] = bytes[i];
  }
  free(tree), free(last), free(weight);
  return 0;
}
