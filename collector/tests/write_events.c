/* write_events.c — writes a small trace of known events through the writer
 * shim, exactly as the collector does (dlopen + the C ABI), so that
 * tests/test_native_writer.py can check every value with pyarrow.
 *
 * usage: write_events OUT.parquet              the known trace (below)
 *        write_events OUT.parquet --bad-thread a row group whose thread index
 *                                              does not fit uint16 (must fail)
 * Exit 0 on success; 1 with one line on stderr naming the failure.
 *
 * The known trace (tests/test_native_writer.py recomputes it independently):
 * row groups g = 0.. with (thread, rows) in kGroups; r = row number in the
 * file, i = row number in its group:
 *   event   = 1 + r % 17            cpu   = (r * 4099) % 65536
 *   tsc     = 1000000 g + 17 i + i*i
 *   task    = (thread+1) << 40 | (i+1)
 *   other   = i == 0 ? UINT64_MAX : (thread+1) << 40 | i
 *   codeptr = 0x401000 + 0x40 (i % 3)
 *   value   = r * 0x9E3779B97F4A7C15 (mod 2^64)
 *   count   = 100 g + i             kind  = 0x80000000 | r
 *   flags   = (37 r) & 0xFF
 *   counter:task-clock   = 1000 r + 1, null when r % 5 == 2
 *   counter:PAPI_TOT_CYC = -r, null when r % 3 == 0; r == 1: INT64_MAX,
 *                          r == 4: INT64_MIN + 1 (smallest non-null)
 * and the metadata pairs in kKeys/kValues. */
#include "writer_loader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { uint32_t thread; size_t rows; } kGroups[] = {
    {0, 5}, {1, 7}, {0, 4}, {65535, 3}, {2, 0}, {1, 1},
};
#define NGROUPS (sizeof kGroups / sizeof kGroups[0])
static const char *const kCounters[] = {"task-clock", "PAPI_TOT_CYC"};
#define NCOUNTERS 2
static const char *const kKeys[] = {"grainlab.schema_version", "grainlab.command",
                                    "grainlab.note", "grainlab.empty"};
static const char *const kValues[] = {"1", "[\"./fib\", \"a \\\"quoted\\\" arg\"]",
                                      "Gr\xc3\xbc\xc3\x9f" "e \xe2\x9c\x93", ""};

static void fill_group(size_t g, size_t first_row, gl_event_t *ev, int64_t *ctr) {
  uint64_t th = kGroups[g].thread;
  for (size_t i = 0; i < kGroups[g].rows; i++) {
    uint64_t r = first_row + i;
    gl_event_t *e = &ev[i];
    memset(e, 0, sizeof *e);
    e->event = (uint8_t)(1 + r % 17);
    e->cpu = (uint16_t)((r * 4099) % 65536);
    e->tsc = 1000000u * g + 17 * i + i * i;
    e->task = (th + 1) << 40 | (i + 1);
    e->other = i == 0 ? UINT64_MAX : ((th + 1) << 40 | i);
    e->codeptr = 0x401000 + 0x40 * (i % 3);
    e->value = r * 0x9E3779B97F4A7C15ull;
    e->count = 100 * g + i;
    e->kind = 0x80000000u | (uint32_t)r;
    e->flags = (uint8_t)((37 * r) & 0xFF);
    int64_t *c = &ctr[i * NCOUNTERS];
    c[0] = r % 5 == 2 ? INT64_MIN : (int64_t)(1000 * r + 1);
    c[1] = r % 3 == 0 ? INT64_MIN : -(int64_t)r;
    if (r == 1) c[1] = INT64_MAX;
    if (r == 4) c[1] = INT64_MIN + 1;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: write_events OUT.parquet [--bad-thread]\n");
    return 1;
  }
  int bad_thread = argc > 2 && strcmp(argv[2], "--bad-thread") == 0;
  gl_writer_api api;
  if (gl_load_writer(NULL, &api) != 0) return 1;

  char err[512] = "";
  gl_writer *w = api.open(argv[1], NCOUNTERS, kCounters, err, sizeof err);
  if (w == NULL) {
    fprintf(stderr, "write_events: %s\n", err);
    return 1;
  }
  gl_event_t ev[16];
  int64_t ctr[16 * NCOUNTERS];
  size_t row = 0;
  for (size_t g = 0; g < NGROUPS; g++) {
    fill_group(g, row, ev, ctr);
    uint32_t thread = bad_thread ? 70000 : kGroups[g].thread;
    if (api.write(w, thread, ev, ctr, kGroups[g].rows, err, sizeof err) != 0) {
      fprintf(stderr, "write_events: %s\n", err);
      api.close(w, 0, NULL, NULL, err, sizeof err);
      return 1;
    }
    row += kGroups[g].rows;
  }
  if (api.close(w, sizeof kKeys / sizeof kKeys[0], kKeys, kValues, err, sizeof err) != 0) {
    fprintf(stderr, "write_events: %s\n", err);
    return 1;
  }
  return 0;
}
