/* meta_dump.c — prints the three run-context JSON values of meta.c, one per
 * line (command, topology, loadmap), for tests/test_meta.py to compare with
 * /proc and /sys. Arguments are echoed into the command JSON. */
#include <stdio.h>
#include <stdlib.h>
#include "meta.h"

int main(void) {
  char *(*const getters[])(void) = {gl_meta_command_json, gl_meta_topology_json,
                                     gl_meta_loadmap_json};
  for (int i = 0; i < 3; i++) {
    char *s = getters[i]();
    if (!s) return 1;
    puts(s);
    free(s);
  }
  return 0;
}
