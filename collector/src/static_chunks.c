/* static_chunks.c — infer the chunks of schedule(static,N) that libomp does
 * not report (see docs/trace-format.md, "Chunks").
 *
 * For a static schedule libomp hands thread i the chunks starting at
 * i*N, i*N + T*N, i*N + 2*T*N, ... (T = team size), all of N iterations but a
 * shorter last one, and reports the first through ompt_callback_dispatch. The
 * first chunk's size is N whenever the thread has a second chunk (a shorter
 * chunk is the loop's last), so the reported chunk gives the stride. Plain
 * schedule(static) gives each thread one block, and then the arithmetic below
 * finds no further chunk. */
#include "static_chunks.h"

void gl_infer_static_chunks(gl_thread *t, const gl_loop *l, uint64_t end_tsc) {
  if (l->nchunks == 0 && l->team == 1 && l->count > 0) {
    /* A team of one (serialized region, orphaned loop, 1 thread): libomp gives
     * the thread the whole iteration space at once and reports no chunk. */
    uint64_t tsc = l->begin_tsc, last = gl_last_tsc(t);
    gl_record_at(t, tsc < last ? last : tsc, (gl_row){.event = GL_EV_CHUNK,
                                                      .task = l->task,
                                                      .other = l->parallel,
                                                      .count = l->count,
                                                      .kind = 3 /* ompt_dispatch_ws_loop_chunk */,
                                                      .flags = GL_CHUNK_INFERRED}, GL_NO_COUNTERS);
    return;
  }
  if (l->nchunks != 1 || l->team == 0 || l->first_iters == 0) return;
  uint64_t n = l->first_iters, stride = (uint64_t)l->team * n;
  if (l->first_start + stride >= l->count) return; /* the thread had one chunk */
  uint64_t total = 1 + (l->count - 1 - l->first_start) / stride; /* all its chunks */
  /* The thread ran its chunks back to back between the first chunk and
   * WORK_END: share that time evenly. Rows recorded meanwhile (tasks created in
   * the loop body) already sit in the buffer, so the interpolated time is
   * clamped to keep the thread's rows in time order. */
  double step = (double)(end_tsc - l->first_tsc) / (double)total;
  for (uint64_t j = 1; j < total; j++) {
    uint64_t start = l->first_start + j * stride;
    uint64_t iters = l->count - start < n ? l->count - start : n;
    uint64_t tsc = l->first_tsc + (uint64_t)(step * (double)j);
    uint64_t last = gl_last_tsc(t);
    if (tsc < last) tsc = last;
    gl_record_at(t, tsc, (gl_row){.event = GL_EV_CHUNK,
                                  .task = l->task,
                                  .other = l->parallel,
                                  .value = start,
                                  .count = iters,
                                  .kind = 3 /* ompt_dispatch_ws_loop_chunk */,
                                  .flags = GL_CHUNK_INFERRED}, GL_NO_COUNTERS);
  }
}
