/* spool.c — the collector's side of the spool file (spool.h).
 *
 * Why a spool: encoding Parquet costs ~200 ns per row, which inside the
 * application (on its threads, under a lock) nearly doubled the run time of
 * fine-grained programs. Appending a full buffer raw costs a memcpy into the
 * page cache; the encoding happens after the run, in grainlab-convert.
 *
 * The spool is opened O_APPEND: every block is one writev(), which Linux
 * applies atomically at the end of a regular file, so threads flush
 * concurrently with no lock of ours. The descriptor holds an flock for the
 * whole run and is inherited by the converter, so a reader can tell "still
 * being written" (locked) from "left behind by a killed run" (unlocked). */
#include "spool.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "grainlab_spool.h"
#include "spool_codec.h"

extern int gl_quiet;     /* tool.c: GRAINLAB_QUIET */
extern int gl_ncounters; /* thread_state.c */
extern uint32_t gl_buffer_events;

extern char **environ;

static char out_path[PATH_MAX];
static char spool_path[PATH_MAX + 8];
static int spool_fd = -1;
static uint32_t ncounters;
static int broken; /* a write failed: later blocks would not parse, drop them */
static uint64_t blocks, events, dropped;

/* Disk space is reserved ahead of the appends (fallocate, KEEP_SIZE: the
 * file's size stays that of its data): writing into reserved blocks costs the
 * application ~30% less kernel time than allocating them per write (600 MB of
 * blocks: 0.08 s instead of 0.12 s, measured on ext4 here). */
#define GL_PREALLOC_BYTES (64ull << 20)
/* Kept free in the reservation for the end record (trailer with a load map of
 * a few KiB): a full disk never costs the run its ending. */
#define GL_TRAILER_RESERVE (256ull << 10)
/* And room for the trace: the converter writes it beside the spool, so a
 * full disk must leave it room. Kept free in the reservation while recording
 * and handed back after the end record (release_room): 3/4 of the compact
 * blocks' bytes (fib's trace is ~0.45 of its compact spool with the default
 * buffer), 1/8 of raw blocks' (~0.04). Tiny buffers make traces larger than
 * that (a row group costs ~2.5 KiB): the converter may then not fit, and
 * says where the spool is kept. */
#define GL_TRACE_ROOM(bytes, compact) ((compact) ? (bytes) / 4 * 3 : (bytes) / 8)
static uint64_t spool_bytes;   /* bytes appended so far (approximately the size) */
static uint64_t claimed;       /* bytes promised to blocks (>= appended) */
static uint64_t trace_room;    /* kept free for the trace */
static uint64_t reserved_end;  /* space reserved up to here */
static int prealloc_off;       /* the file system cannot: stop trying */
static int disk_full;          /* no room for the next block: recording stopped */
static pthread_mutex_t reserve_lock = PTHREAD_MUTEX_INITIALIZER;

/* The converter, prepared at initialisation so that starting it needs no
 * allocation (signal handlers start it too). */
static char convert_exe[PATH_MAX + 32];
static char fd_arg[16];
static char *convert_argv[8];
static posix_spawn_file_actions_t convert_actions;
static posix_spawnattr_t convert_attr;
static int convert_ready;
static enum gl_convert_mode convert_mode = GL_CONVERT_BACKGROUND;

char *gl_utoa(uint64_t v, char *out, size_t len) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < sizeof tmp);
  size_t i = 0;
  for (; i < n && i + 1 < len; i++) out[i] = tmp[n - 1 - i];
  if (len) out[i] = '\0';
  return out;
}

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A message from a signal handler: fixed pieces, one write(). */
static void say(const char *a, const char *b, const char *c) {
  char line[PATH_MAX + 256];
  size_t n = 0;
  const char *parts[] = {"grainlab: ", a, b, c, "\n"};
  for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
    for (const char *s = parts[p]; s && *s && n + 1 < sizeof line; s++) line[n++] = *s;
  ssize_t w = write(2, line, n);
  (void)w;
}

/* ------------------------------------------------------------ start-up */

static int fail_open(const char *reason) {
  fprintf(stderr, "grainlab: cannot write trace to %s: %s\n", out_path, reason);
  if (spool_fd >= 0) close(spool_fd);
  spool_fd = -1;
  return 0;
}

