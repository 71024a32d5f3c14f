/* replay.c — the grain graph replayed on P simulated cores (grainlab predict).
 *
 * An event-driven list scheduler over the node DAG (docs/predict.md):
 *   - every core owns a deque; a core that finishes a node continues with
 *     the successor it made ready along a continuation edge (help-first, as
 *     libomp runs a deferred task: the parent goes on, the child is queued),
 *     else with a join it made ready (the last finisher resumes the waiter),
 *     else with a created task (work-first when `work_first` is set); every
 *     other node it made ready goes to the bottom of its own deque;
 *   - with nothing made ready it pops the bottom of its own deque (LIFO),
 *     else steals the top (FIFO) of a random non-empty deque: the thief
 *     starts the stolen node `steal_ns` later, and steals from one victim
 *     are serialized `lock_ns` apart (one lock per deque, as libomp's);
 *   - an idle core is woken by every push and tries to steal at once;
 *   - when P > 1, a fork that creates a task (flag 2) costs `defer_ns` more
 *     on its creator (queueing a deferred task: a 1-thread trace ran every
 *     task undeferred, so it never paid that), and takes its own deque's lock
 *     first: thieves at that deque delay the producer;
 *   - a deque holds at most `deque_cap` nodes (0: no limit): a task created
 *     while its creator's deque is full runs at once on the creator (libomp's
 *     task throttling, 256 per thread), its parent's continuation queued;
 *     such a fork pays no deferral (decided when the fork starts).
 * Greedy with zero costs: no core is idle while a node is ready.
 * The random victim uses a fixed-seed xorshift: a replay is deterministic.
 * No Python API (loaded with ctypes). O((V + E) log P). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The cost vector, flag bits, edge codes and stats: replay.def, shared with
 * grainlab/metrics/replay_abi.py. */
enum {
#define GL_REPLAY_COST(name, index) GL_COST_##name = index,
#define GL_REPLAY_FLAG(name, bit)
#define GL_REPLAY_EDGE(name, code)
#define GL_REPLAY_STAT(name, index)
#include "replay.def"
  GL_COST_N
};
#undef GL_REPLAY_COST
#define GL_REPLAY_COST(name, index)
#undef GL_REPLAY_FLAG
#define GL_REPLAY_FLAG(name, bit) GL_FLAG_##name = bit,
enum {
#include "replay.def"
  GL_FLAG_END_
};
#undef GL_REPLAY_FLAG
#define GL_REPLAY_FLAG(name, bit)
#undef GL_REPLAY_EDGE
#define GL_REPLAY_EDGE(name, code) GL_EDGE_##name = code,
enum {
#include "replay.def"
  GL_EDGE_END_
};
#undef GL_REPLAY_EDGE
#define GL_REPLAY_EDGE(name, code)
#undef GL_REPLAY_STAT
#define GL_REPLAY_STAT(name, index) GL_STAT_##name = index,
enum {
#include "replay.def"
  GL_STAT_N
};
#undef GL_REPLAY_STAT
#undef GL_REPLAY_COST
#undef GL_REPLAY_FLAG
#undef GL_REPLAY_EDGE

typedef struct {
  int64_t t;
  int64_t seq;
  int32_t core;
  int32_t kind; /* 0: the core finished its node; 1: a woken core tries to steal */
} event_t;

typedef struct {
  event_t *a;
  int64_t n, cap, seq;
} heap_t;

typedef struct {
  int64_t *a;
  int64_t head, len, cap; /* items a[head..len): top = head, bottom = len-1 */
} deque_t;

typedef struct {
  /* the graph */
  int64_t n;
  const int64_t *w, *off, *adj;
  const int8_t *etype; /* GL_EDGE_*: continuation, creation, other (sync, dependence) */
  const int8_t *flags; /* GL_FLAG_TASK_FIRST: first node of a created task; GL_FLAG_SPAWN: a fork creating one */
  int64_t *indeg;
  /* the machine */
  int32_t P, work_first;
  int64_t steal_ns, defer_ns, lock_ns, deque_cap;
  /* state */
  heap_t heap;
  deque_t *dq;
  int64_t *running, *lock_free;
  int32_t *idle, n_idle;
  int8_t *throttled; /* per core: its running fork's child runs at once */
  int32_t *nonempty, *where, n_nonempty;
  uint64_t rng;
  int64_t done, makespan, steals, overhead;
} sim_t;

static int later(const event_t *x, const event_t *y) {
  return x->t > y->t || (x->t == y->t && x->seq > y->seq);
}

static int heap_push(heap_t *h, int64_t t, int32_t core, int32_t kind) {
  if (h->n == h->cap) {
    int64_t cap = h->cap ? 2 * h->cap : 64;
    event_t *a = realloc(h->a, (size_t)cap * sizeof *a);
    if (!a) return -1;
    h->a = a;
    h->cap = cap;
  }
  event_t e = {t, h->seq++, core, kind};
  int64_t i = h->n++;
  while (i > 0 && later(&h->a[(i - 1) / 2], &e)) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = e;
  return 0;
}

