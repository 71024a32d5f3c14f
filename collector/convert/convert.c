/* grainlab-convert — turn a spool (grainlab_spool.h) into the Parquet trace
 * of docs/trace-format.md.
 *
 *   grainlab-convert [--fd N] SPOOL OUT
 *
 * The collector starts it at the end of a run with --fd: the spool's
 * descriptor, inherited with its flock still held, so readers see the spool
 * locked from the run's start until the trace is ready. Run by hand (or by
 * grainlab.trace.load on a spool left by a killed run), it takes the lock
 * itself, waiting while another process holds it.
 *
 * Streams block by block, one Parquet row group per block, through the
 * writer shim (libgrainwriter.so), on a thread of its own: the main thread
 * reads and decodes the next block meanwhile (memory: two blocks). The file metadata is
 * the header's key/value pairs overridden by the trailer's, plus what only
 * the whole spool tells: the clock rate (from the (tsc, monotonic) pairs),
 * the row group count and, when the run ended without a trailer (SIGKILL),
 * complete=false. A truncated last block is not written: its events are
 * counted in grainlab.lost_events (and grainlab.dropped_events).
 *
 * Writes .OUT.<pid>.<k>.grainlab-tmp beside OUT, renames it to OUT (OUT must
 * not be a symbolic link: callers pass the link's target), removes the spool;
 * exit 0. On an error: one line on stderr, exit 1, the spool kept (the
 * temporary file removed). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "grainlab_event.h"
#include "grainlab_spool.h"
#include "spool_codec.h"

/* The writer shim, linked directly. */
gl_writer *gl_writer_open(const char *path, int ncounters, const char *const *counter_names,
                          char *err, size_t errlen);
int gl_writer_write(gl_writer *w, uint32_t thread, const gl_event_t *events,
                    const int64_t *counters, size_t n, char *err, size_t errlen);
int gl_writer_write_columns(gl_writer *w, uint32_t thread, const gl_event_columns *columns,
                            size_t n, char *err, size_t errlen);
int gl_writer_close(gl_writer *w, size_t nkv, const char *const *keys,
                    const char *const *values, char *err, size_t errlen);

#define MAX_BLOCK_EVENTS (GL_BUFFER_EVENTS_MAX + 1) /* + the FLUSH_BEGIN slot */
#define MAX_KV_BYTES (256u << 20)
#define MAX_KV 256

static const char *spool_path, *out_path;
static char tmp_path[4096 + 8];
static gl_writer *writer;

static void pipeline_stop(void);

static void die(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Started by a run that `grainlab record` watches (GRAINLAB_QUIET=1), the
   * converter leaves the one line to record, which retries the conversion
   * and explains; run by hand or by grainlab.load, it says why. */
  const char *quiet = getenv("GRAINLAB_QUIET");
  if (!(quiet && strcmp(quiet, "1") == 0))
    fprintf(stderr, "grainlab: cannot convert %s: %s\n", spool_path, msg);
  pipeline_stop(); /* no write in flight when the writer is closed */
  if (writer) {
    char err[256];
    gl_writer_close(writer, 0, 0, 0, err, sizeof err);
  }
  if (tmp_path[0]) unlink(tmp_path);
  exit(1);
}

/* ------------------------------------------------------------ metadata */

typedef struct kvlist {
  size_t n;
  char *key[MAX_KV], *value[MAX_KV];
} kvlist;

static void kv_set(kvlist *l, const char *key, const char *value) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->key[i], key) == 0) {
      free(l->value[i]);
      l->value[i] = strdup(value);
      return;
    }
  if (l->n == MAX_KV) die("more than %d metadata entries", MAX_KV);
  l->key[l->n] = strdup(key);
  l->value[l->n++] = strdup(value);
}

static const char *kv_get(const kvlist *l, const char *key) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->key[i], key) == 0) return l->value[i];
  return 0;
}

