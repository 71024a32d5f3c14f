/* static_chunks.h — schedule(static,N): libomp 19 reports only each thread's
 * first chunk through ompt_callback_dispatch. The thread's other chunks follow
 * from the stride (team size × N) and are added at WORK_END, marked inferred. */
#ifndef GRAINLAB_STATIC_CHUNKS_H
#define GRAINLAB_STATIC_CHUNKS_H
#include "thread_state.h"

/* Record the inferred CHUNK rows of loop `l`, which ends at `end_tsc`. */
void gl_infer_static_chunks(gl_thread *t, const gl_loop *l, uint64_t end_tsc);
#endif
