/* sparselu_depend [NB [BS]] — LU factorisation of a sparse blocked matrix
 * (NB x NB blocks of BS x BS doubles; BOTS sparselu's sparsity pattern and
 * fill-in), with `depend` clauses instead of taskwaits: per step kk, lu0 on
 * the diagonal block (inout), fwd on row blocks and bdiv on column blocks
 * (in: diagonal, inout: own block), bmod on the trailing blocks (in: column
 * and row block, inout: own; a missing block is allocated first — fill-in).
 * One thread creates every task (single); the runtime orders them.
 *
 * Block (i, j) is present at the start iff
 *   i == j or |i - j| == 1, or (i and j even and (i < j ? i % 3 == 0 : j % 3 == 0)).
 * Tasks = sum over kk of 1 + |row blocks| + |column blocks| + |row| x |column|
 * with fill-in applied as the steps go (tests/test_examples_b.py recomputes
 * it). Prints `sparselu_depend(NB, BS): checksum <sum> verified` (compared,
 * block by block, with the same factorisation run sequentially). Defaults 12 16. */
#include <math.h>
#include <string.h>
#include "common.h"

static const char *usage = "sparselu_depend [NB [BS]]";
static int nb, bs;

static int present(int i, int j) {
  if (i == j || i - j == 1 || j - i == 1) return 1;
  if (i % 2 || j % 2) return 0;
  return i < j ? i % 3 == 0 : j % 3 == 0;
}

static double *new_block(int i, int j, int fill) {
  double *b = malloc((size_t)bs * bs * sizeof *b);
  unsigned long s = (unsigned long)(i * 7919 + j * 104729 + 1);
  for (int k = 0; k < bs * bs; k++) {
    s = s * 6364136223846793005ul + 1442695040888963407ul;
    b[k] = fill ? 0.0 : (double)((s >> 40) % 1000) / 1000.0 + (k % (bs + 1) == 0 && i == j ? bs : 0);
  }
  return b;
}

static void lu0(double *d) {
  for (int k = 0; k < bs; k++)
    for (int i = k + 1; i < bs; i++) {
      d[i * bs + k] /= d[k * bs + k];
      for (int j = k + 1; j < bs; j++) d[i * bs + j] -= d[i * bs + k] * d[k * bs + j];
    }
}
static void fwd(const double *d, double *c) {
  for (int k = 0; k < bs; k++)
    for (int i = k + 1; i < bs; i++)
      for (int j = 0; j < bs; j++) c[i * bs + j] -= d[i * bs + k] * c[k * bs + j];
}
static void bdiv(const double *d, double *r) {
  for (int i = 0; i < bs; i++)
    for (int k = 0; k < bs; k++) {
      r[i * bs + k] /= d[k * bs + k];
      for (int j = k + 1; j < bs; j++) r[i * bs + j] -= r[i * bs + k] * d[k * bs + j];
    }
}
static void bmod(const double *r, const double *c, double *t) {
  for (int i = 0; i < bs; i++)
    for (int j = 0; j < bs; j++)
      for (int k = 0; k < bs; k++) t[i * bs + j] -= r[i * bs + k] * c[k * bs + j];
}

static double **make(void) {
  double **a = calloc((size_t)nb * nb, sizeof *a);
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) a[i * nb + j] = present(i, j) ? new_block(i, j, 0) : 0;
  return a;
}

static long factor(double **a) {
  long tasks = 0;
#pragma omp parallel
#pragma omp single
  for (int kk = 0; kk < nb; kk++) {
    double *d = a[kk * nb + kk];
#pragma omp task depend(inout: a[kk * nb + kk]) firstprivate(d)
    lu0(d);
    tasks++;
    for (int j = kk + 1; j < nb; j++)
      if (a[kk * nb + j]) {
        double *c = a[kk * nb + j];
#pragma omp task depend(in: a[kk * nb + kk]) depend(inout: a[kk * nb + j]) firstprivate(d, c)
        fwd(d, c);
        tasks++;
      }
    for (int i = kk + 1; i < nb; i++)
      if (a[i * nb + kk]) {
        double *r = a[i * nb + kk];
#pragma omp task depend(in: a[kk * nb + kk]) depend(inout: a[i * nb + kk]) firstprivate(d, r)
        bdiv(d, r);
        tasks++;
      }
    for (int i = kk + 1; i < nb; i++)
      if (a[i * nb + kk])
        for (int j = kk + 1; j < nb; j++)
          if (a[kk * nb + j]) {
            if (!a[i * nb + j]) a[i * nb + j] = new_block(i, j, 1); /* fill-in */
            double *r = a[i * nb + kk], *c = a[kk * nb + j], *t = a[i * nb + j];
#pragma omp task depend(in: a[i * nb + kk], a[kk * nb + j]) depend(inout: a[i * nb + j]) firstprivate(r, c, t)
            bmod(r, c, t);
            tasks++;
          }
  }
  return tasks;
}

/* The same steps in program order, no OpenMP: the reference. */
static void factor_sequential(double **a) {
  for (int kk = 0; kk < nb; kk++) {
    double *d = a[kk * nb + kk];
    lu0(d);
    for (int j = kk + 1; j < nb; j++)
      if (a[kk * nb + j]) fwd(d, a[kk * nb + j]);
    for (int i = kk + 1; i < nb; i++)
      if (a[i * nb + kk]) bdiv(d, a[i * nb + kk]);
    for (int i = kk + 1; i < nb; i++)
      if (a[i * nb + kk])
        for (int j = kk + 1; j < nb; j++)
          if (a[kk * nb + j]) {
            if (!a[i * nb + j]) a[i * nb + j] = new_block(i, j, 1);
            bmod(a[i * nb + kk], a[kk * nb + j], a[i * nb + j]);
          }
  }
}

int main(int argc, char **argv) {
  nb = (int)arg_long(argc, argv, 1, 12, 1, 500, usage);
  bs = (int)arg_long(argc, argv, 2, 16, 1, 512, usage);
  double **a = make(), **r = make();
  long tasks = factor(a);
  factor_sequential(r);
  double sum = 0;
  for (int k = 0; k < nb * nb; k++) {
    if (!a[k] != !r[k]) {
      fprintf(stderr, "sparselu_depend: block %d present in one result only\n", k);
      return 1;
    }
    if (!a[k]) continue;
    for (int e = 0; e < bs * bs; e++) {
      if (fabs(a[k][e] - r[k][e]) > 1e-9 * (1 + fabs(r[k][e]))) {
        fprintf(stderr, "sparselu_depend: block %d element %d is %g, expected %g\n", k, e,
                a[k][e], r[k][e]);
        return 1;
      }
      sum += a[k][e];
    }
  }
  printf("sparselu_depend(%d, %d): %ld tasks, checksum %.6f verified\n", nb, bs, tasks, sum);
  return 0;
}
