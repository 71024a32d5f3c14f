/* parallelism.c — instantaneous parallelism's interval counts and per-grain
 * minima in two passes over the placed fragments, compiled.
 *
 * grainlab/metrics/instantaneous_parallelism.py's numpy twin (_counts, then
 * _grain_min twice) makes ~25 fragment-sized temporaries (ranges, the
 * de-duplicated pieces, masks, a sparse table's gathers): at 10^7 grains that
 * is gigabytes of fresh memory, which these VMs fault in at ~2 s per GiB.
 * Here the fragments are read where they are, in grain runs: pass 1 adds
 * every grain's interval ranges to two difference arrays (k + 1 entries),
 * pass 2 asks each fragment's range minimum of the counts (a sparse table
 * over blocks of 64 intervals: O(1) per range plus at most two partial
 * blocks) and keeps each grain's minimum. No scratch beyond the block table;
 * the same values as the twin, checked on random inputs by
 * tests/test_native_parallelism.py. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define BLOCK 64

/* A grain's fragments occupy positions [a, b) (a run); has a positive one? */
static int any_positive(const int64_t *start, const int64_t *end, int64_t a, int64_t b) {
  for (int64_t f = a; f < b; f++)
    if (end[f] > start[f]) return 1;
  return 0;
}

/* Range minimum over counts[0..k): blocks of BLOCK intervals and a sparse
 * table over the block minima (level j: minima of 2^j blocks). */
typedef struct {
  const int64_t *counts;
  int64_t k, nb, levels;
  int64_t *table;
} RangeMin;

static int range_min_init(RangeMin *r, const int64_t *counts, int64_t k) {
  r->counts = counts;
  r->k = k;
  r->nb = (k + BLOCK - 1) / BLOCK;
  r->levels = 1;
  while (((int64_t)1 << r->levels) <= r->nb) r->levels++;
  r->table = malloc((size_t)(r->levels * (r->nb ? r->nb : 1)) * sizeof(int64_t));
  if (!r->table) return -1;
  for (int64_t b = 0; b < r->nb; b++) {
    int64_t hi = (b + 1) * BLOCK < k ? (b + 1) * BLOCK : k, m = counts[b * BLOCK];
    for (int64_t i = b * BLOCK + 1; i < hi; i++)
      if (counts[i] < m) m = counts[i];
    r->table[b] = m;
  }
  for (int64_t j = 1; j < r->levels; j++) {
    int64_t half = (int64_t)1 << (j - 1);
    const int64_t *prev = r->table + (j - 1) * r->nb;
    int64_t *cur = r->table + j * r->nb;
    for (int64_t b = 0; b < r->nb; b++)
      cur[b] = b + half < r->nb && prev[b + half] < prev[b] ? prev[b + half] : prev[b];
  }
  return 0;
}

static int64_t scan_min(const int64_t *c, int64_t lo, int64_t hi) {
  int64_t m = c[lo];
  for (int64_t i = lo + 1; i <= hi; i++)
    if (c[i] < m) m = c[i];
  return m;
}

/* min(counts[lo..hi]), 0 <= lo <= hi < k */
static int64_t range_min(const RangeMin *r, int64_t lo, int64_t hi) {
  int64_t bl = lo / BLOCK, bh = hi / BLOCK;
  if (bh - bl <= 1) return scan_min(r->counts, lo, hi);
  int64_t m = scan_min(r->counts, lo, (bl + 1) * BLOCK - 1);
  int64_t m2 = scan_min(r->counts, bh * BLOCK, hi);
  if (m2 < m) m = m2;
  int64_t a = bl + 1, b = bh - 1, j = 0;      /* whole blocks a..b */
  while (((int64_t)1 << (j + 1)) <= b - a + 1) j++;
  const int64_t *t = r->table + j * r->nb;
  int64_t m3 = t[a] < t[b - ((int64_t)1 << j) + 1] ? t[a] : t[b - ((int64_t)1 << j) + 1];
  return m3 < m ? m3 : m;
}

