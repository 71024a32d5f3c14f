/* graincollect.h — annotate what a grain (task or loop chunk) touches, for
 * grainlab's data-locality analyses (`grainlab krd`, NUMA locality; see
 * docs/locality.md).
 *
 *   #include "graincollect.h"
 *   #pragma omp task
 *   {
 *     grain_data(a, n * sizeof *a, GRAIN_IN);
 *     grain_data(c, n * sizeof *c, GRAIN_INOUT);
 *     ...
 *   }
 *
 * Call it inside the task or chunk, once per input/output block: base address,
 * size in bytes, mode. It is the standard OpenMP 5 `omp_control_tool()`
 * with a tool-specific command (>= 64), so an annotated program needs no
 * library but the OpenMP runtime, and runs unchanged without a tool: libomp
 * then returns omp_control_tool_notool at once (a few ns: benchmarks/
 * krd_scale.py measures it). With grainlab's collector loaded, each call is
 * one DATA_ACCESS row of the trace (docs/trace-format.md): the current task,
 * base, bytes, mode, time, CPU, and the call's code address (its source line).
 *
 * grain_data is a macro so that the code address is the annotation's own line
 * (an inline function's would symbolize to this header). C only (it uses a
 * compound literal); C++ callers use grain_data_call(). Compiled with
 * -DGRAIN_DATA_DISABLE, grain_data() is nothing at all (its arguments are
 * not evaluated). */
#ifndef GRAINCOLLECT_H
#define GRAINCOLLECT_H
#include <stddef.h>
#include <omp.h>

/* Modes: what the grain does with the block. */
#define GRAIN_IN 1
#define GRAIN_OUT 2
#define GRAIN_INOUT 3

/* The omp_control_tool command grainlab's collector takes as a data
 * annotation (tool-specific commands are >= 64); `modifier` is the mode,
 * `arg` points to a grain_data_arg. */
#define GRAIN_CONTROL_DATA 0x4744

typedef struct grain_data_arg {
  const void *base;
  size_t bytes;
} grain_data_arg;

#if defined(GRAIN_DATA_DISABLE)
#define grain_data(base, bytes, mode) ((void)0)
#elif defined(__cplusplus)
static inline int grain_data_call(const void *base, size_t bytes, int mode) {
  grain_data_arg a = {base, bytes};
  return omp_control_tool(GRAIN_CONTROL_DATA, mode, &a);
}
#define grain_data(base, bytes, mode) ((void)grain_data_call((base), (bytes), (mode)))
#else
#define grain_data(base, bytes, mode)                                              \
  ((void)omp_control_tool(GRAIN_CONTROL_DATA, (mode),                              \
                          &(grain_data_arg){(const void *)(base), (size_t)(bytes)}))
#endif
#endif
