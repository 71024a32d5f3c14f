/* spool_codec_test.c — the compact block encoding (collector/src/spool_codec.c)
 * on its own, for tests/test_spool_encoding.py and by hand.
 *
 *   spool_codec_test roundtrip SPOOL     every block of SPOOL (raw or compact,
 *                                        version 1 or 2): decode it if compact,
 *                                        encode, decode, compare every byte;
 *                                        prints "events N raw_bytes R
 *                                        compact_bytes C encode_ns E decode_ns D"
 *                                        (per event)
 *   spool_codec_test recode IN OUT raw|compact
 *                                        rewrite a spool with every block in
 *                                        one encoding (the header and trailer
 *                                        copied; the header says version 2).
 *                                        Raw -> compact uses the collector's
 *                                        encoder, block by block
 *   spool_codec_test edge                synthetic edge cases round-trip
 *                                        (extreme values, zero-length blocks,
 *                                        full symbol tables, counters)
 *   spool_codec_test fuzz N SEED         N random damages (byte flips,
 *                                        truncations, extensions) of compact
 *                                        payloads, each decoded: must fail
 *                                        cleanly or decode, never crash/hang
 *
 * Exit 0 on success; 1 with one line on stderr. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "grainlab_event.h"
#include "grainlab_spool.h"
#include "spool_codec.h"

static gl_codec_state st_enc, st_dec;

static void fail(const char *fmt, const char *a, uint64_t b) {
  fprintf(stderr, "spool_codec_test: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) fail("cannot open %s%.0" PRIu64, path, 0);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)size + 1);
  if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) fail("cannot read %s%.0" PRIu64,
                                                                   path, 0);
  fclose(f);
  *len = (size_t)size;
  return buf;
}

/* Encode n rows, decode them, compare; returns the compact size. */
static size_t roundtrip(const gl_event_t *ev, const int64_t *ctr, uint32_t n, uint32_t nc,
                        double *enc_s, double *dec_s) {
  size_t raw = (size_t)n * (sizeof(gl_event_t) + 8u * nc);
  size_t cap = raw + GL_CODEC_MAX_ROW(nc) + 64;
  uint8_t *out = malloc(cap);
  gl_event_t *back = malloc(((size_t)n + 1) * sizeof *back);
  int64_t *cback = malloc(((size_t)n * nc + 1) * sizeof *cback);
  if (!out || !back || !cback) fail("out of memory%s%.0" PRIu64, "", 0);
  size_t len = gl_codec_encode(&st_enc, ev, ctr, n, nc, out, cap); /* touch the pages */
  double t0 = now();
  for (int rep = 0; rep < 3; rep++) len = gl_codec_encode(&st_enc, ev, ctr, n, nc, out, cap);
  double t1 = now();
  t0 += (t1 - t0) * 2 / 3; /* one of the three */
  if (len == (size_t)-1) fail("encoding %s%" PRIu64 " rows did not fit", "", n);
  const char *why = "";
  memset(back, 0, (size_t)n * sizeof *back); /* touch the pages */
  t1 = now();
  if (gl_codec_decode(&st_dec, out, len, n, nc, back, cback, &why) != 0)
    fail("decoding what was encoded failed: %s%.0" PRIu64, why, 0);
  double t2 = now();
  if (enc_s) *enc_s += t1 - t0;
  if (dec_s) *dec_s += t2 - t1;
  for (uint32_t i = 0; i < n; i++)
    if (memcmp(&ev[i], &back[i], sizeof *back) != 0) fail("row differs after a round trip%s: %" PRIu64, "", i);
  if (nc && memcmp(ctr, cback, (size_t)n * nc * 8) != 0) fail("counters differ%s%.0" PRIu64,
                                                             "", 0);
  /* The same payload into columns (what grainlab-convert does). */
  size_t m = (size_t)n + 1;
  uint64_t *wide = malloc(m * (6 + nc) * 8);
  uint32_t *kind = malloc(m * 4);
  uint16_t *cpu = malloc(m * 2);
  uint8_t *narrow = malloc(m * 2);
  if (!wide || !kind || !cpu || !narrow) fail("out of memory%s%.0" PRIu64, "", 0);
  gl_event_columns cols = {wide, wide + m, wide + 2 * m, wide + 3 * m, wide + 4 * m,
                           wide + 5 * m, kind, cpu, narrow, narrow + m,
                           nc ? (int64_t *)(wide + 6 * m) : 0};
  if (gl_codec_decode_columns(&st_dec, out, len, n, nc, &cols, &why) != 0)
    fail("decoding what was encoded into columns failed: %s%.0" PRIu64, why, 0);
  for (uint32_t i = 0; i < n; i++) {
    const gl_event_t *e = &ev[i];
    if (cols.tsc[i] != e->tsc || cols.task[i] != e->task || cols.other[i] != e->other ||
        cols.codeptr[i] != e->codeptr || cols.value[i] != e->value ||
        cols.count[i] != e->count || cols.kind[i] != e->kind || cols.cpu[i] != e->cpu ||
        cols.event[i] != e->event || cols.flags[i] != e->flags)
      fail("a column differs after a round trip%s: row %" PRIu64, "", i);
    for (uint32_t k = 0; k < nc; k++)
      if (cols.counters[(size_t)k * n + i] != ctr[(size_t)i * nc + k])
        fail("a counter column differs after a round trip%s: row %" PRIu64, "", i);
  }
  free(wide), free(kind), free(cpu), free(narrow);
  free(out);
  free(back);
  free(cback);
  return len;
}