/* Parse `nkv` records from buf[0..len). Returns 0, or -1 if they overrun. */
static int kv_parse(const char *buf, size_t len, uint32_t nkv, kvlist *out) {
  size_t off = 0;
  for (uint32_t i = 0; i < nkv; i++) {
    uint32_t lens[2];
    if (len - off < sizeof lens) return -1;
    memcpy(lens, buf + off, sizeof lens);
    off += sizeof lens;
    if (lens[0] > len - off || lens[1] > len - off - lens[0]) return -1;
    char *k = strndup(buf + off, lens[0]);
    char *v = strndup(buf + off + lens[0], lens[1]);
    off += (size_t)lens[0] + lens[1];
    kv_set(out, k, v);
    free(k);
    free(v);
  }
  return off == len ? 0 : -1;
}

/* ------------------------------------------------------------ images */

/* grainlab.images: one JSON object per image of an exec chain, in order:
 * {"command": [...], "first_thread": N, "loadmap": [...]} (docs/trace-format.md). */
static size_t images_map_at; /* where the last image's load map starts */

static void append_json(char **buf, size_t *len, size_t *cap, const char *text) {
  size_t n = strlen(text);
  if (*len + n + 1 > *cap) {
    *cap = (*len + n + 1) * 2;
    *buf = realloc(*buf, *cap);
    if (!*buf) die("out of memory");
  }
  memcpy(*buf + *len, text, n + 1);
  *len += n;
}

static void append_image(char **buf, size_t *len, size_t *cap, const kvlist *kv, int comma) {
  const char *cmd = kv_get(kv, "grainlab.command");
  const char *first = kv_get(kv, "grainlab.spool.first_thread");
  const char *map = kv_get(kv, "grainlab.loadmap");
  if (comma) append_json(buf, len, cap, ", ");
  append_json(buf, len, cap, "{\"command\": ");
  append_json(buf, len, cap, cmd ? cmd : "null");
  append_json(buf, len, cap, ", \"first_thread\": ");
  append_json(buf, len, cap, first && *first ? first : "0");
  append_json(buf, len, cap, ", \"loadmap\": ");
  images_map_at = *len;
  append_json(buf, len, cap, map ? map : "[]");
  append_json(buf, len, cap, "}");
}

/* ------------------------------------------------------------ writing */

/* What record's closing line prints, counted as the blocks pass (the same
 * rows the trace gets): it reads them from the footer instead of scanning
 * the whole trace (grainlab.counts in docs/trace-format.md). */
#define GL_TASK_TASKWAIT 0x10u /* OMPT's ompt_task_taskwait flag (schema.TASK_TASKWAIT) */
typedef struct event_counts {
  uint64_t task_creates, chunk_events;
  uint64_t wait_creates; /* libomp's dependence-wait pseudo-tasks (folded at load) */
} event_counts;

static inline void count_event(event_counts *c, uint8_t event, uint32_t kind) {
  c->task_creates += event == GL_EV_TASK_CREATE;
  c->wait_creates += event == GL_EV_TASK_CREATE && (kind & GL_TASK_TASKWAIT);
  c->chunk_events += event == GL_EV_CHUNK;
}

/* Blocks go to the writer thread through a ring of two jobs: job k uses
 * buffer k % 2, so the main thread decodes block k + 1 while block k is
 * written, and waits before it reuses the buffer of block k - 1 until that
 * block is written. The writer shim is called by one thread at a time: open
 * before the thread starts, close after it stopped. */
typedef struct job {
  uint32_t thread, n;
  const gl_event_t *ev; /* rows (a raw block), or NULL: the columns */
  const int64_t *ctr;
  gl_event_columns cols;
} job;
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int running, quit, failed;
  uint64_t submitted, written; /* jobs */
  job jobs[2];
  char err[1024]; /* the first failure */
} pipe_ = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&pipe_.mu);
  for (;;) {
    while (pipe_.written == pipe_.submitted && !pipe_.quit) pthread_cond_wait(&pipe_.cv, &pipe_.mu);
    if (pipe_.written == pipe_.submitted) break; /* quit, nothing left */
    job j = pipe_.jobs[pipe_.written % 2];
    int failed = pipe_.failed || pipe_.quit;
    pthread_mutex_unlock(&pipe_.mu);
    char err[1024] = "";
    int rc = failed ? 0
             : j.ev  ? gl_writer_write(writer, j.thread, j.ev, j.ctr, j.n, err, sizeof err)
                     : gl_writer_write_columns(writer, j.thread, &j.cols, j.n, err, sizeof err);
    pthread_mutex_lock(&pipe_.mu);
    if (rc != 0 && !pipe_.failed) {
      pipe_.failed = 1;
      memcpy(pipe_.err, err, sizeof err);
    }
    pipe_.written++;
    pthread_cond_broadcast(&pipe_.cv);
  }
  pthread_mutex_unlock(&pipe_.mu);
  return 0;
}

