/* spool_codec.c — compact block payloads (spool_codec.h).
 *
 * Row by row, each row predicted from the block's earlier rows:
 *
 *  - a *symbol* is the (event, flags, kind, codeptr) of a row. A block holds
 *    few distinct ones (a program has few task/sync constructs: fib has 6),
 *    so a row names its symbol with one head byte; the first row of a symbol
 *    spells it out (a literal) and defines it;
 *  - task, other, value, count are predicted by the previous row of the same
 *    symbol: task ids are (thread+1)<<40 | n, and the row that last had this
 *    symbol is usually about a neighbouring task (a delta of a few units,
 *    one byte) whereas the previous row of any kind is often about another
 *    (a parent, a parallel region: a delta of 2^40);
 *  - value, count, the cpu and which counters are null are written only when
 *    they differ from the prediction (an extras byte says which);
 *  - tsc by the previous row (a zigzag delta: non-monotonic clocks and
 *    wrap-around cost bytes, never correctness); each counter by its
 *    previous non-null value.
 *
 * On fib with a task per call that is ~5 bytes per row (56 raw). All
 * arithmetic is modulo 2^64, so any value round-trips exactly. */
#include "spool_codec.h"

#include <stddef.h>
#include <string.h>

#define LITERAL 127u
#define HEAD_EXTRAS 0x80u
#define X_VALUE 0x1u
#define X_COUNT 0x2u
#define X_CPU 0x4u
#define X_NULLS 0x8u
#define X_KNOWN 0xFu

static inline uint64_t zigzag(uint64_t d) { return (d << 1) ^ (0 - (d >> 63)); }
static inline uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

/* LEB128. Values below 2^21 (nearly all deltas) without a data-dependent
 * branch: the 7-bit groups are spread into bytes, the continuation bits set
 * from the length, and 4 bytes stored at once (the encoder keeps a row's
 * worst case free, so the bytes past the value's stay inside the buffer and
 * are overwritten by what follows). */
static inline uint8_t *put(uint8_t *p, uint64_t v) {
  if (__builtin_expect(v < (1u << 21), 1)) {
    uint32_t x = (uint32_t)v, more1 = x >= 0x80, more2 = x >= 0x4000;
    uint32_t w = x + (x & ~0x7fu);  /* bits 7.. one up: a gap at bit 7 */
    w += w & ~0x7fffu;              /* bits 15.. one more up: a gap at bit 15 */
    w |= more1 << 7 | more2 << 15;
    memcpy(p, &w, 4);
    return p + 1 + more1 + more2;
  }
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* A symbol's identity in one word beside its codeptr (the encoder's hash
 * table compares two words, not four fields): kind, event and flags where a
 * row's last 8 bytes hold them on a little-endian machine, so a row's tag is
 * one load and a mask there (row_tag). */
static inline uint64_t tag_of(uint32_t kind, uint8_t event, uint8_t flags) {
  return (uint64_t)kind | (uint64_t)event << 48 | (uint64_t)flags << 56;
}

static inline uint64_t row_tag(const gl_event_t *e) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  _Static_assert(offsetof(gl_event_t, kind) == 48 && offsetof(gl_event_t, cpu) == 52 &&
                     offsetof(gl_event_t, event) == 54 && offsetof(gl_event_t, flags) == 55,
                 "kind, cpu, event, flags: the row's last 8 bytes");
  uint64_t w;
  memcpy(&w, &e->kind, 8);
  return w & ~(0xffffull << 32); /* without the cpu */
#else
  return tag_of(e->kind, e->event, e->flags);
#endif
}

/* The encoder's hash slot (not part of the format: the decoder numbers
 * symbols by their order of definition). */
static inline unsigned slot_of(uint64_t codeptr, uint64_t tag) {
  return (unsigned)(((codeptr ^ tag << 20) * 0x9E3779B97F4A7C15ull) >> 56);
}

static void reset(gl_codec_state *st) {
  memset(st->slot, 0, sizeof st->slot);
  memset(st->last_ctr, 0, sizeof st->last_ctr);
  st->nsym = 0;
  st->last_tsc = 0;
  st->last_cpu = 0;
}

