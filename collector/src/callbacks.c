/* callbacks.c — OMPT callbacks: one trace row per runtime event (per
 * dependence item for `dependences`), per docs/trace-format.md. Each callback
 * does a constant amount of work on its own thread's buffer: no locks, no
 * allocation, no system calls but sched_getcpu() and counter reads. */
#include <stdio.h>
#include <string.h>
#include "callbacks.h"
#include "graincollect.h"
#include "pages.h"
#include "static_chunks.h"
#include "thread_state.h"

static inline uint64_t id_of(const ompt_data_t *d) { return d ? d->value : 0; }

/* The first image's initial thread and initial task begin where the process
 * started (tsc 0, clock.c): the program's serial set-up before its first
 * OpenMP call is the initial task's first fragment. Set by on_initialize. */
int gl_begin_at_process_start;
static int initial_thread_pending = 1, initial_task_pending = 1;

static int at_process_start(int *pending) {
  return gl_begin_at_process_start && __atomic_exchange_n(pending, 0, __ATOMIC_ACQ_REL);
}

static void on_thread_begin(ompt_thread_t type, ompt_data_t *thread_data) {
  gl_thread *t = gl_self();
  if (!t) return;
  thread_data->ptr = t;
  uint64_t tsc = type == ompt_thread_initial && at_process_start(&initial_thread_pending)
                     ? 0 : gl_clock_now();
  gl_record_at(t, tsc, (gl_row){.event = GL_EV_THREAD_BEGIN, .kind = (uint32_t)type},
               GL_NO_COUNTERS);
}

static void on_thread_end(ompt_data_t *thread_data) {
  (void)thread_data;
  gl_thread *t = gl_self();
  if (!t) return;
  gl_record(t, (gl_row){.event = GL_EV_THREAD_END}, GL_NO_COUNTERS);
  /* Its last event: release the thread's counters (perf fds, PAPI event set). */
  if (gl_ncounters) gl_counters_thread_stop(&t->counter_state);
}

static void on_parallel_begin(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                              ompt_data_t *parallel_data, unsigned int requested,
                              int flags, const void *codeptr_ra) {
  (void)frame;
  gl_thread *t = gl_self();
  if (!t) return;
  parallel_data->value = gl_new_id(t);
  gl_record(t, (gl_row){.event = GL_EV_PARALLEL_BEGIN,
                        .task = id_of(encountering_task),
                        .other = parallel_data->value,
                        .codeptr = codeptr_ra,
                        .count = requested,
                        .kind = (uint32_t)flags}, GL_READ_COUNTERS);
}

static void on_parallel_end(ompt_data_t *parallel_data, ompt_data_t *encountering_task,
                            int flags, const void *codeptr_ra) {
  gl_thread *t = gl_self();
  if (!t) return;
  gl_record(t, (gl_row){.event = GL_EV_PARALLEL_END,
                        .task = id_of(encountering_task),
                        .other = id_of(parallel_data),
                        .codeptr = codeptr_ra,
                        .kind = (uint32_t)flags}, GL_READ_COUNTERS);
}

static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data,
                             ompt_data_t *task_data, unsigned int team,
                             unsigned int index, int flags) {
  gl_thread *t = gl_self();
  if (!t) return;
  if (endpoint == ompt_scope_begin) {
    task_data->value = gl_new_id(t);
    uint64_t region = (flags & ompt_task_initial) ? 0 : id_of(parallel_data);
    if (t->nimplicit < GL_NEST)
      t->implicit[t->nimplicit] = (gl_implicit){task_data->value, region, index, team};
    t->nimplicit++;
    uint64_t now = gl_clock_now();
    int at_start = (flags & ompt_task_initial) && at_process_start(&initial_task_pending);
    gl_record_at(t, at_start ? 0 : now,
                 (gl_row){.event = GL_EV_IMPLICIT_BEGIN,
                          .task = task_data->value,
                          .other = region,
                          .value = index,
                          .count = team,
                          .kind = (uint32_t)flags}, GL_READ_COUNTERS);
    if (at_start && gl_ncounters && t->pos > 0) {
      uint64_t mono, real;
      gl_clock_start_pair(&mono, &real);
      gl_counters_at_process_start(&t->counter_state, mono, now,
                                   &t->counters[(size_t)(t->pos - 1) * (size_t)gl_ncounters]);
    }
  } else {
    /* libomp passes team size 0 at the end: report the values from begin. */
    if (t->nimplicit > 0) {
      t->nimplicit--;
      if (t->nimplicit < GL_NEST && t->implicit[t->nimplicit].id == task_data->value) {
        index = t->implicit[t->nimplicit].index;
        team = t->implicit[t->nimplicit].team;
      }
    }
    gl_record(t, (gl_row){.event = GL_EV_IMPLICIT_END,
                          .task = task_data->value,
                          .value = index,
                          .count = team,
                          .kind = (uint32_t)flags}, GL_READ_COUNTERS);
  }
}