static void pipeline_start(void) {
  int rc = pthread_create(&pipe_.thread, 0, writer_main, 0);
  if (rc != 0) die("cannot start the writer thread: %s", strerror(rc));
  pipe_.running = 1;
}

/* Wait until at most `outstanding` jobs are unwritten; die on a failed write. */
static void pipeline_wait(uint64_t outstanding) {
  pthread_mutex_lock(&pipe_.mu);
  while (pipe_.submitted - pipe_.written > outstanding) pthread_cond_wait(&pipe_.cv, &pipe_.mu);
  int failed = pipe_.failed;
  pthread_mutex_unlock(&pipe_.mu);
  if (failed) die("%s", pipe_.err);
}

/* The buffer (0 or 1) the next job will use, free once this returns. */
static unsigned pipeline_next_buffer(void) {
  pipeline_wait(1);
  return (unsigned)(pipe_.submitted % 2);
}

static void pipeline_submit(job j) {
  pthread_mutex_lock(&pipe_.mu);
  pipe_.jobs[pipe_.submitted % 2] = j;
  pipe_.submitted++;
  pthread_cond_broadcast(&pipe_.cv);
  pthread_mutex_unlock(&pipe_.mu);
}

/* Stop the writer thread: after the job it is writing (die()), or, from
 * the main loop's end, after every job (pipeline_wait(0) first). */
static void pipeline_stop(void) {
  if (!pipe_.running) return; /* die() runs on the main thread only */
  pthread_mutex_lock(&pipe_.mu);
  pipe_.quit = 1;
  pthread_cond_broadcast(&pipe_.cv);
  pthread_mutex_unlock(&pipe_.mu);
  pthread_join(pipe_.thread, 0);
  pipe_.running = 0;
}

/* ------------------------------------------------------------ reading */

static int rfd;
static uint64_t file_size;

/* Read exactly len bytes at off; returns bytes read (short only at EOF). */
static size_t read_at(void *buf, size_t len, uint64_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = pread(rfd, (char *)buf + got, len - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("reading: %s", strerror(errno));
    if (r == 0) break;
    got += (size_t)r;
  }
  return got;
}

/* The descriptor that carries the lock: inherited (--fd) or taken here. */
static int lock_spool(long inherited) {
  struct stat by_path, by_fd;
  if (stat(spool_path, &by_path) != 0) die("%s", strerror(errno));
  if (inherited >= 0 && fstat((int)inherited, &by_fd) == 0 &&
      by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino)
    return (int)inherited; /* the collector's, lock held */
  int fd = open(spool_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("%s", strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) die("cannot lock: %s", strerror(errno));
    fprintf(stderr, "grainlab: waiting for the collector to finish writing %s\n", spool_path);
    if (flock(fd, LOCK_EX) != 0) die("cannot lock: %s", strerror(errno));
  }
  if (fstat(fd, &by_fd) == 0 && by_fd.st_nlink == 0) {
    /* Another converter finished it while we waited. */
    if (access(out_path, F_OK) == 0) exit(0);
    die("the spool was removed without a trace being written");
  }
  return fd;
}

static void format_clock(char *buf, size_t len, const gl_spool_header *h, uint64_t tsc,
                         uint64_t mono, int *calibrated) {
  double hz = 1e9;
  *calibrated = 1;
  if (h->clock_source == GL_SPOOL_CLOCK_TSC) {
    if (mono > h->start_monotonic_ns && tsc > 0)
      hz = (double)tsc * 1e9 / (double)(mono - h->start_monotonic_ns);
    else
      *calibrated = 0; /* no clock pair after the start: no events either */
  }
  snprintf(buf, len,
           "{\"source\": \"%s\", \"hz\": %.1f, \"start_monotonic_ns\": %" PRIu64
           ", \"start_realtime_ns\": %" PRIu64 "}",
           h->clock_source == GL_SPOOL_CLOCK_TSC ? "tsc" : "monotonic", hz,
           h->start_monotonic_ns, h->start_realtime_ns);
}