/* Walk a spool: calls fn for every block with its rows (decoded if compact). */
typedef void (*block_fn)(void *ctx, const gl_spool_block *b, const gl_event_t *ev,
                         const int64_t *ctr, const unsigned char *record, size_t record_len);

static void walk(const unsigned char *data, size_t size, block_fn fn, void *ctx,
                 void (*other)(void *ctx, const unsigned char *rec, size_t len, int header)) {
  gl_spool_header h;
  if (size < sizeof h) fail("%s: not a spool%.0" PRIu64, "", 0);
  memcpy(&h, data, sizeof h);
  if (memcmp(h.magic, GL_SPOOL_MAGIC, 8) != 0) fail("%snot a spool%.0" PRIu64, "", 0);
  uint32_t version = h.version, nc = h.ncounters;
  size_t hb = version >= 2 ? sizeof(gl_spool_block) : GL_SPOOL_BLOCK_V1_BYTES;
  if (other) other(ctx, data, h.header_bytes, 1);
  size_t off = h.header_bytes;
  while (off < size) {
    uint32_t magic;
    memcpy(&magic, data + off, 4);
    if (memcmp(data + off, GL_SPOOL_MAGIC, 8) == 0) {
      memcpy(&h, data + off, sizeof h);
      if (other) other(ctx, data + off, h.header_bytes, 1);
      off += h.header_bytes;
      continue;
    }
    if (magic == GL_SPOOL_TRAILER_MAGIC) {
      gl_spool_trailer t;
      memcpy(&t, data + off, sizeof t);
      if (other) other(ctx, data + off, sizeof t + t.kv_bytes, 0);
      off += sizeof t + t.kv_bytes;
      continue;
    }
    if (magic != GL_SPOOL_BLOCK_MAGIC) fail("%sno block at byte %" PRIu64, "", off);
    gl_spool_block b;
    memset(&b, 0, sizeof b);
    memcpy(&b, data + off, hb);
    size_t row = sizeof(gl_event_t) + 8u * nc;
    if (version < 2) b.payload_bytes = (uint64_t)b.nevents * row;
    if (off + hb + b.payload_bytes > size) break; /* cut short */
    const unsigned char *payload = data + off + hb;
    gl_event_t *ev = malloc(((size_t)b.nevents + 1) * sizeof *ev);
    int64_t *ctr = malloc(((size_t)b.nevents * nc + 1) * 8);
    if (!ev || !ctr) fail("out of memory%s%.0" PRIu64, "", 0);
    if (b.encoding == GL_SPOOL_COMPACT) {
      const char *why = "";
      if (gl_codec_check(&b, payload, b.payload_bytes) != b.check)
        fail("block check mismatch%s at byte %" PRIu64, "", off);
      if (gl_codec_decode(&st_dec, payload, b.payload_bytes, b.nevents, nc, ev, ctr, &why))
        fail("a compact block does not decode: %s%.0" PRIu64, why, 0);
    } else {
      if (b.payload_bytes != (uint64_t)b.nevents * row) fail("raw block size%s at %" PRIu64, "",
                                                               off);
      memcpy(ev, payload, (size_t)b.nevents * sizeof *ev);
      memcpy(ctr, payload + (size_t)b.nevents * sizeof *ev, (size_t)b.nevents * nc * 8);
    }
    fn(ctx, &b, ev, nc ? ctr : 0, data + off, hb + b.payload_bytes);
    free(ev);
    free(ctr);
    off += hb + b.payload_bytes;
  }
}

/* ---- roundtrip ---- */

typedef struct stats {
  uint32_t nc;
  uint64_t events, raw, compact;
  double enc, dec;
} stats;

