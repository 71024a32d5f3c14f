/* grainlab_spool.h — the spool file: what the collector appends while the
 * application runs, and what grainlab-convert turns into the Parquet trace.
 *
 * The collector never encodes Parquet inside the application: a full
 * per-thread buffer is appended as one block, with a single writev() on an
 * O_APPEND descriptor (Linux serialises appends to a regular file, so blocks
 * of different threads never interleave and need no lock of ours). The
 * block's rows are encoded compactly first (GL_SPOOL_COMPACT, ~5 bytes a row
 * instead of 56: spool_codec.c) by the thread that writes it — the writer
 * thread, or the flushing thread itself, never the recording hot path — or
 * kept raw (GL_SPOOL_RAW: in signal handlers, with
 * GRAINLAB_SPOOL_ENCODING=raw, or when encoding would not halve the block).
 * The converter reads the spool one block at a time (two in memory: it
 * decodes one while the other is written). docs/trace-format.md
 * ("The spool", "Compact blocks") describes the life cycle and the encoding;
 * this file is the byte layout.
 *
 * Layout (all integers little-endian, as the machine writes them):
 *
 *   file header   gl_spool_header, then `nkv` key/value records
 *   blocks        gl_spool_block, then `payload_bytes` bytes:
 *                   raw      n gl_event_t, then n*ncounters int64
 *                   compact  the encoded rows (spool_codec.c)
 *   trailer       gl_spool_trailer, then `nkv` key/value records
 *
 * A key/value record is uint32 key length, uint32 value length, the key
 * bytes, the value bytes (no terminators). Blocks may follow the trailer
 * (rows a thread was finishing while the run ended): the converter reads to
 * the end of the file. A run killed by SIGKILL leaves no trailer.
 *
 * Version 1 (before compact blocks) had 32-byte block headers (the first
 * four words of gl_spool_block) always followed by raw rows; the converter
 * still reads it. */
#ifndef GRAINLAB_SPOOL_H
#define GRAINLAB_SPOOL_H
#include <stdint.h>
#include "grainlab_event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GL_SPOOL_MAGIC "GLSPOOL\n" /* 8 bytes, first in the file */
#define GL_SPOOL_VERSION 2
#define GL_SPOOL_BLOCK_MAGIC 0x4b4c4247u   /* "GBLK" */
#define GL_SPOOL_TRAILER_MAGIC 0x52544c47u /* "GLTR" */

/* Events a thread buffers before a flush (GRAINLAB_BUFFER_EVENTS): the one
 * rule for the collector and `grainlab record --buffer-events` (grainlab.schema
 * repeats it; tests/test_small_fixes.py checks the two agree). */
#define GL_BUFFER_EVENTS_MIN 64u
#define GL_BUFFER_EVENTS_MAX (1u << 26)
#define GL_BUFFER_EVENTS_DEFAULT 65536u

/* Clock sources (gl_spool_header.clock_source). */
#define GL_SPOOL_CLOCK_TSC 0
#define GL_SPOOL_CLOCK_MONOTONIC 1

/* Written once, when the collector initialises. The key/value records carry
 * the run context known then (grainlab.command, pid, topology, runtime,
 * counters, buffer_events, the start-up load map, collector version) and
 * `grainlab.spool.counter_names`: the counter column names, '\n'-separated. */
typedef struct gl_spool_header {
  char magic[8];               /* GL_SPOOL_MAGIC */
  uint32_t version;            /* GL_SPOOL_VERSION */
  uint32_t header_bytes;       /* this struct + its key/value records */
  uint32_t event_bytes;        /* sizeof(gl_event_t), checked by the converter */
  uint32_t ncounters;          /* int64 values per event */
  uint32_t nkv;                /* key/value records that follow */
  uint32_t clock_source;       /* GL_SPOOL_CLOCK_* */
  uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC when tsc was 0 */
  uint64_t start_realtime_ns;  /* CLOCK_REALTIME at the same moment */
} gl_spool_header;

/* Block payload encodings (gl_spool_block.encoding). */
#define GL_SPOOL_RAW 0
#define GL_SPOOL_COMPACT 1

/* One flushed buffer: every row belongs to `thread`. (tsc, monotonic_ns) is
 * a clock pair read when the block was written, so the tick rate can be
 * computed even when the run ends without a trailer. */
typedef struct gl_spool_block {
  uint32_t magic; /* GL_SPOOL_BLOCK_MAGIC */
  uint32_t thread;
  uint32_t nevents;
  uint32_t ncounters;
  uint64_t tsc;           /* ticks since the collector started */
  uint64_t monotonic_ns;  /* CLOCK_MONOTONIC read just before tsc */
  /* --- version 2 from here (a version-1 header ends above) --- */
  uint32_t encoding;      /* GL_SPOOL_RAW or GL_SPOOL_COMPACT */
  uint32_t check;         /* compact: gl_codec_check() of this header (with check
                           * 0) and the payload; raw: 0, not checked */
  uint64_t payload_bytes; /* bytes that follow; raw: nevents * (sizeof(gl_event_t)
                           * + 8 * ncounters) */
} gl_spool_block;
#define GL_SPOOL_BLOCK_V1_BYTES 32

/* The end of the run: key/value records with grainlab.complete, end_reason,
 * threads, dropped_events and (not from a signal handler) a fresh loadmap.
 * They override the header's values. */
typedef struct gl_spool_trailer {
  uint32_t magic; /* GL_SPOOL_TRAILER_MAGIC */
  uint32_t nkv;
  uint32_t kv_bytes; /* bytes of key/value records that follow */
  uint32_t reserved;
  uint64_t tsc;
  uint64_t monotonic_ns;
} gl_spool_trailer;

#ifdef __cplusplus
}
#endif
#endif
