/* pages.c — NUMA node of data blocks' pages by move_pages(2) with no target
 * nodes (a query: nothing moves), the raw system call (no libnuma). */
#include "pages.h"
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int gl_pages_enabled;
static uint64_t page_size = 4096;
static int page_shift = 12;

void gl_pages_configure(void) {
  const char *s = getenv("GRAINLAB_PAGES");
  gl_pages_enabled = s && *s && strcmp(s, "0") != 0;
  long p = sysconf(_SC_PAGESIZE);
  if (p > 0 && (p & (p - 1)) == 0) {
    page_size = (uint64_t)p;
    page_shift = __builtin_ctzll(page_size);
  }
}

uint64_t *gl_pages_cache_new(void) {
  if (!gl_pages_enabled) return 0;
  return calloc(GL_PAGE_CACHE, sizeof(uint64_t));
}

/* The sampled pages' addresses: up to GL_PAGE_SAMPLES, first to last. */
static int sample_pages(uint64_t base, uint64_t bytes, uint64_t *page) {
  uint64_t first = base >> page_shift;
  uint64_t last = (base + (bytes ? bytes - 1 : 0)) >> page_shift;
  uint64_t span = last - first + 1;
  int n = span < GL_PAGE_SAMPLES ? (int)span : GL_PAGE_SAMPLES;
  for (int k = 0; k < n; k++) {
    uint64_t at = n > 1 ? first + (span - 1) * (uint64_t)k / (uint64_t)(n - 1) : first;
    page[k] = at << page_shift;
  }
  return n;
}

uint64_t gl_pages_node(uint64_t *cache, uint64_t base, uint64_t bytes) {
  if (!cache || !base) return 0;
  uint64_t page[GL_PAGE_SAMPLES], node[GL_PAGE_SAMPLES];
  void *ask[GL_PAGE_SAMPLES];
  int where[GL_PAGE_SAMPLES], status[GL_PAGE_SAMPLES];
  int n = sample_pages(base, bytes, page), nask = 0;
  for (int k = 0; k < n; k++) {
    uint64_t e = cache[(page[k] >> page_shift) % GL_PAGE_CACHE];
    node[k] = (e & ~(page_size - 1)) == page[k] ? (e & (page_size - 1)) : 0;
    if (!node[k]) where[nask] = k, ask[nask++] = (void *)(uintptr_t)page[k];
  }
  if (nask && syscall(SYS_move_pages, 0, (unsigned long)nask, ask, (const int *)0, status, 0) == 0) {
    for (int j = 0; j < nask; j++) {
      if (status[j] < 0 || (uint64_t)status[j] + 1 >= page_size) continue; /* not resident */
      int k = where[j];
      node[k] = (uint64_t)status[j] + 1;
      cache[(page[k] >> page_shift) % GL_PAGE_CACHE] = page[k] | node[k];
    }
  }
  /* The majority (ties: the first page's side); n <= 8, so quadratic is fine. */
  uint64_t best = 0;
  int best_votes = 0;
  for (int k = 0; k < n; k++) {
    int votes = 0;
    for (int j = 0; j < n; j++) votes += node[j] && node[j] == node[k];
    if (votes > best_votes) best = node[k], best_votes = votes;
  }
  return best;
}
