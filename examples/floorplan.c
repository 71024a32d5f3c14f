/* floorplan [N [K [CUTOFF]]] — branch and bound, in the manner of BOTS
 * floorplan: place N cells in a row, each in one of K shapes (width x height,
 * from a fixed random stream), so that the bounding box (sum of widths x
 * largest height) has the least area. The search tree has a level per cell;
 * above depth CUTOFF every shape tried is a task. A branch is pruned when its
 * lower bound (widths so far + the narrowest shapes of the cells left, times
 * the tallest height so far or the least any remaining cell must have) is no
 * better than the best area found so far — a bound shared by all tasks, so
 * how much is pruned, and the task count, depend on the schedule.
 *
 * Always: K <= tasks <= K + K^2 + ... + K^CUTOFF (the root's K children are
 * created before any area is known; nothing more than the unpruned tree).
 * The optimum is checked against an exhaustive sequential search. Prints
 * `floorplan(N, K, CUTOFF): best area <a> verified`. Defaults 10 4 4. */
#include "common.h"

static const char *usage = "floorplan [N [K [CUTOFF]]]";
static int n, k, cutoff;
static long w[64][16], h[64][16], restw[65], resth[65];
static long best;

static void try_best(long area) {
  long cur = __atomic_load_n(&best, __ATOMIC_RELAXED);
  while (area < cur &&
         !__atomic_compare_exchange_n(&best, &cur, area, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void search(int i, long sumw, long maxh) {
  if (i == n) {
    try_best(sumw * maxh);
    return;
  }
  for (int s = 0; s < k; s++) {
    long sw = sumw + w[i][s], mh = maxh > h[i][s] ? maxh : h[i][s];
    long bound = (sw + restw[i + 1]) * (mh > resth[i + 1] ? mh : resth[i + 1]);
    if (bound >= __atomic_load_n(&best, __ATOMIC_RELAXED)) continue; /* pruned */
    tiny_work((unsigned long)(i * 16 + s), 4);
    if (i < cutoff) {
#pragma omp task UNTIED firstprivate(sw, mh, i)
      search(i + 1, sw, mh);
    } else {
      search(i + 1, sw, mh);
    }
  }
#pragma omp taskwait
}

static long exhaustive(int i, long sumw, long maxh) {
  if (i == n) return sumw * maxh;
  long m = -1;
  for (int s = 0; s < k; s++) {
    long a = exhaustive(i + 1, sumw + w[i][s], maxh > h[i][s] ? maxh : h[i][s]);
    if (m < 0 || a < m) m = a;
  }
  return m;
}

int main(int argc, char **argv) {
  n = (int)arg_long(argc, argv, 1, 10, 1, 64, usage);
  k = (int)arg_long(argc, argv, 2, 4, 1, 16, usage);
  cutoff = (int)arg_long(argc, argv, 3, 4, 0, 64, usage);
  unsigned long s = 2024;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k; j++) {
      s = s * 6364136223846793005ul + 1442695040888963407ul;
      w[i][j] = 1 + (long)((s >> 33) % 9);
      h[i][j] = 1 + (long)((s >> 45) % 9);
    }
  restw[n] = resth[n] = 0;
  for (int i = n - 1; i >= 0; i--) {
    long mw = w[i][0], mh = h[i][0];
    for (int j = 1; j < k; j++) mw = w[i][j] < mw ? w[i][j] : mw, mh = h[i][j] < mh ? h[i][j] : mh;
    restw[i] = restw[i + 1] + mw;
    resth[i] = resth[i + 1] > mh ? resth[i + 1] : mh;
  }
  best = 1L << 62;
#pragma omp parallel
#pragma omp single
  search(0, 0, 0);
  long expect = exhaustive(0, 0, 0);
  if (best != expect) {
    fprintf(stderr, "floorplan: best area %ld, exhaustive search %ld\n", best, expect);
    return 1;
  }
  printf("floorplan(%d, %d, %d): best area %ld verified\n", n, k, cutoff, best);
  return 0;
}
