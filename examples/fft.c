/* fft N [CUTOFF] — recursive radix-2 decimation-in-time FFT of N pseudo-random
 * complex numbers (N a power of two), with a task per half-size transform
 * above a size cutoff; verified against a naive DFT.
 *
 * fft(n): if n == 1, copy. Otherwise transform the even- and odd-indexed
 * halves (n/2 each) — as two tasks then a taskwait when n > CUTOFF, serially
 * otherwise — and combine them with the twiddle factors in the current grain.
 *
 * Tasks: with L = the number of sizes N, N/2, N/4, ... (all >= 2) greater than
 * CUTOFF, tasks = 2 + 4 + ... + 2^L = 2^(L+1) - 2.
 * The check compares every output bin with the naive DFT sum for N <= 1024,
 * else 16 bins spread over the spectrum, within 1e-14 * N * (log2 N + 1).
 * Defaults: N = 16384, CUTOFF = 256 (L = 6, 126 tasks).
 * Output: `fft(N, cutoff C): <bins> bins verified, max error <e>`. */
#include <complex.h>
#include <math.h>
#include "common.h"

static const char *usage = "fft N [CUTOFF]   (N a power of two in [1, 2^24]; CUTOFF >= 1)";
static long cutoff, N;
static double complex *W; /* W[m] = exp(-2 pi i m / N), m < N/2 */

/* a * b without the C99 Annex G inf/nan fix-ups (__muldc3): plain arithmetic */
static inline double complex cmul(double complex a, double complex b) {
  double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
  return (ar * br - ai * bi) + (ar * bi + ai * br) * I;
}

/* out[0..n) = DFT of in[0], in[stride], in[2 stride], ... */
static void fft(const double complex *in, double complex *out, long n, long stride) {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  long h = n / 2;
  if (n > cutoff) {
#pragma omp task UNTIED
    fft(in, out, h, 2 * stride);
#pragma omp task UNTIED
    fft(in + stride, out + h, h, 2 * stride);
#pragma omp taskwait
  } else {
    fft(in, out, h, 2 * stride);
    fft(in + stride, out + h, h, 2 * stride);
  }
  for (long k = 0; k < h; k++) {
    double complex t = cmul(W[k * (N / n)], out[k + h]);
    double complex e = out[k];
    out[k] = e + t;
    out[k + h] = e - t;
  }
}

/* exp(-2 pi i m / n) for 0 <= m < n, from the table */
static double complex root(long m, long n) {
  return n == 1 || m < n / 2 ? W[m] : -W[m - n / 2];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 16384, 1, 1L << 24, usage);
  cutoff = arg_long(argc, argv, 2, 256, 1, 1L << 24, usage);
  require_pow2_and_no_more(n, argc, argv, 1, 2, usage);
  double complex *x = malloc(sizeof *x * n), *y = malloc(sizeof *y * n);
  unsigned long seed = 5;
  for (long i = 0; i < n; i++) {
    seed = tiny_work(seed, 1);
    double re = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    seed = tiny_work(seed, 1);
    double im = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
    x[i] = re + im * I;
  }
  N = n;
  W = malloc(sizeof *W * (n / 2 + 1));
  for (long m = 0; m < n / 2 + 1; m++) W[m] = cexp(-2.0 * M_PI * I * (double)m / (double)n);
#pragma omp parallel
#pragma omp single
  fft(x, y, n, 1);
  long bins = n <= 1024 ? n : 16, step = n / bins;
  double err = 0;
  for (long b = 0; b < bins; b++) {
    long k = b * step + (b * 7) % step; /* spread, not only multiples of step */
    double complex s = 0;
    /* w^j for w = exp(-2 pi i k / n): from the table every 256 steps (m = k j
     * mod n), by multiplication in between (sequential, cache friendly) */
    double complex w = root(k, n), cur = 1;
    for (long j = 0, m = 0; j < n; j++) {
      if ((j & 255) == 0) cur = root(m, n);
      s += cmul(x[j], cur);
      cur = cmul(cur, w);
      m += k;
      if (m >= n) m -= n;
    }
    double e = cabs(s - y[k]);
    if (e > err) err = e;
  }
  double tol = 1e-14 * (double)n * (log2((double)n) + 1); /* rounding grows ~ N log N */
  if (!(err <= tol)) {
    fprintf(stderr, "fft(%ld): max error %g against the naive DFT: WRONG\n", n, err);
    return 1;
  }
  printf("fft(%ld, cutoff %ld): %ld bins verified, max error %.2g\n", n, cutoff, bins, err);
  return 0;
}
