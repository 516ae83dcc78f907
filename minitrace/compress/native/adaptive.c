/* An adaptive context coder for int64 values with two context keys each (fine, coarse): the
 * bounded files' volume codes and duration steps (minitrace/compress/adaptive.py says why).
 *
 * Each value is coded as its residual from a reference (flags bit 0: 0; else its coarse
 * context's first value, a new coarse context's first value against the value coded before
 * it), zigzagged and binarized: its bit length against its fine context's previous one (the
 * same, one more or less, else its 7 bits), then the bits below its leading one, the first
 * MANT_BITS of them in a binary tree, the rest at even odds.  Every binary decision is coded by
 * a binary range coder (LZMA's) with a probability from adaptive estimates of that decision in
 * the fine context, the coarse one and over all values (order 0): the fine estimate alone once
 * it has seen FAST_T decisions, else the three mixed in the logistic domain by weights learned
 * as values are coded, chosen by how much the fine and coarse estimates have seen (order 0
 * left out, and not updated, once the coarse one has seen COARSE_T); the bits from the DEEP-th
 * below the leading one of a value whose fine context is sparse (its first decision seen fewer
 * than FAST_T times) in the coarse context and order 0 only, one level down.  An estimate adapts at
 * rate 1/(n + 1.5) after n decisions, so that a young context learns fast while the mixer leans
 * on the coarser ones: where most fine contexts see a few values (public miniMD: 17 each), this
 * codes what static tables of 128 values or more could not.  The estimates live in one hashed
 * table, in lines of 16 (no check bits: a collision only costs bytes, coder and decoder agree),
 * kept by each thread between calls.  Integer arithmetic only: every machine decodes alike.
 *
 * Decoding never reads outside its input (bytes past the end read as 0 and make it fail) and
 * fails unless it ends where the coder ended (every byte used, the range coder's code 0); the
 * caller checks the values' CRC-32 too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

#define PBITS 12
#define PONE (1 << PBITS)
#define TOP (1u << 24)
#define MANT_BITS 14          /* bits below the leading one coded in the tree, the rest raw */
#define COUNT_LIMIT 255       /* an estimate's count of decisions saturates here */
#define RATE_FLOOR 48         /* its rate of adaptation falls to 1/(RATE_FLOOR + 1.5) */
#define FAST_T 32             /* a fine estimate seen this often is used alone */
#define COARSE_T 32           /* a coarse one seen this often is mixed without order 0 */
#define TFACTOR 8             /* table slots per value, about (2**12 to 2**20 in all) */
#define NSETS (6 * 4 * 3)     /* mixer weight sets: first x second count x kind */
#define MAXBITS 20            /* (a larger table left fewer collisions, 1% smaller codings of
                                 imb-nbc 4r's 650 k values, and took 15% longer: cache misses) */
#define DEEP 4                /* from this bit below the leading one, a sparse fine context
                                 codes in its coarse one (kind 2) */
#define LASTBITS 18           /* the contexts' previous bit lengths: a table of 256 KB */

typedef struct {
    uint8_t *out;
    size_t cap, pos;
    uint64_t low;
    uint32_t range;
    uint8_t cache;
    uint64_t pending;
    int full;
} enc_t;

typedef struct {
    const uint8_t *in;
    size_t len, pos, over;
    uint32_t range, code;
} dec_t;

static inline __attribute__((always_inline)) void put(enc_t *e, uint8_t b) {
    if (e->pos < e->cap) e->out[e->pos] = b; else e->full = 1;
    e->pos++;
}

static inline __attribute__((always_inline)) void shift_low(enc_t *e) {
    if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32) != 0) {
        uint8_t carry = (uint8_t)(e->low >> 32);
        uint8_t t = e->cache;
        do { put(e, (uint8_t)(t + carry)); t = 0xFF; } while (--e->pending != 0);
        e->cache = (uint8_t)(e->low >> 24);
    }
    e->pending++;
    e->low = (e->low & 0x00FFFFFFu) << 8;
}

static inline void enc_bit(enc_t *e, uint32_t p1, int bit) {
    uint32_t bound = (e->range >> PBITS) * p1;
    if (bit) e->range = bound;
    else { e->low += bound; e->range -= bound; }
    while (e->range < TOP) { e->range <<= 8; shift_low(e); }
}