static event_t heap_pop(heap_t *h) {
  event_t top = h->a[0], last = h->a[--h->n];
  int64_t i = 0;
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && later(&h->a[c], &h->a[c + 1])) c++;
    if (!later(&last, &h->a[c])) break;
    h->a[i] = h->a[c];
    i = c;
  }
  if (h->n) h->a[i] = last;
  return top;
}

static void mark_nonempty(sim_t *s, int32_t c, int on) {
  if (on && s->where[c] < 0) {
    s->where[c] = s->n_nonempty;
    s->nonempty[s->n_nonempty++] = c;
  } else if (!on && s->where[c] >= 0) {
    int32_t last = s->nonempty[--s->n_nonempty];
    s->nonempty[s->where[c]] = last;
    s->where[last] = s->where[c];
    s->where[c] = -1;
  }
}

static int dq_push(sim_t *s, int32_t c, int64_t v, int64_t t) {
  deque_t *d = &s->dq[c];
  if (d->len == d->cap) {
    if (d->head > 0) { /* slide down before growing */
      memmove(d->a, d->a + d->head, (size_t)(d->len - d->head) * sizeof *d->a);
      d->len -= d->head;
      d->head = 0;
    }
    if (d->len == d->cap) {
      int64_t cap = d->cap ? 2 * d->cap : 16;
      int64_t *a = realloc(d->a, (size_t)cap * sizeof *a);
      if (!a) return -1;
      d->a = a;
      d->cap = cap;
    }
  }
  d->a[d->len++] = v;
  mark_nonempty(s, c, 1);
  if (s->n_idle > 0) /* wake one idle core: it tries to steal now */
    return heap_push(&s->heap, t, s->idle[--s->n_idle], 1);
  return 0;
}

static int64_t dq_take(sim_t *s, int32_t c, int top) {
  deque_t *d = &s->dq[c];
  if (d->head == d->len) return -1;
  int64_t v = top ? d->a[d->head++] : d->a[--d->len];
  if (d->head == d->len) {
    d->head = d->len = 0;
    mark_nonempty(s, c, 0);
  }
  return v;
}

static uint64_t next_random(sim_t *s) {
  uint64_t x = s->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return s->rng = x;
}

/* Core c starts node v at time t (a node it took itself, or stole); a
 * fork creating a task first takes c's deque lock, then pays the deferral. */
static int start(sim_t *s, int32_t c, int64_t v, int64_t t) {
  int64_t at = t;
  s->throttled[c] = (s->flags[v] & GL_FLAG_SPAWN) && s->deque_cap > 0 &&
                    s->dq[c].len - s->dq[c].head >= s->deque_cap;
  if (s->P > 1 && (s->flags[v] & GL_FLAG_SPAWN) && !s->throttled[c]) {
    if (s->lock_free[c] > at) at = s->lock_free[c];
    s->lock_free[c] = at + s->lock_ns;
    at += s->defer_ns;
  }
  s->overhead += at - t;
  s->running[c] = v;
  return heap_push(&s->heap, at + s->w[v], c, 0);
}

/* Core c has nothing of its own at time t: its deque's bottom, else a
 * steal, else it goes idle. */
static int find_work(sim_t *s, int32_t c, int64_t t) {
  int64_t v = dq_take(s, c, 0);
  if (v >= 0) return start(s, c, v, t);
  if (s->n_nonempty == 0) {
    s->running[c] = -1;
    s->idle[s->n_idle++] = c;
    return 0;
  }
  int32_t victim = s->nonempty[next_random(s) % (uint64_t)s->n_nonempty];
  v = dq_take(s, victim, 1);
  int64_t at = t > s->lock_free[victim] ? t : s->lock_free[victim];
  s->lock_free[victim] = at + s->lock_ns;
  s->steals++;
  s->overhead += at + s->steal_ns - t;
  return start(s, c, v, at + s->steal_ns);
}

/* Core c finished node v at time t: release its successors, pick the next. */
static int finish(sim_t *s, int32_t c, int64_t v, int64_t t) {
  int64_t best = -1;
  int rank = 99; /* lower is preferred */
  s->done++;
  if (t > s->makespan) s->makespan = t;
  for (int64_t e = s->off[v]; e < s->off[v + 1]; e++) {
    int64_t d = s->adj[e];
    if (--s->indeg[d] != 0) continue;
    /* help-first: continuation, join, child; work-first: child, join, continuation */
    int r = s->etype[e] == GL_EDGE_OTHER                           ? 1
            : (s->etype[e] == GL_EDGE_CREATION) == !!s->work_first ? 0
                                                                   : 2;
    if (s->etype[e] == GL_EDGE_CREATION && s->throttled[c]) r = -1; /* the child runs now */
    if (r < rank) {
      if (best >= 0 && dq_push(s, c, best, t)) return -1;
      best = d;
      rank = r;
    } else if (dq_push(s, c, d, t)) {
      return -1;
    }
  }
  if (best >= 0) return start(s, c, best, t);
  return find_work(s, c, t);
}

