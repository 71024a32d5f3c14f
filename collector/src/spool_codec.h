/* spool_codec.h — the compact encoding of a spool block's payload
 * (GL_SPOOL_COMPACT in grainlab_spool.h; docs/trace-format.md, "Compact
 * blocks", is the byte layout). Shared by the collector (encoder, on the
 * writer thread or the flushing thread: never on the recording hot path) and
 * grainlab-convert (decoder). Pure computation: no allocation, no system
 * call, no global state; the caller owns every buffer. */
#ifndef GRAINLAB_SPOOL_CODEC_H
#define GRAINLAB_SPOOL_CODEC_H
#include <stddef.h>
#include <stdint.h>
#include "grainlab_event.h"
#include "grainlab_spool.h"

/* Symbols a block defines at most: index 127 in a row's head byte means "a
 * literal follows"; once 127 are defined, later literals share slot 127. */
#define GL_CODEC_SYMBOLS 127

/* The room the encoder needs for one row: the most bytes a row can take
 * (head, literal (event, flags, a 5-byte kind, a 10-byte codeptr), extras,
 * five 10-byte varints (tsc, task, other, value, count), cpu, null mask, a
 * 10-byte varint per counter), plus 4 it may store past a short number's
 * bytes (spool_codec.c, put). */
#define GL_CODEC_MAX_ROW(nc) (1u + 17u + 1u + 5u * 10u + 3u + 1u + 10u * (unsigned)(nc) + 4u)

/* The encoder's (and decoder's) working memory (~7 KiB): the symbol table
 * of a block. One per encoding thread, allocated once; reset for each block. */
typedef struct gl_codec_sym {
  uint64_t codeptr, tag, task, other, value, count; /* tag: the encoder's (spool_codec.c) */
  uint32_t kind;
  uint8_t event, flags, nulls;
} gl_codec_sym;

typedef struct gl_codec_state {
  gl_codec_sym sym[GL_CODEC_SYMBOLS + 1];
  uint8_t slot[256]; /* encoder's hash of symbols: index + 1, 0 = empty */
  int64_t last_ctr[GL_MAX_COUNTERS];
  uint64_t last_tsc;
  uint32_t nsym;
  uint16_t last_cpu;
} gl_codec_state;

/* Encode n rows (and n*nc counter values, INT64_MIN = null) into out[0..cap).
 * Returns the bytes written, or (size_t)-1 when they would not fit in cap
 * (the caller then writes the block raw). */
size_t gl_codec_encode(gl_codec_state *st, const gl_event_t *ev, const int64_t *ctr,
                       uint32_t n, uint32_t nc, uint8_t *out, size_t cap);

/* Decode a compact payload of exactly len bytes holding n rows into ev[n] and
 * ctr[n*nc]. Returns 0, or -1 with *why set (a fixed string) when the payload
 * is not a valid encoding of n rows: never reads outside in[0..len), never
 * writes outside ev[0..n) and ctr[0..n*nc). */
int gl_codec_decode(gl_codec_state *st, const uint8_t *in, size_t len, uint32_t n, uint32_t nc,
                    gl_event_t *ev, int64_t *ctr, const char **why);

/* The same, into columns (grainlab_event.h): each array of `cols` holds n
 * values, cols->counters n*nc (counter k at cols->counters + k*n). */
int gl_codec_decode_columns(gl_codec_state *st, const uint8_t *in, size_t len, uint32_t n,
                            uint32_t nc, const gl_event_columns *cols, const char **why);

/* The check value of a block: a 64-bit multiply-xorshift hash over the
 * block header (with `check` taken as 0) and its payload, folded to 32 bits.
 * A change confined to one aligned 8-byte word is always detected. */
uint32_t gl_codec_check(const gl_spool_block *b, const void *payload, size_t len);
#endif