static inline uint8_t next_byte(dec_t *d) {
    if (d->pos < d->len) return d->in[d->pos++];
    d->over++;
    return 0;
}

static inline int dec_bit(dec_t *d, uint32_t p1) {
    uint32_t bound = (d->range >> PBITS) * p1;
    int bit;
    if (d->code < bound) { d->range = bound; bit = 1; }
    else { d->code -= bound; d->range -= bound; bit = 0; }
    while (d->range < TOP) { d->range <<= 8; d->code = (d->code << 8) | next_byte(d); }
    return bit;
}

/* ---- the model ---- */

static int16_t stretch_t[PONE];
static int16_t squash_t[4096];       /* x in [-2048, 2047] -> p */
static uint16_t rate_t[COUNT_LIMIT + 1];
/* The mixer's weight set by how much the fine and the coarse estimates have seen. */
static uint8_t set_t[FAST_T][COUNT_LIMIT + 1];

/* Integers only (every machine's decoder finds the coder's probabilities): squash(x) =
 * 4096 / (1 + e^(-x / 256)) interpolated from 33 points, stretch its inverse (lpaq1's). */
static int squash_i(int d) {
    static const int t[33] = {1, 2, 3, 6, 10, 16, 27, 45, 73, 120, 194, 310, 488, 747, 1101,
        1546, 2047, 2549, 2994, 3348, 3607, 3785, 3901, 3975, 4024, 4050, 4068, 4079, 4085,
        4089, 4092, 4093, 4094};
    if (d > 2047) return 4095;
    if (d < -2047) return 1;
    int w = d & 127;
    d = (d >> 7) + 16;
    return (t[d] * (128 - w) + t[d + 1] * w + 64) >> 7;
}

/* (at load time: no thread finds them half made) */
__attribute__((constructor)) static void init_tables(void) {
    for (int i = 0; i < 4096; i++) squash_t[i] = (int16_t)squash_i(i - 2048);
    int pi = 0;
    for (int x = -2047; x <= 2047; x++) {
        int v = squash_i(x);
        for (int j = pi; j <= v; j++) stretch_t[j] = (int16_t)x;
        pi = v + 1;
    }
    for (int j = pi; j < PONE; j++) stretch_t[j] = 2047;
    for (int n = 0; n <= COUNT_LIMIT; n++)
        rate_t[n] = (uint16_t)(131072 / (2 * (n < RATE_FLOOR ? n : RATE_FLOOR) + 3));
    for (int f = 0; f < FAST_T; f++)
        for (int c = 0; c <= COUNT_LIMIT; c++) {
            int bf = f == 0 ? 0 : f < 2 ? 1 : f < 4 ? 2 : f < 8 ? 3 : f < 16 ? 4 : 5;
            int bc = c == 0 ? 0 : c < 4 ? 1 : c < 32 ? 2 : 3;
            set_t[f][c] = (uint8_t)((bf * 4 + bc) * 3);
        }
}

static inline int squash(int x) {
    if (x < -2048) x = -2048;
    if (x > 2047) x = 2047;
    return squash_t[x + 2048];
}

typedef struct {
    uint32_t *slot;           /* p (16 bits, P(1)) << 16 | count */
    uint8_t *lastnb;
    uint64_t lshift;
    uint64_t shift;
    uint32_t order0[1 << 16];
    int32_t w[NSETS][4];     /* fine, coarse, order 0, bias */
    /* coarse references: open addressing, grown at half full */
    int64_t *ckey, *cref;
    uint8_t *cused;
    uint64_t cmask, ccount;
    int64_t last;
} model_t;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 31; x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27; x *= 0x81dadef4bc2dd44dULL;
    x ^= x >> 33;
    return x;
}

/* Buffers kept by each thread between calls (a fresh mapping faults in its pages, 2-8 us each
 * on a shared VM, more than the coding of a small array), freed when the thread ends. */
static __thread model_t *kept_model;
static __thread uint32_t *kept_slot;
static __thread size_t kept_slot_n;
static __thread uint8_t *kept_last;
static __thread size_t kept_last_n;
static pthread_key_t kept_key;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void kept_free(void *unused) {
    (void)unused;
    free(kept_model);
    free(kept_slot);
    free(kept_last);
    kept_model = NULL;
    kept_slot = NULL;
    kept_last = NULL;
    kept_slot_n = kept_last_n = 0;
}