static void on_task_create(ompt_data_t *encountering_task, const ompt_frame_t *frame,
                           ompt_data_t *new_task, int flags, int has_dependences,
                           const void *codeptr_ra) {
  (void)frame;
  gl_thread *t = gl_self();
  if (!t) return;
  new_task->value = gl_new_id(t);
  gl_record(t, (gl_row){.event = GL_EV_TASK_CREATE,
                        .task = new_task->value,
                        .other = id_of(encountering_task),
                        .codeptr = codeptr_ra,
                        .value = has_dependences != 0,
                        .kind = (uint32_t)flags}, GL_READ_COUNTERS);
}

static void on_task_schedule(ompt_data_t *prior_task, ompt_task_status_t prior_status,
                             ompt_data_t *next_task) {
  gl_thread *t = gl_self();
  if (!t) return;
  gl_record(t, (gl_row){.event = GL_EV_TASK_SCHEDULE,
                        .task = id_of(next_task),
                        .other = id_of(prior_task),
                        .kind = (uint32_t)prior_status}, GL_READ_COUNTERS);
}

static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                           ompt_data_t *parallel_data, ompt_data_t *task_data,
                           const void *codeptr_ra) {
  gl_thread *t = gl_self();
  if (!t) return;
  uint64_t region = id_of(parallel_data);
  /* libomp passes no parallel data at the end of a region's implicit barrier:
   * the barrier belongs to the region of the thread's current implicit task. */
  if (!region && t->nimplicit > 0 && t->nimplicit <= GL_NEST)
    region = t->implicit[t->nimplicit - 1].region;
  if (endpoint == ompt_scope_begin) {
    if (t->nsync < GL_NEST)
      t->sync[t->nsync] = (gl_sync){id_of(task_data), region, codeptr_ra, (uint32_t)kind};
    t->nsync++;
  } else if (t->nsync > 0) {
    t->nsync--;
  }
  gl_record(t, (gl_row){.event = endpoint == ompt_scope_begin ? GL_EV_SYNC_BEGIN : GL_EV_SYNC_END,
                        .task = id_of(task_data),
                        .other = region,
                        .codeptr = codeptr_ra,
                        .kind = (uint32_t)kind}, GL_READ_COUNTERS);
}

static int is_loop(ompt_work_t type) {
  return type == ompt_work_loop || type == ompt_work_loop_static ||
         type == ompt_work_loop_dynamic || type == ompt_work_loop_guided ||
         type == ompt_work_loop_other;
}

static void on_work(ompt_work_t type, ompt_scope_endpoint_t endpoint,
                    ompt_data_t *parallel_data, ompt_data_t *task_data, uint64_t count,
                    const void *codeptr_ra) {
  gl_thread *t = gl_self();
  if (!t) return;
  uint64_t task = id_of(task_data), region = id_of(parallel_data);
  if (endpoint == ompt_scope_begin) {
    uint64_t tsc = gl_clock_now();
    if (is_loop(type)) {
      if (t->nloops < GL_NEST) {
        uint32_t team = t->nimplicit > 0 && t->nimplicit <= GL_NEST
                            ? t->implicit[t->nimplicit - 1].team
                            : 1;
        t->loops[t->nloops] = (gl_loop){.task = task, .parallel = region, .count = count,
                                        .begin_tsc = tsc, .work_type = (uint32_t)type,
                                        .team = team};
      }
      t->nloops++;
    }
    gl_record_at(t, tsc, (gl_row){.event = GL_EV_WORK_BEGIN,
                                  .task = task,
                                  .other = region,
                                  .codeptr = codeptr_ra,
                                  .count = count,
                                  .kind = (uint32_t)type}, GL_READ_COUNTERS);
    return;
  }
  uint64_t end_tsc = gl_clock_now();
  if (is_loop(type) && t->nloops > 0) {
    t->nloops--;
    if (t->nloops < GL_NEST && t->loops[t->nloops].work_type == ompt_work_loop_static)
      gl_infer_static_chunks(t, &t->loops[t->nloops], end_tsc);
    uint64_t last = gl_last_tsc(t);
    if (end_tsc < last) end_tsc = last;
  }
  gl_record_at(t, end_tsc, (gl_row){.event = GL_EV_WORK_END,
                                    .task = task,
                                    .other = region,
                                    .codeptr = codeptr_ra,
                                    .count = count,
                                    .kind = (uint32_t)type}, GL_READ_COUNTERS);
}