/* The fragment's interval range [lo, hi] (the twin's, capped at k - 1). */
static void range_of(int64_t s, int64_t e, int64_t length, int64_t k, int64_t *lo,
                     int64_t *hi) {
  int64_t l = s / length, h;
  if (l > k - 1) l = k - 1;
  h = e > s ? (e - 1) / length : l;
  if (h > k - 1) h = k - 1;
  *lo = l;
  *hi = h;
}

/* F fragments placed at their earliest start, relative to the first one
 * (start >= 0, end >= start), each grain's fragments one run with
 * non-decreasing start; grain ids in [0, n). Intervals [i*length,
 * (i+1)*length), i < k. Zero-length fragments count nowhere; they only
 * place a grain that has no positive fragment.
 * Out: opt[k] (grains with any overlap with the interval, each grain once),
 * cons[k] (fragments covering the whole interval); grain_opt[n] /
 * grain_cons[n], which the caller filled with NaN: the minimum of the
 * counts over the intervals the grain's fragments overlap (NaN: no
 * fragment). diff: k + 1 scratch entries.
 * Returns 0; -1 out of memory; -2 a grain id out of range; -3 a grain's
 * fragments are not one run (the caller orders them and asks again). */
int gl_parallelism(int64_t F, const int64_t *grain, const int64_t *start,
                   const int64_t *end, int64_t length, int64_t k, int64_t n,
                   int64_t *opt, int64_t *cons, int64_t *diff, double *grain_opt,
                   double *grain_cons) {
  if (k <= 0 || length <= 0) return -2;
  /* pass 1: difference arrays. opt: a grain's positive fragments, each
   * from past the previous one's last interval (a grain counts once per
   * interval); cons: every interval a fragment covers whole. */
  for (int64_t i = 0; i < k; i++) opt[i] = 0;
  for (int64_t i = 0; i <= k; i++) diff[i] = 0;
  for (int64_t a = 0, b; a < F; a = b) {
    int64_t gid = grain[a];
    if (gid < 0 || gid >= n) return -2;
    for (b = a + 1; b < F && grain[b] == gid; b++)
      if (start[b] < start[b - 1]) return -3;
    int64_t prev_hi = -1;
    for (int64_t f = a; f < b; f++) {
      if (end[f] <= start[f]) continue;
      int64_t lo, hi;
      range_of(start[f], end[f], length, k, &lo, &hi);
      int64_t lo_d = lo > prev_hi + 1 ? lo : prev_hi + 1;
      if (lo_d <= hi) {
        opt[lo_d]++;          /* opt holds the difference array for now */
        if (hi + 1 < k) opt[hi + 1]--;
      }
      prev_hi = hi;
      int64_t clo = (start[f] + length - 1) / length, chi = end[f] / length - 1;
      if (clo <= chi) {
        diff[clo]++;
        diff[(chi < k - 1 ? chi : k - 1) + 1]--;
      }
    }
  }
  int64_t run_o = 0, run_c = 0;
  for (int64_t i = 0; i < k; i++) {
    run_o += opt[i];
    opt[i] = run_o;
    run_c += diff[i];
    cons[i] = run_c;
  }
  /* pass 2: each grain's minimum over its kept fragments' ranges */
  RangeMin ro, rc;
  if (range_min_init(&ro, opt, k)) return -1;
  if (range_min_init(&rc, cons, k)) {
    free(ro.table);
    return -1;
  }
  int rcode = 0;
  for (int64_t a = 0, b; a < F; a = b) {
    int64_t gid = grain[a];
    for (b = a + 1; b < F && grain[b] == gid; b++) {
    }
    if (!isnan(grain_opt[gid])) {     /* already placed: not one run */
      rcode = -3;
      break;
    }
    int positive = any_positive(start, end, a, b);
    int64_t mo = INT64_MAX, mc = INT64_MAX;
    for (int64_t f = a; f < b; f++) {
      if (positive && end[f] <= start[f]) continue;
      int64_t lo, hi;
      range_of(start[f], end[f], length, k, &lo, &hi);
      int64_t vo = range_min(&ro, lo, hi), vc = range_min(&rc, lo, hi);
      if (vo < mo) mo = vo;
      if (vc < mc) mc = vc;
    }
    grain_opt[gid] = (double)mo;
    grain_cons[gid] = (double)mc;
  }
  free(ro.table);
  free(rc.table);
  return rcode;
}

