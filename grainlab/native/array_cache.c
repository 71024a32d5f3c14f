/* A caching allocator for numpy's array data (numpy's PyDataMem_Handler,
 * installed by grainlab/array_cache.py through ctypes).
 *
 * Why: the grain-graph build makes and frees hundreds of row-sized arrays
 * (10^7-10^8 elements). glibc gives every array over 32 MiB a fresh mmap and
 * unmaps it when freed, so each new array faults in every page again: at
 * 10^7 grains (45.6M events) 49 s of a 90 s build were kernel time, on VMs
 * where fresh memory costs ~2 us per 4 KiB page. Here the mappings numpy
 * frees are kept as page ranges (any mapping can be split or unmapped in
 * part) and the next large arrays are carved from them, best fit, so they
 * are already faulted in. The cache never holds more than the most the
 * arrays ever held at once less what they hold now: it adds nothing to the
 * peak. A new mapping that no cached range could hold unmaps as many cached
 * bytes (least recently freed first). fib 33: build 72 -> 58 s.
 *
 * Layout: every block has a 64-byte header before the data the caller sees
 * (so free and realloc never depend on the size numpy passes back), which
 * says whether it came from malloc (small) or is a mapping (large), and the
 * mapping's length. Data are 64-byte aligned (numpy asks for 16), mappings
 * 2 MiB aligned (transparent huge pages).
 *
 * The cache is an array of (pointer, length) ranges under one mutex: only
 * blocks of large_min bytes or more pass through it, a few thousand per build.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HEADER 64u
#define MAGIC_SMALL 0x676c736d616c6c31ull   /* "glsmall1" */
#define MAGIC_LARGE 0x676c6c6172676531ull   /* "gllarge1" */
#define GRANULE (2u << 20)                   /* mappings round up to 2 MiB */
#define SLOTS 256

typedef struct {
    uint64_t magic;
    uint64_t length;      /* the mapping's length (large) */
    uint64_t pad[6];
} header_t;

/* numpy's PyDataMem_Handler, version 1 (numpy/ndarraytypes.h) */
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} gl_allocator_t;

typedef struct {
    char name[127];
    uint8_t version;
    gl_allocator_t allocator;
} gl_handler_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *cached_ptr[SLOTS];
static size_t cached_len[SLOTS];
static uint64_t cached_age[SLOTS];
static uint64_t clock_ticks;
static size_t cached_bytes;
static size_t budget = SIZE_MAX;
static size_t live_bytes, peak_live;   /* large blocks held by arrays */
static int hugepage = 1;
static size_t large_min = 4u << 20;   /* blocks this large are mappings */
/* counters (gl_array_cache_stats) */
static uint64_t n_hits, n_maps, n_unmaps, bytes_reused;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void *small_alloc(size_t size, int zero) {
    header_t *h = zero ? calloc(1, HEADER + size) : malloc(HEADER + size);
    if (!h) return NULL;
    h->magic = MAGIC_SMALL;
    h->length = 0;
    return (char *)h + HEADER;
}

/* Cached ranges are page ranges of mappings numpy freed (any mapping can be
 * split or unmapped in parts). A request takes the smallest range that
 * holds it and leaves the rest cached, so freed memory serves arrays of any
 * smaller size, as a heap would, without a heap's fragmentation holding
 * memory: past the budget, the least recently freed ranges are unmapped. */
static void remove_at(int i) {
    cached_bytes -= cached_len[i];
    cached_ptr[i] = NULL;
}

static int free_slot(void) {
    for (int i = 0; i < SLOTS; i++)
        if (!cached_ptr[i]) return i;
    return -1;
}

/* Unmaps collected under the lock, made after it. */
typedef struct { void *ptr[SLOTS + 2]; size_t len[SLOTS + 2]; int n; } unmaps_t;

static void unmap_all(unmaps_t *u) {
    for (int i = 0; i < u->n; i++) munmap(u->ptr[i], u->len[i]);
    __atomic_add_fetch(&n_unmaps, (uint64_t)u->n, __ATOMIC_RELAXED);
}

/* The least recently freed ranges go (the last one in part: its tail) until
 * the cache holds at most `limit` bytes. Called with the lock held. */
