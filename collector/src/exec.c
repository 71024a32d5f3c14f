/* exec.c — libgrainexec.so, one run across exec(): the exec family,
 * interposed when this small library is preloaded (`grainlab record` sets
 * LD_PRELOAD), lets the collector close this image's part of the trace and
 * append every buffer before the image is replaced; the next image continues
 * the spool (spool.c, "exec"). Without the preload the next image still
 * continues the spool, but events still in this image's buffers are lost.
 *
 * The collector is loaded by libomp with dlopen (not in the global scope), so
 * this library cannot call it by name: the collector finds the hook table
 * below with dlsym(RTLD_DEFAULT) at start-up and fills it in. Nothing else
 * here but a constructor that reads the clock once (when this image was
 * loaded: the collector's bound of the process's start, clock.c), no
 * destructor, no dependency but libc, so preloading it into every process
 * the program starts is harmless.
 *
 * The l-variants are rebuilt as argv arrays on the stack (no allocation:
 * they may be called after fork() in a multithreaded parent). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>
#include "exec_hooks.h"

#define GL_EXPORT __attribute__((visibility("default")))
#define GL_MAX_EXEC_ARGS 4096

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

GL_EXPORT gl_exec_hooks grainlab_exec_hooks;

__attribute__((constructor)) static void image_loaded(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
    __atomic_store_n(&grainlab_exec_hooks.image_start_ns,
                     (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                     __ATOMIC_RELEASE);
}

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static int gl_before_exec(void) {
  int (*before)(void) = __atomic_load_n(&grainlab_exec_hooks.before, __ATOMIC_ACQUIRE);
  return before ? before() : 0;
}

static int after(int rc, int closed) {
  void (*failed)(void) = __atomic_load_n(&grainlab_exec_hooks.failed, __ATOMIC_ACQUIRE);
  if (closed && failed) failed();
  return rc;
}

GL_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  execve_fn real = (execve_fn)next("execve");
  int closed = gl_before_exec();
  return after(real(path, argv, envp), closed);
}

GL_EXPORT int execv(const char *path, char *const argv[]) {
  execv_fn real = (execv_fn)next("execv");
  int closed = gl_before_exec();
  return after(real(path, argv), closed);
}

GL_EXPORT int execvp(const char *file, char *const argv[]) {
  execv_fn real = (execv_fn)next("execvp");
  int closed = gl_before_exec();
  return after(real(file, argv), closed);
}

GL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  execve_fn real = (execve_fn)next("execvpe");
  int closed = gl_before_exec();
  return after(real(file, argv, envp), closed);
}

/* Collect the variadic arguments up to and including the NULL (for execle,
 * envp comes next). argv has GL_MAX_EXEC_ARGS + 1 slots. */
#define GL_COLLECT(first, ap, argv, n)                \
  do {                                                \
    (argv)[0] = (char *)(first);                      \
    (n) = 1;                                          \
    while ((argv)[(n) - 1] && (n) < GL_MAX_EXEC_ARGS) \
      (argv)[(n)++] = va_arg(ap, char *);             \
    (argv)[(n)] = 0;                                  \
  } while (0)

GL_EXPORT int execl(const char *path, const char *arg, ...) {
  char *argv[GL_MAX_EXEC_ARGS + 1];
  size_t n;
  va_list ap;
  va_start(ap, arg);
  GL_COLLECT(arg, ap, argv, n);
  va_end(ap);
  return execv(path, argv);
}

GL_EXPORT int execlp(const char *file, const char *arg, ...) {
  char *argv[GL_MAX_EXEC_ARGS + 1];
  size_t n;
  va_list ap;
  va_start(ap, arg);
  GL_COLLECT(arg, ap, argv, n);
  va_end(ap);
  return execvp(file, argv);
}

GL_EXPORT int execle(const char *path, const char *arg, ...) {
  char *argv[GL_MAX_EXEC_ARGS + 1];
  size_t n;
  va_list ap;
  va_start(ap, arg);
  GL_COLLECT(arg, ap, argv, n);
  char *const *envp = va_arg(ap, char *const *);
  va_end(ap);
  return execve(path, argv, envp);
}
