/* launcher.c — rank, world size and host from the MPI launcher's environment,
 * read once at start-up; output names expanded from them. Open MPI, MPICH/Hydra
 * (PMI), PMIx launchers and Slurm's srun each export the rank of the process
 * they start; nothing here needs MPI itself. */
#include "launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const RANK_VARS[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                        "SLURM_PROCID"};
static const char *const SIZE_VARS[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                        "SLURM_NPROCS"};

static long number(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  long v = strtol(s, &end, 10);
  return (*end || v < 0) ? -1 : v;
}

void gl_launch_detect(gl_launch_info *info) {
  memset(info, 0, sizeof *info);
  info->rank = info->size = -1;
  for (size_t i = 0; i < sizeof RANK_VARS / sizeof *RANK_VARS && info->rank < 0; i++) {
    long r = number(getenv(RANK_VARS[i]));
    if (r >= 0) {
      info->rank = r;
      info->rank_var = RANK_VARS[i];
    }
  }
  info->under_launcher = info->rank >= 0;
  for (size_t i = 0; i < sizeof SIZE_VARS / sizeof *SIZE_VARS && info->size < 0; i++)
    info->size = number(getenv(SIZE_VARS[i]));
  if (gethostname(info->host, sizeof info->host - 1) != 0) strcpy(info->host, "unknown");
}

static int put(char *out, size_t len, size_t *j, const char *s) {
  size_t n = strlen(s);
  if (*j + n >= len) return 0;
  memcpy(out + *j, s, n);
  *j += n;
  return 1;
}

int gl_expand_output(const char *pattern, const gl_launch_info *info, long pid, char *out,
                     size_t len, char *why, size_t why_len) {
  size_t j = 0;
  int has_rank = 0;
  char num[32];
  for (const char *c = pattern; *c; c++) {
    const char *piece = num;
    if (*c != '%') {
      num[0] = *c, num[1] = 0;
    } else if (c[1] == 'r') {
      if (!info->under_launcher) {
        snprintf(why, why_len, "%s: %%r is the MPI rank, but no launcher set one "
                 "(OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID)", pattern);
        return 0;
      }
      snprintf(num, sizeof num, "%ld", info->rank), has_rank = 1, c++;
    } else if (c[1] == 'p') {
      snprintf(num, sizeof num, "%ld", pid), c++;
    } else if (c[1] == 'h') {
      piece = info->host, c++;
    } else if (c[1] == '%') {
      piece = "%", c++;
    } else {
      snprintf(why, why_len, "%s: unknown %%-sequence (use %%r rank, %%p pid, %%h host, "
               "%%%% for %%)", pattern);
      return 0;
    }
    if (!put(out, len, &j, piece)) {
      snprintf(why, why_len, "%s: path too long", pattern);
      return 0;
    }
  }
  out[j] = 0;
  /* GRAINLAB_OUTPUT_EXPANDED: `grainlab record` expanded the name itself. */
  const char *expanded = getenv("GRAINLAB_OUTPUT_EXPANDED");
  int final = expanded && strcmp(expanded, "1") == 0;
  if (info->under_launcher && info->size != 1 && !has_rank && !final) {
    snprintf(why, why_len, "%s: this is rank %ld of an MPI run, and ranks would overwrite "
             "each other's trace: put %%r in the name (e.g. run.%%r.parquet)", pattern,
             info->rank);
    return 0;
  }
  return 1;
}

const char *gl_launch_json(const gl_launch_info *info, char *buf, size_t len) {
  if (!info->under_launcher) return "null";
  char size[24] = "null";
  if (info->size >= 0) snprintf(size, sizeof size, "%ld", info->size);
  snprintf(buf, len, "{\"rank\": %ld, \"size\": %s, \"variable\": \"%s\"}", info->rank,
           size, info->rank_var);
  return buf;
}
