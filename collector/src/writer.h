/* writer.h — the writer threads that append handed-over buffers (writer.c). */
#ifndef GRAINLAB_WRITER_H
#define GRAINLAB_WRITER_H
#include "thread_state.h"

void gl_writer_start(void);              /* at initialisation; GRAINLAB_WRITER=0: none */
int gl_writer_running(void);             /* buffers can be handed over */
int gl_writer_has_core(void);            /* ... and the application leaves it a core */
void gl_writer_wake(void);               /* a buffer was handed over */
void gl_writer_add(void);                /* a pool is full: another writer, if there is room */
int gl_writer_count(void);               /* writer threads started */
int gl_writer_drain_thread(gl_thread *t); /* write t's queued buffers, oldest first */
void gl_writer_stop(void);               /* write everything queued, end the writer */
void gl_writer_forget_in_child(void);
#endif
