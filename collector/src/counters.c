/* counters.c — per-thread counters read at fragment boundaries (counters.h).
 *
 * Three sources:
 * - Linux software events through perf_event_open (task-clock, page faults,
 *   context switches, ...). All perf counters of a thread form one group, so a
 *   read is a single read() of the leader with PERF_FORMAT_GROUP.
 * - PAPI (only when built with GL_HAVE_PAPI): names starting with PAPI_, or any
 *   other name PAPI knows (native events). One event set per thread.
 * - off-cpu: ns the thread was not running since its counters started (wall
 *   minus CPU time; `grainlab record --cpu-time`). Exact at a fraction of a
 *   syscall per read: see "off-cpu" below.
 *
 * Everything that can fail is tried once at init on the initial thread; a
 * counter that cannot be counted here is reported on stderr once, recorded as
 * unavailable in the metadata and dropped from the columns. Only a name nobody
 * knows is an error. The read path allocates nothing. */
#include "counters.h"

#include "clock.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef GL_HAVE_PAPI
#include <dlfcn.h>
#include <papi.h>
#include <pthread.h>

/* PAPI is loaded at run time (dlopen), not linked: a collector built with
 * PAPI still loads where libpapi is missing (a wheel, another machine), and
 * its PAPI counters are then unavailable with the reason. GL_PAPI_SONAME is
 * the library the build found (CMake), tried first. */
#ifndef GL_PAPI_SONAME
#define GL_PAPI_SONAME "libpapi.so"
#endif
#define GL_PAPI_FUNCTIONS(X)                                                   \
  X(int, library_init, (int))                                                  \
  X(int, thread_init, (unsigned long (*)(void)))                               \
  X(char *, strerror, (int))                                                   \
  X(const PAPI_component_info_t *, get_component_info, (int))                  \
  X(int, create_eventset, (int *))                                             \
  X(int, add_event, (int, int))                                                \
  X(int, num_events, (int))                                                    \
  X(int, start, (int))                                                         \
  X(int, stop, (int, long long *))                                             \
  X(int, read, (int, long long *))                                             \
  X(int, cleanup_eventset, (int))                                              \
  X(int, destroy_eventset, (int *))                                            \
  X(int, event_name_to_code, (const char *, int *))                            \
  X(int, unregister_thread, (void))                                            \
  X(void, shutdown, (void))
#define GL_PAPI_FIELD(ret, name, args) ret(*name) args;
static struct { GL_PAPI_FUNCTIONS(GL_PAPI_FIELD) } gl_papi;
#define PAPI_library_init gl_papi.library_init
#define PAPI_thread_init gl_papi.thread_init
#define PAPI_strerror gl_papi.strerror
#define PAPI_get_component_info gl_papi.get_component_info
#define PAPI_create_eventset gl_papi.create_eventset
#define PAPI_add_event gl_papi.add_event
#define PAPI_num_events gl_papi.num_events
#define PAPI_start gl_papi.start
#define PAPI_stop gl_papi.stop
#define PAPI_read gl_papi.read
#define PAPI_cleanup_eventset gl_papi.cleanup_eventset
#define PAPI_destroy_eventset gl_papi.destroy_eventset
#define PAPI_event_name_to_code gl_papi.event_name_to_code
#define PAPI_unregister_thread gl_papi.unregister_thread
#define PAPI_shutdown gl_papi.shutdown
#endif

/* At most this many names may be requested (available or not). */
#define GL_MAX_REQUESTED 32
#define GL_NAME_MAX 64
#define GL_REASON_MAX 160

enum gl_source { SRC_PERF, SRC_PAPI, SRC_OFFCPU };