static void define(gl_codec_sym *y, uint8_t event, uint8_t flags, uint32_t kind,
                   uint64_t codeptr) {
  memset(y, 0, sizeof *y);
  y->tag = tag_of(kind, event, flags);
  y->event = event;
  y->flags = flags;
  y->kind = kind;
  y->codeptr = codeptr;
}

/* After a row: what the next row of its symbol, and the next row, are
 * predicted from (the encoder and the decoder keep the same state). */
static inline void remember(gl_codec_state *st, gl_codec_sym *y, const gl_event_t *e,
                            uint32_t nulls) {
  y->task = e->task;
  y->other = e->other;
  y->value = e->value;
  y->count = e->count;
  y->nulls = (uint8_t)nulls;
  st->last_tsc = e->tsc;
  st->last_cpu = e->cpu;
}

/* The encoder's loop, inlined twice: without counters (nc a constant 0,
 * the common case: the counter code drops out) and with any number. */
static inline __attribute__((always_inline)) size_t encode(gl_codec_state *st,
                                                           const gl_event_t *ev,
                                                           const int64_t *ctr, uint32_t n,
                                                           uint32_t nc, uint8_t *out,
                                                           size_t cap) {
  reset(st);
  uint8_t *p = out, *end = out + cap;
  const size_t room = GL_CODEC_MAX_ROW(nc);
  for (uint32_t i = 0; i < n; i++) {
    if ((size_t)(end - p) < room) return (size_t)-1;
    const gl_event_t *e = &ev[i];
    __builtin_prefetch(e + 32); /* the rows come from memory the cache has not seen */
    uint64_t tag = row_tag(e);
    unsigned h = slot_of(e->codeptr, tag);
    unsigned s = LITERAL;
    for (uint8_t v; (v = st->slot[h]) != 0; h = (h + 1) & 255u) {
      const gl_codec_sym *y = &st->sym[v - 1];
      if (y->codeptr == e->codeptr && y->tag == tag) {
        s = v - 1u;
        break;
      }
    }
    uint8_t *head = p++;
    unsigned headv = s;
    gl_codec_sym *y;
    if (__builtin_expect(s == LITERAL, 0)) {
      *p++ = e->event;
      *p++ = e->flags;
      p = put(p, e->kind);
      p = put(p, e->codeptr);
      if (st->nsym < GL_CODEC_SYMBOLS) {
        s = st->nsym++;
        st->slot[h] = (uint8_t)(s + 1); /* h: the empty slot the probe ended on */
      }
      y = &st->sym[s];
      define(y, e->event, e->flags, e->kind, e->codeptr);
    } else {
      y = &st->sym[s];
    }
    const int64_t *c = nc ? &ctr[(size_t)i * nc] : 0;
    unsigned nulls = 0;
    for (uint32_t k = 0; k < nc; k++) nulls |= (unsigned)(c[k] == INT64_MIN) << k;
    unsigned x = (e->value != y->value ? X_VALUE : 0) | (e->count != y->count ? X_COUNT : 0) |
                 (e->cpu != st->last_cpu ? X_CPU : 0) | (nulls != y->nulls ? X_NULLS : 0);
    if (x) {
      headv |= HEAD_EXTRAS;
      *p++ = (uint8_t)x;
    }
    *head = (uint8_t)headv;
    p = put(p, zigzag(e->tsc - st->last_tsc));
    p = put(p, zigzag(e->task - y->task));
    p = put(p, zigzag(e->other - y->other));
    if (x) {
      if (x & X_VALUE) p = put(p, zigzag(e->value - y->value));
      if (x & X_COUNT) p = put(p, zigzag(e->count - y->count));
      if (x & X_CPU) p = put(p, e->cpu);
      if (x & X_NULLS) *p++ = (uint8_t)nulls;
    }
    for (uint32_t k = 0; k < nc; k++) {
      if (nulls >> k & 1u) continue;
      p = put(p, zigzag((uint64_t)c[k] - (uint64_t)st->last_ctr[k]));
      st->last_ctr[k] = c[k];
    }
    remember(st, y, e, nulls);
  }
  return (size_t)(p - out);
}