static void kept_key_make(void) { pthread_key_create(&kept_key, kept_free); }

static void *kept(void **buf, size_t *have, size_t want) {
    if (*have < want) {
        free(*buf);
        *buf = NULL;
#ifdef MADV_HUGEPAGE
        /* (in huge pages where the system gives them: a table of megabytes read at random
         * missed the TLB on most loads) */
        if (want >= (1u << 21) && posix_memalign(buf, 1u << 21, want) == 0)
            madvise(*buf, want, MADV_HUGEPAGE);
        else
#endif
            *buf = malloc(want);
        *have = *buf ? want : 0;
    }
    return *buf;
}

static int map_alloc(model_t *m, int bits) {
    size_t n = (size_t)1 << bits;
    char *map = (char *)malloc(n * 17);
    if (!map) return -1;
    m->ckey = (int64_t *)map;
    m->cref = (int64_t *)(map + 8 * n);
    m->cused = (uint8_t *)(map + 16 * n);
    memset(m->cused, 0, n);
    m->cmask = n - 1;
    m->ccount = 0;
    return 0;
}

/* The model, its tables cleared (NULL when out of memory). */
static model_t *model_init(int64_t n) {
    if (!kept_model) {
        pthread_once(&kept_once, kept_key_make);
        pthread_setspecific(kept_key, (void *)1);    /* (the destructor runs for non-NULL) */
        kept_model = (model_t *)malloc(sizeof(model_t));
    }
    model_t *m = kept_model;
    if (!m) return NULL;
    int bits = 12;
    while (bits < MAXBITS && ((int64_t)1 << bits) < TFACTOR * n) bits++;
    m->slot = (uint32_t *)kept((void **)&kept_slot, &kept_slot_n, sizeof(uint32_t) << bits);
    int lbits = bits < LASTBITS ? bits : LASTBITS;
    m->lastnb = (uint8_t *)kept((void **)&kept_last, &kept_last_n, (size_t)1 << lbits);
    if (!m->slot || !m->lastnb || map_alloc(m, 10) < 0) return NULL;
    memset(m->lastnb, 0, (size_t)1 << lbits);
    memset(m->slot, 0, sizeof(uint32_t) << bits);
    memset(m->order0, 0, sizeof m->order0);
    m->lshift = 64 - lbits;
    m->shift = 64 - (bits - 4);
    for (int s = 0; s < NSETS; s++) {
        for (int i = 0; i < 3; i++) m->w[s][i] = 22000;
        m->w[s][3] = 0;
    }
    m->last = 0;
    return m;
}

/* The coarse context's reference slot (found or made; NULL when out of memory). */
static int64_t *coarse_ref(model_t *m, int64_t key, int *fresh) {
    uint64_t h = mix64((uint64_t)key) & m->cmask;
    while (m->cused[h]) {
        if (m->ckey[h] == key) { *fresh = 0; return &m->cref[h]; }
        h = (h + 1) & m->cmask;
    }
    if (2 * (m->ccount + 1) > m->cmask + 1) {          /* grow: rehash */
        int64_t *key0 = m->ckey, *ref0 = m->cref;
        uint8_t *used0 = m->cused;
        uint64_t n0 = m->cmask + 1;
        int bits = 0;
        while (((uint64_t)1 << bits) < 2 * n0) bits++;
        if (map_alloc(m, bits) < 0) return NULL;
        for (uint64_t i = 0; i < n0; i++)
            if (used0[i]) {
                uint64_t j = mix64((uint64_t)key0[i]) & m->cmask;
                while (m->cused[j]) j = (j + 1) & m->cmask;
                m->cused[j] = 1;
                m->ckey[j] = key0[i];
                m->cref[j] = ref0[i];
                m->ccount++;
            }
        free(key0);
        return coarse_ref(m, key, fresh);
    }
    m->cused[h] = 1;
    m->ckey[h] = key;
    m->ccount++;
    *fresh = 1;
    return &m->cref[h];
}