/* ------------------------------------------------------------ converting */

/* One conversion: what the spool's header says, and what reading it found.
 * The phases below (header, output, records, metadata) share it. */
typedef struct conversion {
  gl_spool_header h;
  kvlist meta, trailer;
  size_t row_bytes, block_bytes; /* a row with its counters; a block header */
  uint64_t off;                  /* where the next record starts */
  uint64_t rows, groups, lost, bad_blocks, first_bad_at;
  uint64_t last_tsc, last_mono; /* the latest clock pair seen */
  uint32_t threads_seen;
  unsigned char seen[65536]; /* threads seen */
  event_counts counts;
  int have_trailer;
  const char *damage, *first_bad; /* why reading stopped; the first block left out */
  /* The command lines of every image of the run: an exec'd image continues
   * the spool with a header of its own (grainlab_spool.h). */
  char *images;
  size_t images_len, images_cap;
  unsigned segments;
  /* A block's payload and its decoded rows, one pair per job in flight. */
  unsigned char *bufs[2], *rows_bufs[2];
  size_t buf_caps[2], rows_caps[2];
  gl_codec_state codec;
} conversion;

static void read_header(conversion *c) {
  gl_spool_header *h = &c->h;
  if (read_at(h, sizeof *h, 0) < sizeof *h || memcmp(h->magic, GL_SPOOL_MAGIC, 8) != 0)
    die(file_size == 0 ? "empty file (the run ended before the collector started)"
                       : "not a grainlab spool (no spool header)");
  if (h->version != 1 && h->version != GL_SPOOL_VERSION)
    die("spool format version %u (this converter reads versions 1 to %u)", h->version,
        GL_SPOOL_VERSION);
  if (h->event_bytes != sizeof(gl_event_t))
    die("events of %u bytes, this converter reads %zu", h->event_bytes, sizeof(gl_event_t));
  if (h->ncounters > GL_MAX_COUNTERS) die("%u counters (at most %d)", h->ncounters,
                                         GL_MAX_COUNTERS);
  if (h->header_bytes < sizeof *h || h->header_bytes > file_size ||
      h->header_bytes - sizeof *h > MAX_KV_BYTES)
    die("truncated header");
  size_t kvlen = h->header_bytes - sizeof *h;
  char *kvbuf = malloc(kvlen ? kvlen : 1);
  if (!kvbuf) die("out of memory");
  if (read_at(kvbuf, kvlen, sizeof *h) < kvlen || kv_parse(kvbuf, kvlen, h->nkv, &c->meta) != 0)
    die("corrupt header metadata");
  free(kvbuf);
  /* Version 1 block headers are shorter and always raw. */
  c->row_bytes = sizeof(gl_event_t) + h->ncounters * sizeof(int64_t);
  c->block_bytes = h->version >= 2 ? sizeof(gl_spool_block) : GL_SPOOL_BLOCK_V1_BYTES;
  c->off = h->header_bytes;
}

/* The temporary file beside OUT, and the writer on it. */
static void open_output(conversion *c) {
  /* Counter names: '\n'-separated. */
  const char *names_text = kv_get(&c->meta, "grainlab.spool.counter_names");
  char *names_copy = strdup(names_text ? names_text : "");
  const char *names[GL_MAX_COUNTERS];
  uint32_t nnames = 0;
  for (char *save = 0, *tok = strtok_r(names_copy, "\n", &save); tok && nnames < GL_MAX_COUNTERS;
       tok = strtok_r(0, "\n", &save))
    names[nnames++] = tok;
  if (nnames != c->h.ncounters) die("header names %u counters but declares %u", nnames,
                                   c->h.ncounters);
  /* A name of our own beside the output (same file system, so the final
   * rename is atomic), never an existing file: a reader never sees half a
   * trace, and nothing that grainlab did not create is overwritten. */
  const char *slash = strrchr(out_path, '/');
  int dirlen = slash ? (int)(slash - out_path + 1) : 0;
  struct stat st;
  for (unsigned k = 0;; k++) {
    if (snprintf(tmp_path, sizeof tmp_path, "%.*s.%s.%ld.%u.grainlab-tmp", dirlen, out_path,
                 out_path + dirlen, (long)getpid(), k) >= (int)sizeof tmp_path)
      die("path too long: %s", out_path);
    if (lstat(tmp_path, &st) != 0 && errno == ENOENT) break;
    if (k > 1000) die("cannot find a free temporary name beside %s", out_path);
  }
  char err[1024] = "";
  writer = gl_writer_open(tmp_path, (int)c->h.ncounters, names, err, sizeof err);
  if (!writer) die("%s", err); /* die() unlinks the temporary file it may have made */
  free(names_copy);            /* the schema made from them holds copies */
}