size_t gl_codec_encode(gl_codec_state *st, const gl_event_t *ev, const int64_t *ctr,
                       uint32_t n, uint32_t nc, uint8_t *out, size_t cap) {
  if (nc > GL_MAX_COUNTERS) return (size_t)-1;
  if (nc == 0) return encode(st, ev, 0, n, 0, out, cap);
  return encode(st, ev, ctr, n, nc, out, cap);
}

/* ------------------------------------------------------------ decoding */

typedef struct reader {
  const uint8_t *p, *end;
  int bad;
} reader;

static inline uint8_t get_byte(reader *r) {
  if (r->p >= r->end) {
    r->bad = 1;
    return 0;
  }
  return *r->p++;
}

/* LEB128, at most 10 bytes, the 10th holding bit 63 only. */
static __attribute__((noinline)) uint64_t get_long(reader *r) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end) break;
    uint8_t b = *r->p++;
    if (shift == 63 && b > 1) break;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  r->bad = 1;
  return 0;
}
/* One byte (most numbers) inline, longer ones in get_long. */
static inline uint64_t get(reader *r) {
  if (__builtin_expect(r->p < r->end && *r->p < 0x80, 1)) return *r->p++;
  return get_long(r);
}

#define DECODE_INLINE static inline __attribute__((always_inline))

/* The row's symbol: a literal defines the next one, else the row names one
 * defined before. 0, or 1 when the row is cut short (r->bad), or -1 (*why). */
DECODE_INLINE int read_symbol(gl_codec_state *st, reader *r, unsigned head, gl_codec_sym **y,
                              const char **why) {
  unsigned s = head & 0x7fu;
  if (s == LITERAL) {
    uint8_t event = get_byte(r), flags = get_byte(r);
    uint64_t kind = get(r), codeptr = get(r);
    if (kind > UINT32_MAX) r->bad = 1;
    if (r->bad) return 1;
    if (st->nsym < GL_CODEC_SYMBOLS) s = st->nsym++;
    *y = &st->sym[s];
    define(*y, event, flags, (uint32_t)kind, codeptr);
    return 0;
  }
  if (s >= st->nsym) {
    *why = "a row names a symbol the block has not defined";
    return -1;
  }
  *y = &st->sym[s];
  return 0;
}

/* The row's fields: its symbol's, plus the deltas and extras it carries.
 * 0, or -1 (*why). */
DECODE_INLINE int read_row(gl_codec_state *st, reader *r, unsigned head, const gl_codec_sym *y,
                           uint32_t nc, gl_event_t *e, unsigned *nulls_out, const char **why) {
  unsigned x = head & HEAD_EXTRAS ? get_byte(r) : 0;
  if (x & ~X_KNOWN) {
    *why = "unknown bits in a row's extras byte";
    return -1;
  }
  memset(e, 0, sizeof *e);
  e->event = y->event;
  e->flags = y->flags;
  e->kind = y->kind;
  e->codeptr = y->codeptr;
  e->tsc = st->last_tsc + unzigzag(get(r));
  e->task = y->task + unzigzag(get(r));
  e->other = y->other + unzigzag(get(r));
  e->value = x & X_VALUE ? y->value + unzigzag(get(r)) : y->value;
  e->count = x & X_COUNT ? y->count + unzigzag(get(r)) : y->count;
  uint64_t cpu = x & X_CPU ? get(r) : st->last_cpu;
  unsigned nulls = x & X_NULLS ? get_byte(r) : y->nulls;
  if (cpu > UINT16_MAX || (nulls >> nc) != 0) {
    *why = cpu > UINT16_MAX ? "a cpu number out of range" : "a null mask names no counter";
    return -1;
  }
  e->cpu = (uint16_t)cpu;
  *nulls_out = nulls;
  return 0;
}

