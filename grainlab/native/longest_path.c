/* longest_path.c — the critical path's one sequential step, compiled.
 *
 * The longest node-weighted path of a DAG is a dynamic programme over a
 * topological order: a node finishes at its own weight after the latest of
 * its predecessors. numpy has no loop for that, so grainlab.graph.
 * critical_path falls back to a shortest-path trick (scipy's Dijkstra,
 * O(E log V)) when this library is not built; this is O(V + E) and loads
 * through ctypes (no Python API: any CPython, no rebuild per version). */
#include <stdint.h>
#include <stdlib.h>

/* n nodes (weights w >= 0), m edges src[i] -> dst[i], `order` every node
 * once, each edge's source before its destination (the caller checks).
 * Out: finish[v] = the longest path ending at v, v included; pred[v] = its
 * predecessor on that path (the first in `order` among equals), -1 at a
 * path's start. Returns 0; -1 when out of memory; -2 when a node id is out
 * of range (nothing is written out of bounds).
 * Two entry points, one body: gl_dag_longest_path takes int64 edge ends,
 * gl_dag_longest_path32 int32 ones, the graph's own ids while they fit
 * (docs/graph-model.md "Ids"): no int64 copy of both edge columns, and
 * the out-edge list at 4 bytes an edge. */
#define GL_LONGEST_PATH(NAME, ID)                                                   \
  int NAME(int64_t n, int64_t m, const int64_t *order, const int64_t *w,            \
           const ID *src, const ID *dst, int64_t *finish, int64_t *pred) {          \
    for (int64_t i = 0; i < m; i++)                                                 \
      if (src[i] < 0 || src[i] >= n || dst[i] < 0 || dst[i] >= n) return -2;        \
    for (int64_t k = 0; k < n; k++)                                                 \
      if (order[k] < 0 || order[k] >= n) return -2;                                 \
    int64_t *start = calloc((size_t)n + 1, sizeof *start);                          \
    ID *next = malloc((size_t)(m ? m : 1) * sizeof *next);                          \
    if (!start || !next) {                                                          \
      free(start);                                                                  \
      free(next);                                                                   \
      return -1;                                                                    \
    }                                                                               \
    /* out-edges grouped by source: a counting sort */                              \
    for (int64_t i = 0; i < m; i++) start[src[i] + 1]++;                            \
    for (int64_t v = 0; v < n; v++) start[v + 1] += start[v];                       \
    for (int64_t i = 0; i < m; i++) next[start[src[i]]++] = dst[i];                 \
    for (int64_t v = n; v > 0; v--) start[v] = start[v - 1];                        \
    start[0] = 0;                                                                   \
    /* finish[] holds the best predecessor's finish until the node is reached */    \
    for (int64_t v = 0; v < n; v++) {                                               \
      finish[v] = 0;                                                                \
      pred[v] = -1;                                                                 \
    }                                                                               \
    for (int64_t k = 0; k < n; k++) {                                               \
      int64_t v = order[k];                                                         \
      int64_t f = finish[v] + w[v];                                                 \
      finish[v] = f;                                                                \
      for (int64_t e = start[v]; e < start[v + 1]; e++) {                           \
        int64_t d = next[e];                                                        \
        if (pred[d] < 0 || f > finish[d]) {                                         \
          finish[d] = f;                                                            \
          pred[d] = v;                                                              \
        }                                                                           \
      }                                                                             \
    }                                                                               \
    free(start);                                                                    \
    free(next);                                                                     \
    return 0;                                                                       \
  }

GL_LONGEST_PATH(gl_dag_longest_path, int64_t)
GL_LONGEST_PATH(gl_dag_longest_path32, int32_t)
