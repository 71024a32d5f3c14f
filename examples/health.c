/* health [LEVELS [STEPS [CUTOFF [BRANCH]]]] — a multi-level health system
 * simulation in the manner of BOTS health: a tree of villages LEVELS deep,
 * BRANCH children each, every village with lists of patients (waiting, in
 * treatment) held as linked lists. Each time step simulates a village's
 * children first (a task per child while the village's depth < CUTOFF), waits
 * for them, takes in the patients they refer upwards, then runs its own
 * hospital: new arrivals, treatment, discharge or referral to its parent.
 * Every village draws from its own random stream, so the result does not
 * depend on the schedule and is compared with a sequential run.
 *
 * Villages at depth d (root: 0) number BRANCH^d. Tasks = STEPS x sum of
 * BRANCH^d for d = 1 .. min(CUTOFF, LEVELS - 1). Prints `health(LEVELS,
 * STEPS, CUTOFF, BRANCH): <treated> treated, checksum <sum> verified`.
 * Defaults 4 20 (CUTOFF = LEVELS) 4. */
#include "common.h"

static const char *usage = "health [LEVELS [STEPS [CUTOFF [BRANCH]]]]";

typedef struct patient {
  unsigned long id;
  int time; /* steps in treatment */
  struct patient *next;
} patient;

typedef struct village {
  struct village **child;
  int nchild;
  unsigned long rng, next_id, treated, checksum;
  patient *waiting, *treating, *up; /* up: referred to the parent this step */
} village;

static int branch;

static village *build(int level, int levels, unsigned long seed) {
  village *v = calloc(1, sizeof *v);
  v->rng = seed * 0x9E3779B97F4A7C15ul + 1;
  v->next_id = seed << 20;
  if (level + 1 < levels) {
    v->nchild = branch;
    v->child = calloc((size_t)branch, sizeof *v->child);
    for (int c = 0; c < branch; c++) v->child[c] = build(level + 1, levels, seed * 31 + c + 1);
  }
  return v;
}

static unsigned long draw(village *v) {
  v->rng ^= v->rng << 13, v->rng ^= v->rng >> 7, v->rng ^= v->rng << 17;
  return v->rng;
}

static void append(patient **list, patient *p) {
  while (*list) list = &(*list)->next;
  p->next = 0;
  *list = p;
}

/* The village's own step, after its children's: referrals in, arrivals,
 * treatment. Touches only this village and its children's `up` lists. */
static void local_step(village *v, int has_parent) {
  for (int c = 0; c < v->nchild; c++) {
    patient *p = v->child[c]->up;
    v->child[c]->up = 0;
    while (p) {
      patient *next = p->next;
      append(&v->waiting, p);
      p = next;
    }
  }
  if (draw(v) % 10 < 4) {
    patient *p = calloc(1, sizeof *p);
    p->id = ++v->next_id;
    append(&v->waiting, p);
  }
  for (int k = 0; k < 2 && v->waiting; k++) { /* two beds free per step */
    patient *p = v->waiting;
    v->waiting = p->next;
    p->time = 0;
    append(&v->treating, p);
  }
  patient **at = &v->treating;
  while (*at) {
    patient *p = *at;
    p->time++;
    tiny_work(p->id, 16);
    if (p->time >= 3) {
      *at = p->next;
      if (has_parent && draw(v) % 4 == 0) {
        append(&v->up, p);
      } else {
        v->treated++;
        v->checksum += p->id * (unsigned long)p->time;
        free(p);
      }
    } else {
      at = &p->next;
    }
  }
}

static void step_parallel(village *v, int depth, int cutoff, int has_parent) {
  for (int c = 0; c < v->nchild; c++) {
    village *ch = v->child[c];
    if (depth < cutoff) {
#pragma omp task UNTIED firstprivate(ch)
      step_parallel(ch, depth + 1, cutoff, 1);
    } else {
      step_parallel(ch, depth + 1, cutoff, 1);
    }
  }
#pragma omp taskwait
  local_step(v, has_parent);
}

static void step_sequential(village *v, int has_parent) {
  for (int c = 0; c < v->nchild; c++) step_sequential(v->child[c], 1);
  local_step(v, has_parent);
}

static void totals(const village *v, unsigned long *treated, unsigned long *sum) {
  *treated += v->treated;
  *sum += v->checksum;
  for (int c = 0; c < v->nchild; c++) totals(v->child[c], treated, sum);
}

int main(int argc, char **argv) {
  int levels = (int)arg_long(argc, argv, 1, 4, 1, 12, usage);
  int steps = (int)arg_long(argc, argv, 2, 20, 1, 100000, usage);
  int cutoff = (int)arg_long(argc, argv, 3, levels, 0, 100, usage);
  branch = (int)arg_long(argc, argv, 4, 4, 1, 64, usage);
  village *a = build(0, levels, 1), *b = build(0, levels, 1);
#pragma omp parallel
#pragma omp single
  for (int s = 0; s < steps; s++) step_parallel(a, 0, cutoff, 0);
  for (int s = 0; s < steps; s++) step_sequential(b, 0);
  unsigned long ta = 0, sa = 0, tb = 0, sb = 0;
  totals(a, &ta, &sa);
  totals(b, &tb, &sb);
  if (ta != tb || sa != sb) {
    fprintf(stderr, "health: %lu treated (checksum %lu), sequential %lu (%lu)\n", ta, sa, tb, sb);
    return 1;
  }
  printf("health(%d, %d, %d, %d): %lu treated, checksum %lu verified\n", levels, steps, cutoff,
         branch, ta, sa);
  return 0;
}
