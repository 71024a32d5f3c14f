/* idindex.c — grainlab/idindex.py's direct table of task ids, built and
 * read in one pass each, compiled.
 *
 * Collector task ids are (thread + 1) << 40 | k with k dense per thread, so
 * base[thread slot] + k indexes a table of positions. The numpy twin
 * (IdIndex._build_numpy, IdIndex._lookup) splits the ids into two id-sized
 * columns and reads them in blocks of 2^20 through ~8 block-sized
 * temporaries: at 10^7 ids that is ~1.5 GiB of fresh memory per look-up,
 * which these VMs fault in at ~2 s per GiB. Here each id is read once per
 * pass, with no scratch memory. The same answers as the twin (with repeated
 * ids, the last position written wins, as numpy's assignment does), checked
 * on random ids by tests/test_task_table_rewrite.py. */
#include <stdint.h>

#include "idindex.h"

#define SHIFT GL_ID_SHIFT
#define LOW GL_ID_LOW

/* limit[h] = 1 + the largest k of thread slot h (nlimit entries, zeroed by
 * the caller; the last one stays 0). Returns 1 when a slot is out of
 * [1, nlimit - 1) (the caller checked the range: a bug then). */
int gl_id_limits(int64_t n, const uint64_t *ids, int64_t nlimit, int64_t *limit) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = ids[i] >> SHIFT;
    int64_t k = (int64_t)(ids[i] & LOW) + 1;
    if (h < 1 || h >= (uint64_t)(nlimit - 1)) return 1;
    if (k > limit[h]) limit[h] = k;
  }
  return 0;
}

/* table[base[h] + k] = i for every id i (table: int32 when wide == 0, else
 * int64; filled with -1 by the caller). */
void gl_id_fill(int64_t n, const uint64_t *ids, const int64_t *base, void *table, int64_t wide) {
  int32_t *t32 = table;
  int64_t *t64 = table;
  for (int64_t i = 0; i < n; i++) {
    int64_t slot = base[ids[i] >> SHIFT] + (int64_t)(ids[i] & LOW);
    if (wide)
      t64[slot] = i;
    else
      t32[slot] = (int32_t)i;
  }
}

/* out[i] = position of values[i] (-1: absent) from the table (its last
 * entry, tsize - 1, is -1); table and out int32 or int64 (wide flags). */
void gl_id_lookup(int64_t n, const uint64_t *values, int64_t nlimit, const int64_t *base,
                  const int64_t *limit, int64_t tsize, const void *table, int64_t table_wide,
                  void *out, int64_t out_wide) {
  gl_id_table t = {nlimit, base, limit, tsize, table, table_wide};
  int32_t *o32 = out;
  int64_t *o64 = out;
  for (int64_t i = 0; i < n; i++) {
    int64_t pos = gl_id_position(&t, values[i]);
    if (out_wide)
      o64[i] = pos;
    else
      o32[i] = (int32_t)pos;
  }
}
