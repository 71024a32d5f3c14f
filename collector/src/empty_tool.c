/* empty_tool.c — libgrainempty.so: an OMPT tool that registers the same
 * callbacks as the collector with empty bodies. Running an application under
 * it measures the runtime's own cost of OMPT dispatch: the overhead floor the
 * collector's overhead is compared against (benchmarks/).
 *
 * Built a second time with GL_CLOCK_FLOOR as libgrainclock.so: each callback
 * reads the collector's clock once (clock.h, the TSC on x86) and keeps it in
 * a thread-local, and does nothing else. That is the floor of any tool that
 * timestamps every event, which the grain graph needs: what reading the
 * clock costs on a machine (9.6 ns a read on this project's AMD EPYC VMs)
 * bounds how close to the empty tool the collector can get. */
#include <omp-tools.h>
#include <stddef.h>

#ifdef GL_CLOCK_FLOOR
#include "clock.h"
uint64_t gl_clock_origin; /* clock.h's; 0: raw readings are as good here */
static __thread uint64_t last_tick __attribute__((tls_model("initial-exec")));
#define TICK() (last_tick = gl_clock_now())
#else
#define TICK() ((void)0)
#endif

static void on_thread_begin(ompt_thread_t t, ompt_data_t *d) {
  TICK();
  (void)t, (void)d;
}
static void on_thread_end(ompt_data_t *d) {
  TICK();
  (void)d;
}
static void on_parallel_begin(ompt_data_t *e, const ompt_frame_t *f, ompt_data_t *p,
                              unsigned int r, int fl, const void *ra) {
  TICK();
  (void)e, (void)f, (void)p, (void)r, (void)fl, (void)ra;
}
static void on_parallel_end(ompt_data_t *p, ompt_data_t *e, int fl, const void *ra) {
  TICK();
  (void)p, (void)e, (void)fl, (void)ra;
}
static void on_implicit_task(ompt_scope_endpoint_t ep, ompt_data_t *p, ompt_data_t *t,
                             unsigned int n, unsigned int i, int fl) {
  TICK();
  (void)ep, (void)p, (void)t, (void)n, (void)i, (void)fl;
}
static void on_task_create(ompt_data_t *e, const ompt_frame_t *f, ompt_data_t *t, int fl,
                           int d, const void *ra) {
  TICK();
  (void)e, (void)f, (void)t, (void)fl, (void)d, (void)ra;
}
static void on_task_schedule(ompt_data_t *p, ompt_task_status_t s, ompt_data_t *n) {
  TICK();
  (void)p, (void)s, (void)n;
}
static void on_sync_region(ompt_sync_region_t k, ompt_scope_endpoint_t ep, ompt_data_t *p,
                           ompt_data_t *t, const void *ra) {
  TICK();
  (void)k, (void)ep, (void)p, (void)t, (void)ra;
}
static void on_work(ompt_work_t w, ompt_scope_endpoint_t ep, ompt_data_t *p, ompt_data_t *t,
                    uint64_t c, const void *ra) {
  TICK();
  (void)w, (void)ep, (void)p, (void)t, (void)c, (void)ra;
}
static void on_dispatch(ompt_data_t *p, ompt_data_t *t, ompt_dispatch_t k, ompt_data_t i) {
  TICK();
  (void)p, (void)t, (void)k, (void)i;
}
static void on_dependences(ompt_data_t *t, const ompt_dependence_t *d, int n) {
  TICK();
  (void)t, (void)d, (void)n;
}
static void on_task_dependence(ompt_data_t *s, ompt_data_t *k) {
  TICK();
  (void)s, (void)k;
}

static int on_initialize(ompt_function_lookup_t lookup, int dev, ompt_data_t *data) {
  (void)dev, (void)data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  if (!set) return 0;
  set(ompt_callback_thread_begin, (ompt_callback_t)on_thread_begin);
  set(ompt_callback_thread_end, (ompt_callback_t)on_thread_end);
  set(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin);
  set(ompt_callback_parallel_end, (ompt_callback_t)on_parallel_end);
  set(ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task);
  set(ompt_callback_task_create, (ompt_callback_t)on_task_create);
  set(ompt_callback_task_schedule, (ompt_callback_t)on_task_schedule);
  set(ompt_callback_sync_region, (ompt_callback_t)on_sync_region);
  set(ompt_callback_work, (ompt_callback_t)on_work);
  set(ompt_callback_dispatch, (ompt_callback_t)on_dispatch);
  set(ompt_callback_dependences, (ompt_callback_t)on_dependences);
  set(ompt_callback_task_dependence, (ompt_callback_t)on_task_dependence);
  return 1;
}

static void on_finalize(ompt_data_t *data) { (void)data; }

__attribute__((visibility("default"))) ompt_start_tool_result_t *
ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
  (void)omp_version, (void)runtime_version;
  static ompt_start_tool_result_t result = {on_initialize, on_finalize, {0}};
  return &result;
}
