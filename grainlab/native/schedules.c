/* schedules.c — one batch of the validation's pass over the TASK_SCHEDULE
 * rows (grainlab/trace/validate.py, _Tasks._schedules), in one loop over the
 * batch: each row's two ids looked up once, each explicit task's first run,
 * first switch away (and its row group) and lowest/highest thread updated in
 * place. The numpy twin (the same method's other branch) selects the rows,
 * gathers five columns, looks the ids up and scatters with ufunc.at and
 * unique: at 10^8 grains (500M events) that pass took 20 of `grainlab
 * info`'s 70 s. Proven equal on random batches by tests/test_schedule_pass.py. */
#include <stdint.h>

#include "idindex.h"

/* Rows of batch (n rows) whose event is `code` are schedules: `task` is what
 * runs next, `other` what is switched away from. Per explicit task p (its
 * position in the table): first_run[p] = min tsc of a switch into it,
 * first_stop[p] = min tsc of a switch away from it, stop_rg[p] the row group
 * of its first switch away (in batch order, where still -1), lo[p]/hi[p] the
 * lowest/highest thread of either. Ids found in neither (and not 0) are
 * candidates for "names a task never created" (the caller rules out the
 * implicit tasks): their rows are written to unknown_task / unknown_other
 * (n entries each at most) when `want` has bit 1 / bit 2, and counted in
 * counts[1] / counts[2]. counts[0]: the schedule rows. */
void gl_schedule_pass(int64_t n, const uint8_t *event, int64_t code, const uint64_t *task,
                      const uint64_t *other, const uint64_t *tsc, const uint16_t *thread,
                      const int32_t *rg, int64_t nlimit, const int64_t *base,
                      const int64_t *limit, int64_t tsize, const void *table,
                      int64_t table_wide, double *first_run, double *first_stop,
                      int32_t *stop_rg, uint16_t *lo, uint16_t *hi, int64_t want,
                      int64_t *unknown_task, int64_t *unknown_other, int64_t *counts) {
  gl_id_table t = {nlimit, base, limit, tsize, table, table_wide};
  int64_t m = 0, nu_task = 0, nu_other = 0;
  for (int64_t r = 0; r < n; r++) {
    if (event[r] != code) continue;
    m++;
    int64_t into = gl_id_position(&t, task[r]);
    int64_t away = gl_id_position(&t, other[r]);
    double when = (double)tsc[r];
    uint16_t th = thread[r];
    if (into >= 0) {
      if (when < first_run[into]) first_run[into] = when;
      if (th < lo[into]) lo[into] = th;
      if (th > hi[into]) hi[into] = th;
    } else if ((want & 1) && task[r] != 0) {
      unknown_task[nu_task++] = r;
    }
    if (away >= 0) {
      if (when < first_stop[away]) first_stop[away] = when;
      if (stop_rg[away] < 0) stop_rg[away] = rg[r];
      if (th < lo[away]) lo[away] = th;
      if (th > hi[away]) hi[away] = th;
    } else if ((want & 2) && other[r] != 0) {
      unknown_other[nu_other++] = r;
    }
  }
  counts[0] = m;
  counts[1] = nu_task;
  counts[2] = nu_other;
}