#define WMAX (1u << 22)         /* a mixer weight's bound */
static inline int32_t clampw(int32_t w) {
    return w < -(int32_t)WMAX ? -(int32_t)WMAX : w > (int32_t)WMAX ? (int32_t)WMAX : w;
}

static inline uint32_t clampp(int p) {
    return (uint32_t)(p < 1 ? 1 : p > PONE - 1 ? PONE - 1 : p);
}

/* An estimate after a decision: p (its high half, less 2**15 as int16) moved towards the
 * bit by rate_t[n], its count n (the low half) one more. */
static inline uint32_t next_estimate(uint32_t v, int bit) {
    int32_t p = (int32_t)v >> 16;
    uint32_t n = v & 0xFFFF;
    int32_t dp = (int32_t)(((int64_t)((bit ? 32767 : -32768) - p) * rate_t[n]) >> 16);
    return v + ((uint32_t)dp << 16) + (n < COUNT_LIMIT);
}

/* A bit coded (ENC: bit given) or decoded. */
static inline __attribute__((always_inline)) int code_bit(enc_t *e, dec_t *d, uint32_t p1,
                                                          int bit, const int ENC) {
    if (ENC) { enc_bit(e, p1, bit); return bit; }
    return dec_bit(d, p1);
}

/* One binary decision: its estimates at index idx of the lines a (the first: the fine
 * context's, the coarse one's for kind 2), b (the second: the coarse context's, order 0's for
 * kind 2) and o (order 0's, mixed in where kind < 2 and b's estimate is young); coded (ENC,
 * the bit given) or decoded.  Inlined into one coder and one decoder, each without the
 * other's branches (session 32: with the estimates' update in one addition and the weights'
 * bound tested once, 0.68x the instructions of session 31's predict and update, the same
 * bytes). */
static inline __attribute__((always_inline)) int decide(model_t *m, enc_t *e, dec_t *d,
        uint32_t *a, uint32_t *b, uint32_t *o, int idx, int kind, int bit, const int ENC) {
    uint32_t *s0 = a + idx, *s1 = b + idx, *s2 = o + idx;
    uint32_t v0 = *s0, nf = v0 & 0xFFFF;
    int p;
    if (nf >= FAST_T) {               /* a seasoned estimate alone */
        p = (int)(((v0 >> 16) ^ 0x8000) >> 4);
        bit = code_bit(e, d, clampp(p), bit, ENC);
        *s0 = next_estimate(v0, bit);
        return bit;
    }
    uint32_t v1 = *s1, nc = v1 & 0xFFFF;
    int st0 = stretch_t[((v0 >> 16) ^ 0x8000) >> 4];
    int st1 = stretch_t[((v1 >> 16) ^ 0x8000) >> 4];
    int three = kind != 2 && nc < COARSE_T;
    int st2 = three ? stretch_t[((*s2 >> 16) ^ 0x8000) >> 4] : 0;
    int32_t *w = m->w[set_t[nf][nc] + kind];
    int64_t dot = (int64_t)w[3] * 256 + (int64_t)w[0] * st0 + (int64_t)w[1] * st1 +
        (int64_t)w[2] * st2;
    p = squash((int)(dot >> 16));         /* (1..4095: squash_t's range) */
    bit = code_bit(e, d, (uint32_t)p, bit, ENC);
    /* (read again: two lines may be one, each update sees the one before) */
    *s0 = next_estimate(*s0, bit);
    *s1 = next_estimate(*s1, bit);
    if (three) *s2 = next_estimate(*s2, bit);
    int err = (bit << PBITS) - p;
    int32_t w0 = w[0] + ((st0 * err) >> 10), w1 = w[1] + ((st1 * err) >> 10),
        w2 = w[2] + ((st2 * err) >> 10), w3 = w[3] + ((256 * err) >> 10);
    /* (a weight reaches its bound seldom: one test for the four, their offsets' OR passing
     * 2 * WMAX whenever one does) */
    if (__builtin_expect((((uint32_t)w0 + WMAX) | ((uint32_t)w1 + WMAX) |
                          ((uint32_t)w2 + WMAX) | ((uint32_t)w3 + WMAX)) > 2 * WMAX, 0)) {
        w0 = clampw(w0); w1 = clampw(w1); w2 = clampw(w2); w3 = clampw(w3);
    }
    w[0] = w0; w[1] = w1; w[2] = w2; w[3] = w3;
    return bit;
}

