/* meta.c — run context for the trace's file metadata (meta.h): the command
 * line, the machine's topology and the load map. Start-up/finalize only, so
 * plain malloc'ed string building is fine here. Every function returns a
 * malloc'ed string; a source that cannot be read yields an empty or partial
 * value (and, for topology, an "errors" list saying what was missing). */
#include "meta.h"

#include <dirent.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ string builder */

typedef struct strbuf {
  char *p;
  size_t len, cap;
  int oom;
} strbuf;

static void sb_reserve(strbuf *b, size_t extra) {
  if (b->oom || b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return;
  }
  b->p = p;
  b->cap = cap;
}

static void sb_putn(strbuf *b, const char *s, size_t n) {
  sb_reserve(b, n);
  if (b->oom) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_printf(strbuf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    sb_putn(b, small, (size_t)n);
    return;
  }
  sb_reserve(b, (size_t)n);
  if (b->oom) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t n;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
  else return 0;
  if (avail < n) return 0;
  unsigned cp = c & (0xFF >> (n + 1));
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/* A JSON string literal. Bytes that are not UTF-8 (argv can hold anything)
 * become U+FFFD so the metadata stays valid JSON. */
static void sb_json_string_n(strbuf *b, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  sb_puts(b, "\"");
  while (p < end) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      sb_putn(b, esc, 2);
      p++;
    } else if (c == '\n') {
      sb_puts(b, "\\n"), p++;
    } else if (c == '\t') {
      sb_puts(b, "\\t"), p++;
    } else if (c == '\r') {
      sb_puts(b, "\\r"), p++;
    } else if (c < 0x20 || c == 0x7F) {
      sb_printf(b, "\\u%04x", c);
      p++;
    } else {
      size_t n = utf8_len(p, (size_t)(end - p));
      if (n == 0) {
        sb_puts(b, "\\ufffd");
        p++;
      } else {
        sb_putn(b, (const char *)p, n);
        p += n;
      }
    }
  }
  sb_puts(b, "\"");
}

static void sb_json_string(strbuf *b, const char *s) { sb_json_string_n(b, s, strlen(s)); }

/* The built string, or `fallback` if memory ran out. Never NULL unless even
 * the fallback cannot be allocated. */
static char *sb_finish(strbuf *b, const char *fallback) {
  if (!b->oom && b->p) return b->p;
  free(b->p);
  return strdup(fallback);
}

/* ------------------------------------------------------------ small readers */

/* Whole file into a malloc'ed NUL-terminated buffer; *len gets its size. */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

/* First line of a small sysfs file, without the newline. */
static int read_line(const char *path, char *out, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(out, (int)len, f) != NULL;
  fclose(f);
  if (ok) out[strcspn(out, "\n")] = '\0';
  return ok;
}

static long read_long(const char *path, long fallback) {
  char line[64];
  if (!read_line(path, line, sizeof line)) return fallback;
  char *end;
  long v = strtol(line, &end, 10);
  return end == line ? fallback : v;
}

typedef struct intlist {
  int *v;
  size_t n, cap;
} intlist;

static void il_push(intlist *l, int x) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    int *v = realloc(l->v, cap * sizeof *v);
    if (!v) return;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
}

/* Kernel cpu list syntax: "0-3,8,10-11" (empty for none). */
static void parse_cpulist(const char *s, intlist *out) {
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s) break;
    long b = a;
    s = end;
    if (*s == '-') {
      b = strtol(s + 1, &end, 10);
      if (end == s + 1) break;
      s = end;
    }
    for (long x = a; x <= b && x - a < 1 << 20; x++) il_push(out, (int)x);
    if (*s == ',') s++;
    else break;
  }
}

static int read_cpulist(const char *path, intlist *out) {
  size_t len;
  char *text = read_file(path, &len);
  if (!text) return 0;
  parse_cpulist(text, out);
  free(text);
  return 1;
}

static void sb_intlist(strbuf *b, const intlist *l) {
  sb_puts(b, "[");
  for (size_t i = 0; i < l->n; i++) sb_printf(b, "%s%d", i ? ", " : "", l->v[i]);
  sb_puts(b, "]");
}

/* ------------------------------------------------------------ command */

