/* launcher.h — the MPI launcher's view of this process (rank, world size,
 * host) and output names with %r, %p, %h (docs/trace-format.md, "Output path"). */
#ifndef GL_LAUNCHER_H
#define GL_LAUNCHER_H

#include <stddef.h>

typedef struct {
  int under_launcher; /* a rank variable was set */
  long rank, size;    /* -1 when unknown */
  const char *rank_var;
  char host[256];
} gl_launch_info;

void gl_launch_detect(gl_launch_info *info);

/* Expand %r (rank), %p (pid), %h (host) and %% in `pattern` into `out`.
 * Returns 0 and writes a one-line reason into `why` when the pattern cannot
 * be used: too long, an unknown %-sequence, %r outside a launcher, or (under a
 * launcher with more than one rank) no %r, which would make ranks overwrite
 * each other's traces (unless GRAINLAB_OUTPUT_EXPANDED=1: `grainlab record`
 * expanded its -o pattern already). */
int gl_expand_output(const char *pattern, const gl_launch_info *info, long pid, char *out,
                     size_t len, char *why, size_t why_len);

/* {"rank": R, "size": N, "variable": "..."} or null: grainlab.mpi's JSON value. */
const char *gl_launch_json(const gl_launch_info *info, char *buf, size_t len);

#endif
