/* stack_distance.c — reuse (stack) distances in bytes, for `grainlab krd`
 * (grainlab/metrics/krd.py; docs/locality.md).
 *
 * The distance of an access is the number of bytes of distinct blocks used
 * since the previous access to the same block (A B A: size(B); A A: 0); a
 * first use has none (INF, written as -1). O(n log n): a Fenwick tree over
 * *slots* holds, at each block's latest use, that block's size (0 elsewhere),
 * so the bytes of distinct blocks used since slot p are the running total
 * minus the prefix sum up to p. A use takes the next slot; when the slots
 * run out, the live ones (one per block seen) are renumbered in order and
 * the tree rebuilt in O(slots). With twice as many slots as blocks that
 * happens at most once every `blocks` accesses (amortized O(1)), and the
 * tree stays the size of the working set, not of the trace: at 2^18 blocks
 * 4 MiB, which the caches hold (over one slot per access, 10^7 accesses
 * took 80 MB of tree and ~3x the time, a cache miss per level). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t *tree;       /* Fenwick tree, 1-based, cap entries */
  int64_t *block_at;   /* slot -> block using it (-1: free) */
  int64_t *slot_of;    /* block -> its slot (-1: not seen) */
  int64_t *weight;     /* block -> bytes at its latest use */
  int64_t cap, next;
} slots;

static void fen_add(slots *s, int64_t slot, int64_t v) {
  for (int64_t k = slot + 1; k <= s->cap; k += k & -k) s->tree[k] += v;
}

static int64_t fen_prefix(const slots *s, int64_t slot) { /* sum of slots 0..slot */
  int64_t sum = 0;
  for (int64_t k = slot + 1; k > 0; k -= k & -k) sum += s->tree[k];
  return sum;
}

/* Renumber the live slots 0, 1, ... in order; rebuild the tree linearly. */
static void compact(slots *s) {
  int64_t live = 0;
  memset(s->tree, 0, (size_t)(s->cap + 1) * sizeof *s->tree);
  for (int64_t k = 0; k < s->next; k++) {
    int64_t b = s->block_at[k];
    if (b < 0) continue;
    s->block_at[live] = b;
    s->slot_of[b] = live;
    s->tree[live + 1] = s->weight[b];
    live++;
  }
  for (int64_t k = live; k < s->next; k++) s->block_at[k] = -1;
  for (int64_t k = 1; k <= s->cap; k++) {
    int64_t up = k + (k & -k);
    if (up <= s->cap) s->tree[up] += s->tree[k];
  }
  s->next = live;
}

/* n accesses in time order: block[i] in [0, nblocks), bytes[i] its size then.
 * Out: dist[i] (-1 for a first use). Returns 0; -1 when out of memory; -2
 * when a block id is out of range (nothing written out of bounds). */
int gl_stack_distances(int64_t n, int64_t nblocks, const int64_t *block, const int64_t *bytes,
                       int64_t *dist) {
  for (int64_t i = 0; i < n; i++)
    if (block[i] < 0 || block[i] >= nblocks) return -2;
  slots s = {0};
  s.cap = 2 * nblocks + 64;
  size_t nb = (size_t)(nblocks ? nblocks : 1);
  s.tree = calloc((size_t)s.cap + 1, sizeof *s.tree);
  s.block_at = malloc((size_t)s.cap * sizeof *s.block_at);
  s.slot_of = malloc(nb * sizeof *s.slot_of);
  s.weight = malloc(nb * sizeof *s.weight);
  int ok = s.tree && s.block_at && s.slot_of && s.weight;
  if (ok) {
    for (int64_t k = 0; k < s.cap; k++) s.block_at[k] = -1;
    for (int64_t b = 0; b < nblocks; b++) s.slot_of[b] = -1;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t b = block[i], p = s.slot_of[b];
      if (p < 0) {
        dist[i] = -1;
      } else {
        dist[i] = total - fen_prefix(&s, p);
        fen_add(&s, p, -s.weight[b]);
        total -= s.weight[b];
        s.block_at[p] = -1;
      }
      if (s.next == s.cap) compact(&s);
      int64_t slot = s.next++;
      fen_add(&s, slot, bytes[i]);
      total += bytes[i];
      s.slot_of[b] = slot;
      s.block_at[slot] = b;
      s.weight[b] = bytes[i];
    }
  }
  free(s.tree), free(s.block_at), free(s.slot_of), free(s.weight);
  return ok ? 0 : -1;
}
