/* sparselu VARIANT NB BS — BOTS sparselu: LU factorization (no pivoting) of a
 * sparse matrix of NB x NB blocks of BS x BS doubles, with a task per block
 * operation, verified by multiplying L and U back.
 *
 * Sparsity (BOTS genmat, deterministic): block (i, j) is present unless
 *   (i < j and i % 3 != 0) or (i > j and j % 3 != 0) or i odd or j odd,
 * but the diagonal and the two off-diagonals (|i - j| == 1) are always present.
 * Values are pseudo-random in [-1, 1], with NB*BS added to the diagonal so that
 * the factorization without pivoting is stable.
 *
 * For each kk = 0..NB-1: lu0 of block (kk,kk) in the creating grain; a task
 * `fwd` per present block (kk, jj), jj > kk; a task `bdiv` per present block
 * (ii, kk), ii > kk; wait; a task `bmod` per pair of present (ii, kk) and
 * (kk, jj) — block (ii, jj) is allocated (fill-in) if absent; wait.
 *
 *   single: one thread creates every task inside `single` (taskwait between
 *           phases);
 *   for:    each phase's loop over ii (or jj) is a `for` work-shared by the
 *           team, each iteration creating its tasks (the loops' barriers wait
 *           for them); lu0 runs in a `single`.
 *
 * Tasks (both variants, any thread count): the sum over kk of
 * |fwd(kk)| + |bdiv(kk)| + |fwd(kk)| * |bdiv(kk)|, counted on the pattern with
 * its fill-in (examples/README.md; tests/test_examples_a.py recomputes it).
 * Output: `sparselu(VARIANT, NB, BS): <tasks> tasks, max |LU - A| <err> verified`. */
#include <math.h>
#include <string.h>
#include "common.h"

static const char *usage = "sparselu single|for NB BS   (NB in [1, 200], BS in [1, 256])";
static int nb, bs;
static double **A;   /* A[i * nb + j]: block or NULL */
static long ntasks;  /* tasks created, counted by the creators (printed) */

static double *blk(int i, int j) { return A[i * nb + j]; }

static void lu0(double *d) {
  for (int k = 0; k < bs; k++)
    for (int i = k + 1; i < bs; i++) {
      d[i * bs + k] /= d[k * bs + k];
      for (int j = k + 1; j < bs; j++) d[i * bs + j] -= d[i * bs + k] * d[k * bs + j];
    }
}

static void fwd(const double *d, double *col) {   /* col = L(d)^-1 col */
  for (int k = 0; k < bs; k++)
    for (int i = k + 1; i < bs; i++)
      for (int j = 0; j < bs; j++) col[i * bs + j] -= d[i * bs + k] * col[k * bs + j];
}

static void bdiv(const double *d, double *row) {  /* row = row U(d)^-1 */
  for (int i = 0; i < bs; i++)
    for (int k = 0; k < bs; k++) {
      row[i * bs + k] /= d[k * bs + k];
      for (int j = k + 1; j < bs; j++) row[i * bs + j] -= row[i * bs + k] * d[k * bs + j];
    }
}

static void bmod(const double *row, const double *col, double *inner) {
  for (int i = 0; i < bs; i++)
    for (int k = 0; k < bs; k++) {
      double r = row[i * bs + k];
      for (int j = 0; j < bs; j++) inner[i * bs + j] -= r * col[k * bs + j];
    }
}

static int present(int i, int j) {
  int null = 0;
  if (i < j && i % 3 != 0) null = 1;
  if (i > j && j % 3 != 0) null = 1;
  if (i % 2 == 1 || j % 2 == 1) null = 1;
  if (i == j || i == j - 1 || i - 1 == j) null = 0;
  return !null;
}

static void genmat(void) {
  unsigned long seed = 7;
  A = calloc((size_t)nb * nb, sizeof *A);
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) {
      if (!present(i, j)) continue;
      double *b = malloc(sizeof(double) * bs * bs);
      for (int x = 0; x < bs * bs; x++) {
        seed = tiny_work(seed, 1);
        b[x] = (double)(seed >> 11) / 4503599627370496.0 - 1.0;
      }
      if (i == j)
        for (int x = 0; x < bs; x++) b[x * bs + x] += nb * bs;
      A[i * nb + j] = b;
    }
}

static void fill_in(int ii, int jj) {
  if (!A[ii * nb + jj]) A[ii * nb + jj] = calloc((size_t)bs * bs, sizeof(double));
}

static void count(long k) {
#pragma omp atomic
  ntasks += k;
}

static void lu_single(void) {
#if GRAINLAB_UNTIED
  /* BOTS's shape: the whole factorization is one untied producer task, and
   * every task construct and taskwait is inside it lexically, so each is a
   * point where the producer may be suspended and resumed on another thread.
   * One task more than the tied build. */
#pragma omp task untied
#endif
  {
  for (int kk = 0; kk < nb; kk++) {
    lu0(blk(kk, kk));
    for (int jj = kk + 1; jj < nb; jj++)
      if (blk(kk, jj)) {
        count(1);
#pragma omp task UNTIED firstprivate(kk, jj)
        fwd(blk(kk, kk), blk(kk, jj));
      }
    for (int ii = kk + 1; ii < nb; ii++)
      if (blk(ii, kk)) {
        count(1);
#pragma omp task UNTIED firstprivate(kk, ii)
        bdiv(blk(kk, kk), blk(ii, kk));
      }
#pragma omp taskwait
    for (int ii = kk + 1; ii < nb; ii++)
      if (blk(ii, kk))
        for (int jj = kk + 1; jj < nb; jj++)
          if (blk(kk, jj)) {
            fill_in(ii, jj);
            count(1);
#pragma omp task UNTIED firstprivate(kk, ii, jj)
            bmod(blk(ii, kk), blk(kk, jj), blk(ii, jj));
          }
#pragma omp taskwait
  }
  }
}

