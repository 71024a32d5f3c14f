/* strassen N [CUTOFF] — C = A * B for N x N matrices (N a power of two) by
 * Strassen's algorithm with a task per product, verified entry by entry
 * against the naive product.
 *
 * mul(n): if n <= CUTOFF, a plain i-k-j multiply in the current grain.
 * Otherwise the 7 Strassen products M1..M7 of n/2 x n/2 operands (sums of
 * quadrants formed inside each task) are 7 tasks, each calling mul(n/2); a
 * taskwait, then the quadrants of C are assembled from the M's.
 *
 * Tasks: with L = the number of sizes N, N/2, N/4, ... greater than CUTOFF,
 *   tasks = 7 + 7^2 + ... + 7^L = (7^(L+1) - 7) / 6.
 * Entries of A and B are small integers (-4..4), so every product is exact
 * in double and the check is equality. Defaults: N = 128, CUTOFF = 32 (L = 2,
 * 56 tasks). Output: `strassen(N, cutoff C): <checked> entries verified`. */
#include <string.h>
#include "common.h"

static const char *usage = "strassen N [CUTOFF]   (N a power of two in [1, 4096]; CUTOFF >= 1)";
static long cutoff;

/* out (h x h, contiguous) = X + s * Y, X/Y with leading dimension ld; Y may be NULL */
static void addm(int h, const double *X, const double *Y, int ld, double s, double *out) {
  for (int i = 0; i < h; i++)
    for (int j = 0; j < h; j++)
      out[i * h + j] = X[(size_t)i * ld + j] + (Y ? s * Y[(size_t)i * ld + j] : 0.0);
}

/* C = A * B, all n x n with leading dimension ld (A, B) and n (C). */
static void mul(int n, const double *a, int lda, const double *b, int ldb, double *c) {
  if (n <= cutoff) {
    memset(c, 0, sizeof(double) * n * n);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < n; k++) {
        double x = a[(size_t)i * lda + k];
        for (int j = 0; j < n; j++) c[i * n + j] += x * b[(size_t)k * ldb + j];
      }
    return;
  }
  int h = n / 2;
  const double *A11 = a, *A12 = a + h, *A21 = a + (size_t)h * lda, *A22 = A21 + h;
  const double *B11 = b, *B12 = b + h, *B21 = b + (size_t)h * ldb, *B22 = B21 + h;
  /* operand m of product p: (X + s Y) for A and for B */
  const double *ax[7] = {A11, A21, A11, A22, A11, A21, A12};
  const double *ay[7] = {A22, A22, NULL, NULL, A12, A11, A22};
  const double as[7] = {1, 1, 0, 0, 1, -1, -1};
  const double *bx[7] = {B11, B11, B12, B21, B22, B11, B21};
  const double *by[7] = {B22, NULL, B22, B11, NULL, B12, B22};
  const double bsg[7] = {1, 0, -1, -1, 0, 1, 1};
  double *M[7];
  for (int p = 0; p < 7; p++) {
    M[p] = malloc(sizeof(double) * h * h);
#pragma omp task UNTIED firstprivate(p) shared(ax, ay, as, bx, by, bsg, M)
    {
      double *ta = malloc(sizeof(double) * h * h), *tb = malloc(sizeof(double) * h * h);
      addm(h, ax[p], ay[p], lda, as[p], ta);
      addm(h, bx[p], by[p], ldb, bsg[p], tb);
      mul(h, ta, h, tb, h, M[p]);
      free(ta);
      free(tb);
    }
  }
#pragma omp taskwait
  for (int i = 0; i < h; i++)
    for (int j = 0; j < h; j++) {
      int x = i * h + j;
      c[(size_t)i * n + j] = M[0][x] + M[3][x] - M[4][x] + M[6][x];
      c[(size_t)i * n + j + h] = M[2][x] + M[4][x];
      c[(size_t)(i + h) * n + j] = M[1][x] + M[3][x];
      c[(size_t)(i + h) * n + j + h] = M[0][x] - M[1][x] + M[2][x] + M[5][x];
    }
  for (int p = 0; p < 7; p++) free(M[p]);
}

int main(int argc, char **argv) {
  int n = (int)arg_long(argc, argv, 1, 128, 1, 4096, usage);
  cutoff = arg_long(argc, argv, 2, 32, 1, 4096, usage);
  require_pow2_and_no_more(n, argc, argv, 1, 2, usage);
  size_t nn = (size_t)n * n;
  double *a = malloc(sizeof(double) * nn), *b = malloc(sizeof(double) * nn),
         *c = malloc(sizeof(double) * nn);
  unsigned long seed = 99;
  for (size_t i = 0; i < nn; i++) {
    seed = tiny_work(seed, 1);
    a[i] = (double)((long)(seed >> 32) % 9 - 4);
    seed = tiny_work(seed, 1);
    b[i] = (double)((long)(seed >> 32) % 9 - 4);
  }
#pragma omp parallel
#pragma omp single
  mul(n, a, n, b, n, c);
  /* every entry for N <= 256, else every 7th row and column */
  int step = n <= 256 ? 1 : 7;
  long checked = 0;
  for (int i = 0; i < n; i += step)
    for (int j = 0; j < n; j += step) {
      double s = 0;
      for (int k = 0; k < n; k++) s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
      if (s != c[(size_t)i * n + j]) {
        fprintf(stderr, "strassen(%d): C[%d][%d] = %g, expected %g: WRONG\n", n, i, j,
                c[(size_t)i * n + j], s);
        return 1;
      }
      checked++;
    }
  printf("strassen(%d, cutoff %ld): %ld entries verified\n", n, cutoff, checked);
  return 0;
}