/* The process holding the flock on fd's file (from /proc/locks), or 0. */
static int lock_holder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return 0;
  FILE *f = fopen("/proc/locks", "r");
  if (!f) return 0;
  char line[256];
  int holder = 0;
  while (!holder && fgets(line, sizeof line, f)) {
    int pid;
    unsigned maj, min;
    unsigned long ino;
    /* "1: FLOCK  ADVISORY  WRITE 3456 fe:00:9977903 0 EOF" ("->" = a waiter) */
    if (strstr(line, "->") || sscanf(line, "%*d: FLOCK %*s %*s %d %x:%x:%lu", &pid, &maj, &min,
                                     &ino) != 4)
      continue;
    if (maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino) holder = pid;
  }
  fclose(f);
  return holder;
}

/* Is `pid` a grainlab-convert (its comm, truncated to 15 characters by the
 * kernel)? A converter holding the lock is finishing a run that has ended. */
static int is_converter(int pid) {
  char path[64], comm[32] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(comm, sizeof comm, f) != NULL;
  fclose(f);
  return ok && strncmp(comm, "grainlab-conver", 15) == 0;
}

/* Is `pid` this process's parent, grandparent ...? (A traced program that
 * runs another traced program with the same output: waiting for the spool
 * would wait for ourselves.) */
static int is_ancestor(int pid) {
  for (int p = (int)getppid(), depth = 0; p > 1 && depth < 64; depth++) {
    if (p == pid) return 1;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", p);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')'); /* comm may contain spaces */
    if (!close_paren || sscanf(close_paren + 1, " %*c %d", &p) != 1) return 0;
  }
  return 0;
}

/* What kind of non-regular file `mode` is, for a one-line refusal. */
static const char *not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device";
  if (S_ISFIFO(mode)) return "is a FIFO";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

/* The output path with symbolic links followed (docs/trace-format.md, "Output
 * path"): a link given as output is written through — its target is replaced
 * and the link stays a link. A dangling link names its target's path. Up to 40
 * links (as the kernel's ELOOP limit). Returns 0 when too long or looping. */
static int follow_links(const char *given, char *out, size_t len) {
  char cur[PATH_MAX], link[PATH_MAX], next[PATH_MAX];
  if (snprintf(cur, sizeof cur, "%s", given) >= (int)sizeof cur) return 0;
  for (int depth = 0; depth < 40; depth++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      return snprintf(out, len, "%s", cur) < (int)len;
    ssize_t n = readlink(cur, link, sizeof link - 1);
    if (n < 0) return 0;
    link[n] = '\0';
    if (link[0] == '/') {
      snprintf(next, sizeof next, "%s", link);
    } else { /* relative to the link's own directory */
      const char *slash = strrchr(cur, '/');
      int dirlen = slash ? (int)(slash - cur) : 0;
      if (snprintf(next, sizeof next, "%.*s%s%s", dirlen, cur, slash ? "/" : "", link) >=
          (int)sizeof next)
        return 0;
    }
    snprintf(cur, sizeof cur, "%s", next);
  }
  errno = ELOOP;
  return 0;
}

/* A spool left at our path must be ours to reuse: a grainlab spool (or
 * empty). Anything else belongs to someone: never truncate it. */
static int is_our_spool(int fd) {
  char magic[sizeof GL_SPOOL_MAGIC - 1];
  ssize_t n = pread(fd, magic, sizeof magic, 0);
  return n == 0 || (n == (ssize_t)sizeof magic && memcmp(magic, GL_SPOOL_MAGIC, sizeof magic) == 0);
}

/* ------------------------------------------------------------ exec

 * A program that exec()s another image of itself (or another OpenMP program)
 * is one run: the new image finds the spool its earlier image left — same
 * process (pid and start time), unlocked since exec closed it, no end record —
 * and continues it: a new header segment is appended instead of the file being
 * truncated, thread indices (and with them task ids) start after the earlier
 * images' and the clock keeps the first image's origin, so the converter reads
 * one timeline (docs/trace-format.md, "exec"). */
static int continuing;
static uint32_t thread_base;
static uint64_t first_origin, first_mono, first_real;

/* This process's start time (clock ticks after boot, /proc/self/stat field
 * 22): unchanged by exec, different for a later process that reuses the pid. */
static uint64_t process_start(void) {
  char buf[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* comm may hold spaces */
  if (!p) return 0;
  unsigned long long v = 0;
  /* after ')': state(3) ppid ... starttime is the 20th field after comm */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                    "%*d %llu", &v) != 1)
    return 0;
  return (uint64_t)v;
}

/* The value of `key` in a header's key/value records, as an integer (0: absent). */
static uint64_t header_number(const char *kv, size_t len, uint32_t nkv, const char *key) {
  size_t at = 0, klen = strlen(key);
  for (uint32_t i = 0; i < nkv && at + 8 <= len; i++) {
    uint32_t l[2];
    memcpy(l, kv + at, 8);
    if (at + 8 + (size_t)l[0] + l[1] > len) return 0;
    if (l[0] == klen && memcmp(kv + at + 8, key, klen) == 0) {
      char num[32];
      size_t vl = l[1] < sizeof num - 1 ? l[1] : sizeof num - 1;
      memcpy(num, kv + at + 8 + l[0], vl);
      num[vl] = '\0';
      return strtoull(num, 0, 10);
    }
    at += 8 + (size_t)l[0] + l[1];
  }
  return 0;
}

