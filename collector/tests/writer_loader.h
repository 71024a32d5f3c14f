/* writer_loader.h — dlopen the writer shim the way the collector does, for the
 * native test programs. */
#ifndef GL_WRITER_LOADER_H
#define GL_WRITER_LOADER_H
#include "grainlab_event.h"

typedef struct gl_writer_api {
  gl_writer_open_fn open;
  gl_writer_write_fn write;
  gl_writer_close_fn close;
  double dlopen_ms; /* wall time of dlopen + dlsym */
} gl_writer_api;

/* Load `lib_path`, or (NULL) ../lib/libgrainwriter.so next to this executable.
 * Returns 0, or -1 after printing one line on stderr. */
int gl_load_writer(const char *lib_path, gl_writer_api *api);
#endif