static void on_dispatch(ompt_data_t *parallel_data, ompt_data_t *task_data,
                        ompt_dispatch_t kind, ompt_data_t instance) {
  gl_thread *t = gl_self();
  if (!t) return;
  uint64_t start, iters;
  if (kind == ompt_dispatch_ws_loop_chunk || kind == ompt_dispatch_taskloop_chunk ||
      kind == ompt_dispatch_distribute_chunk) {
    const ompt_dispatch_chunk_t *c = instance.ptr;
    start = c ? c->start : 0;
    iters = c ? c->iterations : 0;
  } else {
    start = instance.value; /* iteration number; for sections libomp's value */
    iters = 1;
  }
  uint64_t tsc = gl_clock_now();
  if (kind == ompt_dispatch_ws_loop_chunk && t->nloops > 0 && t->nloops <= GL_NEST) {
    gl_loop *l = &t->loops[t->nloops - 1];
    if (l->nchunks++ == 0) {
      l->first_start = start;
      l->first_iters = iters;
      l->first_tsc = tsc;
    }
  }
  gl_record_at(t, tsc, (gl_row){.event = GL_EV_CHUNK,
                                .task = id_of(task_data),
                                .other = id_of(parallel_data),
                                .value = start,
                                .count = iters,
                                .kind = (uint32_t)kind}, GL_READ_COUNTERS);
}

static void on_dependences(ompt_data_t *task_data, const ompt_dependence_t *deps, int ndeps) {
  gl_thread *t = gl_self();
  if (!t) return;
  for (int i = 0; i < ndeps; i++)
    gl_record(t, (gl_row){.event = GL_EV_DEPENDENCE,
                          .task = id_of(task_data),
                          .value = (uint64_t)(uintptr_t)deps[i].variable.ptr,
                          .kind = (uint32_t)deps[i].dependence_type}, GL_NO_COUNTERS);
}

static void on_task_dependence(ompt_data_t *src_task, ompt_data_t *sink_task) {
  gl_thread *t = gl_self();
  if (!t) return;
  gl_record(t, (gl_row){.event = GL_EV_TASK_DEPENDENCE,
                        .task = id_of(sink_task),
                        .other = id_of(src_task)}, GL_NO_COUNTERS);
}

static ompt_get_task_info_t get_task_info;

void gl_callbacks_lookup(ompt_function_lookup_t lookup) {
  get_task_info = (ompt_get_task_info_t)lookup("ompt_get_task_info");
}

/* omp_control_tool(): grain_data() annotations (graincollect.h) become
 * DATA_ACCESS rows about the current task; other commands are ignored. */
static int on_control_tool(uint64_t command, uint64_t modifier, void *arg,
                           const void *codeptr_ra) {
  if (command != GRAIN_CONTROL_DATA || !arg) return 1; /* omp_control_tool_ignored */
  gl_thread *t = gl_self();
  if (!t) return 0;
  const grain_data_arg *a = arg;
  ompt_data_t *task = 0;
  if (get_task_info) get_task_info(0, 0, &task, 0, 0, 0);
  uint64_t base = (uint64_t)(uintptr_t)a->base;
  uint64_t node = t->page_cache ? gl_pages_node(t->page_cache, base, a->bytes) : 0;
  gl_record(t, (gl_row){.event = GL_EV_DATA_ACCESS,
                        .task = id_of(task),
                        .other = node,
                        .codeptr = codeptr_ra,
                        .value = base,
                        .count = a->bytes,
                        .kind = (uint32_t)modifier}, GL_NO_COUNTERS);
  return 0;
}

int gl_register_callbacks(ompt_set_callback_t set, char *json, size_t len) {
  /* Each handler goes through a pointer of its OMPT type (as LLVM's
   * callback.h does): the compiler checks its signature before the cast to
   * the generic ompt_callback_t. */
#define GL_CALLBACK(name) \
  {ompt_callback_##name, #name, (ompt_callback_t)(ompt_callback_##name##_t){on_##name}}
  static const struct {
    ompt_callbacks_t event;
    const char *name;
    ompt_callback_t fn;
  } table[] = {
      GL_CALLBACK(thread_begin),   GL_CALLBACK(thread_end),    GL_CALLBACK(parallel_begin),
      GL_CALLBACK(parallel_end),   GL_CALLBACK(implicit_task), GL_CALLBACK(task_create),
      GL_CALLBACK(task_schedule),  GL_CALLBACK(sync_region),   GL_CALLBACK(work),
      GL_CALLBACK(dispatch),       GL_CALLBACK(dependences),   GL_CALLBACK(task_dependence),
      GL_CALLBACK(control_tool),
  };
#undef GL_CALLBACK
  int chunks = 0;
  size_t used = (size_t)snprintf(json, len, "{");
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    ompt_set_result_t r = set(table[i].event, table[i].fn);
    if (table[i].event == ompt_callback_dispatch) chunks = r == ompt_set_always;
    if (used < len)
      used += (size_t)snprintf(json + used, len - used, "%s\"%s\": %d", i ? ", " : "",
                               table[i].name, (int)r);
  }
  if (used < len) snprintf(json + used, len - used, "}");
  return chunks;
}