/* Each read_* below reads the record at c->off: 1 when reading goes on
 * after it, 0 when it stops there (c->damage says why). */

/* The header of an exec'd image: its command line and load map. */
static int read_exec_header(conversion *c) {
  gl_spool_header h2;
  uint64_t off = c->off;
  if (read_at(&h2, sizeof h2, off) < sizeof h2 || h2.header_bytes < sizeof h2 ||
      h2.header_bytes - sizeof h2 > MAX_KV_BYTES || off + h2.header_bytes > file_size) {
    c->damage = "the spool ends inside an exec'd image's header";
    return 0;
  }
  if (h2.version != c->h.version || h2.event_bytes != c->h.event_bytes ||
      h2.ncounters != c->h.ncounters) {
    c->damage = "an exec'd image records other counters; its events are left out";
    return 0;
  }
  size_t len2 = h2.header_bytes - sizeof h2;
  char *kv2 = malloc(len2 ? len2 : 1);
  kvlist seg = {0};
  if (!kv2 || read_at(kv2, len2, off + sizeof h2) < len2 ||
      kv_parse(kv2, len2, h2.nkv, &seg) != 0) {
    free(kv2);
    c->damage = "corrupt header of an exec'd image";
    return 0;
  }
  free(kv2);
  append_image(&c->images, &c->images_len, &c->images_cap, &seg, 1);
  c->segments++;
  c->off += h2.header_bytes;
  return 1;
}

static int read_trailer(conversion *c, const unsigned char *head, size_t got) {
  gl_spool_trailer t;
  if (got < sizeof t) {
    c->damage = "the spool ends inside the trailer";
    return 0;
  }
  memcpy(&t, head, sizeof t);
  if (t.kv_bytes > MAX_KV_BYTES || c->off + sizeof t + t.kv_bytes > file_size) {
    c->damage = "the spool ends inside the trailer";
    return 0;
  }
  char *tb = malloc(t.kv_bytes ? t.kv_bytes : 1);
  if (!tb) die("out of memory");
  if (read_at(tb, t.kv_bytes, c->off + sizeof t) < t.kv_bytes ||
      kv_parse(tb, t.kv_bytes, t.nkv, &c->trailer) != 0) {
    free(tb);
    c->damage = "corrupt trailer";
    return 0;
  }
  free(tb);
  c->have_trailer = 1;
  if (t.monotonic_ns > c->last_mono) c->last_tsc = t.tsc, c->last_mono = t.monotonic_ns;
  c->off += sizeof t + t.kv_bytes;
  return 1;
}

/* Decode a compact block into buffer k's rows, as the columns the writer
 * takes: the 64-bit ones (counters too), then the narrower, all aligned.
 * Returns why it cannot be read, or NULL. */
