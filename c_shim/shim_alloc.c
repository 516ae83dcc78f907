/* minitrace PMPI shim: its own memory, outside the program's (issue 35).
 *
 * A recorder that moves the program's data changes what it measures.  Two ways the shim did:
 * - its malloc/calloc/realloc/strdup/fopen took blocks of the program's heap (the brk arena),
 *   so every block the program allocated after MPI_Init sat at another offset in its page and
 *   cache line than untraced (tests/programs/pipeline.c's 16 KiB array: at 48 mod 64 untraced,
 *   0 recorded, in every run);
 * - the kernel places a MAP_SHARED file mapping of 2 MiB or more at an address congruent to its
 *   file offset modulo 2 MiB (for transparent huge pages), so the raw file's 4 MiB chunks landed
 *   at the same offset in every run, and the program's large buffers, mapped by malloc right
 *   below them, too: benchmarks/apps/transpose.c's 8 MiB buffers were 2 MiB-aligned in every
 *   recording, at a random offset (ASLR) untraced.  Where the program's memory can get huge
 *   pages (THP "always", or glibc.malloc.hugetlb=1), that is 4 huge pages per buffer recorded
 *   against 3 untraced (1042 page faults per rank untraced, 532 recorded, in transpose's steps).
 * So the shim allocates from here (anonymous mappings of its own, never a multiple of 2 MiB long,
 * which the kernel would align) and maps its chunks into one reserved range (shim_runtime.c,
 * mt_chunk_window): the program's heap is untouched, and its mappings are shifted by sizes the
 * same in every run, which keeps their random offsets random.  tests/test_shim_layout.py
 * checks both.
 *
 * Blocks of 32 B to 1 MiB (a 16-byte header included) are powers of two carved from 1 MiB
 * slabs, kept on a free list per size when freed; larger ones are mappings of their own.  The
 * shim allocates rarely (a thread, a communicator, a table growing, a handle's ring), so one
 * lock serves.
 *
 * Not compiled on its own: the first runtime file of the shim's one translation unit
 * (generate.py RUNTIME).
 */
#include "shim_runtime.h"
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>

#define MT_HEAP_CLASSES 16                      /* 32 B << 0..15: up to 1 MiB */
#define MT_HEAP_SLAB ((size_t)1 << 20)          /* not a multiple of 2 MiB: never aligned */
#define MT_HEAP_HDR 16                          /* size class (or MT_HEAP_CLASSES), length */
#define MT_PMD ((size_t)2 << 20)

static pthread_mutex_t mt_heap_lock = PTHREAD_MUTEX_INITIALIZER;
static void *mt_heap_free[MT_HEAP_CLASSES];
static char *mt_slab_at, *mt_slab_end;

/* Anonymous pages the kernel does not align to 2 MiB: a length that is a multiple of it gets
 * one page more. */
static void *mt_pages(size_t *bytes) {
    size_t n = (*bytes + 4095) & ~(size_t)4095;
    if (n % MT_PMD == 0) n += 4096;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *bytes = n;
    return p == MAP_FAILED ? NULL : p;
}

static void *mt_malloc(size_t n) {
    if (n > SIZE_MAX - MT_HEAP_HDR - 4096) return NULL;
    size_t need = n + MT_HEAP_HDR;
    int c = 0;
    while (c < MT_HEAP_CLASSES && ((size_t)32 << c) < need) c++;
    size_t *h;
    if (c == MT_HEAP_CLASSES) {
        size_t len = need;
        if (!(h = (size_t *)mt_pages(&len))) return NULL;
        h[1] = len;
    } else {
        size_t size = (size_t)32 << c;
        pthread_mutex_lock(&mt_heap_lock);
        if ((h = (size_t *)mt_heap_free[c])) {
            mt_heap_free[c] = *(void **)(h + 2);
        } else {
            if ((size_t)(mt_slab_end - mt_slab_at) < size) {
                size_t len = MT_HEAP_SLAB;
                char *s = (char *)mt_pages(&len);
                if (!s) {
                    pthread_mutex_unlock(&mt_heap_lock);
                    return NULL;
                }
                mt_slab_at = s;
                mt_slab_end = s + len;
            }
            h = (size_t *)mt_slab_at;
            mt_slab_at += size;
        }
        pthread_mutex_unlock(&mt_heap_lock);
    }
    h[0] = (size_t)c;
    return h + 2;
}

static void mt_free(void *p) {
    if (!p) return;
    size_t *h = (size_t *)p - 2;
    if (h[0] == MT_HEAP_CLASSES) {
        munmap(h, h[1]);
        return;
    }
    pthread_mutex_lock(&mt_heap_lock);
    *(void **)p = mt_heap_free[h[0]];
    mt_heap_free[h[0]] = h;
    pthread_mutex_unlock(&mt_heap_lock);
}

static void *mt_calloc(size_t k, size_t n) {
    if (n && k > SIZE_MAX / n) return NULL;
    void *p = mt_malloc(k * n);
    if (p) memset(p, 0, k * n);
    return p;
}

static void *mt_realloc(void *p, size_t n) {
    if (!p) return mt_malloc(n);
    size_t *h = (size_t *)p - 2;
    size_t room = (h[0] == MT_HEAP_CLASSES ? h[1] : (size_t)32 << h[0]) - MT_HEAP_HDR;
    if (n <= room) return p;
    void *q = mt_malloc(n);
    if (!q) return NULL;     /* p is left as it was, as realloc does */
    memcpy(q, p, room);
    mt_free(p);
    return q;
}

static char *mt_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)mt_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
