/* writer_loader.c — see writer_loader.h. */
#define _GNU_SOURCE
#include "writer_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int gl_load_writer(const char *lib_path, gl_writer_api *api) {
  char buf[PATH_MAX];
  if (lib_path == NULL) {
    ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (len < 0) {
      perror("readlink /proc/self/exe");
      return -1;
    }
    buf[len] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash) *slash = '\0';
    size_t dirlen = strlen(buf);
    if (dirlen + sizeof "/../lib/libgrainwriter.so" > sizeof buf) return -1;
    strcat(buf, "/../lib/libgrainwriter.so");
    lib_path = buf;
  }
  double t0 = now_ms();
  void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "cannot load writer: %s\n", dlerror());
    return -1;
  }
  api->open = (gl_writer_open_fn)dlsym(h, GL_WRITER_OPEN_SYM);
  api->write = (gl_writer_write_fn)dlsym(h, GL_WRITER_WRITE_SYM);
  api->close = (gl_writer_close_fn)dlsym(h, GL_WRITER_CLOSE_SYM);
  api->dlopen_ms = now_ms() - t0;
  if (!api->open || !api->write || !api->close) {
    fprintf(stderr, "writer %s lacks the gl_writer_* symbols\n", lib_path);
    return -1;
  }
  return 0;
}