static void shrink_to(size_t limit, unmaps_t *u) {
    while (cached_bytes > limit) {
        int oldest = -1;
        for (int i = 0; i < SLOTS; i++)
            if (cached_ptr[i] && (oldest < 0 || cached_age[i] < cached_age[oldest])) oldest = i;
        if (oldest < 0 || u->n >= SLOTS) return;
        size_t over = round_up(cached_bytes - limit, GRANULE);
        if (over < cached_len[oldest]) {        /* keep its head */
            cached_len[oldest] -= over;
            cached_bytes -= over;
            u->ptr[u->n] = (char *)cached_ptr[oldest] + cached_len[oldest];
            u->len[u->n++] = over;
        } else {
            u->ptr[u->n] = cached_ptr[oldest];
            u->len[u->n++] = cached_len[oldest];
            remove_at(oldest);
        }
    }
}

/* What the cache may hold: never so much that live blocks and cached ones
 * together exceed the most live blocks ever held (so the cache adds nothing
 * to the peak), nor more than the budget. Called with the lock held. */
static size_t cache_limit(void) {
    size_t room = peak_live > live_bytes ? peak_live - live_bytes : 0;
    return room < budget ? room : budget;
}

static void *take_cached(size_t need) {
    int best = -1;
    void *p = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (cached_ptr[i] && cached_len[i] >= need &&
            (best < 0 || cached_len[i] < cached_len[best]))
            best = i;
    if (best >= 0) {
        p = cached_ptr[best];
        if (cached_len[best] > need) {          /* the rest stays cached */
            cached_ptr[best] = (char *)p + need;
            cached_len[best] -= need;
            cached_bytes -= need;
        } else {
            remove_at(best);
        }
        n_hits++;
        bytes_reused += need;
        live_bytes += need;
    }
    pthread_mutex_unlock(&lock);
    return p;
}

static void *fresh_mapping(size_t need) {
    /* 2 MiB aligned, so transparent huge pages can back all of it */
    char *m = mmap(NULL, need + GRANULE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    char *aligned = (char *)round_up((uintptr_t)m, GRANULE);
    if (aligned > m) munmap(m, (size_t)(aligned - m));
    size_t tail = (size_t)(m + need + GRANULE - (aligned + need));
    if (tail) munmap(aligned + need, tail);
    if (hugepage) madvise(aligned, need, MADV_HUGEPAGE);
    __atomic_add_fetch(&n_maps, 1, __ATOMIC_RELAXED);
    return aligned;
}

static void *large_alloc(size_t size, int zero) {
    size_t need = round_up(HEADER + size, GRANULE);
    header_t *h = take_cached(need);
    if (h) {
        if (zero) memset((char *)h + HEADER, 0, size);
    } else {
        /* fresh mappings are zero: calloc costs nothing more */
        if (!(h = fresh_mapping(need))) return NULL;
        unmaps_t u = {.n = 0};
        pthread_mutex_lock(&lock);
        live_bytes += need;
        if (live_bytes > peak_live) peak_live = live_bytes;
        shrink_to(cache_limit(), &u);       /* no cached range fitted: as many bytes go */
        pthread_mutex_unlock(&lock);
        unmap_all(&u);
    }
    h->magic = MAGIC_LARGE;
    h->length = need;
    return (char *)h + HEADER;
}

/* Keep a freed mapping, joined to a cached neighbour range where they touch. */
static void release_large(header_t *h) {
    char *p = (char *)h;
    size_t length = h->length;
    unmaps_t u = {.n = 0};
    pthread_mutex_lock(&lock);
    live_bytes -= length;
    for (int i = 0; i < SLOTS; i++) {
        if (!cached_ptr[i]) continue;
        if ((char *)cached_ptr[i] + cached_len[i] == p) {       /* before it */
            p = cached_ptr[i];
            length += cached_len[i];
            remove_at(i);
        } else if (p + length == (char *)cached_ptr[i]) {       /* after it */
            length += cached_len[i];
            remove_at(i);
        }
    }
    int slot = free_slot();
    if (slot < 0) {                /* every slot taken: the oldest goes */
        int oldest = 0;
        for (int i = 1; i < SLOTS; i++)
            if (cached_age[i] < cached_age[oldest]) oldest = i;
        u.ptr[u.n] = cached_ptr[oldest];
        u.len[u.n++] = cached_len[oldest];
        remove_at(oldest);
        slot = oldest;
    }
    cached_ptr[slot] = p;
    cached_len[slot] = length;
    cached_age[slot] = ++clock_ticks;
    cached_bytes += length;
    shrink_to(cache_limit(), &u);
    pthread_mutex_unlock(&lock);
    unmap_all(&u);
}

static void *gl_malloc(void *ctx, size_t size) {
    (void)ctx;
    return size >= large_min ? large_alloc(size, 0) : small_alloc(size, 0);
}

static void *gl_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize && nelem > SIZE_MAX / elsize) return NULL;
    size_t size = nelem * elsize;
    return size >= large_min ? large_alloc(size, 1) : small_alloc(size, 1);
}