/* The prefix after up to four levels (`left`) of a value's bits below its leading one (bit
 * *i down, *i moved past them), in lines a, b and o (decide's) of a group: written out, and
 * made for each kind (a loop's tests and a variable kind took a tenth of the instructions). */
static inline __attribute__((always_inline)) uint64_t levels(model_t *m, enc_t *e, dec_t *d,
        uint32_t *a, uint32_t *b, uint32_t *o, const int kind, int left, uint64_t prefix,
        uint64_t z, int *i, const int ENC) {
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        if (r > 0 && left <= r) break;
        int bit = decide(m, e, d, a, b, o, (1 << r) | (int)(prefix & ((1u << r) - 1)), kind,
                         ENC ? (int)((z >> *i) & 1) : 0, ENC);
        prefix = (prefix << 1) | (uint64_t)bit;
        --*i;
    }
    return prefix;
}

/* The lines of group `group` of contexts hf, hc and order 0 (lf_, lc_, lo_).  Estimates sit
 * in lines of 16 (a cache line): a group of decisions of one value, e.g. four levels of its
 * bit tree, is one line of each context (cache misses were most of the time). */
#define LINES(group) do { uint64_t hg_ = ((uint64_t)(group) + 1) * 0x9E3779B97F4A7C15ULL; \
        lf_ = &m->slot[((hf ^ hg_) >> m->shift) << 4]; \
        lc_ = &m->slot[((hc ^ hg_) >> m->shift) << 4]; \
        lo_ = &m->order0[(hg_ >> 52) << 4]; } while (0)

static inline __attribute__((always_inline)) uint64_t code_z(model_t *m, enc_t *e, dec_t *d,
        uint64_t hf, uint64_t hc, uint64_t z, const int ENC) {
    uint32_t *lf_, *lc_, *lo_;
    int nb = 0;
    if (ENC) nb = z ? 64 - __builtin_clzll(z) : 0;
    /* the bit length against the fine context's previous one (else the coarse one's) */
    uint8_t *lf = &m->lastnb[(hf >> m->lshift)], *lc = &m->lastnb[(hc >> m->lshift)];
    int pred = *lf ? *lf - 1 : *lc ? *lc - 1 : 0;
    uint64_t g = (uint64_t)pred << 8;
    LINES(g);
    /* the same, one more or one less, else its own 7 bits (a tree of 8 + 4 lines) */
    /* a fine context of few values yet (this first decision seen fewer than FAST_T times)
     * codes its deeper bits in the coarse one: its estimates there would be new, each a
     * cache miss, and learn nothing the coarse ones do not */
    int sparse = (lf_[0] & 0xFFFF) < FAST_T;
    int same = decide(m, e, d, lf_, lc_, lo_, 0, 0, ENC ? nb == pred : 0, ENC);
    if (same) nb = pred;
    else {
        int near = decide(m, e, d, lf_, lc_, lo_, 1, 0,
                          ENC ? (nb == pred + 1 || nb == pred - 1) : 0, ENC);
        if (near) {
            int up = pred == 0 ? 1 : pred == 64 ? 0 : (ENC ? nb > pred : 0);
            if (pred > 0 && pred < 64) up = decide(m, e, d, lf_, lc_, lo_, 2, 0, up, ENC);
            nb = up ? pred + 1 : pred - 1;
        } else {
            int node = 1;
            for (int l = 6; l >= 4; l--)     /* the top three levels: slots 3..9 */
                node = (node << 1) | decide(m, e, d, lf_, lc_, lo_, 2 + node, 0,
                                            ENC ? (nb >> l) & 1 : 0, ENC);
            LINES(g + 1 + (uint64_t)node);   /* the others: a line per subtree */
            for (int l = 3; l >= 0; l--)
                node = (node << 1) | decide(m, e, d, lf_, lc_, lo_,
                                            (1 << (3 - l)) | (node & ((1 << (3 - l)) - 1)), 0,
                                            ENC ? (nb >> l) & 1 : 0, ENC);
            nb = node & 127;
            if (nb > 64) nb = 64;        /* (a damaged coding: any value decodes) */
        }
    }
    *lf = (uint8_t)(nb + 1);
    *lc = (uint8_t)(nb + 1);
    if (nb == 0) return 0;
    /* the bits below the leading one: a tree, four levels to a line */
    uint64_t prefix = 1;
    int i = nb - 2, tree = nb - 1 < MANT_BITS ? nb - 1 : MANT_BITS;   /* (bits in the tree) */
    for (int t = 0; t < tree; t += 4) {
        LINES(((uint64_t)(nb * 16 + t / 4 + 1) << 48) ^ prefix);
        if (t >= DEEP && sparse)
            prefix = levels(m, e, d, lc_, lo_, lo_, 2, tree - t, prefix, z, &i, ENC);
        else
            prefix = levels(m, e, d, lf_, lc_, lo_, 1, tree - t, prefix, z, &i, ENC);
    }
    for (; i >= 0; i--) {
        int bit;
        bit = code_bit(e, d, PONE / 2, ENC ? (int)((z >> i) & 1) : 0, ENC);
        prefix = (prefix << 1) | (uint64_t)bit;
    }
    return prefix;
}
#undef LINES

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzigzag(uint64_t u) { return (int64_t)((u >> 1) ^ (0 - (u & 1))); }

