/* exec_chain [TASKS [IMAGES [CALL [THEN]]]] — one run across exec(): creates
 * TASKS tasks (parallel + single, a taskwait), then, while IMAGES > 1,
 * replaces itself (/proc/self/exe) by `exec_chain TASKS IMAGES-1 CALL THEN`
 * with the exec call CALL: execv (default), execve, execvp, execl, execlp or
 * execle. The last image then execs THEN (a program run without arguments),
 * if given: e.g. one that runs no OpenMP.
 *
 * One recorded run holds every image's tasks: tasks = TASKS x IMAGES, and
 * IMAGES command lines. Each image prints `exec_chain image <k>: <TASKS>
 * tasks ran` (k counts down to 1). Defaults TASKS = 2000, IMAGES = 2. */
#include <string.h>
#include <unistd.h>
#include "common.h"

extern char **environ;
static const char *usage =
    "exec_chain [TASKS [IMAGES [execv|execve|execvp|execl|execlp|execle [THEN]]]]";

int main(int argc, char **argv) {
  long tasks = arg_long(argc, argv, 1, 2000, 0, 10000000, usage);
  long images = arg_long(argc, argv, 2, 2, 1, 100, usage);
  const char *call = argc > 3 ? argv[3] : "execv";
  const char *calls[] = {"execv", "execve", "execvp", "execl", "execlp", "execle"};
  int known = 0;
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) known |= strcmp(call, calls[i]) == 0;
  if (!known) {
    fprintf(stderr, "%s: bad exec call '%s'\nusage: %s\n", argv[0], call, usage);
    return 2;
  }
  long ran = 0;
#pragma omp parallel
#pragma omp single
  {
    for (long i = 0; i < tasks; i++) {
#pragma omp task shared(ran)
      {
        tiny_work((unsigned long)i, 8);
#pragma omp atomic
        ran++;
      }
    }
#pragma omp taskwait
  }
  printf("exec_chain image %ld: %ld tasks ran\n", images, ran);
  fflush(stdout);
  if (ran != tasks) return 1;
  const char *then = argc > 4 ? argv[4] : 0;
  if (images <= 1) {
    if (!then) return 0;
    char *last[] = {(char *)then, 0};
    execv(then, last);
    perror("exec_chain: exec");
    return 1;
  }
  char n[32], k[32];
  snprintf(n, sizeof n, "%ld", tasks);
  snprintf(k, sizeof k, "%ld", images - 1);
  char *args[] = {argv[0], n, k, (char *)call, (char *)then, 0};
  const char *self = "/proc/self/exe";
  if (!strcmp(call, "execv")) execv(self, args);
  else if (!strcmp(call, "execve")) execve(self, args, environ);
  else if (!strcmp(call, "execvp")) execvp(self, args);
  else if (!strcmp(call, "execl")) execl(self, argv[0], n, k, call, then, (char *)0);
  else if (!strcmp(call, "execlp")) execlp(self, argv[0], n, k, call, then, (char *)0);
  else if (then) execle(self, argv[0], n, k, call, then, (char *)0, environ);
  else execle(self, argv[0], n, k, call, (char *)0, environ); /* envp right after the NULL */
  perror("exec_chain: exec");
  return 1;
}