/* Is `key`'s value exactly `want`? */
static int header_is(const char *kv, size_t len, uint32_t nkv, const char *key, const char *want) {
  size_t at = 0, klen = strlen(key), wlen = strlen(want);
  for (uint32_t i = 0; i < nkv && at + 8 <= len; i++) {
    uint32_t l[2];
    memcpy(l, kv + at, 8);
    if (at + 8 + (size_t)l[0] + l[1] > len) return 0;
    if (l[0] == klen && memcmp(kv + at + 8, key, klen) == 0)
      return l[1] == wlen && memcmp(kv + at + 8 + l[0], want, wlen) == 0;
    at += 8 + (size_t)l[0] + l[1];
  }
  return 0;
}

/* Does the spool (read through fd) hold earlier images of this very process,
 * ended by exec? Walks the segments and blocks; on yes sets thread_base and
 * the first image's clock. Any doubt (another process, an end record, a
 * damaged tail) is a no: the spool is then replaced as always. */
static int earlier_image_of_this_process(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) return 0;
  uint64_t size = (uint64_t)st.st_size, off = 0, me = (uint64_t)getpid(), born = process_start();
  uint32_t max_thread = 0;
  uint64_t prior_events = 0, prior_dropped = 0;
  int segments = 0, any_block = 0;
  while (off < size) {
    gl_spool_header h;
    if (size - off >= sizeof h && pread(fd, &h, sizeof h, (off_t)off) == (ssize_t)sizeof h &&
        memcmp(h.magic, GL_SPOOL_MAGIC, 8) == 0) {
      if (h.header_bytes < sizeof h || h.header_bytes > size - off ||
          h.header_bytes - sizeof h > (1u << 20))
        return 0;
      size_t kvlen = h.header_bytes - sizeof h;
      char *kv = malloc(kvlen ? kvlen : 1);
      if (!kv || pread(fd, kv, kvlen, (off_t)(off + sizeof h)) != (ssize_t)kvlen) {
        free(kv);
        return 0;
      }
      uint64_t pid = header_number(kv, kvlen, h.nkv, "grainlab.pid");
      uint64_t start = header_number(kv, kvlen, h.nkv, "grainlab.spool.process_start");
      uint64_t origin = header_number(kv, kvlen, h.nkv, "grainlab.spool.clock_origin");
      free(kv);
      if (pid != me || !born || start != born || h.ncounters != (uint32_t)gl_ncounters ||
          h.version != GL_SPOOL_VERSION)
        return 0;
      if (segments++ == 0)
        first_origin = origin, first_mono = h.start_monotonic_ns, first_real = h.start_realtime_ns;
      off += h.header_bytes;
      continue;
    }
    uint32_t magic;
    if (!segments || size - off < sizeof magic ||
        pread(fd, &magic, sizeof magic, (off_t)off) != (ssize_t)sizeof magic)
      return 0;
    if (magic == GL_SPOOL_TRAILER_MAGIC) {
      /* an end record: only an image's "exec" one lets the run go on */
      gl_spool_trailer tr;
      if (size - off < sizeof tr || pread(fd, &tr, sizeof tr, (off_t)off) != (ssize_t)sizeof tr)
        return 0;
      if (tr.kv_bytes > (1u << 24) || sizeof tr + (uint64_t)tr.kv_bytes > size - off) return 0;
      char *kv = malloc(tr.kv_bytes ? tr.kv_bytes : 1);
      if (!kv || pread(fd, kv, tr.kv_bytes, (off_t)(off + sizeof tr)) != (ssize_t)tr.kv_bytes) {
        free(kv);
        return 0;
      }
      int exec_end = header_is(kv, tr.kv_bytes, tr.nkv, "grainlab.end_reason", "exec");
      uint64_t lost = header_number(kv, tr.kv_bytes, tr.nkv, "grainlab.dropped_events");
      free(kv);
      if (!exec_end) return 0;
      prior_dropped = lost; /* cumulative: each image starts from the last count */
      off += sizeof tr + tr.kv_bytes;
      continue;
    }
    gl_spool_block b;
    if (magic != GL_SPOOL_BLOCK_MAGIC || size - off < sizeof b ||
        pread(fd, &b, sizeof b, (off_t)off) != (ssize_t)sizeof b)
      return 0; /* damage */
    prior_events += b.nevents;
    uint64_t bytes = sizeof b + b.payload_bytes;
    if (b.payload_bytes > size - off - sizeof b) return 0;
    if (b.thread > max_thread) max_thread = b.thread;
    any_block = 1;
    off += bytes;
  }
  if (!segments || !first_origin) return 0;
  thread_base = any_block ? max_thread + 1 : 0;
  /* counts go on from the earlier images' (end records say the whole run's) */
  events = prior_events;
  dropped = prior_dropped;
  return 1;
}