static void rt_block(void *ctx, const gl_spool_block *b, const gl_event_t *ev,
                     const int64_t *ctr, const unsigned char *rec, size_t len) {
  (void)rec, (void)len;
  stats *s = ctx;
  s->events += b->nevents;
  s->raw += sizeof(gl_spool_block) + (uint64_t)b->nevents * (sizeof(gl_event_t) + 8u * s->nc);
  s->compact += sizeof(gl_spool_block) + roundtrip(ev, ctr, b->nevents, s->nc, &s->enc, &s->dec);
}

static int cmd_roundtrip(const char *path) {
  size_t size;
  unsigned char *data = read_file(path, &size);
  gl_spool_header h;
  memcpy(&h, data, sizeof h);
  stats s = {.nc = h.ncounters};
  walk(data, size, rt_block, &s, 0);
  double ev = s.events ? (double)s.events : 1;
  printf("events %" PRIu64 " raw_bytes %" PRIu64 " compact_bytes %" PRIu64
         " encode_ns %.2f decode_ns %.2f\n",
         s.events, s.raw, s.compact, s.enc * 1e9 / ev, s.dec * 1e9 / ev);
  free(data);
  return 0;
}

/* ---- recode ---- */

typedef struct recoder {
  FILE *out;
  uint32_t nc;
  int compact;
} recoder;

static void rc_other(void *ctx, const unsigned char *rec, size_t len, int header) {
  recoder *r = ctx;
  if (header) { /* the version is the block layout's: ours is 2 */
    gl_spool_header h;
    memcpy(&h, rec, sizeof h);
    h.version = GL_SPOOL_VERSION;
    fwrite(&h, sizeof h, 1, r->out);
    fwrite(rec + sizeof h, 1, len - sizeof h, r->out);
  } else {
    fwrite(rec, 1, len, r->out);
  }
}

static void rc_block(void *ctx, const gl_spool_block *in, const gl_event_t *ev,
                     const int64_t *ctr, const unsigned char *rec, size_t len) {
  (void)rec, (void)len;
  recoder *r = ctx;
  gl_spool_block b = *in;
  size_t raw = (size_t)b.nevents * (sizeof(gl_event_t) + 8u * r->nc);
  if (r->compact) {
    size_t cap = raw + GL_CODEC_MAX_ROW(r->nc);
    uint8_t *out = malloc(cap);
    size_t n = gl_codec_encode(&st_enc, ev, ctr, b.nevents, r->nc, out, cap);
    if (n == (size_t)-1) fail("%sencoding overflowed%.0" PRIu64, "", 0);
    b.encoding = GL_SPOOL_COMPACT;
    b.payload_bytes = n;
    b.check = 0;
    b.check = gl_codec_check(&b, out, n);
    fwrite(&b, sizeof b, 1, r->out);
    fwrite(out, 1, n, r->out);
    free(out);
  } else {
    b.encoding = GL_SPOOL_RAW;
    b.check = 0;
    b.payload_bytes = raw;
    fwrite(&b, sizeof b, 1, r->out);
    fwrite(ev, sizeof *ev, b.nevents, r->out);
    if (r->nc) fwrite(ctr, 8, (size_t)b.nevents * r->nc, r->out);
  }
}

static int cmd_recode(const char *in, const char *out, const char *how) {
  size_t size;
  unsigned char *data = read_file(in, &size);
  gl_spool_header h;
  memcpy(&h, data, sizeof h);
  recoder r = {fopen(out, "wb"), h.ncounters, strcmp(how, "compact") == 0};
  if (!r.out) fail("cannot write %s%.0" PRIu64, out, 0);
  if (!r.compact && strcmp(how, "raw") != 0) fail("encoding %s is not raw or compact%.0" PRIu64,
                                                  how, 0);
  walk(data, size, rc_block, &r, rc_other);
  if (fclose(r.out) != 0) fail("writing %s%.0" PRIu64, out, 0);
  free(data);
  return 0;
}

