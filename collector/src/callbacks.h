/* callbacks.h — the OMPT callbacks that turn runtime events into trace rows. */
#ifndef GRAINLAB_CALLBACKS_H
#define GRAINLAB_CALLBACKS_H
#include <omp-tools.h>
#include <stddef.h>

/* Register every callback with `set`. Writes the JSON object
 * {"thread_begin": 5, ...} of set_callback results into json, and returns
 * whether chunk dispatch events are reported (dispatch accepted "always"). */
/* Entry points the callbacks call back into (ompt_get_task_info), from the
 * runtime's lookup function: before gl_register_callbacks. */
void gl_callbacks_lookup(ompt_function_lookup_t lookup);
/* Set by on_initialize in the first image: the initial thread and task begin
 * at the process's start (tsc 0). */
extern int gl_begin_at_process_start;

int gl_register_callbacks(ompt_set_callback_t set, char *json, size_t len);
#endif
