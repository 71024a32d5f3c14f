/* forest.c — the task table's two tree walks, compiled, each O(n) with no
 * sort (grainlab/tables/tasks.py, grainlab/tables/identity.py).
 *
 * gl_forest_levels: level and identity-string length of every node of an
 * identity forest (Names.from_tree). The numpy twin (_levels_numpy, after
 * identity._step_length) sorts the nodes by parent and walks down from the
 * roots a level at a time; here each node walks up to the first node whose
 * level is known, counting steps and summing step lengths (computed on the
 * way, as _step_length does), and a second walk up the same path writes them.
 * Each node is written once, so the walks cost O(n) in all, whatever the
 * depth, with no scratch memory.
 *
 * gl_child_rank: the rank of every explicit task among its siblings in
 * creation order (tasks._child_rank). When every parent's children come in
 * creation order (their tsc never decreases in row order: a tied parent
 * creates them on its thread one after the other) the rank is a running count
 * per parent; otherwise (an untied parent that moved between threads) the
 * kernel says so and the caller sorts.
 *
 * The same values as the twins, checked on random inputs by
 * tests/test_task_table_rewrite.py. */
#include <stdint.h>

#define UNSEEN (-2)
#define BUSY (-3)

/* Tags as grainlab/tables/identity.py numbers them. */
enum { ROOT, EXPLICIT, PARALLEL, IMPLICIT, WORKSHARE, TASKLOOP, FIRST, UNKNOWN, NTAGS };
static const int64_t PREFIX_LEN[NTAGS] = {0, 1, 2, 2, 2, 2, 1, 1};  /* "", ".", ".p", ... */

/* identity._digits: 1 + #{k in 1..18: 10^k <= |x|'} + (x < 0), |x|' = -(x + 1)
 * for x < 0 */
static int64_t digits(int64_t x) {
  uint64_t mag = x < 0 ? (uint64_t)(-(x + 1)) : (uint64_t)x;
  int64_t d = 1;
  while (mag >= 10) {
    mag /= 10;
    d++;
  }
  return d + (x < 0);
}

/* identity._step_length of one step; tag in [-NTAGS, NTAGS) (a negative tag
 * counts from the end, as numpy's index does) */
static int64_t step_length(int8_t tag, int64_t a, int64_t b) {
  if (tag == UNKNOWN) return 1;
  int64_t n = PREFIX_LEN[tag < 0 ? tag + NTAGS : tag] + digits(a);
  return tag == IMPLICIT ? n + 2 + digits(b) : n;
}

/* parent[i] (< 0: none) and step (tag[i], a[i], b[i]) -> level[i] (-1: no
 * root reaches it; a root: a node without parent whose tag is ROOT or
 * UNKNOWN), length[i] (0 then). Returns 1 (nothing written) when a tag is out
 * of [-NTAGS, NTAGS). */
int gl_forest_levels(int64_t n, const int64_t *parent, const int8_t *tag, const int64_t *a,
                     const int64_t *b, int64_t *level, int64_t *length) {
  for (int64_t i = 0; i < n; i++)
    if (tag[i] < -NTAGS || tag[i] >= NTAGS) return 1;
  for (int64_t i = 0; i < n; i++) level[i] = UNSEEN;
  for (int64_t i = 0; i < n; i++) {
    if (level[i] != UNSEEN) continue;
    /* walk 1: up to the first node not unseen, marking the path busy (a
     * node's length holds its step's until walk 2) */
    int64_t steps = 0, sum = 0, cur = i, top = i;
    while (cur >= 0 && cur < n && level[cur] == UNSEEN) {
      level[cur] = BUSY;
      length[cur] = step_length(tag[cur], a[cur], b[cur]);
      sum += length[cur];
      steps++;
      top = cur;
      cur = parent[cur];
    }
    /* the level and length above the path's top (level -2: the path has no
     * identity) */
    int64_t base_level = -2, base_length = 0;
    if (cur < 0) {
      /* the path's top has no parent: a root starts at level 0 */
      if (tag[top] == ROOT || tag[top] == UNKNOWN) base_level = -1;
    } else if (cur < n && level[cur] >= 0) {
      base_level = level[cur];
      base_length = length[cur];
    }   /* else a parent out of range, without identity, or a cycle */
    /* walk 2: the same path, bottom up */
    cur = i;
    for (int64_t s = steps; s > 0; s--) {
      int64_t step = length[cur];
      if (base_level >= -1) {
        level[cur] = base_level + s;
        length[cur] = base_length + sum;
        sum -= step;
      } else {
        level[cur] = -1;
        length[cur] = 0;
      }
      cur = parent[cur];
    }
  }
  return 0;
}

/* parent[i] in [-1, m) for n rows (n < 2^31), key[i] their creation tsc:
 * rank[i] = number of earlier rows with the same parent; count and last
 * (m + 1 entries each: a parent's children so far, its last child's row)
 * are scratch. Returns 1 (rank incomplete) when some parent's keys decrease
 * in row order, 2 when a parent is out of range, else 0. */
int gl_child_rank(int64_t n, const int64_t *parent, const uint64_t *key, int64_t m,
                  int64_t *rank, int32_t *count, int32_t *last) {
  for (int64_t p = 0; p <= m; p++) count[p] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = parent[i] + 1;
    if (p < 0 || p > m) return 2;
    int32_t c = count[p];
    if (c && key[i] < key[last[p]]) return 1;
    rank[i] = c;
    count[p] = c + 1;
    last[p] = (int32_t)i;
  }
  return 0;
}
