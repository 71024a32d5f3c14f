/* flush.h — the one place that talks to the Parquet writer shim. Every call
 * into the shim happens under the writer lock. */
#ifndef GRAINLAB_FLUSH_H
#define GRAINLAB_FLUSH_H
#include <stdint.h>

/* Output path (absolute) and the counter names, fixed at start-up. */
void gl_flush_configure(const char *path, const char *const *counter_names);

/* Writer lock. gl_writer_trylock spins at most `max_ms` milliseconds; it is
 * what a signal handler uses, since the lock's holder may be the thread the
 * signal interrupted. */
void gl_writer_lock(void);
int gl_writer_trylock(int max_ms);
void gl_writer_unlock(void);

/* With the lock held: write n rows of thread `thread` as one row group
 * (loading the shim and opening the file on first use). On failure the rows
 * are counted as dropped and the reason is printed once. */
void gl_write_rows_locked(uint32_t thread, const void *events,
                          const int64_t *counters, uint32_t n);

/* With the lock held: write the footer with the given metadata and close.
 * Returns 0 on success. */
int gl_close_locked(uint32_t nkv, const char *const *keys, const char *const *values);

uint64_t gl_flush_count(void);   /* row groups written */
uint64_t gl_dropped_count(void); /* events lost */
#endif