/* ---- edge cases ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static uint64_t pick_extreme(void) {
  static const uint64_t v[] = {0, 1, 2, 0x7f, 0x80, 0x3fff, 0x4000, UINT32_MAX,
                               (uint64_t)UINT32_MAX + 1, INT64_MAX, (uint64_t)INT64_MAX + 1,
                               UINT64_MAX - 1, UINT64_MAX, 1ull << 40, (2ull << 40) | 5};
  return rnd() % 3 ? v[rnd() % (sizeof v / sizeof v[0])] : rnd();
}

static void fill_extreme(gl_event_t *ev, int64_t *ctr, uint32_t n, uint32_t nc, int symbols) {
  for (uint32_t i = 0; i < n; i++) {
    gl_event_t *e = &ev[i];
    memset(e, 0, sizeof *e);
    e->tsc = pick_extreme();
    e->task = pick_extreme();
    e->other = pick_extreme();
    e->codeptr = symbols ? 0x400000 + 16 * (rnd() % (uint64_t)symbols) : pick_extreme();
    e->value = pick_extreme();
    e->count = pick_extreme();
    e->kind = (uint32_t)pick_extreme();
    e->cpu = (uint16_t)pick_extreme();
    e->event = (uint8_t)(rnd() % 3 ? 1 + rnd() % 17 : rnd());
    e->flags = (uint8_t)(rnd() % 4 ? 0 : rnd());
    for (uint32_t k = 0; k < nc; k++) {
      uint64_t r = rnd() % 6;
      int64_t v = r == 0 ? INT64_MIN : r == 1 ? INT64_MAX : r == 2 ? INT64_MIN + 1
                : r == 3 ? -(int64_t)(rnd() % 1000) : (int64_t)pick_extreme();
      ctr[(size_t)i * nc + k] = v;
    }
  }
}

static int cmd_edge(void) {
  enum { N = 20000 };
  gl_event_t *ev = malloc(N * sizeof *ev);
  int64_t *ctr = malloc(N * GL_MAX_COUNTERS * 8);
  if (!ev || !ctr) fail("out of memory%s%.0" PRIu64, "", 0);
  unsigned cases = 0;
  /* zero rows: an empty payload, and an empty payload is exactly zero rows */
  if (roundtrip(ev, ctr, 0, 0, 0, 0) != 0) fail("zero rows%s are not zero bytes%.0" PRIu64, "",
                                               0);
  const char *why;
  uint8_t one = 0;
  if (gl_codec_decode(&st_dec, &one, 1, 0, 0, ev, ctr, &why) == 0)
    fail("a byte decoded as zero rows%s%.0" PRIu64, "", 0);
  if (gl_codec_decode(&st_dec, &one, 0, 1, 0, ev, ctr, &why) == 0)
    fail("zero bytes decoded as a row%s%.0" PRIu64, "", 0);
  cases += 3;
  /* extreme values, every counter count, few and many (> 127) symbols */
  static const uint32_t sizes[] = {1, 2, 127, 128, 129, 1000, N};
  for (uint32_t nc = 0; nc <= GL_MAX_COUNTERS; nc++)
    for (int symbols = 0; symbols <= 300; symbols += 150)
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        fill_extreme(ev, ctr, sizes[s], nc, symbols);
        roundtrip(ev, ctr, sizes[s], nc, 0, 0);
        cases++;
      }
  /* tsc that goes backwards and wraps; ids at the top of the range */
  for (uint32_t i = 0; i < N; i++) {
    memset(&ev[i], 0, sizeof ev[i]);
    ev[i].tsc = UINT64_MAX - 1000 + 7 * i - (i % 5 == 0 ? 3000 : 0);
    ev[i].task = UINT64_MAX - (i % 3);
    ev[i].other = i & 1 ? UINT64_MAX : 0;
    ev[i].event = GL_EV_TASK_SCHEDULE;
    ctr[2 * i] = i % 7 == 0 ? INT64_MIN : (int64_t)(1000000 - 37 * i); /* negative deltas */
    ctr[2 * i + 1] = i % 2 ? INT64_MAX : INT64_MIN + 1;
  }
  roundtrip(ev, ctr, N, 2, 0, 0);
  cases++;
  /* encoder bound: a cap too small for the block says so, never overruns */
  fill_extreme(ev, ctr, 1000, 3, 0);
  uint8_t *big = malloc(1 << 20);
  size_t need = gl_codec_encode(&st_enc, ev, ctr, 1000, 3, big, 1 << 20);
  free(big);
  for (size_t cap = 0; cap < need + GL_CODEC_MAX_ROW(3); cap += 97) {
    uint8_t *buf = malloc(cap + 1);
    buf[cap] = 0xA5;
    size_t got = gl_codec_encode(&st_enc, ev, ctr, 1000, 3, buf, cap);
    if (buf[cap] != 0xA5) fail("the encoder wrote past its cap%s %" PRIu64, "", cap);
    if (got != (size_t)-1 && got != need) fail("a capped encoding differs%s%.0" PRIu64, "", 0);
    free(buf);
    cases++;
  }
  printf("edge cases: %u round trips exact\n", cases);
  free(ev);
  free(ctr);
  return 0;
}

/* ---- fuzz ---- */