static void gl_free(void *ctx, void *ptr, size_t size) {
    (void)ctx; (void)size;
    if (!ptr) return;
    header_t *h = (header_t *)((char *)ptr - HEADER);
    if (h->magic == MAGIC_LARGE) release_large(h);
    else free(h);
}

static void *gl_realloc(void *ctx, void *ptr, size_t new_size) {
    if (!ptr) return gl_malloc(ctx, new_size);
    header_t *h = (header_t *)((char *)ptr - HEADER);
    if (h->magic == MAGIC_SMALL && new_size < large_min) {
        header_t *n = realloc(h, HEADER + new_size);
        return n ? (char *)n + HEADER : NULL;
    }
    if (h->magic == MAGIC_LARGE && HEADER + new_size <= h->length &&
        round_up(HEADER + new_size, GRANULE) * 2 > h->length)
        return ptr;       /* fits its mapping, and uses most of it */
    void *out = gl_malloc(ctx, new_size);
    if (!out) return NULL;
    /* bytes the old block can hold (numpy copies no more than it wrote) */
    size_t old = h->magic == MAGIC_LARGE ? h->length - HEADER
                                          : malloc_usable_size(h) - HEADER;
    memcpy(out, ptr, old < new_size ? old : new_size);
    gl_free(ctx, ptr, 0);
    return out;
}

gl_handler_t gl_array_cache_handler = {
    "grainlab_array_cache", 1,
    {NULL, gl_malloc, gl_calloc, gl_realloc, gl_free},
};

/* The handler's address, for the capsule numpy takes. */
void *gl_array_cache_handler_address(void) { return &gl_array_cache_handler; }

/* Budget in bytes of freed mappings kept; huge: numpy's huge-page advice;
 * smallest: the size from which blocks are cached mappings (4 MiB; tests
 * take less, to exercise the cache with small arrays). */
void gl_array_cache_configure(size_t budget_bytes, int huge, size_t smallest) {
    pthread_mutex_lock(&lock);
    budget = budget_bytes;
    hugepage = huge;
    large_min = smallest;
    pthread_mutex_unlock(&lock);
}

/* Unmap every cached mapping (the end of a phase of work); returns the bytes. */
size_t gl_array_cache_trim(void) {
    void *ptrs[SLOTS];
    size_t lens[SLOTS], n = 0, bytes;
    pthread_mutex_lock(&lock);
    bytes = cached_bytes;
    for (int i = 0; i < SLOTS; i++)
        if (cached_ptr[i]) {
            ptrs[n] = cached_ptr[i];
            lens[n++] = cached_len[i];
            cached_ptr[i] = NULL;
        }
    cached_bytes = 0;
    peak_live = live_bytes;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) munmap(ptrs[i], lens[i]);
    __atomic_add_fetch(&n_unmaps, n, __ATOMIC_RELAXED);
    return bytes;
}

/* out[0..7]: cached bytes, cached blocks, hits, fresh mappings, unmaps,
 * bytes reused, live bytes, most live bytes. */
void gl_array_cache_stats(uint64_t *out) {
    pthread_mutex_lock(&lock);
    uint64_t blocks = 0;
    for (int i = 0; i < SLOTS; i++) blocks += cached_ptr[i] != NULL;
    out[0] = cached_bytes;
    out[1] = blocks;
    out[2] = n_hits;
    out[3] = n_maps;
    out[4] = n_unmaps;
    out[5] = bytes_reused;
    out[6] = live_bytes;
    out[7] = peak_live;
    pthread_mutex_unlock(&lock);
}