static int run(sim_t *s) {
  for (int64_t v = 0; v < s->n; v++) /* the sources, in id order, on core 0 */
    if (s->indeg[v] == 0 && dq_push(s, 0, v, 0)) return -1;
  for (int32_t c = s->P - 1; c >= 1; c--) s->idle[s->n_idle++] = c;
  if (find_work(s, 0, 0)) return -1;
  while (s->heap.n > 0) {
    event_t e = heap_pop(&s->heap);
    int rc = 0;
    if (e.kind == 0)
      rc = finish(s, e.core, s->running[e.core], e.t);
    else if (s->running[e.core] < 0)
      rc = find_work(s, e.core, e.t);
    if (rc) return -1;
  }
  return s->done == s->n ? 0 : -3;
}

static void release(sim_t *s) {
  if (s->dq)
    for (int32_t c = 0; c < s->P; c++) free(s->dq[c].a);
  free(s->dq);
  free(s->heap.a);
  free(s->running);
  free(s->lock_free);
  free(s->idle);
  free(s->nonempty);
  free(s->where);
  free(s->throttled);
}

/* n nodes of weight w >= 0; out-edges of v: adj[off[v]..off[v+1]) with
 * their types; flags per node (1: a created task's first node, 2: a fork
 * creating one); indeg: in-degrees (overwritten). costs, flags, edge codes
 * and stats as replay.def lists them (costs = {steal_ns, defer_ns, lock_ns,
 * deque_cap}; stats = {makespan, steals, overhead ns}).
 * Returns 0; -1 out of memory; -2 bad arguments; -3 a cycle (nodes left). */
int gl_replay(int64_t n, const int64_t *w, const int64_t *off, const int64_t *adj,
              const int8_t *etype, const int8_t *flags, int64_t *indeg, int32_t P,
              int32_t work_first, const int64_t *costs, int64_t *stats) {
  if (n < 0 || P < 1) return -2;
  for (int64_t e = 0; e < off[n]; e++)
    if (adj[e] < 0 || adj[e] >= n) return -2;
  sim_t s;
  memset(&s, 0, sizeof s);
  s.n = n;
  s.w = w;
  s.off = off;
  s.adj = adj;
  s.etype = etype;
  s.flags = flags;
  s.indeg = indeg;
  s.P = P;
  s.work_first = work_first;
  s.steal_ns = costs[GL_COST_steal_ns];
  s.defer_ns = costs[GL_COST_defer_ns];
  s.lock_ns = costs[GL_COST_lock_ns];
  s.deque_cap = costs[GL_COST_deque_cap];
  s.rng = 0x9E3779B97F4A7C15ull;
  s.dq = calloc((size_t)P, sizeof *s.dq);
  s.running = malloc((size_t)P * sizeof *s.running);
  s.lock_free = calloc((size_t)P, sizeof *s.lock_free);
  s.idle = malloc((size_t)P * sizeof *s.idle);
  s.nonempty = malloc((size_t)P * sizeof *s.nonempty);
  s.where = malloc((size_t)P * sizeof *s.where);
  s.throttled = calloc((size_t)P, 1);
  int rc = -1;
  if (s.dq && s.running && s.lock_free && s.idle && s.nonempty && s.where && s.throttled) {
    for (int32_t c = 0; c < P; c++) {
      s.running[c] = -1;
      s.where[c] = -1;
    }
    rc = run(&s);
  }
  stats[GL_STAT_makespan] = s.makespan;
  stats[GL_STAT_steals] = s.steals;
  stats[GL_STAT_overhead] = s.overhead;
  release(&s);
  return rc;
}

/* The conventions this build was compiled with, for the tests to check
 * against replay.def as Python reads it: out[0..3) = the number of costs,
 * flags' OR, the number of stats; then the cost indices of steal, defer,
 * lock, deque_cap; the TASK_FIRST and SPAWN bits; the CONTINUATION,
 * CREATION and OTHER codes; the makespan, steals, overhead indices (15). */
void gl_replay_abi(int64_t *out) {
  int64_t v[] = {GL_COST_N, GL_FLAG_TASK_FIRST | GL_FLAG_SPAWN, GL_STAT_N,
                 GL_COST_steal_ns, GL_COST_defer_ns, GL_COST_lock_ns, GL_COST_deque_cap,
                 GL_FLAG_TASK_FIRST, GL_FLAG_SPAWN,
                 GL_EDGE_CONTINUATION, GL_EDGE_CREATION, GL_EDGE_OTHER,
                 GL_STAT_makespan, GL_STAT_steals, GL_STAT_overhead};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) out[i] = v[i];
}