/* Called by every thread of the team. */
static void lu_for(void) {
  for (int kk = 0; kk < nb; kk++) {
#pragma omp single
    lu0(blk(kk, kk));
#pragma omp for nowait
    for (int jj = kk + 1; jj < nb; jj++)
      if (blk(kk, jj)) {
        count(1);
#pragma omp task UNTIED firstprivate(kk, jj)
        fwd(blk(kk, kk), blk(kk, jj));
      }
#pragma omp for
    for (int ii = kk + 1; ii < nb; ii++)
      if (blk(ii, kk)) {
        count(1);
#pragma omp task UNTIED firstprivate(kk, ii)
        bdiv(blk(kk, kk), blk(ii, kk));
      }
    /* the barrier above has run every fwd and bdiv task */
#pragma omp for
    for (int ii = kk + 1; ii < nb; ii++)
      if (blk(ii, kk))
        for (int jj = kk + 1; jj < nb; jj++)
          if (blk(kk, jj)) {
            fill_in(ii, jj);   /* row ii is this iteration's alone */
            count(1);
#pragma omp task UNTIED firstprivate(kk, ii, jj)
            bmod(blk(ii, kk), blk(kk, jj), blk(ii, jj));
          }
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "single") != 0 && strcmp(argv[1], "for") != 0)) {
    fprintf(stderr, "%s: bad argument '%s' (expected single or for)\nusage: %s\n", argv[0],
            argc < 2 ? "" : argv[1], usage);
    return 2;
  }
  int use_for = strcmp(argv[1], "for") == 0;
  nb = (int)arg_long(argc, argv, 2, 8, 1, 200, usage);
  bs = (int)arg_long(argc, argv, 3, 16, 1, 256, usage);
  if (argc > 4) {
    fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
    return 2;
  }
  genmat();
  int n = nb * bs;
  /* a copy of the original blocks, for the check */
  double **orig = calloc((size_t)nb * nb, sizeof *orig);
  for (int x = 0; x < nb * nb; x++)
    if (A[x]) {
      orig[x] = malloc(sizeof(double) * bs * bs);
      memcpy(orig[x], A[x], sizeof(double) * bs * bs);
    }
  if (use_for) {
#pragma omp parallel
    lu_for();
  } else {
#pragma omp parallel
#pragma omp single
    lu_single();
  }
  /* L*U block by block: block (i, j) = sum over k <= min(i, j) of L(i,k) U(k,j),
   * where L(i,i) is the unit lower part of diagonal block i and U(j,j) its upper
   * part; compare with the original block (zero where it was absent). */
  double err = 0, *acc = malloc(sizeof(double) * bs * bs);
  double *lmask = malloc(sizeof(double) * bs * bs), *umask = malloc(sizeof(double) * bs * bs);
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) {
      memset(acc, 0, sizeof(double) * bs * bs);
      int m = i < j ? i : j;
      for (int k = 0; k <= m; k++) {
        const double *l = blk(i, k), *u = blk(k, j);
        if (!l || !u) continue;
        if (k == i) { /* unit lower part of the diagonal block */
          for (int x = 0; x < bs; x++)
            for (int z = 0; z < bs; z++)
              lmask[x * bs + z] = z < x ? l[x * bs + z] : z == x ? 1.0 : 0.0;
          l = lmask;
        }
        if (k == j) { /* upper part of the diagonal block */
          for (int z = 0; z < bs; z++)
            for (int y = 0; y < bs; y++) umask[z * bs + y] = y >= z ? u[z * bs + y] : 0.0;
          u = umask;
        }
        /* acc += l u (its own loop, not the kernel's bmod under test) */
        for (int x = 0; x < bs; x++)
          for (int z = 0; z < bs; z++) {
            double lv = l[x * bs + z];
            for (int y = 0; y < bs; y++) acc[x * bs + y] += lv * u[z * bs + y];
          }
      }
      const double *o = orig[i * nb + j];
      for (int x = 0; x < bs * bs; x++) {
        double e = fabs(acc[x] - (o ? o[x] : 0.0));
        if (e > err) err = e;
      }
    }
  /* entries are up to ~n (the diagonal), rounding grows with the sums' length */
  if (!(err <= 1e-14 * (double)n * n)) {
    fprintf(stderr, "sparselu(%s, %d, %d): max |LU - A| = %g: WRONG\n", argv[1], nb, bs, err);
    return 1;
  }
  printf("sparselu(%s, %d, %d): %ld tasks, max |LU - A| %.2g verified\n", argv[1], nb, bs,
         ntasks, err);
  return 0;
}
