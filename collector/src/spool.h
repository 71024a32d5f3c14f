/* spool.h — the collector's side of the spool file (grainlab_spool.h): create
 * and lock it at start-up, append blocks while the application runs, close
 * it with a trailer, and start grainlab-convert to turn it into Parquet.
 *
 * gl_spool_append_block (after gl_spool_raw_only), gl_spool_write_trailer and
 * gl_spool_start_converter are async-signal-safe (writev, clock_gettime,
 * posix_spawn prepared beforehand): the signal handlers of shutdown.c call
 * them. */
#ifndef GRAINLAB_SPOOL_WRITER_H
#define GRAINLAB_SPOOL_WRITER_H
#include <stddef.h>
#include <stdint.h>
#include "grainlab_event.h"

/* Start-up (ompt_start_tool): create `<output>.spool`, take its lock (waiting
 * for a previous run's converter still working on the same output), empty it
 * and remove a stale `<output>`. On failure prints one line
 * "grainlab: cannot write trace to OUTPUT: reason" and returns 0. */
int gl_spool_open(const char *output_path);

/* Initialisation (on_initialize, before any event): the file header with the
 * run context as key/value pairs, and the converter's argv. Returns 0 on
 * success; on failure prints one line and returns -1 (run untraced). */
int gl_spool_write_header(int ncounters, const char *const *counter_names, size_t nkv,
                          const char *const *keys, const char *const *values);

/* Append n rows of `thread` (and n*ncounters counter values) as one block
 * with one writev(), encoded compactly first (GRAINLAB_SPOOL_ENCODING, the
 * calling thread's scratch area: allocated on its first block) unless
 * gl_spool_raw_only() was called. Counts the block, or on failure the rows as
 * dropped (reason printed once). Async-signal-safe after gl_spool_raw_only(). */
void gl_spool_append_block(uint32_t thread, const gl_event_t *events,
                           const int64_t *counters, uint32_t n);

/* From now on every block is written raw (a signal handler ends the run: no
 * allocation, no encoding there). */
void gl_spool_raw_only(void);

/* Append the trailer. Async-signal-safe. Returns 0 on success. */
int gl_spool_write_trailer(size_t nkv, const char *const *keys, const char *const *values);

/* How the run ends its trace (GRAINLAB_CONVERT): convert in the background
 * (default), wait for the converter, or leave the spool for later. */
enum gl_convert_mode { GL_CONVERT_BACKGROUND, GL_CONVERT_WAIT, GL_CONVERT_NO };
enum gl_convert_mode gl_spool_convert_mode(void);

/* Spawn grainlab-convert on the spool; it inherits the locked descriptor, so
 * the spool stays locked until the trace is ready. With GL_CONVERT_WAIT waits
 * for it: returns its exit status (0 = trace written) and the seconds it took
 * in *seconds. Otherwise returns 0 once spawned (or -1 if it could not be).
 * Async-signal-safe (from_signal: no messages but fixed strings). */
int gl_spool_start_converter(int from_signal, double *seconds);

const char *gl_spool_path(void);
uint64_t gl_spool_blocks(void);  /* blocks appended */
uint64_t gl_spool_events(void);  /* rows in those blocks */
uint64_t gl_spool_dropped(void); /* rows that could not be appended */
int gl_spool_disk_full(void);
/* exec: this image continues a spool its process's earlier image left. */
int gl_spool_continues(void);
uint32_t gl_spool_thread_base(void);
void gl_spool_first_clock(uint64_t *origin, uint64_t *mono, uint64_t *real);
uint64_t gl_spool_process_start(void);     /* recording stopped: no room for the next block */

/* The child of a fork() must not keep the parent's spool locked. */
void gl_spool_forget_in_child(void);

/* Async-signal-safe decimal formatting; returns out. */
char *gl_utoa(uint64_t v, char *out, size_t len);
#endif