int gl_spool_continues(void) { return continuing; }
uint32_t gl_spool_thread_base(void) { return thread_base; }
void gl_spool_first_clock(uint64_t *origin, uint64_t *mono, uint64_t *real) {
  *origin = first_origin, *mono = first_mono, *real = first_real;
}
uint64_t gl_spool_process_start(void) { return process_start(); }

/* The output's real path and the spool's name beside it, both checked:
 * grainlab writes only regular files, and only through names it made: the
 * trace is written to a temporary file beside the output and renamed into
 * place by the converter, so nothing at the output path is ever unlinked
 * or truncated (a device node, a FIFO, another program's file). 1, or 0
 * (fail_open). */
static int name_spool(const char *output_path) {
  char target[PATH_MAX];
  if (!follow_links(output_path, target, sizeof target))
    return fail_open(errno == ELOOP ? "too many levels of symbolic links" : "path too long");
  snprintf(out_path, sizeof out_path, "%s", target);
  if (snprintf(spool_path, sizeof spool_path, "%s.spool", out_path) >= (int)sizeof spool_path)
    return fail_open("path too long");
  struct stat st;
  if (stat(out_path, &st) == 0 && !S_ISREG(st.st_mode)) {
    char why[160];
    snprintf(why, sizeof why, "it %s (grainlab writes only regular files: choose a file name)",
             not_regular(st.st_mode));
    return fail_open(why);
  }
  if (lstat(spool_path, &st) == 0 && !S_ISREG(st.st_mode)) {
    char why[PATH_MAX + 160];
    snprintf(why, sizeof why, "%s %s (move it away)", spool_path,
             S_ISLNK(st.st_mode) ? "is a symbolic link" : not_regular(st.st_mode));
    return fail_open(why);
  }
  return 1;
}

/* Open the spool and take its lock: refused at once while another program
 * records to it, after a short wait while the previous run's converter
 * writes its trace. 1, or 0 (fail_open). */
