/* pages.h — the NUMA node of an annotated data block's pages
 * (GRAINLAB_PAGES=1), for DATA_ACCESS rows (docs/trace-format.md). */
#ifndef GRAINLAB_PAGES_H
#define GRAINLAB_PAGES_H
#include <stdint.h>

#define GL_PAGE_CACHE 1024 /* entries of a thread's page -> node cache (8 KiB) */
#define GL_PAGE_SAMPLES 8  /* pages of a block asked about, at most */

extern int gl_pages_enabled; /* GRAINLAB_PAGES set (not 0) */

/* Read GRAINLAB_PAGES and the page size (once, in ompt_start_tool). */
void gl_pages_configure(void);
/* A thread's cache (gl_thread_create; NULL when pages are not asked for). */
uint64_t *gl_pages_cache_new(void);
/* 1 + the NUMA node holding most of the block's sampled pages (up to
 * GL_PAGE_SAMPLES, spread evenly from its first to its last page), or 0 when
 * none is resident yet (or move_pages failed). Pages already answered are
 * taken from `cache` (direct-mapped by page number; an entry is the page's
 * address | (node + 1)): at most one move_pages(2) system call per block,
 * none once its sampled pages are known. No allocation, no lock. */
uint64_t gl_pages_node(uint64_t *cache, uint64_t base, uint64_t bytes);
#endif
