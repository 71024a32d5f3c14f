/* task_tree.c — walks up the explicit tasks' parent pointers, compiled.
 *
 * `grainlab info` and trace validation ask two things of the task forest
 * (up[i]: the position of task i's explicit parent, -1 for none): does
 * following `up` ever loop (validate.py, _has_cycle), and how deep is the
 * deepest task whose chain ends at a rooted task (facts.py,
 * explicit_depth). Their numpy twins jump pointers: ceil(log2 n) + 1 passes,
 * each a gather over the tasks still below a root (0.7 and 1.5 s at 11.4M
 * tasks). Here each task is visited once: a walk up from it stops at the
 * first task already known, and the tasks on the way get their depths on the
 * way back down. Loaded through ctypes; tests/test_native_task_tree.py proves
 * both equal to their twins on random forests, with and without cycles. */
#include <stddef.h>
#include <stdint.h>

enum { UNSEEN = 0, ON_PATH = 1, DONE = 2 };

/* n tasks, up[i] in [-1, n), rooted[i] (may be NULL: every top rooted): a
 * task without an explicit parent (up < 0) starts a chain at depth 1 when
 * rooted, else its whole chain counts for nothing. Scratch: state (n bytes),
 * depth and path (n entries of up's type: 9 bytes a task while ids fit
 * int32). Out: *max_depth, the deepest counted task's depth (0: none).
 * Returns 0; 1 when following up loops (then *max_depth is not set);
 * -2 when a parent position is out of range. */
#define FOREST_DEPTH(NAME, T, NOTHING)                                            \
  static int NAME(int64_t n, const T *up, const uint8_t *rooted, uint8_t *state,    \
                  T *depth, T *path, int64_t *max_depth) {                        \
    int64_t best = 0;                                                             \
    for (int64_t i = 0; i < n; i++) state[i] = UNSEEN;                            \
    for (int64_t i = 0; i < n; i++) {                                             \
      if (state[i] == DONE) continue;                                             \
      int64_t len = 0, v = i;                                                     \
      T base;                                                                     \
      for (;;) { /* up until a task already known, or the top of the chain */     \
        if (state[v] == ON_PATH) return 1;                                        \
        if (state[v] == DONE) { base = depth[v]; break; }                         \
        state[v] = ON_PATH;                                                       \
        path[len++] = (T)v;                                                       \
        int64_t p = (int64_t)up[v];                                               \
        if (p >= n || p < -1) return -2;                                          \
        if (p < 0) { /* the top: depth 1 when rooted, else nothing counts */      \
          base = (rooted == NULL || rooted[v]) ? 0 : (NOTHING);                   \
          break;                                                                  \
        }                                                                         \
        v = p;                                                                    \
      }                                                                           \
      for (int64_t k = len - 1; k >= 0; k--) { /* down: one deeper than above */  \
        base = base < 0 ? base : base + 1;                                        \
        depth[path[k]] = base;                                                    \
        state[path[k]] = DONE;                                                    \
        if (base > best) best = base;                                             \
      }                                                                           \
    }                                                                             \
    *max_depth = best;                                                            \
    return 0;                                                                     \
  }

FOREST_DEPTH(forest_depth32, int32_t, INT32_MIN / 2)
FOREST_DEPTH(forest_depth64, int64_t, INT64_MIN / 2)

/* wide 0: up, depth and path are int32; else int64. */
int gl_forest_depth(int64_t n, const void *up, int wide, const uint8_t *rooted,
                    uint8_t *state, void *depth, void *path, int64_t *max_depth) {
  return wide ? forest_depth64(n, up, rooted, state, depth, path, max_depth)
              : forest_depth32(n, up, rooted, state, depth, path, max_depth);
}

/* Every node takes the value of the top of its chain (columns.py, inherit:
 * value[x] = value[up[x]] transitively; a node without a parent keeps its
 * own). Each node is visited once, as above, instead of the twin's
 * O(log depth) pointer-jumping passes. n nodes, up int32 (wide 0) or int64,
 * value/out int64; scratch state (n bytes) and path (n entries of up's type).
 * Returns 0; 1 when following up loops; -2 when a parent is out of range. */
#define FOREST_INHERIT(NAME, T)                                                   \
  static int NAME(int64_t n, const T *up, const int64_t *value, int64_t *out,     \
                  uint8_t *state, T *path) {                                      \
    for (int64_t i = 0; i < n; i++) state[i] = UNSEEN;                            \
    for (int64_t i = 0; i < n; i++) {                                             \
      if (state[i] == DONE) continue;                                             \
      int64_t len = 0, v = i, base;                                               \
      for (;;) {                                                                  \
        if (state[v] == ON_PATH) return 1;                                        \
        if (state[v] == DONE) { base = out[v]; break; }                           \
        int64_t p = (int64_t)up[v];                                               \
        if (p >= n || p < -1) return -2;                                          \
        if (p < 0) { base = value[v]; out[v] = base; state[v] = DONE; break; }   \
        state[v] = ON_PATH;                                                       \
        path[len++] = (T)v;                                                       \
        v = p;                                                                    \
      }                                                                           \
      for (int64_t k = len - 1; k >= 0; k--) {                                    \
        out[path[k]] = base;                                                      \
        state[path[k]] = DONE;                                                    \
      }                                                                           \
    }                                                                             \
    return 0;                                                                     \
  }

FOREST_INHERIT(forest_inherit32, int32_t)
FOREST_INHERIT(forest_inherit64, int64_t)

int gl_forest_inherit(int64_t n, const void *up, int wide, const int64_t *value, int64_t *out,
                      uint8_t *state, void *path) {
  return wide ? forest_inherit64(n, up, value, out, state, path)
              : forest_inherit32(n, up, value, out, state, path);
}
