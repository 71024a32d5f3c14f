/* slow_writev.c — libslowwritev.so, a test/benchmark stand-in for a slow
 * disk: preloaded, it makes writev() calls on the spool (a path ending in
 * ".spool") sleep GL_SLOW_WRITEV_MS milliseconds (default 30) each, starting
 * with the GL_SLOW_WRITEV_FROM-th such call (default 3rd) for
 * GL_SLOW_WRITEV_COUNT calls (default 1). Used to check that a stalled write
 * never stalls the application (the writer thread) and that a stall the
 * analysis sees is discounted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  return s && *s ? strtol(s, 0, 10) : dflt;
}

static int is_spool(int fd) {
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 6) return 0;
  path[n] = '\0';
  return strcmp(path + n - 6, ".spool") == 0;
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  static ssize_t (*real)(int, const struct iovec *, int);
  static long calls;
  if (!real) real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
  if (is_spool(fd)) {
    long k = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    long from = env_long("GL_SLOW_WRITEV_FROM", 3), count = env_long("GL_SLOW_WRITEV_COUNT", 1);
    if (k >= from && k < from + count) {
      long ms = env_long("GL_SLOW_WRITEV_MS", 30);
      struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
      nanosleep(&ts, 0);
    }
  }
  return real(fd, iov, n);
}
