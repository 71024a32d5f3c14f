/* idindex.h — one look-up in grainlab/idindex.py's direct table of task ids,
 * shared by the kernels that look ids up while doing something else with
 * each row (idindex.c's gl_id_lookup, schedules.c). */
#ifndef GRAINLAB_IDINDEX_H
#define GRAINLAB_IDINDEX_H
#include <stdint.h>

#define GL_ID_SHIFT 40
#define GL_ID_LOW ((UINT64_C(1) << GL_ID_SHIFT) - 1)

/* The table as idindex.py builds it: base/limit per thread slot (nlimit
 * entries; the last limit is 0, so an out-of-range slot reads "absent"),
 * tsize entries of int32 (wide == 0) or int64 positions, the last one -1. */
typedef struct {
  int64_t nlimit;
  const int64_t *base;
  const int64_t *limit;
  int64_t tsize;
  const void *table;
  int64_t wide;
} gl_id_table;

/* Position of `value` among the indexed ids, -1 when absent. */
static inline int64_t gl_id_position(const gl_id_table *t, uint64_t value) {
  uint64_t h = value >> GL_ID_SHIFT;
  if (h > (uint64_t)(t->nlimit - 1)) h = (uint64_t)(t->nlimit - 1);
  int64_t k = (int64_t)(value & GL_ID_LOW);
  int64_t slot = k >= t->limit[h] ? t->tsize - 1 : t->base[h] + k;
  return t->wide ? ((const int64_t *)t->table)[slot] : (int64_t)((const int32_t *)t->table)[slot];
}

#endif