/* Row i into the rows (ev) or, when ev is NULL, the columns. */
DECODE_INLINE void put_row(uint32_t i, const gl_event_t *e, gl_event_t *ev,
                           const gl_event_columns *cols) {
  if (ev) {
    ev[i] = *e;
    return;
  }
  cols->tsc[i] = e->tsc;
  cols->task[i] = e->task;
  cols->other[i] = e->other;
  cols->codeptr[i] = e->codeptr;
  cols->value[i] = e->value;
  cols->count[i] = e->count;
  cols->kind[i] = e->kind;
  cols->cpu[i] = e->cpu;
  cols->event[i] = e->event;
  cols->flags[i] = e->flags;
}

/* Row i's counters (deltas; INT64_MIN where the null mask says none). */
DECODE_INLINE void read_counters(gl_codec_state *st, reader *r, uint32_t i, uint32_t n,
                                 uint32_t nc, unsigned nulls, int64_t *ctr,
                                 const gl_event_columns *cols) {
  for (uint32_t k = 0; k < nc; k++) {
    int64_t c = INT64_MIN;
    if (!(nulls >> k & 1u)) {
      c = (int64_t)((uint64_t)st->last_ctr[k] + unzigzag(get(r)));
      if (c == INT64_MIN) r->bad = 1; /* the null value is never a delta's result */
      st->last_ctr[k] = c;
    }
    if (ctr)
      ctr[(size_t)i * nc + k] = c;
    else
      cols->counters[(size_t)k * n + i] = c;
  }
}

/* Into rows (ev, ctr) or, when ev is NULL, into columns (cols): inlined
 * into both entry points, so each has its own loop without the test. */
DECODE_INLINE int decode(gl_codec_state *st, const uint8_t *in, size_t len, uint32_t n,
                         uint32_t nc, gl_event_t *ev, int64_t *ctr,
                         const gl_event_columns *cols, const char **why) {
  reset(st);
  reader r = {in, in + len, 0};
  if (nc > GL_MAX_COUNTERS) {
    *why = "too many counters";
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    unsigned head = get_byte(&r);
    gl_codec_sym *y;
    int rc = read_symbol(st, &r, head, &y, why);
    if (rc < 0) return -1;
    if (rc) break;
    gl_event_t row;
    unsigned nulls;
    if (read_row(st, &r, head, y, nc, &row, &nulls, why) != 0) return -1;
    put_row(i, &row, ev, cols);
    read_counters(st, &r, i, n, nc, nulls, ev ? ctr : 0, cols);
    if (r.bad) break;
    remember(st, y, &row, nulls);
  }
  if (r.bad) {
    *why = "a row runs past the end of the block, or a number is malformed";
    return -1;
  }
  if (r.p != r.end) {
    *why = "bytes left over after the block's last row";
    return -1;
  }
  return 0;
}

int gl_codec_decode(gl_codec_state *st, const uint8_t *in, size_t len, uint32_t n, uint32_t nc,
                    gl_event_t *ev, int64_t *ctr, const char **why) {
  return decode(st, in, len, n, nc, ev, ctr, 0, why);
}

int gl_codec_decode_columns(gl_codec_state *st, const uint8_t *in, size_t len, uint32_t n,
                            uint32_t nc, const gl_event_columns *cols, const char **why) {
  return decode(st, in, len, n, nc, 0, 0, cols, why);
}

/* ------------------------------------------------------------ check */

static inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}

uint32_t gl_codec_check(const gl_spool_block *b, const void *payload, size_t len) {
  gl_spool_block c;
  memcpy(&c, b, sizeof c);
  c.check = 0;
  uint64_t h = 0x6a09e667f3bcc908ull, w;
  _Static_assert(sizeof c % 8 == 0, "block header in whole words");
  for (size_t i = 0; i < sizeof c; i += 8) {
    memcpy(&w, (const char *)&c + i, 8);
    h = mix(h, w);
  }
  const unsigned char *p = payload;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    memcpy(&w, p + i, 8);
    h = mix(h, w);
  }
  if (i < len) {
    w = 0;
    memcpy(&w, p + i, len - i);
    h = mix(h, w);
  }
  h = mix(h, (uint64_t)len);
  return (uint32_t)(h ^ (h >> 32));
}
