/* tool.c — the OMPT entry points of libgraincollect.so.
 *
 * ompt_start_tool reads the configuration and checks, before the application
 * runs, everything that could make the trace fail (buffer size, counter
 * names, output path: the spool is created there). Any problem prints one
 * line on stderr and returns NULL: libomp then runs the application untraced.
 * on_initialize writes the spool header and registers the callbacks. */

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <omp-tools.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "callbacks.h"
#include "exec_hooks.h"
#include "writer.h"
#include "clock.h"
#include "grainlab_spool.h"
#include "counters.h"
#include "launcher.h"
#include "meta.h"
#include "shutdown.h"
#include "spool.h"
#include "thread_state.h"
#include "pages.h"

int gl_quiet;
static char runtime_name[256];
static unsigned int runtime_ompt_version;
static gl_launch_info launch; /* rank, size and host under an MPI launcher */

/* Escape a string for a JSON string literal (runtime names are plain ASCII,
 * but a quote or backslash must not break the metadata). */
static void json_escape(char *out, size_t len, const char *in) {
  size_t j = 0;
  for (; *in && j + 7 < len; in++) {
    unsigned char c = (unsigned char)*in;
    if (c == '"' || c == '\\') {
      out[j++] = '\\';
      out[j++] = (char)c;
    } else if (c < 0x20) {
      j += (size_t)snprintf(out + j, len - j, "\\u%04x", c);
    } else {
      out[j++] = (char)c;
    }
  }
  out[j] = 0;
}

#define GL_COLLECTOR_VERSION "0.2.0"

/* The spool's header: the run context known at start-up. The trailer
 * (shutdown.c) adds what is known only at the end. */
/* GRAINLAB_RUN_ID: the token `grainlab record` gives its run, stored in the
 * trace so record reports on the file its own program wrote (two runs with one
 * output). Lowercase hex only; consumed, so a program this one runs does not
 * claim the same run. Returns a JSON value. */
static const char *run_id_json(char *buf, size_t len) {
  const char *id = getenv("GRAINLAB_RUN_ID");
  size_t n = id ? strlen(id) : 0;
  int ok = n >= 8 && n <= 64;
  for (size_t i = 0; ok && i < n; i++)
    ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (!ok) return "null";
  snprintf(buf, len, "\"%s\"", id);
  unsetenv("GRAINLAB_RUN_ID");
  return buf;
}

static int write_spool_header(void) {
  char pid[24], buffer[24], run_id[72], born[24], origin[24], first_thread[24];
  char mpi[160], host[sizeof launch.host * 2 + 4], host_escaped[sizeof launch.host * 2];
  char started[160];
  json_escape(host_escaped, sizeof host_escaped, launch.host);
  snprintf(host, sizeof host, "\"%s\"", host_escaped);
  gl_utoa(gl_spool_thread_base(), first_thread, sizeof first_thread);
  gl_utoa(gl_spool_process_start(), born, sizeof born);
  gl_utoa(gl_clock_origin, origin, sizeof origin);
  gl_utoa((uint64_t)gl_run.pid, pid, sizeof pid);
  gl_utoa(gl_buffer_events, buffer, sizeof buffer);
  const char *keys[] = {"grainlab.schema_version", "grainlab.command", "grainlab.pid",
                        "grainlab.counters",       "grainlab.runtime", "grainlab.topology",
                        "grainlab.loadmap",        "grainlab.buffer_events",
                        "grainlab.collector",      "grainlab.run_id",
                        "grainlab.spool.process_start", "grainlab.spool.clock_origin",
                        "grainlab.spool.first_thread", "grainlab.mpi", "grainlab.host",
                        "grainlab.process_start"};
  const char *values[] = {"1", gl_run.command_json, pid, gl_counters_metadata_json(),
                          gl_run.runtime_json, gl_run.topology_json, gl_run.loadmap_json,
                          buffer, GL_COLLECTOR_VERSION, run_id_json(run_id, sizeof run_id),
                          born, origin, first_thread, gl_launch_json(&launch, mpi, sizeof mpi),
                          host, gl_clock_process_start_json(started, sizeof started)};
  _Static_assert(sizeof keys / sizeof keys[0] == sizeof values / sizeof values[0],
                 "header keys and values");
  /* an exec'd image keeps its first image's process start */
  size_t nkv = sizeof keys / sizeof keys[0] - (gl_spool_continues() ? 1 : 0);
  return gl_spool_write_header(gl_ncounters, gl_counters_names(), nkv, keys, values) == 0;
}

