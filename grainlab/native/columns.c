/* columns.c — column primitives of grainlab/graph/columns.py, compiled.
 *
 * first_per_key: the position of each key's first occurrence. The numpy twin
 * is a ufunc.at minimum over every position (0.8 s for the 11M first
 * schedules of fib 33's tasks); here one pass keeps the first position seen.
 * Proven equal to the twin on random keys by tests/test_columns_native.py. */
#include <stdint.h>

/* first[k] = the least i with keys[i] == k, or n when k does not occur
 * (first: n_keys entries, filled here). keys int32 (wide 0) or int64.
 * Returns 0; -2 when a key is outside [0, n_keys). */
int gl_first_per_key(int64_t n, const void *keys, int64_t wide, int64_t n_keys,
                     int64_t *first) {
  const int32_t *k32 = keys;
  const int64_t *k64 = keys;
  for (int64_t k = 0; k < n_keys; k++) first[k] = n;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = wide ? k64[i] : (int64_t)k32[i];
    if (k < 0 || k >= n_keys) return -2;
    if (first[k] == n) first[k] = i;
  }
  return 0;
}