/* The "gap" interval candidate: the smallest positive distance between a
 * grain's placed start and another grain's placed end. G grains; their
 * starts and their ends each sorted as packed keys (value - min) << i_bits |
 * position, position the grain's place in id[] (the grain's id): no sorted
 * copies or gathers of the values. The starts are visited in time order,
 * so each search gallops on from the last one's place. For each start s:
 * the nearest end on its left (the last end < s: never its own, which is
 * >= s) and on its right (the first end >= s, the next one when that is
 * the grain's own): the numpy twin's searches
 * (instantaneous_parallelism._gap_numpy). Returns the gap, 0 when no
 * positive distance exists. */
#define END(i) ((ekey[i] >> i_bits) + emin)
int64_t gl_nearest_gap(int64_t G, const int64_t *skey, const int64_t *ekey, int64_t i_bits,
                       int64_t smin, int64_t emin, const int64_t *id) {
  const int64_t mask = ((int64_t)1 << i_bits) - 1;
  int64_t best = 0, i = 0, m = G;
  for (int64_t k = 0; k < G; k++) {
    int64_t s = (skey[k] >> i_bits) + smin, gid = id[skey[k] & mask];
    /* i: the first position with END >= s, galloping on from the last one */
    if (i < m && END(i) < s) {
      int64_t step = 1, a = i, b;             /* END(a) < s */
      while (a + step < m && END(a + step) < s) {
        a += step;
        step <<= 1;
      }
      b = a + step < m ? a + step : m;        /* END(b) >= s or b == m */
      while (b - a > 1) {
        int64_t mid = a + (b - a) / 2;
        if (END(mid) < s) a = mid; else b = mid;
      }
      i = b;
    }
    if (i > 0) {
      int64_t d = s - END(i - 1);
      if (d > 0 && (best == 0 || d < best)) best = d;
    }
    if (m > 0) {
      int64_t at = i < m - 1 ? i : m - 1;
      int64_t j = id[ekey[at] & mask] == gid ? i + 1 : i;
      if (j < m) {
        int64_t d = END(j) - s;
        if (d > 0 && (best == 0 || d < best)) best = d;
      }
    }
  }
  return best;
}
#undef END

/* The merge of grainlab.metrics.intervals.union_by_group over sorted packed
 * keys (_union_packed): key[i] = timeline start << i_bits | row, ascending,
 * where the timeline start is group << t_bits | (start - t0); the row's end
 * is end[row]. Consecutive keys whose start is at or before the running end
 * form one run. Writes each run's timeline start over key[u] (u <= i: the
 * keys already read) and its timeline end to run_end[u]; returns the runs.
 * The twin (_merge_sorted_numpy) makes four row-sized arrays for this. */
int64_t gl_union_sorted(int64_t n, int64_t *key, int64_t i_bits, int64_t t_bits,
                        const int64_t *end, int64_t t0, int64_t *run_end) {
  const int64_t row_mask = ((int64_t)1 << i_bits) - 1;
  const int64_t t_mask = ((int64_t)1 << t_bits) - 1;
  int64_t u = -1, cur_end = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = key[i] >> i_bits, row = key[i] & row_mask;
    int64_t e = (v & ~t_mask) + (end[row] - t0);
    if (u < 0 || v > cur_end) {
      if (u >= 0) run_end[u] = cur_end;
      u++;
      key[u] = v;
      cur_end = e;
    } else if (e > cur_end) {
      cur_end = e;
    }
  }
  if (u >= 0) run_end[u] = cur_end;
  return u + 1;
}
