/* minitrace PMPI shim: the handle tables (mt_reqs: live requests; mt_commmap: communicators).
 *
 * Not compiled on its own: included by generate.py (RUNTIME) before shim_runtime.c, whose
 * request and communicator code uses these tables, in one translation unit.
 */
#include "shim_runtime.h"
#include <pthread.h>
#include <stdlib.h>

/* ---- handle tables: open addressing keyed by the handle's bytes ------------------------ */
static inline uint64_t mt_key_bytes(const void *h, size_t n) {
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof k ? n : sizeof k);
    return k;
}
#define mt_key(h) ({ __typeof__(h) h_ = (h); mt_key_bytes(&h_, sizeof h_); })

/* One slot per distinct handle, holding the handle's live entries oldest first.  A handle can
 * have several: MPICH hands out one shared handle for requests that completed at once
 * (lightweight requests: 64 Isends of 8 bytes all return the same one), and an entry whose
 * request completed unseen (while paused, or by a function the shim does not wrap) stays until
 * its handle is reused.  A handle's first entry is stored in its slot, more go to a ring.
 * Slots are placed by linear probing at load <= 1/2 and deleted by backward shift (no
 * tombstones), so a lookup probes one or two slots however many entries share a handle and
 * however often handles are reused.  (The table this replaces gave every entry its own slot:
 * m entries of one handle made a run of m slots, scanned twice per lookup and m times per
 * deletion, O(m^3) for a Waitall of m; see docs/RECORDER.md.) */
#define MT_DUPS 4 /* handles with several entries listed for mt_req_lookup's counting pass */
typedef struct {
    uint64_t key;
    uint32_t n;               /* live entries; 0: a free slot */
    uint32_t head, cap;       /* entry i (0 = oldest) is ring[(head + i) & (cap - 1)]; cap 1: one */
    uint32_t stamp, cur;      /* mt_req_lookup's count of this handle's later occurrences */
    mt_req *ring;
    mt_req one;
} mt_slot;

typedef struct {
    mt_slot *s;
    size_t cap, n;            /* slots, handles present */
    uint32_t stamp;           /* of the latest mt_req_lookup */
    uint32_t ndup, ndk;       /* slots with several entries; how many of them dk lists */
    uint64_t dk[MT_DUPS];
    mt_req *spare;            /* a ring kept for the next handle that needs one */
    uint32_t spare_cap;
    uint64_t live, peak, most, probe; /* entries now, at most, most on one handle, longest probe */
    pthread_mutex_t lock;
} mt_map;

static mt_map mt_reqs = {.lock = PTHREAD_MUTEX_INITIALIZER};
static mt_map mt_commmap = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline size_t mt_hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

static inline mt_req *mt_entry(mt_slot *s, uint32_t i) {
    return s->cap == 1 ? &s->one : &s->ring[(s->head + i) & (s->cap - 1)];
}

static inline mt_slot *mt_map_slot(mt_map *m, uint64_t key) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = mt_hash(key) & mask; m->s[i].n; i = (i + 1) & mask)
        if (m->s[i].key == key) return &m->s[i];
    return NULL;
}

/* The free slot for key in s (cap slots), noting the longest probe (MINITRACE_STATS). */
static size_t mt_place(mt_map *m, mt_slot *s, size_t cap, uint64_t key) {
    size_t i = mt_hash(key) & (cap - 1), probes = 1;
    for (; s[i].n; i = (i + 1) & (cap - 1)) probes++;
    if (probes > m->probe) m->probe = probes;
    return i;
}

static int mt_map_grow(mt_map *m) {
    size_t cap = m->cap ? 2 * m->cap : 256;
    mt_slot *s = (mt_slot *)mt_calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t j = 0; j < m->cap; j++)
        if (m->s[j].n) s[mt_place(m, s, cap, m->s[j].key)] = m->s[j];
    mt_free(m->s);
    m->s = s;
    m->cap = cap;
    return 0;
}

/* The slots with several entries, listed (up to MT_DUPS) so that counting a handle's
 * occurrences in an array is a compare per element, not a lookup. */
static void mt_dup_on(mt_map *m, uint64_t key) {
    m->ndup++;
    if (m->ndk < MT_DUPS) m->dk[m->ndk++] = key;
}

static void mt_dup_off(mt_map *m, uint64_t key) {
    m->ndup--;
    for (uint32_t d = 0; d < m->ndk; d++)
        if (m->dk[d] == key) {
            m->dk[d] = m->dk[--m->ndk];
            break;
        }
}

/* Room for one more entry of s: a ring (the spare one if it is big enough), twice as big. */
static int mt_slot_widen(mt_map *m, mt_slot *s) {
    uint32_t cap = s->cap == 1 ? 4 : 2 * s->cap;
    mt_req *ring;
    if (m->spare && m->spare_cap >= cap) {
        ring = m->spare;
        cap = m->spare_cap;
        m->spare = NULL;
    } else if (!(ring = (mt_req *)mt_malloc(sizeof *ring * cap))) {
        return -1;
    }
    for (uint32_t i = 0; i < s->n; i++) ring[i] = *mt_entry(s, i);
    if (s->cap > 1) mt_free(s->ring);
    s->ring = ring;
    s->cap = cap;
    s->head = 0;
    return 0;
}

