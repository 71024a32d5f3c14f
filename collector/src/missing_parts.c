/* missing_parts.c — weak stand-ins for counters.c and meta.c, compiled only
 * while one of them is absent from the tree (see collector/CMakeLists.txt), so
 * the collector builds and traces without counters or run context. The real
 * modules' definitions override these. */
#include <stdlib.h>
#include <string.h>
#include "counters.h"
#include "meta.h"

#define WEAK __attribute__((weak))

WEAK int gl_counters_init(const char *spec) {
  (void)spec;
  return 0;
}
WEAK const char *const *gl_counters_names(void) {
  static const char *const none[1] = {0};
  return none;
}
WEAK const char *gl_counters_metadata_json(void) { return "[]"; }
WEAK void gl_counters_thread_start(gl_counters_thread *t) { (void)t; }
WEAK void gl_counters_thread_stop(gl_counters_thread *t) { (void)t; }
WEAK void gl_counters_read(gl_counters_thread *t, int64_t *out) {
  (void)t;
  (void)out;
}
WEAK void gl_counters_shutdown(void) {}

WEAK char *gl_meta_command_json(void) { return strdup("[]"); }
WEAK char *gl_meta_topology_json(void) { return strdup("{}"); }
WEAK char *gl_meta_loadmap_json(void) { return strdup("[]"); }