static inline uint64_t fine_hash(int64_t k) { return mix64((uint64_t)k ^ 0x5851F42D4C957F2DULL); }
static inline uint64_t coarse_hash(int64_t k) { return mix64((uint64_t)k ^ 0x14057B7EF767814FULL); }

/* Codes (ENC) or decodes the n values; -2 when out of memory. */
static inline __attribute__((always_inline)) int run(model_t *m, enc_t *e, dec_t *d,
        int64_t *values, const int64_t *fine, const int64_t *coarse, int64_t n, int flags,
        const int ENC) {
    for (int64_t i = 0; i < n; i++) {
        int fresh = 0;
        int64_t *ref = NULL;
        if (!(flags & 1) && !(ref = coarse_ref(m, coarse[i], &fresh))) return -2;
        int64_t base = !ref ? 0 : fresh ? m->last : *ref;
        uint64_t hf = fine_hash(fine[i]), hc = coarse_hash(coarse[i]);
        uint64_t z = ENC ? zigzag((int64_t)((uint64_t)values[i] - (uint64_t)base)) : 0;
        z = code_z(m, e, d, hf, hc, z, ENC);
        int64_t v = (int64_t)((uint64_t)base + (uint64_t)unzigzag(z));
        if (!ENC) values[i] = v;
        if (fresh) *ref = v;
        m->last = v;
    }
    return 0;
}

/* Codes n values into out (cap bytes): the bytes written, -1 when cap is too small, -2 when
 * out of memory. */
int64_t mt_adaptive_encode(const int64_t *values, const int64_t *fine, const int64_t *coarse,
                           int64_t n, int flags, uint8_t *out, int64_t cap) {
    model_t *m = model_init(n);
    if (!m) return -2;
    enc_t e = {out, (size_t)cap, 0, 0, 0xFFFFFFFFu, 0, 1, 0};
    int rc = run(m, &e, NULL, (int64_t *)values, fine, coarse, n, flags, 1);
    free(m->ckey);
    if (rc < 0) return rc;
    for (int i = 0; i < 5; i++) shift_low(&e);
    return e.full ? -1 : (int64_t)e.pos;
}

/* Decodes n values of len bytes into values: 0, -1 for bytes that are not such a coding,
 * -2 when out of memory. */
int mt_adaptive_decode(const uint8_t *in, int64_t len, const int64_t *fine,
                       const int64_t *coarse, int64_t n, int flags, int64_t *values) {
    if (len < 5 || in[0] != 0) return -1;
    model_t *m = model_init(n);
    if (!m) return -2;
    dec_t d = {in, (size_t)len, 1, 0, 0xFFFFFFFFu, 0};
    for (int i = 0; i < 4; i++) d.code = (d.code << 8) | next_byte(&d);
    int rc = run(m, NULL, &d, values, fine, coarse, n, flags, 0);
    free(m->ckey);
    if (rc < 0) return rc;
    return (d.over || d.pos != d.len || d.code != 0) ? -1 : 0;
}