static const char *decode_block(conversion *c, unsigned k, const gl_spool_block *b,
                                size_t need, gl_event_columns *cols) {
  uint64_t raw_bytes = (uint64_t)b->nevents * c->row_bytes;
  if (gl_codec_check(b, c->bufs[k], need) != b->check)
    return "a block fails its check (damaged on disk?)";
  if (!c->rows_bufs[k] || raw_bytes > c->rows_caps[k]) {
    free(c->rows_bufs[k]);
    c->rows_caps[k] = raw_bytes ? (size_t)raw_bytes : 1;
    c->rows_bufs[k] = malloc(c->rows_caps[k]);
    if (!c->rows_bufs[k]) die("out of memory for a block of %u events", b->nevents);
  }
  size_t n = b->nevents;
  uint32_t nc = c->h.ncounters;
  uint64_t *wide = (uint64_t *)c->rows_bufs[k];
  *cols = (gl_event_columns){
      .tsc = wide, .task = wide + n, .other = wide + 2 * n, .codeptr = wide + 3 * n,
      .value = wide + 4 * n, .count = wide + 5 * n,
      .counters = nc ? (int64_t *)(wide + 6 * n) : 0,
      .kind = (uint32_t *)(wide + (6 + nc) * n)};
  cols->cpu = (uint16_t *)(cols->kind + n);
  cols->event = (uint8_t *)(cols->cpu + n);
  cols->flags = cols->event + n;
  const char *why = 0;
  if (gl_codec_decode_columns(&c->codec, c->bufs[k], need, b->nevents, nc, cols, &why) != 0)
    return why;
  return 0;
}

/* A block that cannot be read is left out, its rows counted as lost;
 * reading goes on if the next record starts where this block says it
 * ends, else stops here. */
static int skip_bad_block(conversion *c, const gl_spool_block *b, size_t need, const char *bad) {
  c->lost += b->nevents;
  uint64_t next = c->off + c->block_bytes + need;
  unsigned char peek[8];
  uint32_t m = 0;
  size_t pg = read_at(peek, sizeof peek, next);
  if (pg >= 4) memcpy(&m, peek, 4);
  if (next == file_size || m == GL_SPOOL_BLOCK_MAGIC || m == GL_SPOOL_TRAILER_MAGIC ||
      (pg == 8 && memcmp(peek, GL_SPOOL_MAGIC, 8) == 0)) {
    if (!c->bad_blocks++) c->first_bad = bad, c->first_bad_at = c->off;
    c->off = next;
    return 1;
  }
  c->damage = bad;
  return 0;
}

/* Hand a block's rows (raw) or columns (decoded) to the writer thread. */
static void submit_block(conversion *c, const gl_spool_block *b, const unsigned char *rows_at,
                         const gl_event_columns *cols) {
  if (b->nevents && rows_at) {
    const gl_event_t *ev = (const gl_event_t *)rows_at;
    for (uint32_t i = 0; i < b->nevents; i++) count_event(&c->counts, ev[i].event, ev[i].kind);
    const int64_t *ctr = c->h.ncounters
                             ? (const int64_t *)(rows_at + (size_t)b->nevents * sizeof(gl_event_t))
                             : 0;
    pipeline_submit((job){.thread = b->thread, .n = b->nevents, .ev = ev, .ctr = ctr});
  } else if (b->nevents) {
    for (uint32_t i = 0; i < b->nevents; i++)
      count_event(&c->counts, cols->event[i], cols->kind[i]);
    pipeline_submit((job){.thread = b->thread, .n = b->nevents, .cols = *cols});
  }
  c->rows += b->nevents;
  c->groups += b->nevents > 0;
  if (!c->seen[b->thread]) c->seen[b->thread] = 1, c->threads_seen++;
  if (b->monotonic_ns > c->last_mono) c->last_tsc = b->tsc, c->last_mono = b->monotonic_ns;
}