/* Add v as the newest entry of its handle. */
static int mt_map_add(mt_map *m, const mt_req *v) {
    mt_slot *s = mt_map_slot(m, v->key);
    if (s) {
        if (s->n == s->cap && mt_slot_widen(m, s)) return -1;
        *mt_entry(s, s->n) = *v;
        if (++s->n == 2) mt_dup_on(m, s->key);
    } else {
        if (2 * (m->n + 1) > m->cap && mt_map_grow(m)) return -1;
        s = &m->s[mt_place(m, m->s, m->cap, v->key)];
        *s = (mt_slot){.key = v->key, .n = 1, .cap = 1, .one = *v};
        m->n++;
    }
    if (s->n > m->most) m->most = s->n;
    if (++m->live > m->peak) m->peak = m->live;
    return 0;
}

/* Delete slot s by backward shift: the entries after it that may move closer home do. */
static void mt_map_free_slot(mt_map *m, mt_slot *s) {
    size_t mask = m->cap - 1, i = (size_t)(s - m->s);
    for (size_t j = (i + 1) & mask; m->s[j].n; j = (j + 1) & mask) {
        size_t home = mt_hash(m->s[j].key) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->s[i] = m->s[j];
            i = j;
        }
    }
    m->s[i].n = 0;
    m->n--;
}

/* Remove entry `at` of s (s may move or be freed). */
static void mt_slot_remove(mt_map *m, mt_slot *s, uint32_t at) {
    m->live--;
    if (s->cap == 1) {
        mt_map_free_slot(m, s);
        return;
    }
    if (at < s->n / 2) { /* shift the older ones up (removing the oldest: none) */
        for (uint32_t q = at; q > 0; q--) *mt_entry(s, q) = *mt_entry(s, q - 1);
        s->head = (s->head + 1) & (s->cap - 1);
    } else {
        for (uint32_t q = at; q + 1 < s->n; q++) *mt_entry(s, q) = *mt_entry(s, q + 1);
    }
    if (--s->n == 1) { /* back to the entry in the slot; the ring is kept for the next one */
        mt_req last = *mt_entry(s, 0);
        if (!m->spare || m->spare_cap < s->cap) {
            mt_free(m->spare);
            m->spare = s->ring;
            m->spare_cap = s->cap;
        } else {
            mt_free(s->ring);
        }
        s->ring = NULL;
        s->cap = 1;
        s->head = 0;
        s->one = last;
        mt_dup_off(m, s->key);
    }
}

/* The entry of s a completion at address `where` completes, in lookup `stamp`; its position
 * in *at, and in *own whether it was found by its variable.  Entries made at or after mark
 * belong to a request that reused the handle during the call: never that one.  Of several
 * entries (one shared handle), the newest written to `where` (the variable waited on holds
 * the last request posted into it): TeaLeaf waits for its first exchange's isend after
 * posting a second one whose isend got the same handle, and the newest entry would be the
 * second's.  Only the MT_WHERE newest and the MT_WHERE oldest are compared (completions in
 * posting order or in reverse find theirs there), so a window of copied handles costs a
 * bounded scan.  A handle copied elsewhere before its completion matches no entry: then the
 * nth newest, n counting the handle's occurrences after this one in the same call that stay
 * in the table (newer entries win over an entry left stale by a request completed unseen),
 * entries this lookup named by their variable and left in the table not counted (`skip`:
 * how many there are; the scan past them runs only then). */
#define MT_WHERE 16
static inline mt_req *mt_pick(mt_slot *s, int64_t mark, uint32_t nth, const void *where,
                              uint32_t stamp, uint32_t skip, uint32_t *at, int *own) {
    uint32_t i = s->n;
    while (i && mt_entry(s, i - 1)->id >= mark) i--;
    *own = 0;
    if (where && s->n > 1)
        for (uint32_t j = i; j > 0; j--) {
            if (i - j == MT_WHERE && j > MT_WHERE) j = MT_WHERE; /* skip to the oldest */
            mt_req *e = mt_entry(s, j - 1);
            if (e->where == where && e->named != stamp) {
                *own = 1;
                *at = j - 1;
                return e;
            }
        }
    if (!skip) {
        if (nth >= i) return NULL;
        *at = i - 1 - nth;
        return mt_entry(s, *at);
    }
    for (uint32_t j = i; j > 0; j--) /* passing over the entries named by their variable */
        if (mt_entry(s, j - 1)->named != stamp && !nth--) {
            *at = j - 1;
            return mt_entry(s, *at);
        }
    return NULL;
}

/* Remove the entry (key, id). */
static void mt_map_remove(mt_map *m, uint64_t key, int64_t id) {
    mt_slot *s = mt_map_slot(m, key);
    for (uint32_t i = 0; s && i < s->n; i++)
        if (mt_entry(s, i)->id == id) {
            mt_slot_remove(m, s, i);
            return;
        }
}
