/* meta.h — run context for the trace's file metadata (docs/trace-format.md).
 * Everything here runs at start-up or at the end, never on the hot path.
 * Every function returns a malloc'ed NUL-terminated string (caller frees),
 * never NULL: on failure the JSON says what is missing rather than aborting. */
#ifndef GRAINLAB_META_H
#define GRAINLAB_META_H

/* JSON array of the process's argv (from /proc/self/cmdline). */
char *gl_meta_command_json(void);
/* JSON object for grainlab.topology: cpus, cores, packages, NUMA nodes and
 * distance table (/sys/devices/system/node), caches (/sys/devices/system/cpu/cpu0/cache). */
char *gl_meta_topology_json(void);
/* JSON array for grainlab.loadmap (dl_iterate_phdr: path, base, executable
 * segment ranges). Safe to call from the finalize path; avoid from a
 * signal handler only if it could deadlock (dl lock held by the crashing thread). */
char *gl_meta_loadmap_json(void);
#endif