static int read_block(conversion *c, const unsigned char *head, size_t got) {
  if (got < c->block_bytes) {
    c->damage = "the spool ends inside a block header";
    return 0;
  }
  gl_spool_block b;
  memset(&b, 0, sizeof b);
  memcpy(&b, head, c->block_bytes);
  uint64_t raw_bytes = (uint64_t)b.nevents * c->row_bytes;
  if (c->h.version < 2) b.encoding = GL_SPOOL_RAW, b.payload_bytes = raw_bytes;
  if (b.magic != GL_SPOOL_BLOCK_MAGIC || b.ncounters != c->h.ncounters ||
      b.nevents > MAX_BLOCK_EVENTS || b.thread > 65535 ||
      (b.encoding != GL_SPOOL_RAW && b.encoding != GL_SPOOL_COMPACT) ||
      b.payload_bytes > raw_bytes) {
    c->damage = "unreadable data where a block should start";
    return 0;
  }
  size_t need = (size_t)b.payload_bytes;
  if (c->off + c->block_bytes + need > file_size) {
    c->lost += b.nevents;
    c->damage = "the last block is cut short";
    return 0;
  }
  unsigned k = pipeline_next_buffer();
  if (need > c->buf_caps[k]) {
    free(c->bufs[k]);
    c->buf_caps[k] = need;
    c->bufs[k] = malloc(need);
    if (!c->bufs[k]) die("out of memory for a block of %u events", b.nevents);
  }
  if (read_at(c->bufs[k], need, c->off + c->block_bytes) < need) {
    c->lost += b.nevents;
    c->damage = "the last block is cut short";
    return 0;
  }
  const unsigned char *rows_at = c->bufs[k]; /* a raw block's rows; NULL: cols */
  gl_event_columns cols;
  const char *bad = 0;
  if (b.encoding == GL_SPOOL_RAW) {
    if (need != raw_bytes) bad = "a raw block of the wrong size";
  } else {
    bad = decode_block(c, k, &b, need, &cols);
    rows_at = 0;
  }
  if (bad) return skip_bad_block(c, &b, need, bad);
  submit_block(c, &b, rows_at, &cols);
  c->off += c->block_bytes + need;
  return 1;
}

/* Every record after the header, in order: blocks, exec'd images' headers,
 * the trailer wherever it is; blocks written by the writer thread. */
static void read_records(conversion *c) {
  c->images_cap = 4096;
  c->segments = 1;
  c->images = malloc(c->images_cap);
  if (!c->images) die("out of memory");
  c->images_len = (size_t)snprintf(c->images, c->images_cap, "[");
  append_image(&c->images, &c->images_len, &c->images_cap, &c->meta, 0);
  pipeline_start();
  while (c->off < file_size) {
    unsigned char head[sizeof(gl_spool_block)];
    size_t got = read_at(head, sizeof head, c->off);
    uint32_t magic = 0;
    if (got >= sizeof magic) memcpy(&magic, head, sizeof magic);
    int more = got >= 8 && memcmp(head, GL_SPOOL_MAGIC, 8) == 0 ? read_exec_header(c)
               : magic == GL_SPOOL_TRAILER_MAGIC               ? read_trailer(c, head, got)
                                                               : read_block(c, head, got);
    if (!more) break;
  }
  pipeline_wait(0); /* every block written (or die) */
  pipeline_stop();
  for (unsigned k = 0; k < 2; k++) free(c->rows_bufs[k]), free(c->bufs[k]);
}

/* grainlab.images, when the run exec'd: the last image's load map is the
 * fresh one its end record carries. */
static void finish_images(conversion *c) {
  if (c->segments > 1) {
    const char *last_map = kv_get(&c->trailer, "grainlab.loadmap");
    if (last_map) {
      c->images_len = images_map_at;
      c->images[c->images_len] = '\0';
      append_json(&c->images, &c->images_len, &c->images_cap, last_map);
      append_json(&c->images, &c->images_len, &c->images_cap, "}");
    }
    append_json(&c->images, &c->images_len, &c->images_cap, "]");
    kv_set(&c->meta, "grainlab.images", c->images);
  }
  free(c->images);
}

/* grainlab.spool_damage: where reading stopped, and the blocks left out. */
static void note_damage(conversion *c) {
  char text[512];
  snprintf(text, sizeof text, "%" PRIu64, c->lost);
  kv_set(&c->meta, "grainlab.lost_events", text);
  size_t used = 0;
  text[0] = '\0';
  if (c->damage)
    used = (size_t)snprintf(text, sizeof text, "%s at byte %" PRIu64 " of %" PRIu64, c->damage,
                            c->off, file_size);
  if (c->bad_blocks && used < sizeof text)
    snprintf(text + used, sizeof text - used,
             "%s%" PRIu64 " damaged block%s left out (the first at byte %" PRIu64 " of %" PRIu64
             ": %s)", c->damage ? "; " : "", c->bad_blocks, c->bad_blocks == 1 ? "" : "s",
             c->first_bad_at, file_size, c->first_bad);
  kv_set(&c->meta, "grainlab.spool_damage", text);
  kv_set(&c->meta, "grainlab.complete", "false");
}

