/* chain_order.c — the graph builder's slots put in chain order, compiled.
 *
 * Slots are sorted by (owner, row, sub) (grainlab/graph/slots.py,
 * _chain_order_parts). The numpy twin packs the three into one int64 key
 * and argsorts it: a comparison sort of 16 bytes per slot, and two fresh
 * slot-sized int64 arrays (at fib 32, 28M slots: 1.85 s). Owners and rows
 * are dense ids (owner < E, row < stride, both about the slot count), so two
 * stable counting sorts order them in O(slots + stride + E): by row first,
 * then by owner. The few slots one row opens (a fork and the fragment after
 * it, a team's forks) are put in sub order by an insertion sort between the
 * two, which is all sub needs: equal (owner, row) slots are only ever in
 * one row's run. The slots arrive as parts that are each mostly in row
 * order, so the row pass reads and writes in a few streams, not at random.
 * The result is `where` (a slot's place in chain order), which is what the
 * caller scatters every column with (gl_chain_scatter), so the permutation
 * itself is never kept. Positions are int32: the caller uses the twin past
 * 2^31 - 2 slots. Checked against the twin on random slots by
 * tests/test_chain_order.py. */
#include <stdint.h>

static inline int64_t id_at(const void *a, int wide, int64_t i) {
  return wide ? ((const int64_t *)a)[i] : (int64_t)((const int32_t *)a)[i];
}

/* How a key below `range` is cut into digits of at most `limit` buckets:
 * one digit (the key itself) when it fits, else equal digits of `bits`. */
static int digits(int64_t range, int64_t limit, int *bits) {
  if (range <= limit) {
    *bits = 0;
    return 1;
  }
  int per = 0, all = 0;
  while (((int64_t)2 << per) <= limit) per++;        /* 2^per <= limit */
  while (all < 63 && ((int64_t)1 << all) < range) all++;
  int passes = (all + per - 1) / per;
  *bits = (all + passes - 1) / passes;
  return passes;
}

/* One stable counting-sort pass by digit `d` of key[i] for i = src[j]
 * (src NULL: j itself). Writes dst[pos] = i, or, when `inverse`, dst[i] =
 * pos. Returns -2 when a key is outside [0, range). */
static int pass(int64_t n, const int32_t *src, const void *key, int wide, int64_t range,
                int bits, int d, int32_t *count, int32_t *dst, int inverse) {
  int64_t nb = bits ? ((int64_t)1 << bits) : range, mask = bits ? nb - 1 : -1;
  int shift = bits * d;
  for (int64_t b = 0; b < nb; b++) count[b] = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = id_at(key, wide, src ? src[j] : j);
    if (k < 0 || k >= range) return -2;
    count[(k >> shift) & mask]++;
  }
  int32_t at = 0;
  for (int64_t b = 0; b < nb; b++) {
    int32_t c = count[b];
    count[b] = at;
    at += c;
  }
  for (int64_t j = 0; j < n; j++) {
    int32_t i = src ? src[j] : (int32_t)j;
    int32_t pos = count[(id_at(key, wide, i) >> shift) & mask]++;
    if (inverse)
      dst[i] = pos;
    else
      dst[pos] = i;
  }
  return 0;
}

/* n slots: owner[i] in [0, E), row[i] in [0, stride) (int32 when wide == 0,
 * else int64), sub[i] any int32; keys (owner, row, sub) unique. Out:
 * where[i] = the place of slot i in (owner, row, sub) order. Scratch: perm
 * (n entries) and count (`limit` entries, limit >= 2; digits of the keys
 * take at most `limit` buckets). Returns 0; -2 when an owner or row is out
 * of range, -1 when n does not fit int32 positions. */
int gl_chain_order(int64_t n, const void *owner, const void *row, const int32_t *sub,
                   int64_t wide, int64_t E, int64_t stride, int64_t limit, int32_t *where,
                   int32_t *perm, int32_t *count) {
  if (n < 0 || n >= INT32_MAX || limit < 2) return -1;
  if (n == 0) return 0;
  int rbits, obits;
  int rpasses = digits(stride, limit, &rbits), opasses = digits(E, limit, &obits);
  int total = rpasses + opasses;
  /* passes alternate between perm and where so that the one before the last
   * (which writes where itself) leaves its order in perm */
  const int32_t *src = 0;
  int k = 0;
  for (int d = 0; d < rpasses; d++, k++) {
    int32_t *dst = (total - 2 - k) % 2 == 0 ? perm : where;
    if (pass(n, src, row, (int)wide, stride, rbits, d, count, dst, 0)) return -2;
    src = dst;
  }
  /* src is in row order (stable): within each row's run, sub order */
  int32_t *run = (int32_t *)src;
  int64_t start = 0, prev = id_at(row, (int)wide, run[0]);
  for (int64_t j = 1; j < n; j++) {
    int32_t x = run[j];
    int64_t r = id_at(row, (int)wide, x);
    if (r != prev) {
      start = j;
      prev = r;
      continue;
    }
    int32_t s = sub[x];
    int64_t m = j;
    while (m > start && sub[run[m - 1]] > s) {
      run[m] = run[m - 1];
      m--;
    }
    run[m] = x;
  }
  for (int d = 0; d < opasses; d++, k++) {
    int last = k == total - 1;
    int32_t *dst = last ? where : (total - 2 - k) % 2 == 0 ? perm : where;
    if (pass(n, src, owner, (int)wide, E, obits, d, count, dst, last)) return -2;
    src = dst;
  }
  return 0;
}

/* dst[where[i]] = src[i * step] for i < n, items of `size` bytes (1, 4 or
 * 8); step 0 writes one value everywhere (a part's constant field). The
 * numpy assignment would first widen where to int64: a temporary of 8 bytes
 * per slot per part. Returns -1 for another size. */
int gl_chain_scatter(int64_t n, const int32_t *where, const void *src, int64_t step,
                     void *dst, int64_t size) {
  if (size == 1) {
    const uint8_t *s = src;
    uint8_t *o = dst;
    for (int64_t i = 0; i < n; i++) o[where[i]] = s[i * step];
  } else if (size == 4) {
    const uint32_t *s = src;
    uint32_t *o = dst;
    for (int64_t i = 0; i < n; i++) o[where[i]] = s[i * step];
  } else if (size == 8) {
    const uint64_t *s = src;
    uint64_t *o = dst;
    for (int64_t i = 0; i < n; i++) o[where[i]] = s[i * step];
  } else {
    return -1;
  }
  return 0;
}