/* Linux software events offered by name (the names `perf list sw` uses). */
static const struct {
  const char *name;
  uint64_t config;
} kSoftware[] = {
    {"task-clock", PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", PERF_COUNT_SW_CPU_CLOCK},
    {"page-faults", PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
};
#define NSOFTWARE (sizeof kSoftware / sizeof kSoftware[0])
static const char kSoftwareList[] =
    "task-clock, cpu-clock, page-faults, minor-faults, major-faults, "
    "context-switches, cpu-migrations, off-cpu";
static const char kOffCpu[] = "off-cpu";

typedef struct requested_counter {
  char name[GL_NAME_MAX];
  enum gl_source source;
  int available;
  char reason[GL_REASON_MAX];
  uint64_t perf_config; /* SRC_PERF */
  int papi_code;        /* SRC_PAPI */
  int column;           /* index among available counters, -1 if dropped */
} requested_counter;

static requested_counter requested[GL_MAX_REQUESTED];
static int nrequested;

/* Available counters in column order, and how to reach each. */
static const char *column_names[GL_MAX_COUNTERS + 1];
static int ncolumns;
static int perf_column[GL_MAX_COUNTERS]; /* perf group slot -> column */
static uint64_t perf_config[GL_MAX_COUNTERS];
static int nperf;
static int papi_column[GL_MAX_COUNTERS]; /* PAPI event set slot -> column */
static int papi_code[GL_MAX_COUNTERS];
static int npapi;
static int exclude_kernel; /* set when the kernel refuses kernel-side counting */
static int offcpu_column = -1; /* column of off-cpu, -1 if not asked for */

static char metadata_json[GL_MAX_REQUESTED * (GL_NAME_MAX * 2 + GL_REASON_MAX * 2 + 96) + 8];

#ifdef GL_HAVE_PAPI
static int papi_state; /* 0 untried, 1 initialised, -1 failed */
static char papi_failure[GL_REASON_MAX];
#endif

/* ---------------------------------------------------------------- perf */

static int perf_open(uint64_t config, int group_fd, int excl_kernel) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = config;
  attr.read_format = PERF_FORMAT_GROUP;
  /* The leader starts disabled and is enabled once the whole group exists,
   * so every member counts over the same interval. */
  attr.disabled = group_fd < 0;
  attr.exclude_kernel = (unsigned)excl_kernel;
  attr.exclude_hv = (unsigned)excl_kernel;
  /* pid 0, cpu -1: this thread, on whatever CPU it runs. */
  return (int)syscall(SYS_perf_event_open, &attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static void perf_reason(char *out, size_t len, int err) {
  int paranoid = -99;
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  if (f) {
    if (fscanf(f, "%d", &paranoid) != 1) paranoid = -99;
    fclose(f);
  }
  if ((err == EACCES || err == EPERM) && paranoid != -99)
    snprintf(out, len, "perf_event_open: %s (kernel.perf_event_paranoid=%d)", strerror(err),
             paranoid);
  else
    snprintf(out, len, "perf_event_open: %s", strerror(err));
}

/* Events that only ever happen in kernel mode: with exclude_kernel they
 * would silently read 0, so they are unavailable rather than wrong. */
static int kernel_only(uint64_t config) {
  return config == PERF_COUNT_SW_CONTEXT_SWITCHES || config == PERF_COUNT_SW_CPU_MIGRATIONS;
}

/* Can this thread count the software event? Learns exclude_kernel on the way:
 * unprivileged users under kernel.perf_event_paranoid >= 2 may only count
 * user-space activity. */
static int perf_probe(uint64_t config, char *reason, size_t len) {
  int fd = perf_open(config, -1, exclude_kernel);
  if (fd < 0 && (errno == EACCES || errno == EPERM) && !exclude_kernel) {
    fd = perf_open(config, -1, 1);
    if (fd >= 0) exclude_kernel = 1;
  }
  if (fd < 0) {
    perf_reason(reason, len, errno);
    return 0;
  }
  close(fd);
  if (exclude_kernel && kernel_only(config)) {
    perf_reason(reason, len, EACCES);
    size_t used = strlen(reason);
    snprintf(reason + used, len - used,
             " for kernel-side counting, and this event happens only in the kernel");
    return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------- off-cpu
 *
 * off-cpu = (CLOCK_MONOTONIC - CLOCK_THREAD_CPUTIME_ID) since the thread's
 * counters started: the time it was runnable but preempted, or blocked.
 * Reading both clocks costs a syscall (the CPU-time clock has no vDSO path),
 * ~0.7-1.9 us on these VMs (benchmarks/cpu_time_read.py), more than the rest of
 * a row. But off-CPU time only grows while the thread is switched out, and
 * the kernel rewrites a perf event's user page (mmap'd, read-only) each time
 * the thread is switched back in, bumping its `lock` sequence. So a read
 * compares `lock` with the value seen at the last exact read: unchanged, the
 * thread has not been off the CPU since, and off-cpu is what it was (one
 * load); changed, both clocks are read again. The page comes from a
 * task-clock event of the thread's own (never read); without it (perf
 * refused, mmap failed) every read reads the clocks.
 *
 * The guest's scheduler does not see every lost moment: a hypervisor that
 * runs another guest on this vCPU (steal time, common on cloud VMs) leaves
 * `lock` alone, while the CPU-time clock, which excludes steal time, stops.
 * So the clocks are also read again once GL_OFFCPU_RECHECK ticks of the event
 * clock (clock.h) have passed since they were last read: off-CPU time nobody
 * switched for lands at most that far from where it happened, for at most
 * one syscall per that interval. */
#define GL_OFFCPU_RECHECK (1ull << 22) /* TSC ticks: 1.4 ms at 3 GHz (4.2 ms as ns) */

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* Wall minus CPU time now. Wall first: the return from the CPU-time
 * syscall is where the kernel most often switches a thread out, and the
 * CPU time is sampled before that, so a switch there is not charged to the
 * segment that ends at this row (reading CPU first did: on one CPU shared by
 * two threads, grains lost up to 8 of their 19 ms to their neighbours'
 * switches) but to the next, where it happens. */
static int64_t wall_minus_cpu(void) {
  int64_t wall = clock_ns(CLOCK_MONOTONIC);
  return wall - clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void offcpu_start(gl_offcpu *o) {
  o->fd = perf_open(PERF_COUNT_SW_TASK_CLOCK, -1, exclude_kernel);
  o->page = NULL;
  if (o->fd >= 0) {
    void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, o->fd, 0);
    if (p != MAP_FAILED) {
      o->page = p;
      ioctl(o->fd, PERF_EVENT_IOC_ENABLE, 0); /* sched in/out now update the page */
    } else {
      close(o->fd);
      o->fd = -1;
    }
  }
  o->seen = o->page ? __atomic_load_n(&o->page->lock, __ATOMIC_ACQUIRE) : 0;
  o->base = wall_minus_cpu();
  o->off = 0;
  o->at = 0; /* the first read reads the clocks again: in the caller's ticks from then on */
}

static void offcpu_stop(gl_offcpu *o) {
  if (o->page) munmap((void *)o->page, (size_t)sysconf(_SC_PAGESIZE));
  if (o->fd >= 0) close(o->fd);
  o->page = NULL;
  o->fd = -1;
}

static int64_t offcpu_read(gl_offcpu *o, uint64_t tsc) {
  if (o->page) {
    uint32_t lock = __atomic_load_n(&o->page->lock, __ATOMIC_ACQUIRE);
    if (lock == o->seen && tsc - o->at < GL_OFFCPU_RECHECK) return o->off;
    /* Seen before the clocks: a switch after this load changes `lock`
     * again, and the next read reads the clocks again. */
    o->seen = lock;
  }
  o->at = tsc;
  int64_t off = wall_minus_cpu() - o->base;
  if (off > o->off) o->off = off; /* cumulative: never decreases */
  return o->off;
}

/* ---------------------------------------------------------------- PAPI */

#ifdef GL_HAVE_PAPI
static unsigned long papi_thread_id(void) { return (unsigned long)pthread_self(); }

/* dlopen libpapi and fill gl_papi; 0 with papi_failure set when it cannot. */
static int papi_load(void) {
  static const char *const names[] = {GL_PAPI_SONAME, "libpapi.so"};
  void *h = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(papi_failure, sizeof papi_failure,
             "PAPI library %s not found (install PAPI, e.g. apt install libpapi7.0)", GL_PAPI_SONAME);
    return 0;
  }
#define GL_PAPI_LOAD(ret, name, args)                                          \
  if (!(*(void **)&gl_papi.name = dlsym(h, "PAPI_" #name))) {                 \
    snprintf(papi_failure, sizeof papi_failure, "PAPI library lacks PAPI_%s", #name); \
    return 0;                                                                  \
  }
  GL_PAPI_FUNCTIONS(GL_PAPI_LOAD)
#undef GL_PAPI_LOAD
  return 1;
}

static int papi_init(void) {
  if (papi_state) return papi_state > 0;
  if (!papi_load()) {
    papi_state = -1;
    return 0;
  }
  int v = PAPI_library_init(PAPI_VER_CURRENT);
  if (v != PAPI_VER_CURRENT) {
    snprintf(papi_failure, sizeof papi_failure, "PAPI_library_init: %s",
             v > 0 ? "PAPI version mismatch" : PAPI_strerror(v));
    papi_state = -1;
    return 0;
  }
  int rc = PAPI_thread_init(papi_thread_id);
  if (rc != PAPI_OK) {
    snprintf(papi_failure, sizeof papi_failure, "PAPI_thread_init: %s", PAPI_strerror(rc));
    papi_state = -1;
    return 0;
  }
  papi_state = 1;
  return 1;
}

/* Why PAPI cannot count here, beyond its error code (e.g. a disabled perf_event
 * component, or a preset with no hardware events behind it). */
static void papi_reason(char *out, size_t len, const char *call, int rc) {
  const PAPI_component_info_t *cmp = PAPI_get_component_info(0);
  if (cmp && cmp->disabled)
    snprintf(out, len, "%s: %s (%s)", call, PAPI_strerror(rc), cmp->disabled_reason);
  else if (rc == PAPI_ENOEVNT)
    snprintf(out, len, "%s: %s (no hardware counter on this machine can count it)", call,
             PAPI_strerror(rc));
  else
    snprintf(out, len, "%s: %s", call, PAPI_strerror(rc));
}

/* Try the PAPI counters one by one in an event set, as a thread will. */
static void papi_probe(void) {
  int es = PAPI_NULL;
  int rc = PAPI_create_eventset(&es);
  for (int i = 0; i < nrequested; i++) {
    requested_counter *c = &requested[i];
    if (c->source != SRC_PAPI || !c->available) continue;
    if (rc != PAPI_OK) {
      papi_reason(c->reason, sizeof c->reason, "PAPI_create_eventset", rc);
      c->available = 0;
      continue;
    }
    int add = PAPI_add_event(es, c->papi_code);
    if (add != PAPI_OK) {
      papi_reason(c->reason, sizeof c->reason, "PAPI_add_event", add);
      c->available = 0;
    }
  }
  if (rc != PAPI_OK) return;
  int n = PAPI_num_events(es);
  if (n > 0) {
    int start = PAPI_start(es);
    if (start == PAPI_OK) {
      long long scratch[GL_MAX_REQUESTED];
      PAPI_stop(es, scratch);
    } else {
      for (int i = 0; i < nrequested; i++)
        if (requested[i].source == SRC_PAPI && requested[i].available) {
          papi_reason(requested[i].reason, sizeof requested[i].reason, "PAPI_start", start);
          requested[i].available = 0;
        }
    }
  }
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
}
#endif

/* ---------------------------------------------------------------- parsing */

static int valid_name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-' || ch == ':' || ch == '.' || ch == '=' || ch == '+';
}

static void bad_name(const char *what, const char *name) {
#ifdef GL_HAVE_PAPI
  const char *papi = "PAPI presets PAPI_* and the native events papi_native_avail lists";
#else
  const char *papi = "PAPI presets PAPI_* (this build has no PAPI)";
#endif
  fprintf(stderr, "grainlab: %s counter '%s' in GRAINLAB_COUNTERS (software counters: %s; %s)\n",
          what, name, kSoftwareList, papi);
}

/* Classify one name: 0 ok, -1 unknown/malformed (message printed). */
static int classify(requested_counter *c) {
  if (strcmp(c->name, kOffCpu) == 0) { /* always available: the clocks suffice */
    c->source = SRC_OFFCPU;
    c->available = 1;
    return 0;
  }
  for (size_t s = 0; s < NSOFTWARE; s++)
    if (strcmp(c->name, kSoftware[s].name) == 0) {
      c->source = SRC_PERF;
      c->perf_config = kSoftware[s].config;
      c->available = perf_probe(c->perf_config, c->reason, sizeof c->reason);
      return 0;
    }
  /* PAPI_* presets and component::event native names (perf::TASK-CLOCK) are
   * PAPI's by their spelling: when PAPI cannot resolve one here (library or
   * component disabled, e.g. libpfm4 finds no PMU on a VM) the counter is
   * unavailable with PAPI's reason, not an unknown name. */
  int is_papi_name = strncmp(c->name, "PAPI_", 5) == 0 || strstr(c->name, "::") != NULL;
#ifdef GL_HAVE_PAPI
  if (!papi_init()) {
    if (!is_papi_name) goto unknown;
    c->source = SRC_PAPI;
    c->available = 0;
    snprintf(c->reason, sizeof c->reason, "%s", papi_failure);
    return 0;
  }
  int code = 0;
  int rc = PAPI_event_name_to_code(c->name, &code);
  if (rc != PAPI_OK && !is_papi_name) goto unknown;
  c->source = SRC_PAPI;
  c->papi_code = code;
  c->available = rc == PAPI_OK;
  if (!c->available) papi_reason(c->reason, sizeof c->reason, "PAPI_event_name_to_code", rc);
  return 0;
unknown:
#else
  if (is_papi_name) {
    c->source = SRC_PAPI;
    c->available = 0;
    snprintf(c->reason, sizeof c->reason, "grainlab was built without PAPI");
    return 0;
  }
#endif
  bad_name("unknown", c->name);
  return -1;
}

/* ---------------------------------------------------------------- metadata */

static size_t json_string(char *out, size_t len, const char *s) {
  size_t n = 0;
#define PUT(ch)                       \
  do {                                \
    if (n + 1 < len) out[n] = (ch);   \
    n++;                              \
  } while (0)
  PUT('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      PUT('\\');
      PUT((char)*p);
    } else if (*p < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", *p);
      for (char *e = esc; *e; e++) PUT(*e);
    } else {
      PUT((char)*p);
    }
  }
  PUT('"');
#undef PUT
  if (len) out[n < len ? n : len - 1] = '\0';
  return n;
}

static void appendf(size_t *used, const char *fmt, ...) {
  if (*used >= sizeof metadata_json) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(metadata_json + *used, sizeof metadata_json - *used, fmt, ap);
  va_end(ap);
  if (n > 0) *used += (size_t)n;
}

static void append_string(size_t *used, const char *s) {
  if (*used >= sizeof metadata_json) return;
  *used += json_string(metadata_json + *used, sizeof metadata_json - *used, s);
}

static void build_metadata(void) {
  size_t used = 0;
  appendf(&used, "[");
  for (int i = 0; i < nrequested; i++) {
    const requested_counter *c = &requested[i];
    appendf(&used, "%s{\"name\": ", i ? ", " : "");
    append_string(&used, c->name);
    appendf(&used, ", \"source\": \"%s\", \"available\": %s, \"column\": ",
            c->source == SRC_PAPI ? "papi" : c->source == SRC_OFFCPU ? "clock" : "perf",
            c->available ? "true" : "false");
    if (c->available) {
      char col[GL_NAME_MAX + 16];
      snprintf(col, sizeof col, "counter:%s", c->name);
      append_string(&used, col);
    } else {
      appendf(&used, "null");
    }
    appendf(&used, ", \"reason\": ");
    if (c->available)
      appendf(&used, "null");
    else
      append_string(&used, c->reason);
    appendf(&used, "}");
  }
  appendf(&used, "]");
  if (used >= sizeof metadata_json) /* cannot happen with the limits above */
    snprintf(metadata_json, sizeof metadata_json, "[]");
}

/* ---------------------------------------------------------------- API */

/* One name of the comma list, from p: blanks around it dropped, checked.
 * Returns where the list goes on, or NULL (a malformed name: said). */
static const char *next_name(const char *p, const char *end, char name[GL_NAME_MAX]) {
  const char *last = end;
  while (last > p && (last[-1] == ' ' || last[-1] == '\t')) last--;
  size_t len = (size_t)(last - p);
  snprintf(name, GL_NAME_MAX, "%.*s", (int)(len < GL_NAME_MAX ? len : GL_NAME_MAX - 1), p);
  int ok = len < GL_NAME_MAX;
  for (size_t k = 0; ok && k < len; k++) ok = valid_name_char(p[k]);
  if (!ok) {
    char shown[GL_NAME_MAX + 4];
    snprintf(shown, sizeof shown, "%.*s%s", (int)(len < GL_NAME_MAX ? len : GL_NAME_MAX - 1), p,
             len < GL_NAME_MAX ? "" : "...");
    bad_name("malformed", shown);
    return NULL;
  }
  /* Software event names are matched whatever their case and recorded
   * under their canonical (perf) spelling, so task-clock,TASK-CLOCK is one
   * counter, not two columns of the same value. */
  for (size_t k = 0; k < NSOFTWARE; k++)
    if (strcasecmp(name, kSoftware[k].name) == 0)
      snprintf(name, GL_NAME_MAX, "%s", kSoftware[k].name);
  if (strcasecmp(name, kOffCpu) == 0) snprintf(name, GL_NAME_MAX, "%s", kOffCpu);
  return end;
}

/* Split the comma list into `requested`; blanks around names and empty
 * items are ignored, a repeated name counts once. 0, or -1 (said). */
static int parse_spec(const char *spec) {
  for (const char *p = spec; *p;) {
    while (*p == ',' || *p == ' ' || *p == '\t') p++;
    if (!*p) break;
    const char *end = p;
    while (*end && *end != ',') end++;
    char name[GL_NAME_MAX];
    p = next_name(p, end, name);
    if (!p) return -1;
    int dup = 0;
    for (int i = 0; i < nrequested; i++) dup |= strcmp(requested[i].name, name) == 0;
    if (dup) continue;
    if (nrequested == GL_MAX_REQUESTED) {
      fprintf(stderr, "grainlab: more than %d counters in GRAINLAB_COUNTERS\n",
              GL_MAX_REQUESTED);
      return -1;
    }
    requested_counter *c = &requested[nrequested++];
    memset(c, 0, sizeof *c);
    memcpy(c->name, name, sizeof name);
    c->column = -1;
    if (classify(c) < 0) return -1;
  }
  return 0;
}

/* Columns: available counters in the order they were asked for. */
static void assign_columns(void) {
  for (int i = 0; i < nrequested; i++) {
    requested_counter *c = &requested[i];
    if (c->available && ncolumns == GL_MAX_COUNTERS) {
      c->available = 0;
      snprintf(c->reason, sizeof c->reason, "at most %d counters can be recorded at once",
               GL_MAX_COUNTERS);
    }
    if (!c->available) {
      fprintf(stderr, "grainlab: counter %s unavailable: %s; continuing without it\n", c->name,
              c->reason);
      continue;
    }
    c->column = ncolumns;
    column_names[ncolumns] = c->name;
    if (c->source == SRC_OFFCPU) {
      offcpu_column = ncolumns;
    } else if (c->source == SRC_PERF) {
      perf_column[nperf] = ncolumns;
      perf_config[nperf++] = c->perf_config;
    } else {
      papi_column[npapi] = ncolumns;
      papi_code[npapi++] = c->papi_code;
    }
    ncolumns++;
  }
}

int gl_counters_init(const char *spec) {
  nrequested = ncolumns = nperf = npapi = exclude_kernel = 0;
  offcpu_column = -1;
  memset(column_names, 0, sizeof column_names);
  snprintf(metadata_json, sizeof metadata_json, "[]");
  if (spec == NULL) return 0;
  if (parse_spec(spec) < 0) {
    /* the collector disables itself: leave nothing behind */
    gl_counters_shutdown();
    nrequested = ncolumns = nperf = npapi = 0;
    offcpu_column = -1;
    return -1;
  }
#ifdef GL_HAVE_PAPI
  if (papi_state > 0) papi_probe();
#endif
  assign_columns();
  build_metadata();
  return ncolumns;
}

const char *const *gl_counters_names(void) { return column_names; }

const char *gl_counters_metadata_json(void) { return metadata_json; }

void gl_counters_thread_start(gl_counters_thread *t) {
  for (int i = 0; i < GL_MAX_COUNTERS; i++) t->fds[i] = -1;
  t->papi_eventset = -1; /* PAPI_NULL */
  t->started = 0;
  t->offcpu.fd = -1;
  t->offcpu.page = NULL;
  /* perf: one group per thread, leader in fds[0], members in slot order. */
  int ok = 1;
  for (int s = 0; s < nperf && ok; s++) {
    t->fds[s] = perf_open(perf_config[s], s ? t->fds[0] : -1, exclude_kernel);
    ok = t->fds[s] >= 0;
  }
  if (!ok) { /* e.g. out of file descriptors: this thread reads nulls */
    for (int s = 0; s < nperf; s++)
      if (t->fds[s] >= 0) close(t->fds[s]);
    for (int s = 0; s < nperf; s++) t->fds[s] = -1;
  } else if (nperf > 0) {
    ioctl(t->fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }
#ifdef GL_HAVE_PAPI
  if (npapi > 0) {
    int es = PAPI_NULL;
    int good = PAPI_create_eventset(&es) == PAPI_OK;
    for (int s = 0; good && s < npapi; s++) good = PAPI_add_event(es, papi_code[s]) == PAPI_OK;
    if (good) good = PAPI_start(es) == PAPI_OK;
    if (good) {
      t->papi_eventset = es;
    } else if (es != PAPI_NULL) {
      PAPI_cleanup_eventset(es);
      PAPI_destroy_eventset(&es);
    }
  }
#endif
  if (offcpu_column >= 0) offcpu_start(&t->offcpu);
  t->started = 1;
}

void gl_counters_thread_stop(gl_counters_thread *t) {
  if (!t->started) return;
  offcpu_stop(&t->offcpu);
  for (int s = 0; s < nperf; s++)
    if (t->fds[s] >= 0) {
      close(t->fds[s]);
      t->fds[s] = -1;
    }
#ifdef GL_HAVE_PAPI
  if (t->papi_eventset != -1) {
    long long scratch[GL_MAX_COUNTERS];
    PAPI_stop(t->papi_eventset, scratch);
    PAPI_cleanup_eventset(t->papi_eventset);
    PAPI_destroy_eventset(&t->papi_eventset);
    PAPI_unregister_thread();
    t->papi_eventset = -1;
  }
#endif
  t->started = 0;
}

void gl_counters_read(gl_counters_thread *t, uint64_t tsc, int64_t *out) {
  for (int c = 0; c < ncolumns; c++) out[c] = INT64_MIN;
  if (!t->started) return;
  if (offcpu_column >= 0) out[offcpu_column] = offcpu_read(&t->offcpu, tsc);
  if (nperf > 0 && t->fds[0] >= 0) {
    /* PERF_FORMAT_GROUP: { u64 nr; u64 values[nr]; } in group order. */
    uint64_t buf[1 + GL_MAX_COUNTERS];
    ssize_t got = read(t->fds[0], buf, sizeof(uint64_t) * (size_t)(1 + nperf));
    if (got == (ssize_t)(sizeof(uint64_t) * (size_t)(1 + nperf)) && buf[0] == (uint64_t)nperf)
      for (int s = 0; s < nperf; s++) out[perf_column[s]] = (int64_t)buf[1 + s];
  }
#ifdef GL_HAVE_PAPI
  if (npapi > 0 && t->papi_eventset != -1) {
    long long vals[GL_MAX_COUNTERS];
    if (PAPI_read(t->papi_eventset, vals) == PAPI_OK)
      for (int s = 0; s < npapi; s++) out[papi_column[s]] = (int64_t)vals[s];
  }
#endif
}

void gl_counters_at_process_start(gl_counters_thread *t, uint64_t start_mono, uint64_t tsc,
                                  int64_t *out) {
  int main_thread = syscall(SYS_gettid) == getpid();
  for (int c = 0; c < ncolumns; c++) {
    int known = 0;
    if (c == offcpu_column && main_thread && t->started) {
      /* off-CPU counted from the process's start: wall minus CPU was
       * start - 0 there (the main thread's CPU clock starts at the fork) */
      gl_offcpu *o = &t->offcpu;
      if (o->page) o->seen = __atomic_load_n(&o->page->lock, __ATOMIC_ACQUIRE);
      o->base = (int64_t)start_mono;
      int64_t off = wall_minus_cpu() - o->base;
      o->off = off > 0 ? off : 0;
      o->at = tsc;
      out[c] = 0;
      known = 1;
    }
    if (!known) out[c] = INT64_MIN;
  }
}

void gl_counters_shutdown(void) {
#ifdef GL_HAVE_PAPI
  if (papi_state > 0) PAPI_shutdown();
  papi_state = 0;
#endif
}
