/* stencil_depend [NB [BS [SWEEPS]]] — a blocked Gauss-Seidel sweep over an
 * (NB*BS) x (NB*BS) grid, SWEEPS times, with one task per block per sweep and
 * `depend` clauses instead of barriers: a block's task reads its four
 * neighbour blocks (in) and updates itself (inout), so the runtime orders the
 * tasks exactly as the sequential sweep would (a wavefront) and the result is
 * bit-identical to it. Created by one thread (single).
 *
 * Tasks = NB * NB * SWEEPS. Prints `stencil_depend(NB, BS, SWEEPS): checksum
 * <sum> verified` (compared with the sequential sweep). Defaults 8 32 4. */
#include "common.h"

static const char *usage = "stencil_depend [NB [BS [SWEEPS]]]";
static int nb, bs, n;

static void update_block(double *g, int bi, int bj) {
  for (int i = bi * bs; i < (bi + 1) * bs; i++)
    for (int j = bj * bs; j < (bj + 1) * bs; j++) {
      double up = i > 0 ? g[(i - 1) * n + j] : 1.0, down = i < n - 1 ? g[(i + 1) * n + j] : 0.0;
      double left = j > 0 ? g[i * n + j - 1] : 0.5, right = j < n - 1 ? g[i * n + j + 1] : 0.0;
      g[i * n + j] = 0.25 * (up + down + left + right);
    }
}

int main(int argc, char **argv) {
  nb = (int)arg_long(argc, argv, 1, 8, 1, 1000, usage);
  bs = (int)arg_long(argc, argv, 2, 32, 1, 4096, usage);
  int sweeps = (int)arg_long(argc, argv, 3, 4, 1, 100000, usage);
  n = nb * bs;
  double *g = calloc((size_t)n * n, sizeof *g), *r = calloc((size_t)n * n, sizeof *r);
  /* one dependence token per block */
  char *blk = calloc((size_t)nb * nb, 1);
  if (!g || !r || !blk) return 1;
#pragma omp parallel
#pragma omp single
  for (int s = 0; s < sweeps; s++)
    for (int bi = 0; bi < nb; bi++)
      for (int bj = 0; bj < nb; bj++) {
        char *me = &blk[bi * nb + bj];
        char *up = bi > 0 ? &blk[(bi - 1) * nb + bj] : me;
        char *down = bi < nb - 1 ? &blk[(bi + 1) * nb + bj] : me;
        char *left = bj > 0 ? &blk[bi * nb + bj - 1] : me;
        char *right = bj < nb - 1 ? &blk[bi * nb + bj + 1] : me;
#pragma omp task depend(in: *up, *down, *left, *right) depend(inout: *me) firstprivate(bi, bj)
        update_block(g, bi, bj);
      }
  for (int s = 0; s < sweeps; s++)
    for (int bi = 0; bi < nb; bi++)
      for (int bj = 0; bj < nb; bj++) update_block(r, bi, bj);
  double sum = 0;
  for (long k = 0; k < (long)n * n; k++) {
    if (g[k] != r[k]) {
      fprintf(stderr, "stencil_depend: cell %ld is %.17g, expected %.17g\n", k, g[k], r[k]);
      return 1;
    }
    sum += g[k];
  }
  printf("stencil_depend(%d, %d, %d): checksum %.10f verified\n", nb, bs, sweeps, sum);
  free(g), free(r), free(blk);
  return 0;
}