static int lock_spool(void) {
  struct stat st;
  int waited = 0;
  for (;;) {
    /* O_NOFOLLOW: a link planted at the spool's name is refused, not followed. */
    spool_fd = open(spool_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (spool_fd < 0) return fail_open(strerror(errno));
    if (fstat(spool_fd, &st) != 0 || !S_ISREG(st.st_mode))
      return fail_open("the spool is not a regular file");
    if (flock(spool_fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return fail_open(strerror(errno));
      int holder = lock_holder(spool_fd);
      if (holder && is_ancestor(holder)) {
        char why[96];
        snprintf(why, sizeof why, "process %d, which runs this one, is recording to it", holder);
        return fail_open(why);
      }
      /* Another program is recording to this output: never hold this one
       * back for the length of another's run. Refuse at once (untraced). */
      if (holder && !is_converter(holder)) {
        char why[160];
        snprintf(why, sizeof why,
                 "process %d is recording to it (choose another output, or wait for it)",
                 holder);
        return fail_open(why);
      }
      /* The previous run on this output has ended and is being converted:
       * its trace is about to be replaced, but the converter must not see
       * its spool truncated under it. A short wait. */
      if (!waited++)
        fprintf(stderr, "grainlab: waiting for the previous run's trace %s to be written\n",
                out_path);
      if (flock(spool_fd, LOCK_EX) != 0) return fail_open(strerror(errno));
    }
    /* The converter we waited for unlinks the spool when done: we may hold
     * a lock on a file that no longer has a name. Then start again. */
    if (fstat(spool_fd, &st) == 0 && st.st_nlink > 0) return 1;
    close(spool_fd);
    spool_fd = -1;
  }
}

int gl_spool_open(const char *output_path) {
  snprintf(out_path, sizeof out_path, "%s", output_path);
  if (!name_spool(output_path) || !lock_spool()) return 0;
  /* The spool needs reading for its magic: O_WRONLY cannot, so reopen read-only. */
  int probe = open(spool_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int ours = probe >= 0 && is_our_spool(probe);
  continuing = ours && earlier_image_of_this_process(probe);
  if (probe >= 0) close(probe);
  if (!ours) {
    char why[PATH_MAX + 96];
    snprintf(why, sizeof why, "%s exists and is not a grainlab spool (move it away)", spool_path);
    return fail_open(why);
  }
  /* Our own spool, left by an earlier run on this output: replaced. The old
   * trace at the output stays until this run's is renamed over it; readers
   * (grainlab.load) wait while the spool is locked. */
  if (continuing) {
    /* exec'd: the earlier images' events stay; ours follow a header of ours */
    struct stat now;
    if (fstat(spool_fd, &now) == 0) {
      spool_bytes = claimed = reserved_end = (uint64_t)now.st_size;
      trace_room = GL_TRACE_ROOM(spool_bytes, 1); /* the earlier images' rows too */
    }
    return 1;
  }
  if (ftruncate(spool_fd, 0) != 0) return fail_open(strerror(errno));
  return 1;
}

/* The converter's path: grainlab-convert in this library's directory. */
static void converter_path(char *buf, size_t len) {
  Dl_info info;
  const char *dir = ".";
  size_t dirlen = 1;
  if (dladdr((void *)&gl_spool_open, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash) {
      dir = info.dli_fname;
      dirlen = (size_t)(slash - info.dli_fname);
    }
  }
  snprintf(buf, len, "%.*s/grainlab-convert", (int)dirlen, dir);
}

static void prepare_converter(void) {
  const char *mode = getenv("GRAINLAB_CONVERT");
  if (mode && strcmp(mode, "wait") == 0) convert_mode = GL_CONVERT_WAIT;
  else if (mode && (strcmp(mode, "no") == 0 || strcmp(mode, "0") == 0))
    convert_mode = GL_CONVERT_NO;
  else if (mode && *mode && strcmp(mode, "background") != 0)
    fprintf(stderr, "grainlab: GRAINLAB_CONVERT=%s is not wait, background or no; "
                    "converting in the background\n", mode);
  converter_path(convert_exe, sizeof convert_exe);
  gl_utoa((uint64_t)spool_fd, fd_arg, sizeof fd_arg);
  int i = 0;
  convert_argv[i++] = convert_exe;
  convert_argv[i++] = "--fd";
  convert_argv[i++] = fd_arg;
  convert_argv[i++] = spool_path;
  convert_argv[i++] = out_path;
  convert_argv[i] = 0;
  if (posix_spawn_file_actions_init(&convert_actions) != 0) return;
  /* dup2 onto itself clears close-on-exec: the converter inherits the locked
   * descriptor, so the lock is never released between run and conversion. */
  posix_spawn_file_actions_adddup2(&convert_actions, spool_fd, spool_fd);
  posix_spawn_file_actions_addopen(&convert_actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&convert_actions, 1, "/dev/null", O_WRONLY, 0);
  if (posix_spawnattr_init(&convert_attr) != 0) return;
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD};
  for (size_t k = 0; k < sizeof reset / sizeof reset[0]; k++) sigaddset(&defaults, reset[k]);
  posix_spawnattr_setsigmask(&convert_attr, &none);
  posix_spawnattr_setsigdefault(&convert_attr, &defaults);
  /* Its own session: a Ctrl-C meant for the application (its process group)
   * must not kill the conversion of the trace it leaves. */
  posix_spawnattr_setflags(&convert_attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                              POSIX_SPAWN_SETSID);
  convert_ready = 1;
}

/* kv records for writev: lengths in `lens` (2 per record), 3 iovecs per record. */
static size_t kv_iovecs(struct iovec *iov, uint32_t *lens, size_t nkv,
                        const char *const *keys, const char *const *values, uint32_t *bytes) {
  size_t k = 0;
  *bytes = 0;
  for (size_t i = 0; i < nkv; i++) {
    lens[2 * i] = (uint32_t)strlen(keys[i]);
    lens[2 * i + 1] = (uint32_t)strlen(values[i]);
    iov[k++] = (struct iovec){&lens[2 * i], 8};
    iov[k++] = (struct iovec){(void *)keys[i], lens[2 * i]};
    iov[k++] = (struct iovec){(void *)values[i], lens[2 * i + 1]};
    *bytes += 8 + lens[2 * i] + lens[2 * i + 1];
  }
  return k;
}

/* Room for `bytes` more, with GL_TRAILER_RESERVE and `room` more for the
 * trace kept free, in space the file system has already given us (fallocate,
 * KEEP_SIZE). Lock-free while the reservation lasts; past it, one thread at a
 * time reserves the next GL_PREALLOC_BYTES, or as little as this block needs
 * when the disk has no more. Returns 0 when even that fails: the disk is full.
 * A file system without fallocate gets no reservation (writes then fail as
 * they come). */
static int claim(uint64_t bytes, uint64_t room) {
  if (__atomic_load_n(&prealloc_off, __ATOMIC_RELAXED)) return 1;
  uint64_t upto = __atomic_add_fetch(&claimed, bytes, __ATOMIC_SEQ_CST) + GL_TRAILER_RESERVE +
                  __atomic_add_fetch(&trace_room, room, __ATOMIC_RELAXED);
  if (upto <= __atomic_load_n(&reserved_end, __ATOMIC_SEQ_CST)) return 1;
  pthread_mutex_lock(&reserve_lock);
  uint64_t end = __atomic_load_n(&reserved_end, __ATOMIC_RELAXED);
  while (upto > end && !__atomic_load_n(&disk_full, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&prealloc_off, __ATOMIC_RELAXED)) {
    uint64_t need = upto - end, grow = need > GL_PREALLOC_BYTES ? need : GL_PREALLOC_BYTES;
    if (fallocate(spool_fd, FALLOC_FL_KEEP_SIZE, (off_t)end, (off_t)grow) == 0 ||
        (errno == ENOSPC && grow > need &&
         fallocate(spool_fd, FALLOC_FL_KEEP_SIZE, (off_t)end, (off_t)(grow = need)) == 0)) {
      end += grow;
      __atomic_store_n(&reserved_end, end, __ATOMIC_SEQ_CST);
    } else if (errno == ENOSPC || errno == EDQUOT) {
      __atomic_store_n(&disk_full, 1, __ATOMIC_RELAXED);
    } else {
      __atomic_store_n(&prealloc_off, 1, __ATOMIC_RELAXED);
    }
  }
  int ok = upto <= end || __atomic_load_n(&prealloc_off, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&reserve_lock);
  if (!ok) {
    __atomic_sub_fetch(&claimed, bytes, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&trace_room, room, __ATOMIC_RELAXED);
  }
  return ok;
}

/* After the end record: give the trace's room (and what the reservation
 * holds beyond it) back to the file system for the converter, keeping
 * GL_TRAILER_RESERVE past every byte promised to a block (a thread may still
 * be appending one). A block that claims afterwards sees the lowered end and
 * reserves anew. Best effort: skipped if the lock is busy (a signal handler
 * must not wait for it). */
static void release_room(void) {
  if (__atomic_load_n(&prealloc_off, __ATOMIC_RELAXED) ||
      pthread_mutex_trylock(&reserve_lock) != 0)
    return;
  uint64_t end = __atomic_load_n(&reserved_end, __ATOMIC_RELAXED);
  __atomic_store_n(&reserved_end, 0, __ATOMIC_SEQ_CST); /* claims now take the lock */
  uint64_t keep = (__atomic_load_n(&claimed, __ATOMIC_SEQ_CST) + GL_TRAILER_RESERVE + 4095) &
                  ~4095ull;
  if (end > keep &&
      fallocate(spool_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)keep,
                (off_t)(end - keep)) == 0)
    end = keep;
  __atomic_store_n(&trace_room, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&reserved_end, end, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&reserve_lock);
}

/* writev everything or fail (a short write leaves a block the converter
 * reports as truncated; it is not retried: another thread may have appended). */
static int write_all(const struct iovec *iov, int n, size_t total) {
  ssize_t w;
  do {
    w = writev(spool_fd, iov, n);
  } while (w < 0 && errno == EINTR);
  if (w > 0) __atomic_fetch_add(&spool_bytes, (uint64_t)w, __ATOMIC_RELAXED);
  return w == (ssize_t)total ? 0 : -1;
}

/* ------------------------------------------------------------ encoding

 * Blocks are encoded compactly (spool_codec.c) by whichever thread appends
 * them: the writer thread, or an application thread writing its own buffer
 * (GRAINLAB_WRITER=0, a full pool, the end of the run). Each such thread gets
 * one scratch area on its first block, kept for the run: half the raw size of
 * a full buffer. A block whose encoding does not fit there is written raw, as
 * is every block once a signal handler is ending the run (raw_only: no
 * allocation there, and the handler may have interrupted its own thread's
 * encoding). GRAINLAB_SPOOL_ENCODING=raw writes every block raw. */
typedef struct gl_scratch {
  gl_codec_state state;
  size_t cap;
  uint8_t out[];
} gl_scratch;

static int compact = 1; /* GRAINLAB_SPOOL_ENCODING */
static int raw_only;    /* atomic */
static __thread gl_scratch *my_scratch __attribute__((tls_model("initial-exec")));
static __thread int my_scratch_failed __attribute__((tls_model("initial-exec")));

static void configure_encoding(void) {
  const char *e = getenv("GRAINLAB_SPOOL_ENCODING");
  if (e && strcmp(e, "raw") == 0) compact = 0;
  else if (e && *e && strcmp(e, "compact") != 0)
    fprintf(stderr, "grainlab: GRAINLAB_SPOOL_ENCODING=%s is not raw or compact; "
                    "writing compact blocks\n", e);
}

void gl_spool_raw_only(void) { __atomic_store_n(&raw_only, 1, __ATOMIC_SEQ_CST); }

static gl_scratch *scratch(void) {
  gl_scratch *s = my_scratch;
  if (__builtin_expect(s != 0, 1) || my_scratch_failed) return s;
  size_t rows = (size_t)gl_buffer_events + 1;
  size_t cap = rows * (sizeof(gl_event_t) + (size_t)ncounters * sizeof(int64_t)) / 2 +
               GL_CODEC_MAX_ROW(ncounters);
  s = malloc(sizeof *s + cap);
  if (!s) {
    my_scratch_failed = 1; /* raw blocks from this thread */
    return 0;
  }
  s->cap = cap;
  return my_scratch = s;
}

#define GL_MAX_KV 24

int gl_spool_write_header(int nc, const char *const *counter_names, size_t nkv,
                          const char *const *keys, const char *const *values) {
  ncounters = (uint32_t)nc;
  configure_encoding();
  char names[GL_MAX_COUNTERS * 72] = "";
  size_t used = 0;
  for (int c = 0; c < nc; c++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", c ? "\n" : "",
                             counter_names[c]);
  const char *k[GL_MAX_KV + 1], *v[GL_MAX_KV + 1];
  if (nkv > GL_MAX_KV) nkv = GL_MAX_KV;
  for (size_t i = 0; i < nkv; i++) k[i] = keys[i], v[i] = values[i];
  k[nkv] = "grainlab.spool.counter_names";
  v[nkv] = names;
  nkv++;

  uint32_t lens[2 * (GL_MAX_KV + 1)], kvbytes;
  struct iovec iov[1 + 3 * (GL_MAX_KV + 1)];
  gl_spool_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, GL_SPOOL_MAGIC, 8);
  h.version = GL_SPOOL_VERSION;
  h.event_bytes = sizeof(gl_event_t);
  h.ncounters = ncounters;
  h.nkv = (uint32_t)nkv;
#if defined(__x86_64__) || defined(__i386__)
  h.clock_source = GL_SPOOL_CLOCK_TSC;
#else
  h.clock_source = GL_SPOOL_CLOCK_MONOTONIC;
#endif
  gl_clock_start_pair(&h.start_monotonic_ns, &h.start_realtime_ns);
  size_t n = kv_iovecs(iov + 1, lens, nkv, k, v, &kvbytes);
  h.header_bytes = (uint32_t)(sizeof h + kvbytes);
  iov[0] = (struct iovec){&h, sizeof h};
  if (!claim(h.header_bytes, 0)) errno = ENOSPC; /* not even room to start */
  if (__atomic_load_n(&disk_full, __ATOMIC_RELAXED) ||
      write_all(iov, (int)n + 1, h.header_bytes) != 0) {
    fprintf(stderr, "grainlab: cannot write trace to %s: writing %s: %s\n", out_path,
            spool_path, strerror(errno ? errno : EIO));
    /* Untraced run: leave no spool for a reader to wait on or convert. */
    unlink(spool_path);
    close(spool_fd);
    spool_fd = -1;
    return -1;
  }
  prepare_converter();
  return 0;
}

