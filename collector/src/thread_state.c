/* thread_state.c — the registry of per-thread states. A state is created the
 * first time a thread reports an event (normally at thread_begin) and lives
 * until the process ends, so the end of the run can flush every buffer. */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "grainlab_spool.h"
#include "thread_state.h"
#include "pages.h"

int gl_ncounters;
uint32_t gl_buffer_events = GL_BUFFER_EVENTS_DEFAULT;
int gl_pool_size = 2;
int gl_recording;
long gl_rseq_cpu_offset;

/* glibc 2.35+ exports where each thread's rseq area sits (weak: absent in
 * older ones); the area's cpu_id field is at byte 4 (linux/rseq.h). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

void gl_cpu_configure(void) {
  if (&__rseq_offset && &__rseq_size && __rseq_size >= 8)
    gl_rseq_cpu_offset = (long)__rseq_offset + 4;
}

/* thread_state.h's promise: a thread's state starts a cache line, and what
 * the writer threads read and write starts lines of its own. */
_Static_assert(_Alignof(gl_thread) == GL_LINE && sizeof(gl_thread) % GL_LINE == 0,
               "thread states are whole cache lines");
_Static_assert(offsetof(gl_thread, pool_events) % GL_LINE == 0 &&
                   offsetof(gl_thread, pool_state) % GL_LINE == 0,
               "the writer's fields start lines of their own");

__thread gl_thread *gl_self_tls __attribute__((tls_model("initial-exec")));

static gl_thread *registry[GL_MAX_THREADS];
static uint32_t nthreads; /* slots handed out (may exceed GL_MAX_THREADS) */

/* A stack overflow (deep task recursion) raises SIGSEGV on a thread with no
 * stack left: the trace can only be saved if the handler runs on a stack of
 * its own. The handler only appends raw buffers (writev) and starts the
 * converter, but chained application handlers may need more: a generous size. Threads
 * that already have an alternate stack (the application's) keep it. */
#define GL_SIGNAL_STACK (512 * 1024)
static void give_signal_stack(void) {
  stack_t old;
  if (sigaltstack(0, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
  void *mem = mmap(0, GL_SIGNAL_STACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t ss = {.ss_sp = mem, .ss_size = GL_SIGNAL_STACK, .ss_flags = 0};
  if (sigaltstack(&ss, 0) != 0) munmap(mem, GL_SIGNAL_STACK);
}

/* Set on a thread that could not get a state, so it does not retry per event. */
static __thread int untraced __attribute__((tls_model("initial-exec")));

void gl_pool_configure(void) {
  size_t slots = (size_t)gl_buffer_events + 1;
  size_t bytes = slots * (sizeof(gl_event_t) + (size_t)gl_ncounters * sizeof(int64_t));
  size_t fit = GL_POOL_BYTES / bytes;
  gl_pool_size = fit < 2 ? 2 : fit > GL_POOL ? GL_POOL : (int)fit;
}

/* A buffer's pages are made resident a step ahead of the rows written, by
 * the thread itself between FLUSH_BEGIN and FLUSH_END rows of kind
 * GL_FLUSH_PAGES (time the analysis credits to nobody). Left to fault on
 * first write, ~1,400 faults per 100,000 rows (1-3 us each on a VM) would
 * land inside whatever grain runs, inflating work by a quarter on
 * fine-grained programs. Touched all at once as the thread began (7 MiB for
 * the default pool), they delayed every thread's start by 3-6 ms: a short
 * program's worker joined when the work was done. A step is GL_TOUCH_ROWS
 * rows (~110 KiB, ~50 us); only rows a thread reaches are ever touched, and
 * each pool buffer once. */
#define GL_TOUCH_ROWS 2048u

static void touch(void *p, size_t bytes) {
  volatile char *c = p;
  for (size_t o = 0; o < bytes; o += 4096) c[o] = 0;
  if (bytes) c[bytes - 1] = 0;
}

void gl_touch_ahead(gl_thread *t) {
  int k = t->current;
  uint32_t slots = t->cap + 1, from = t->pool_touched[k];
  if (from < slots && from <= t->pos + 2) {
    /* Room for this step's own two rows and the row that triggered it
     * before the reserved last slot; else the whole rest at once. */
    uint32_t to = from + GL_TOUCH_ROWS;
    if (to + 3 > slots) to = slots;
    touch(t->pool_events[k] + from, (size_t)(to - from) * sizeof *t->events);
    if (gl_ncounters)
      touch(t->pool_counters[k] + (size_t)from * (size_t)gl_ncounters,
            (size_t)(to - from) * (size_t)gl_ncounters * sizeof *t->counters);
    t->pool_touched[k] = from = to;
  }
  t->limit = from >= slots ? t->cap : from - 1;
}

gl_thread *gl_thread_create(void) {
  if (untraced) return 0;
  untraced = 1;
  uint32_t index = __atomic_fetch_add(&nthreads, 1, __ATOMIC_ACQ_REL);
  if (index >= GL_MAX_THREADS) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "grainlab: more than %d threads; the others are not traced\n",
              GL_MAX_THREADS);
    return 0;
  }
  /* Line-aligned (thread_state.h, GL_LINE); sizeof is a multiple of it. */
  gl_thread *t = aligned_alloc(GL_LINE, sizeof *t);
  if (t) memset(t, 0, sizeof *t);
  size_t slots = (size_t)gl_buffer_events + 1;
  int ok = t != 0;
  for (int k = 0; ok && k < gl_pool_size; k++) {
    t->pool_events[k] = malloc(slots * sizeof *t->events);
    if (gl_ncounters)
      t->pool_counters[k] = malloc(slots * (size_t)gl_ncounters * sizeof *t->counters);
    ok = t->pool_events[k] && (!gl_ncounters || t->pool_counters[k]);
  }
  if (t) t->events = t->pool_events[0], t->counters = t->pool_counters[0];
  if (!ok) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "grainlab: out of memory for a thread buffer; thread not traced\n");
    return 0;
  }
  give_signal_stack();
  t->page_cache = gl_pages_cache_new();
  t->cap = gl_buffer_events;
  gl_touch_ahead(t); /* the first step of the first buffer */
  t->index = index;
  if (gl_ncounters) gl_counters_thread_start(&t->counter_state);
  __atomic_store_n(&registry[index], t, __ATOMIC_RELEASE);
  gl_self_tls = t;
  untraced = 0;
  return t;
}

void gl_thread_set_base(uint32_t base) {
  __atomic_store_n(&nthreads, base, __ATOMIC_RELEASE);
}

gl_thread *gl_thread_get(uint32_t index) {
  return index < GL_MAX_THREADS ? __atomic_load_n(&registry[index], __ATOMIC_ACQUIRE) : 0;
}

uint32_t gl_thread_count(void) {
  uint32_t n = __atomic_load_n(&nthreads, __ATOMIC_ACQUIRE);
  return n < GL_MAX_THREADS ? n : GL_MAX_THREADS;
}