char *gl_meta_command_json(void) {
  /* `grainlab record` knows the argv it launched: programs may overwrite
   * their own argv while parsing options (a benchmark suite writes `-*` over
   * its flags), which /proc/self/cmdline then shows. Consumed here, so a
   * program this one runs reports its own command line. */
  const char *launched = getenv("GRAINLAB_COMMAND");
  if (launched && launched[0] == '[' && launched[strlen(launched) - 1] == ']') {
    char *copy = strdup(launched);
    unsetenv("GRAINLAB_COMMAND");
    if (copy) return copy;
  }
  strbuf b = {0};
  size_t len = 0;
  char *args = read_file("/proc/self/cmdline", &len);
  sb_puts(&b, "[");
  if (args) {
    /* NUL-separated, NUL-terminated. */
    size_t start = 0;
    int first = 1;
    for (size_t i = 0; i < len; i++) {
      if (args[i] != '\0') continue;
      if (!first) sb_puts(&b, ", ");
      sb_json_string_n(&b, args + start, i - start);
      first = 0;
      start = i + 1;
    }
    if (start < len) { /* unterminated last argument */
      if (!first) sb_puts(&b, ", ");
      sb_json_string_n(&b, args + start, len - start);
    }
    free(args);
  }
  sb_puts(&b, "]");
  return sb_finish(&b, "[]");
}

/* ------------------------------------------------------------ topology */

#define CPU_DIR "/sys/devices/system/cpu"
#define NODE_DIR "/sys/devices/system/node"

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* NUMA node ids present in /sys (sorted), empty if the kernel has no NUMA. */
static void numa_nodes(intlist *out) {
  DIR *d = opendir(NODE_DIR);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    if (strncmp(e->d_name, "node", 4) != 0) continue;
    long id = strtol(e->d_name + 4, &end, 10);
    if (end != e->d_name + 4 && *end == '\0') il_push(out, (int)id);
  }
  closedir(d);
  qsort(out->v, out->n, sizeof *out->v, cmp_int);
}

/* "32K" / "1024K" / "8M" -> bytes; -1 if unreadable. */
static long long parse_size(const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s) return -1;
  switch (*end) {
    case 'K': case 'k': return v << 10;
    case 'M': case 'm': return v << 20;
    case 'G': case 'g': return v << 30;
    default: return v;
  }
}

static void topology_caches(strbuf *b, strbuf *errors) {
  sb_puts(b, "[");
  int first = 1;
  for (int idx = 0;; idx++) {
    char dir[128], path[192], line[256];
    snprintf(dir, sizeof dir, CPU_DIR "/cpu0/cache/index%d", idx);
    snprintf(path, sizeof path, "%s/level", dir);
    long level = read_long(path, -1);
    if (level < 0) {
      if (idx == 0) sb_printf(errors, "%s\"no cache information in " CPU_DIR "/cpu0/cache\"",
                              errors->len ? ", " : "");
      break;
    }
    sb_printf(b, "%s{\"level\": %ld, \"type\": ", first ? "" : ", ", level);
    first = 0;
    snprintf(path, sizeof path, "%s/type", dir);
    if (read_line(path, line, sizeof line)) sb_json_string(b, line);
    else sb_puts(b, "null");
    snprintf(path, sizeof path, "%s/size", dir);
    long long size = read_line(path, line, sizeof line) ? parse_size(line) : -1;
    if (size >= 0) sb_printf(b, ", \"size\": %lld", size);
    else sb_puts(b, ", \"size\": null");
    snprintf(path, sizeof path, "%s/coherency_line_size", dir);
    long line_size = read_long(path, -1);
    if (line_size >= 0) sb_printf(b, ", \"line\": %ld", line_size);
    else sb_puts(b, ", \"line\": null");
    intlist shared = {0};
    snprintf(path, sizeof path, "%s/shared_cpu_list", dir);
    read_cpulist(path, &shared);
    sb_puts(b, ", \"shared_cpus\": ");
    sb_intlist(b, &shared);
    free(shared.v);
    sb_puts(b, "}");
  }
  sb_puts(b, "]");
}

/* NUMA: node ids, cpu -> node, and the distance table (rows/columns in
 * the order of "nodes"). Without /sys/devices/system/node, one node 0. */