static int on_initialize(ompt_function_lookup_t lookup, int initial_device_num,
                         ompt_data_t *tool_data) {
  (void)initial_device_num;
  (void)tool_data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  if (!set) return 0;
  gl_clock_start();
  if (gl_spool_continues()) {
    uint64_t origin, mono, real;
    gl_spool_first_clock(&origin, &mono, &real);
    gl_clock_continue(origin, mono, real);
  } else {
    gl_begin_at_process_start = 1;
  }
  gl_run.pid = (int)getpid();
  gl_run.command_json = gl_meta_command_json();
  gl_run.topology_json = gl_meta_topology_json();
  gl_run.loadmap_json = gl_meta_loadmap_json();
  char callbacks[1024], name[512], library[PATH_MAX + 64];
  gl_callbacks_lookup(lookup);
  int chunks = gl_register_callbacks(set, callbacks, sizeof callbacks);
  json_escape(name, sizeof name, runtime_name);
  /* The runtime's own file: the version string of libomp 14..19 is the same,
   * so this is what tells which runtime a run had (grainlab record --runtime). */
  Dl_info where;
  char real[PATH_MAX];
  if (dladdr((void *)lookup, &where) && where.dli_fname && where.dli_fname[0])
    /* links followed: a launcher's symlink (libomp.so.5 -> libiomp5.so) is gone later */
    json_escape(library, sizeof library,
                realpath(where.dli_fname, real) ? real : where.dli_fname);
  else
    library[0] = 0;
  snprintf(gl_run.runtime_json, sizeof gl_run.runtime_json,
           "{\"name\": \"%s\", \"library\": \"%s\", \"ompt_version\": %u, "
           "\"callbacks\": %s, \"chunks_reported\": %s}",
           name, library, runtime_ompt_version, callbacks, chunks ? "true" : "false");
  if (!write_spool_header()) return 0; /* one line printed; run untraced */
  gl_writer_start();
  /* exec: libgrainexec.so, when preloaded, calls us through this table. */
  gl_exec_hooks *hooks = (gl_exec_hooks *)dlsym(RTLD_DEFAULT, GL_EXEC_HOOKS_SYMBOL);
  if (hooks) {
    __atomic_store_n(&hooks->failed, gl_after_failed_exec, __ATOMIC_RELEASE);
    __atomic_store_n(&hooks->before, gl_before_exec, __ATOMIC_RELEASE);
  }
  gl_install_shutdown_hooks();
  __atomic_store_n(&gl_recording, 1, __ATOMIC_SEQ_CST);
  return 1;
}

static void on_finalize(ompt_data_t *tool_data) {
  (void)tool_data;
  gl_finish(1, "finalize", 0);
}

/* Absolute form of `path`, so a chdir() in the application changes nothing. */
static int absolute_path(const char *path, char *out, size_t len) {
  if (path[0] == '/') return snprintf(out, len, "%s", path) < (int)len;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return 0;
  return snprintf(out, len, "%s/%s", cwd, path) < (int)len;
}

static int parse_buffer_events(void) {
  const char *s = getenv("GRAINLAB_BUFFER_EVENTS");
  if (!s) return 1;
  /* Blanks around the number are allowed on both sides ("128 " as " 128"). */
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return 1;
  char *end;
  errno = 0;
  unsigned long v = strtoul(p, &end, 10);
  while (isspace((unsigned char)*end)) end++;
  if (errno || *end || *p == '-' || *p == '+' || v < GL_BUFFER_EVENTS_MIN ||
      v > GL_BUFFER_EVENTS_MAX) {
    fprintf(stderr,
            "grainlab: GRAINLAB_BUFFER_EVENTS='%s' is not a number of events in %u..%u; "
            "not tracing\n", s, GL_BUFFER_EVENTS_MIN, GL_BUFFER_EVENTS_MAX);
    return 0;
  }
  gl_buffer_events = (uint32_t)v;
  return 1;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                          const char *runtime_version)
    __attribute__((visibility("default")));

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                          const char *runtime_version) {
  static ompt_start_tool_result_t result = {on_initialize, on_finalize, {0}};
  const char *quiet = getenv("GRAINLAB_QUIET");
  gl_quiet = quiet && *quiet && strcmp(quiet, "0") != 0;

  const char *pattern = getenv("GRAINLAB_OUTPUT");
  if (!pattern || !*pattern) pattern = "trace.parquet";
  char out[PATH_MAX], why[PATH_MAX + 200];
  gl_launch_detect(&launch);
  if (!gl_expand_output(pattern, &launch, (long)getpid(), out, sizeof out, why, sizeof why)) {
    fprintf(stderr, "grainlab: cannot write trace to %s\n", why);
    return 0;
  }
  if (!absolute_path(out, gl_run.output_path, sizeof gl_run.output_path)) {
    fprintf(stderr, "grainlab: cannot write trace to %s: path too long\n", out);
    return 0;
  }
  if (!parse_buffer_events()) return 0;
  int n = gl_counters_init(getenv("GRAINLAB_COUNTERS"));
  if (n < 0) return 0; /* gl_counters_init printed the one-line reason */
  gl_ncounters = n;
  gl_pool_configure();
  gl_cpu_configure();
  gl_pages_configure();
  /* Fail fast: create (and lock) the spool now rather than lose the run at
   * the first flush. This also removes a stale trace at the output path. */
  if (!gl_spool_open(gl_run.output_path)) return 0;
  if (gl_spool_continues()) gl_thread_set_base(gl_spool_thread_base());
  snprintf(runtime_name, sizeof runtime_name, "%s", runtime_version ? runtime_version : "");
  runtime_ompt_version = omp_version;
  return &result;
}