static int cmd_fuzz(long count, uint64_t seed) {
  rng = seed * 0x9E3779B97F4A7C15ull + 1;
  enum { N = 3000, NC = 2 };
  enum { SLACK = 16 }; /* damaged row counts go up to N + 9 */
  gl_event_t *ev = malloc(N * sizeof *ev), *back = malloc((N + SLACK) * sizeof *back);
  int64_t *ctr = malloc(N * NC * 8), *cback = malloc((N + SLACK) * NC * 8);
  enum { M = N + SLACK };
  uint64_t *wide = malloc(M * (6 + NC) * 8);
  uint32_t *kind = malloc(M * 4);
  uint16_t *cpu = malloc(M * 2);
  uint8_t *narrow = malloc(M * 2);
  gl_event_columns cols = {wide, wide + M, wide + 2 * M, wide + 3 * M, wide + 4 * M,
                           wide + 5 * M, kind, cpu, narrow, narrow + M, (int64_t *)(wide + 6 * M)};
  /* a fib-like stream: few symbols, small deltas */
  uint64_t id = 1ull << 40;
  for (uint32_t i = 0; i < N; i++) {
    memset(&ev[i], 0, sizeof ev[i]);
    ev[i].tsc = 1000 + 150 * i + rnd() % 100;
    ev[i].event = (uint8_t)(7 + rnd() % 4);
    ev[i].kind = (uint32_t)(rnd() % 3);
    ev[i].codeptr = 0x401000 + 0x40 * (rnd() % 3);
    ev[i].task = id + rnd() % 8;
    ev[i].other = rnd() % 4 ? id : (2ull << 40);
    ev[i].cpu = (uint16_t)(rnd() % 50 == 0);
    ctr[NC * i] = rnd() % 9 ? 100000 + 900 * i : INT64_MIN;
    ctr[NC * i + 1] = (int64_t)(i / 100);
    id += rnd() % 3;
  }
  size_t cap = N * (sizeof(gl_event_t) + 8 * NC);
  uint8_t *good = malloc(cap), *bad = malloc(cap + 64);
  size_t len = gl_codec_encode(&st_enc, ev, ctr, N, NC, good, cap);
  if (len == (size_t)-1) fail("%sencoding overflowed%.0" PRIu64, "", 0);
  long decoded = 0, refused = 0;
  for (long k = 0; k < count; k++) {
    memcpy(bad, good, len);
    size_t blen = len;
    uint32_t n = N;
    switch (rnd() % 5) {
      case 0: bad[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8)); break;
      case 1:
        for (int j = 0, m = 1 + (int)(rnd() % 8); j < m; j++) bad[rnd() % len] = (uint8_t)rnd();
        break;
      case 2: blen = rnd() % len; break;
      case 3:
        blen = len + 1 + rnd() % 63;
        for (size_t j = len; j < blen; j++) bad[j] = (uint8_t)rnd();
        break;
      default: n = (uint32_t)(rnd() % (N + 10)); bad[rnd() % len] ^= 0x80; break;
    }
    const char *why = 0, *why_cols = 0;
    int as_rows = gl_codec_decode(&st_dec, bad, blen, n, NC, back, cback, &why);
    if (gl_codec_decode_columns(&st_dec, bad, blen, n, NC, &cols, &why_cols) != as_rows ||
        (as_rows != 0 && why != why_cols))
      fail("decoding into columns judges a damaged payload otherwise%s (case %" PRIu64 ")", "",
           (uint64_t)k);
    if (as_rows == 0) decoded++;
    else if (!why || !*why) fail("a refusal%s without a reason (case %" PRIu64 ")", "",
                                 (uint64_t)k);
    else refused++;
  }
  free(ev), free(back), free(ctr), free(cback), free(good), free(bad);
  free(wide), free(kind), free(cpu), free(narrow);
  printf("fuzz: %ld damaged payloads, %ld refused, %ld decoded (damage that is still a valid "
         "encoding: the block check catches it)\n", count, refused, decoded);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "roundtrip") == 0) return cmd_roundtrip(argv[2]);
  if (argc == 5 && strcmp(argv[1], "recode") == 0) return cmd_recode(argv[2], argv[3], argv[4]);
  if (argc == 2 && strcmp(argv[1], "edge") == 0) return cmd_edge();
  if (argc == 4 && strcmp(argv[1], "fuzz") == 0)
    return cmd_fuzz(strtol(argv[2], 0, 10), strtoull(argv[3], 0, 10));
  fprintf(stderr, "usage: spool_codec_test roundtrip SPOOL | recode IN OUT raw|compact | edge "
                  "| fuzz N SEED\n");
  return 2;
}