static void topology_numa(strbuf *b, strbuf *errors, int ncpu) {
  intlist nodes = {0};
  numa_nodes(&nodes);
  int *cpu_node = calloc((size_t)(ncpu ? ncpu : 1), sizeof *cpu_node);
  for (size_t n = 0; n < nodes.n; n++) {
    char path[128];
    intlist cpus = {0};
    snprintf(path, sizeof path, NODE_DIR "/node%d/cpulist", nodes.v[n]);
    read_cpulist(path, &cpus);
    for (size_t i = 0; cpu_node && i < cpus.n; i++)
      if (cpus.v[i] >= 0 && cpus.v[i] < ncpu) cpu_node[cpus.v[i]] = nodes.v[n];
    free(cpus.v);
  }
  sb_puts(b, ", \"cpu_node\": [");
  for (int cpu = 0; cpu < ncpu; cpu++)
    sb_printf(b, "%s%d", cpu ? ", " : "", cpu_node ? cpu_node[cpu] : 0);
  sb_puts(b, "], \"nodes\": ");
  if (nodes.n == 0) {
    sb_puts(b, "[0], \"numa_distances\": [[10]]");
  } else {
    sb_intlist(b, &nodes);
    sb_puts(b, ", \"numa_distances\": [");
    for (size_t n = 0; n < nodes.n; n++) {
      char path[128], *text;
      snprintf(path, sizeof path, NODE_DIR "/node%d/distance", nodes.v[n]);
      sb_puts(b, n ? ", [" : "[");
      if ((text = read_file(path, NULL)) != NULL) {
        /* space-separated, one entry per node in id order */
        char *s = text, *end;
        int first = 1;
        for (long d = strtol(s, &end, 10); end != s; d = strtol(s, &end, 10)) {
          sb_printf(b, "%s%ld", first ? "" : ", ", d);
          first = 0;
          s = end;
        }
        free(text);
      } else {
        sb_printf(errors, "%s\"cannot read %s\"", errors->len ? ", " : "", path);
      }
      sb_puts(b, "]");
    }
    sb_puts(b, "]");
  }
  free(cpu_node);
  free(nodes.v);
}

char *gl_meta_topology_json(void) {
  strbuf b = {0}, errors = {0};
  sb_puts(&errors, "");
  intlist present = {0}, online = {0};
  if (!read_cpulist(CPU_DIR "/present", &present))
    sb_printf(&errors, "\"cannot read " CPU_DIR "/present\"");
  if (!read_cpulist(CPU_DIR "/online", &online))
    sb_printf(&errors, "%s\"cannot read " CPU_DIR "/online\"", errors.len ? ", " : "");
  int ncpu = 0; /* per-cpu arrays are indexed by cpu id 0..max present */
  for (size_t i = 0; i < present.n; i++)
    if (present.v[i] + 1 > ncpu) ncpu = present.v[i] + 1;

  sb_printf(&b, "{\"cpus\": %zu, \"online\": ", present.n);
  sb_intlist(&b, &online);

  const char *per_cpu[] = {"core_id", "physical_package_id"};
  const char *keys[] = {"cpu_core", "cpu_package"};
  for (int k = 0; k < 2; k++) {
    sb_printf(&b, ", \"%s\": [", keys[k]);
    for (int cpu = 0; cpu < ncpu; cpu++) {
      char path[128];
      snprintf(path, sizeof path, CPU_DIR "/cpu%d/topology/%s", cpu, per_cpu[k]);
      sb_printf(&b, "%s%ld", cpu ? ", " : "", read_long(path, -1));
    }
    sb_puts(&b, "]");
  }
  topology_numa(&b, &errors, ncpu);
  sb_puts(&b, ", \"caches\": ");
  topology_caches(&b, &errors);
  if (errors.len) {
    sb_puts(&b, ", \"errors\": [");
    sb_puts(&b, errors.p);
    sb_puts(&b, "]");
  }
  sb_puts(&b, "}");

  free(present.v);
  free(online.v);
  free(errors.p);
  return sb_finish(&b, "{}");
}

/* ------------------------------------------------------------ load map */

typedef struct loadmap_state {
  strbuf *b;
  int objects;
  int entries;
} loadmap_state;

static int loadmap_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  loadmap_state *st = data;
  const char *path = info->dlpi_name ? info->dlpi_name : "";
  char exe[PATH_MAX];
  /* The main program comes first and has an empty name. */
  if (st->objects++ == 0 && *path == '\0' && realpath("/proc/self/exe", exe) != NULL)
    path = exe;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    sb_puts(st->b, st->entries++ ? ", {\"path\": " : "{\"path\": ");
    sb_json_string(st->b, path);
    sb_printf(st->b, ", \"base\": %ju, \"start\": %ju, \"end\": %ju}",
              (uintmax_t)info->dlpi_addr, (uintmax_t)start, (uintmax_t)(start + ph->p_memsz));
  }
  return 0;
}

char *gl_meta_loadmap_json(void) {
  strbuf b = {0};
  loadmap_state st = {&b, 0, 0};
  sb_puts(&b, "[");
  dl_iterate_phdr(loadmap_object, &st);
  sb_puts(&b, "]");
  return sb_finish(&b, "[]");
}