/* ------------------------------------------------------------ while running */

void gl_spool_append_block(uint32_t thread, const gl_event_t *ev, const int64_t *ctr,
                           uint32_t n) {
  if (n == 0) return;
  if (__atomic_load_n(&broken, __ATOMIC_RELAXED) || spool_fd < 0) {
    __atomic_fetch_add(&dropped, n, __ATOMIC_RELAXED);
    return;
  }
  gl_spool_block b = {.magic = GL_SPOOL_BLOCK_MAGIC, .thread = thread, .nevents = n,
                      .ncounters = ncounters, .encoding = GL_SPOOL_RAW};
  b.monotonic_ns = monotonic_ns();
  b.tsc = gl_clock_now();
  size_t ev_bytes = (size_t)n * sizeof *ev;
  size_t ctr_bytes = (size_t)n * ncounters * sizeof *ctr;
  struct iovec iov[3] = {{&b, sizeof b}, {(void *)ev, ev_bytes}, {(void *)ctr, ctr_bytes}};
  int parts = ctr_bytes ? 3 : 2;
  b.payload_bytes = ev_bytes + ctr_bytes;
  gl_scratch *s;
  if (compact && !__atomic_load_n(&raw_only, __ATOMIC_SEQ_CST) && (s = scratch()) != 0) {
    size_t len = gl_codec_encode(&s->state, ev, ctr, n, ncounters, s->out, s->cap);
    if (len < b.payload_bytes) { /* (size_t)-1: did not fit */
      b.encoding = GL_SPOOL_COMPACT;
      b.payload_bytes = len;
      b.check = gl_codec_check(&b, s->out, len);
      iov[1] = (struct iovec){s->out, len};
      parts = 2;
    }
  }
  size_t total = sizeof b + (size_t)b.payload_bytes;
  if (!claim(total, GL_TRACE_ROOM(total, b.encoding == GL_SPOOL_COMPACT))) {
    /* The disk is full: stop recording, keep what is written, count the rest. */
    __atomic_fetch_add(&dropped, n, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&broken, 1, __ATOMIC_RELAXED) && !gl_quiet)
      say("the disk holding ", spool_path, " is full: recording stopped, the trace keeps "
                                            "what was recorded until then");
    return;
  }
  if (write_all(iov, parts, total) != 0) {
    int err = errno ? errno : EIO;
    __atomic_fetch_add(&dropped, n, __ATOMIC_RELAXED);
    if (!__atomic_exchange_n(&broken, 1, __ATOMIC_RELAXED))
      say("writing ", spool_path, err == ENOSPC ? " failed: no space left on device; "
                                                   "later events are dropped"
                                                 : " failed; later events are dropped");
    return;
  }
  __atomic_fetch_add(&blocks, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&events, n, __ATOMIC_RELAXED);
}