/* Metadata: header, then trailer on top, then what the spool as a whole says. */
static void finish_metadata(conversion *c) {
  kvlist *meta = &c->meta;
  for (size_t i = 0; i < c->trailer.n; i++) kv_set(meta, c->trailer.key[i], c->trailer.value[i]);
  char text[512];
  if (!c->have_trailer) {
    kv_set(meta, "grainlab.complete", "false");
    kv_set(meta, "grainlab.end_reason", "killed: no shutdown record");
    snprintf(text, sizeof text, "%u", c->threads_seen);
    kv_set(meta, "grainlab.threads", text);
  }
  int calibrated;
  format_clock(text, sizeof text, &c->h, c->last_tsc, c->last_mono, &calibrated);
  (void)calibrated;
  kv_set(meta, "grainlab.clock", text);
  snprintf(text, sizeof text, "%" PRIu64, c->groups);
  kv_set(meta, "grainlab.flushes", text);
  snprintf(text, sizeof text,
           "{\"events\": %" PRIu64 ", \"threads\": %u, \"task_creates\": %" PRIu64
           ", \"chunk_events\": %" PRIu64 ", \"dependence_wait_creates\": %" PRIu64 "}",
           c->rows, c->threads_seen, c->counts.task_creates, c->counts.chunk_events,
           c->counts.wait_creates);
  kv_set(meta, "grainlab.counts", text);
  const char *dropped_text = kv_get(meta, "grainlab.dropped_events");
  uint64_t dropped = dropped_text ? strtoull(dropped_text, 0, 10) : 0;
  snprintf(text, sizeof text, "%" PRIu64, dropped + c->lost);
  kv_set(meta, "grainlab.dropped_events", text);
  if (c->damage || c->bad_blocks) note_damage(c);
}

/* Close the writer with the metadata (spool-only keys left out) and put
 * the trace in place. */
static void close_output(conversion *c) {
  const char *keys[MAX_KV], *values[MAX_KV];
  size_t nkv = 0;
  for (size_t i = 0; i < c->meta.n; i++) {
    if (strncmp(c->meta.key[i], "grainlab.spool.", 15) == 0) continue; /* spool-only */
    keys[nkv] = c->meta.key[i];
    values[nkv++] = c->meta.value[i];
  }
  char err[1024] = "";
  gl_writer *w = writer;
  writer = 0;
  if (gl_writer_close(w, nkv, keys, values, err, sizeof err) != 0) die("%s", err);
  if (rename(tmp_path, out_path) != 0) die("cannot rename %s to %s: %s", tmp_path, out_path,
                                           strerror(errno));
  tmp_path[0] = 0;
}

int main(int argc, char **argv) {
  long inherited = -1;
  int a = 1;
  if (a + 1 < argc && strcmp(argv[a], "--fd") == 0) {
    inherited = strtol(argv[a + 1], 0, 10);
    a += 2;
  }
  if (argc - a != 2) {
    fprintf(stderr, "usage: grainlab-convert [--fd N] SPOOL OUT\n");
    return 2;
  }
  spool_path = argv[a];
  out_path = argv[a + 1];
  int lock_fd = lock_spool(inherited);
  rfd = open(spool_path, O_RDONLY | O_CLOEXEC);
  if (rfd < 0) die("%s", strerror(errno));
  struct stat st;
  if (fstat(rfd, &st) != 0) die("%s", strerror(errno));
  file_size = (uint64_t)st.st_size;

  static conversion c; /* large (the threads seen), zeroed */
  read_header(&c);
  open_output(&c);
  read_records(&c);
  finish_images(&c);
  finish_metadata(&c);
  close_output(&c);
  /* Remove the spool only if the name still means the file we converted (a
   * new run may have replaced it meanwhile: it would then hold the lock, and
   * we would not have got here, but stay careful). */
  struct stat now, ours;
  if (stat(spool_path, &now) == 0 && fstat(rfd, &ours) == 0 && now.st_dev == ours.st_dev &&
      now.st_ino == ours.st_ino)
    unlink(spool_path);
  close(rfd);
  close(lock_fd);
  return 0;
}