int gl_spool_write_trailer(size_t nkv, const char *const *keys, const char *const *values) {
  if (spool_fd < 0) return -1;
  if (nkv > GL_MAX_KV) nkv = GL_MAX_KV;
  uint32_t lens[2 * GL_MAX_KV], kvbytes;
  struct iovec iov[1 + 3 * GL_MAX_KV];
  size_t n = kv_iovecs(iov + 1, lens, nkv, keys, values, &kvbytes);
  gl_spool_trailer t = {GL_SPOOL_TRAILER_MAGIC, (uint32_t)nkv, kvbytes, 0, 0, 0};
  t.monotonic_ns = monotonic_ns();
  t.tsc = gl_clock_now();
  iov[0] = (struct iovec){&t, sizeof t};
  int rc = write_all(iov, (int)n + 1, sizeof t + kvbytes);
  release_room();
  return rc;
}

/* ------------------------------------------------------------ the end */

enum gl_convert_mode gl_spool_convert_mode(void) { return convert_mode; }

int gl_spool_start_converter(int from_signal, double *seconds) {
  if (seconds) *seconds = 0;
  if (spool_fd < 0) return -1;
  if (convert_mode == GL_CONVERT_NO) return 0;
  if (!convert_ready) {
    say("cannot start the trace converter; the run is kept in ", spool_path, "");
    return -1;
  }
  uint64_t start = monotonic_ns();
  pid_t pid;
  int rc = posix_spawn(&pid, convert_exe, &convert_actions, &convert_attr, convert_argv,
                       environ);
  if (rc != 0) {
    if (from_signal)
      say("cannot start ", convert_exe, "; convert the spool later with grainlab convert");
    else
      fprintf(stderr, "grainlab: cannot start %s: %s; the run is kept in %s "
                      "(grainlab convert converts it)\n", convert_exe, strerror(rc), spool_path);
    return -1;
  }
  if (convert_mode != GL_CONVERT_WAIT) return 0;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { /* SIGCHLD ignored: the child was reaped for us */
      status = 0;
      break;
    }
  }
  if (seconds) *seconds = (double)(monotonic_ns() - start) / 1e9;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *gl_spool_path(void) { return spool_path; }
uint64_t gl_spool_blocks(void) { return __atomic_load_n(&blocks, __ATOMIC_RELAXED); }
uint64_t gl_spool_events(void) { return __atomic_load_n(&events, __ATOMIC_RELAXED); }
uint64_t gl_spool_dropped(void) { return __atomic_load_n(&dropped, __ATOMIC_RELAXED); }
int gl_spool_disk_full(void) { return __atomic_load_n(&disk_full, __ATOMIC_RELAXED); }

void gl_spool_forget_in_child(void) {
  /* Closing our copy drops the child's share of the lock (the parent's copy
   * keeps it). The child never writes the spool. */
  if (spool_fd >= 0) close(spool_fd);
  spool_fd = -1;
}
