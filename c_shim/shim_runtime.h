/* minitrace PMPI shim: the runtime the generated wrappers call (see shim_runtime.c).
 *
 * A wrapper does:   T = mt_enter();  [pre recipe]  PMPI call;  mt_leave(T, &R, kind);
 *                   [post recipe filling R];  mt_emit(T, &R);
 * Recipes are the MT_* macros below: they are macros (not functions) so that one recipe serves
 * both the int-count form and the MPI-4 big-count `_c` form (int or MPI_Count arrays).
 * Handles are never assumed to be ints or pointers: they are keyed by their bytes (mt_key).
 */
#ifndef MINITRACE_SHIM_RUNTIME_H
#define MINITRACE_SHIM_RUNTIME_H
#ifndef _GNU_SOURCE    /* before any system header: each runtime file includes this one first */
#define _GNU_SOURCE
#endif
#include <mpi.h>
#include <stdint.h>
#include <string.h>

/* Which parts of MPI-4 the library declares: big-count `_c` functions, partitioned calls. */
#if MPI_VERSION >= 4
#define MT_BIGCOUNT 1
#define MT_PARTITIONED_API 1
#elif defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define MT_BIGCOUNT 0
#define MT_PARTITIONED_API 1
#else
#define MT_BIGCOUNT 0
#define MT_PARTITIONED_API 0
#endif
/* The Fortran twins (shim_fortran.c): not for the MPI-5 ABI, which has no Fortran part. */
#ifdef MPI_ABI_VERSION
#define MT_FORTRAN 0
#else
#define MT_FORTRAN 1
#endif
/* Open MPI 5.0 and MPICH 4.0 declare MPI_Pready_list without MPI-4.0's const
 * (int partition_list[]). */
#if (defined(OMPI_MAJOR_VERSION) && MPI_VERSION < 4) || \
    (defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000)
#define MT_PREADY_LIST_CONST
#else
#define MT_PREADY_LIST_CONST const
#endif

/* The raw file's record (mt_rec), header and chunk header, its constants (MT_RAW_VERSION,
 * MT_CHUNK_BYTES, MT_INTERNAL_*, ...) and the flag bits (MT_ANY_SOURCE, ...): generated from
 * minitrace/rawlayout.py and minitrace/kinds.py by c_shim/generate.py at build time. */
#include "_generated_rawlayout.h"

/* A communicator as the shim knows it: immutable once published. */
typedef struct {
    int size, myrank, inter;
    int members[];            /* world rank of each (remote, for an intercomm) comm rank */
} mt_comm;

/* A live request: what its completion needs to know. */
typedef struct {
    int64_t id;
    uint64_t key;             /* the handle's bytes when it was created */
    const void *where;        /* the variable MPI wrote the handle to (entries of one shared
                               * handle are told apart by it at completion) */
    const mt_comm *comm;
    int32_t comm_id;
    uint8_t recv;             /* 1: a non-blocking receive whose completion resolves it */
    uint8_t flags;            /* FLAG_ANY_*, FLAG_PERSISTENT, FLAG_PARTITIONED */
    uint8_t persistent;       /* stays alive across completions until MPI_Request_free */
    uint32_t named;           /* the lookup (mt_map.stamp) that named it by its variable */
    uint32_t starts;          /* persistent: its activations so far (MPI_Start, MPI_Startall) */
    uint32_t active;          /* persistent: the activation pending (1, 2, ...), 0 inactive */
    uint32_t epoch;           /* persistent: the recording's epoch (mt_epoch) at that start */
} mt_req;

typedef struct mt_thread mt_thread;

/* Defined in shim_runtime.c, which precedes the generated wrappers in one translation unit. */
static mt_thread *mt_enter(void);  /* NULL: not tracing now (off, paused, nested, before init) */
static void mt_leave(mt_thread *T, mt_rec *R, int kind);
static void mt_emit(mt_thread *T, mt_rec *R);
static int64_t *mt_vec(mt_thread *T, mt_rec *R, int64_t n);
static void *mt_scratch(mt_thread *T, size_t bytes);
/* A vector of one or two values (none when it cannot be had: mt_vec). */
static inline void mt_vec1(mt_thread *T, mt_rec *R, int64_t a) {
    int64_t *v = mt_vec(T, R, 1);
    if (v) v[0] = a;
}
static inline void mt_vec2(mt_thread *T, mt_rec *R, int64_t a, int64_t b) {
    int64_t *v = mt_vec(T, R, 2);
    if (v) v[0] = a, v[1] = b;
}
static int32_t mt_comm_of(MPI_Comm c, const mt_comm **out);
static int32_t mt_comm_register(mt_thread *T, MPI_Comm c);
static int32_t mt_comm_forget(MPI_Comm c);
static int mt_world(const mt_comm *c, int r);
/* A request variable's address, and the size of one in its array (mt_where_of). */
typedef struct {
    const char *at;
    size_t step;
} mt_where;
static mt_where mt_where_of(mt_thread *T, const MPI_Request *p);
static int64_t mt_req_new(MPI_Request r, mt_where where, const mt_comm *comm, int32_t comm_id,
                          int recv, int flags, int persistent);
static int mt_req_get(MPI_Request r, mt_req *out, int how);
/* what mt_req_lookup does with the entries (START: numbers a persistent one's activation) */
enum { MT_LOOK_PEEK, MT_LOOK_DONE, MT_LOOK_FREE, MT_LOOK_START };
static int64_t mt_req_mark(void);
static void mt_req_lookup(const MPI_Request *h, mt_where where, int n, const int *pos, int k,
                          int64_t mark, int how, mt_req *out);
static const int *mt_ascending(const int *idx, int k, int *buf);
static void mt_resolve(mt_thread *T, const mt_req *q, const MPI_Status *st);
static int64_t mt_tsize(MPI_Datatype t);
static int64_t mt_status_bytes(const MPI_Status *st);

/* ---- recipe building blocks ------------------------------------------------------------ */
#define MT_ON(c) (R.comm = mt_comm_of((c), &CI))
#define MT_PEER(r) (R.peer = mt_world(CI, (r)))
#define MT_MYRANK (CI ? CI->myrank : 0)
#define MT_SIZE (CI ? CI->size : 0)
#define MT_INPLACE(buf) ((buf) == MPI_IN_PLACE ? (R.flags |= MT_IN_PLACE, 1) : 0)
#define MT_BYTES(count, type) ((int64_t)(count) * mt_tsize(type))
#define MT_SUM_BYTES(counts, type, n) ({ int64_t s_ = 0, z_ = mt_tsize(type); \
        for (int i_ = 0; i_ < (n); i_++) s_ += (int64_t)(counts)[i_] * z_; s_; })
#define MT_WILD(src, tg) (R.flags |= ((src) == MPI_ANY_SOURCE ? MT_ANY_SOURCE : 0) | \
                                     ((tg) == MPI_ANY_TAG ? MT_ANY_TAG : 0))
/* Substitute our own status when the caller ignores it (we need source, tag and size). */
#define MT_STATUS(st) MPI_Status mt_st_; if ((st) == MPI_STATUS_IGNORE) (st) = &mt_st_

/* ---- point to point ---- */
#define MT_SEND(dest, tg, comm, count, type) \
    (MT_ON(comm), MT_PEER(dest), R.tag = (tg), R.bytes_sent = MT_BYTES(count, type))
#define MT_RECV(src, tg, comm, st) \
    (MT_ON(comm), MT_WILD(src, tg), R.peer = mt_world(CI, (st)->MPI_SOURCE), \
     R.tag = (st)->MPI_TAG, R.bytes_recv = mt_status_bytes(st))
/* a new request: its handle and where the variable holding it is */
#define MT_REQ_NEW(req, ...) mt_req_new(*(req), mt_where_of(T, (req)), __VA_ARGS__)
#define MT_ISEND(dest, tg, comm, count, type, req) \
    (MT_SEND(dest, tg, comm, count, type), R.request = MT_REQ_NEW((req), CI, R.comm, 0, 0, 0))
#define MT_IRECV(src, tg, comm, count, type, req) \
    (MT_ON(comm), MT_WILD(src, tg), R.peer = (src) == MPI_ANY_SOURCE ? -1 : mt_world(CI, src), \
     R.tag = (tg) == MPI_ANY_TAG ? -1 : (tg), R.bytes_recv = MT_BYTES(count, type), \
     R.request = MT_REQ_NEW((req), CI, R.comm, 1, R.flags, 0))
#define MT_SENDRECV(dest, stag, scount, stype, comm, st) do { \
    MT_SEND(dest, stag, comm, scount, stype); R.bytes_recv = mt_status_bytes(st); \
    mt_vec2(T, &R, mt_world(CI, (st)->MPI_SOURCE), (st)->MPI_TAG); } while (0)
#define MT_PROBE(src, tg, comm, st) \
    (MT_ON(comm), MT_WILD(src, tg), R.peer = mt_world(CI, (st)->MPI_SOURCE), R.tag = (st)->MPI_TAG)
#define MT_IPROBE(src, tg, comm, flag, st) \
    (MT_ON(comm), MT_WILD(src, tg), *(flag) ? (R.flags |= MT_COMPLETED, \
     R.peer = mt_world(CI, (st)->MPI_SOURCE), R.tag = (st)->MPI_TAG) \
     : (R.peer = (src) == MPI_ANY_SOURCE ? -1 : mt_world(CI, src), R.tag = (tg)))

/* ---- persistent and partitioned ---- */
#define MT_SEND_INIT(dest, tg, comm, count, type, req) \
    (MT_SEND(dest, tg, comm, count, type), \
     R.request = MT_REQ_NEW((req), CI, R.comm, 0, MT_PERSISTENT, 1))
#define MT_RECV_INIT(src, tg, comm, count, type, req) \
    (MT_ON(comm), MT_WILD(src, tg), R.peer = (src) == MPI_ANY_SOURCE ? -1 : mt_world(CI, src), \
     R.tag = (tg), R.bytes_recv = MT_BYTES(count, type), \
     R.request = MT_REQ_NEW((req), CI, R.comm, 1, MT_PERSISTENT | R.flags, 1))
#define MT_PSEND_INIT(dest, tg, comm, parts, count, type, req) do { \
    MT_SEND(dest, tg, comm, count, type); R.bytes_sent *= (parts); \
    R.request = MT_REQ_NEW((req), CI, R.comm, 0, MT_PARTITIONED, 1); \
    mt_vec1(T, &R, (parts)); } while (0)
#define MT_PRECV_INIT(src, tg, comm, parts, count, type, req) do { \
    MT_ON(comm); MT_PEER(src); R.tag = (tg); R.bytes_recv = MT_BYTES(count, type) * (parts); \
    R.request = MT_REQ_NEW((req), CI, R.comm, 0, MT_PARTITIONED, 1); \
    mt_vec1(T, &R, (parts)); } while (0)
/* A request by value (start, pready*, parrived): its id and its persistence flags, looked up
 * ``how`` (mt_req_lookup's). */
#define MT_REQ_AS(req, how) do { mt_req q_; if (mt_req_get((req), &q_, (how))) { \
    R.request = q_.id; R.comm = q_.comm_id; \
    R.flags |= q_.flags & (MT_PERSISTENT | MT_PARTITIONED); } } while (0)
#define MT_REQ(req) MT_REQ_AS(req, MT_LOOK_PEEK)
/* MPI_Start: the request's activation numbered (its completion's resolve says which) */
#define MT_START(req) MT_REQ_AS(req, MT_LOOK_START)
#define MT_PREADY(req, part) do { MT_REQ(req); mt_vec1(T, &R, (part)); } while (0)
#define MT_PREADY_RANGE(req, lo, hi) do { MT_REQ(req); mt_vec2(T, &R, (lo), (hi)); } while (0)
#define MT_PARRIVED(req, part, flag) do { MT_PREADY(req, part); \
    if (*(flag)) R.flags |= MT_COMPLETED; } while (0)
#define MT_PREADY_LIST(req, n, parts) do { MT_REQ(req); int64_t *v_ = mt_vec(T, &R, n); \
    for (int i_ = 0; v_ && i_ < (n); i_++) v_[i_] = (parts)[i_]; } while (0)
/* (reqs: NULL when a Fortran twin could not convert them) */
#define MT_STARTALL(n, reqs) do { \
    mt_req *q_ = (reqs) ? (mt_req *)mt_scratch(T, sizeof(mt_req) * (size_t)((n) > 0 ? (n) : 1)) \
                        : NULL; \
    int64_t *v_ = q_ ? mt_vec(T, &R, n) : NULL; \
    if (!q_) R.vec_len = MT_VEC_DROPPED; \
    if (!v_) break; \
    mt_req_lookup((reqs), mt_where_of(T, (reqs)), (n), NULL, (n), INT64_MAX, MT_LOOK_START, q_); \
    for (int i_ = 0; i_ < (n); i_++) { v_[i_] = q_[i_].id; \
        if (q_[i_].id >= 0) R.flags |= q_[i_].flags & (MT_PERSISTENT | MT_PARTITIONED); } } while (0)

/* ---- completion: before the call, the handles (MPI nulls those it completes) and the mark
 * of the request ids (no lock); after it, mt_req_lookup finds (and removes) the entries of
 * those it completed, under one lock, looking up only those (Testany: one, not the array) ---- */
#define MT_KEEP1(req) MPI_Request H_ = *(req); mt_where W_ = mt_where_of(T, (req)); \
    int64_t mark_ = mt_req_mark(); mt_req Q_
/* scratch: Q_ (the entries, by position), S_ (statuses if the caller ignores them), H_ (the
 * handles), I_ (completed positions sorted), each rounded to 16 bytes.  KB_ NULL when there is
 * none (no memory, or a Fortran twin's reqs NULL: it could not convert them): the call is made
 * with the caller's arguments, nothing is looked up, the action says so (MT_KEPT) */
#define MT_AL16(b) (((size_t)(b) + 15) & ~(size_t)15)
#define MT_KEEPN(n, reqs) int N_ = (n) > 0 ? (n) : 0; size_t KZ_ = N_ ? (size_t)N_ : 1; \
    size_t KQ_ = MT_AL16(sizeof(mt_req) * KZ_), KS_ = MT_AL16(sizeof(MPI_Status) * KZ_), \
           KH_ = MT_AL16(sizeof(MPI_Request) * KZ_); \
    char *KB_ = (reqs) || !N_ ? (char *)mt_scratch(T, KQ_ + KS_ + KH_ + sizeof(int) * KZ_) : NULL; \
    mt_req *Q_ = (mt_req *)KB_; MPI_Status *S_ = KB_ ? (MPI_Status *)(KB_ + KQ_) : NULL; \
    MPI_Request *H_ = KB_ ? (MPI_Request *)(KB_ + KQ_ + KS_) : NULL; \
    int *I_ = KB_ ? (int *)(KB_ + KQ_ + KS_ + KH_) : NULL; (void)I_; (void)S_; \
    mt_where W_ = mt_where_of(T, (reqs)); int64_t mark_ = mt_req_mark(); \
    if (KB_ && N_) memcpy(H_, (reqs), sizeof(MPI_Request) * (size_t)N_)
#define MT_STATUSES_AFTER_KEEP(sts, n) if ((sts) == MPI_STATUSES_IGNORE && S_) (sts) = S_
/* in a completion's recipe (a do-while): without the scratch, the action without its requests */
#define MT_KEPT() if (!KB_) { R.vec_len = MT_VEC_DROPPED; break; }
#define MT_LOOK1(how) mt_req_lookup(&H_, W_, 1, NULL, 1, mark_, (how), &Q_)
#define MT_WAIT(st) do { MT_LOOK1(MT_LOOK_DONE); if (Q_.id >= 0) { R.request = Q_.id; \
    R.comm = Q_.comm_id; R.flags |= Q_.flags & (MT_PERSISTENT | MT_PARTITIONED); \
    if (Q_.recv) mt_resolve(T, &Q_, st); } } while (0)
#define MT_TEST(flag, st) do { MT_LOOK1(*(flag) ? MT_LOOK_DONE : MT_LOOK_PEEK); \
    if (Q_.id >= 0) { R.request = Q_.id; R.comm = Q_.comm_id; } \
    if (*(flag)) { R.flags |= MT_COMPLETED; if (Q_.id >= 0 && Q_.recv) mt_resolve(T, &Q_, st); } \
    } while (0)
#define MT_WAITANY(idx, st) do { MT_KEPT(); if (*(idx) != MPI_UNDEFINED) { \
    mt_req_lookup(H_, W_, N_, (idx), 1, mark_, MT_LOOK_DONE, Q_); mt_req *q_ = &Q_[*(idx)]; \
    if (q_->id >= 0) { R.request = q_->id; R.comm = q_->comm_id; \
        if (q_->recv) mt_resolve(T, q_, st); } } } while (0)
#define MT_TESTANY(idx, flag, st) do { if (*(flag) && *(idx) != MPI_UNDEFINED) { \
    R.flags |= MT_COMPLETED; MT_WAITANY(idx, st); } } while (0)
/* the vector: the ids of the positions looked up (all, or the m of pos) that were recorded */
#define MT_IDS(m, pos) do { int64_t k_ = 0; \
    for (int j_ = 0; j_ < (m); j_++) k_ += Q_[(pos) ? (pos)[j_] : j_].id >= 0; \
    int64_t *v_ = mt_vec(T, &R, k_); k_ = 0; \
    for (int j_ = 0; v_ && j_ < (m); j_++) { int64_t id_ = Q_[(pos) ? (pos)[j_] : j_].id; \
        if (id_ >= 0) v_[k_++] = id_; } } while (0)
/* statuses: NULL when a Fortran twin has none to give (mt_f_statuses) */
#define MT_ST_AT(sts, i) ((sts) ? &(sts)[i] : NULL)
#define MT_WAITALL(n, sts) do { MT_KEPT(); \
    mt_req_lookup(H_, W_, N_, NULL, N_, mark_, MT_LOOK_DONE, Q_); \
    MT_IDS(N_, (int *)NULL); for (int i_ = 0; i_ < N_; i_++) \
        if (Q_[i_].id >= 0 && Q_[i_].recv) mt_resolve(T, &Q_[i_], MT_ST_AT(sts, i_)); } while (0)
#define MT_TESTALL(n, flag, sts) do { if (*(flag)) { R.flags |= MT_COMPLETED; MT_WAITALL(n, sts); } \
    else { MT_KEPT(); mt_req_lookup(H_, W_, N_, NULL, N_, mark_, MT_LOOK_PEEK, Q_); \
        MT_IDS(N_, (int *)NULL); } } while (0)
/* (idx: NULL when a Fortran twin could not convert the indices) */
#define MT_WAITSOME(outc, idx, sts) do { int m_ = *(outc) == MPI_UNDEFINED ? 0 : *(outc); \
    if (m_ > 0) R.flags |= MT_COMPLETED; \
    if (m_ > 0 && (!(idx) || !KB_)) { R.vec_len = MT_VEC_DROPPED; break; } \
    if (m_ > 0) \
        mt_req_lookup(H_, W_, N_, mt_ascending((idx), m_, I_), m_, mark_, MT_LOOK_DONE, Q_); \
    MT_IDS(m_, (idx)); for (int j_ = 0; j_ < m_; j_++) { mt_req *q_ = &Q_[(idx)[j_]]; \
        if (q_->id >= 0 && q_->recv) mt_resolve(T, q_, MT_ST_AT(sts, j_)); } } while (0)
#define MT_REQUEST_FREE() do { MT_LOOK1(MT_LOOK_FREE); if (Q_.id >= 0) R.request = Q_.id; } while (0)
/* the request it asks to cancel (still live: its completion says whether it was cancelled) */
#define MT_CANCEL() do { MT_LOOK1(MT_LOOK_PEEK); if (Q_.id >= 0) { R.request = Q_.id; \
    R.comm = Q_.comm_id; } } while (0)

/* ---- collectives ---- */
#define MT_ROOTED(root) MT_PEER(root)
#define MT_BCAST(count, type, root, comm) do { MT_ON(comm); MT_ROOTED(root); \
    if (MT_MYRANK == (root)) R.bytes_sent = MT_BYTES(count, type); \
    else R.bytes_recv = MT_BYTES(count, type); } while (0)
#define MT_REDUCE(sbuf, count, type, root, comm) do { MT_ON(comm); MT_ROOTED(root); MT_INPLACE(sbuf); \
    R.bytes_sent = MT_BYTES(count, type); if (MT_MYRANK == (root)) R.bytes_recv = R.bytes_sent; } while (0)
#define MT_ALLREDUCE(sbuf, count, type, comm) do { MT_ON(comm); MT_INPLACE(sbuf); \
    R.bytes_sent = R.bytes_recv = MT_BYTES(count, type); } while (0)
#define MT_RSB(sbuf, rc, type, comm) do { MT_ON(comm); MT_INPLACE(sbuf); \
    R.bytes_recv = MT_BYTES(rc, type); R.bytes_sent = R.bytes_recv * MT_SIZE; } while (0)
/* (the sizes are summed whether the vector could be had or not: v_ NULL) */
#define MT_RS(sbuf, rcounts, type, comm) do { MT_ON(comm); MT_INPLACE(sbuf); int p_ = MT_SIZE; \
    int64_t z_ = mt_tsize(type), *v_ = mt_vec(T, &R, p_); R.bytes_sent = 0; \
    for (int i_ = 0; i_ < p_; i_++) { int64_t b_ = (int64_t)(rcounts)[i_] * z_; \
        R.bytes_sent += b_; if (v_) v_[i_] = b_; } \
    R.bytes_recv = p_ ? (int64_t)(rcounts)[MT_MYRANK] * z_ : 0; } while (0)
#define MT_GATHER(sbuf, sc, st, rc, rt, root, comm) do { MT_ON(comm); MT_ROOTED(root); \
    int me_ = MT_MYRANK == (root); R.bytes_sent = MT_INPLACE(sbuf) ? MT_BYTES(rc, rt) : MT_BYTES(sc, st); \
    if (me_) R.bytes_recv = MT_BYTES(rc, rt) * MT_SIZE; } while (0)
#define MT_GATHERV(sbuf, sc, st, rcounts, rt, root, comm) do { MT_ON(comm); MT_ROOTED(root); \
    int in_ = MT_INPLACE(sbuf); if (MT_MYRANK == (root)) { int p_ = MT_SIZE; \
        int64_t z_ = mt_tsize(rt), *v_ = mt_vec(T, &R, p_); \
        for (int i_ = 0; i_ < p_; i_++) { int64_t b_ = (int64_t)(rcounts)[i_] * z_; \
            R.bytes_recv += b_; if (v_) v_[i_] = b_; } \
        R.bytes_sent = in_ ? (int64_t)(rcounts)[MT_MYRANK] * z_ : MT_BYTES(sc, st); } \
    else R.bytes_sent = MT_BYTES(sc, st); } while (0)
#define MT_SCATTER(rbuf, sc, st, rc, rt, root, comm) do { MT_ON(comm); MT_ROOTED(root); \
    R.bytes_recv = MT_INPLACE(rbuf) ? MT_BYTES(sc, st) : MT_BYTES(rc, rt); \
    if (MT_MYRANK == (root)) R.bytes_sent = MT_BYTES(sc, st) * MT_SIZE; } while (0)
#define MT_SCATTERV(rbuf, scounts, st, rc, rt, root, comm) do { MT_ON(comm); MT_ROOTED(root); \
    int in_ = MT_INPLACE(rbuf); if (MT_MYRANK == (root)) { int p_ = MT_SIZE; \
        int64_t z_ = mt_tsize(st), *v_ = mt_vec(T, &R, p_); \
        for (int i_ = 0; i_ < p_; i_++) { int64_t b_ = (int64_t)(scounts)[i_] * z_; \
            R.bytes_sent += b_; if (v_) v_[i_] = b_; } \
        R.bytes_recv = in_ ? (int64_t)(scounts)[MT_MYRANK] * z_ : MT_BYTES(rc, rt); } \
    else R.bytes_recv = MT_BYTES(rc, rt); } while (0)
#define MT_ALLGATHER(sbuf, sc, st, rc, rt, comm) do { MT_ON(comm); \
    R.bytes_sent = MT_INPLACE(sbuf) ? MT_BYTES(rc, rt) : MT_BYTES(sc, st); \
    R.bytes_recv = MT_BYTES(rc, rt) * MT_SIZE; } while (0)
#define MT_ALLGATHERV(sbuf, sc, st, rcounts, rt, comm) do { MT_ON(comm); int p_ = MT_SIZE; \
    int64_t z_ = mt_tsize(rt), *v_ = mt_vec(T, &R, p_); \
    for (int i_ = 0; i_ < p_; i_++) { int64_t b_ = (int64_t)(rcounts)[i_] * z_; \
        R.bytes_recv += b_; if (v_) v_[i_] = b_; } \
    R.bytes_sent = MT_INPLACE(sbuf) ? (int64_t)(rcounts)[MT_MYRANK] * z_ : MT_BYTES(sc, st); \
    } while (0)
#define MT_ALLTOALL(sbuf, sc, st, rc, rt, comm) do { MT_ON(comm); \
    R.bytes_recv = MT_BYTES(rc, rt) * MT_SIZE; \
    R.bytes_sent = MT_INPLACE(sbuf) ? R.bytes_recv : MT_BYTES(sc, st) * MT_SIZE; } while (0)
#define MT_ALLTOALLV(sbuf, scounts, st, rcounts, rt, comm) do { MT_ON(comm); int p_ = MT_SIZE; \
    int in_ = MT_INPLACE(sbuf); int64_t *v_ = mt_vec(T, &R, 2 * (int64_t)p_); \
    int64_t zr_ = mt_tsize(rt), zs_ = in_ ? zr_ : mt_tsize(st); \
    for (int i_ = 0; i_ < p_; i_++) { \
        int64_t s_ = (int64_t)(in_ ? (rcounts)[i_] : (scounts)[i_]) * zs_; R.bytes_sent += s_; \
        int64_t r_ = (int64_t)(rcounts)[i_] * zr_; R.bytes_recv += r_; \
        if (v_) v_[i_] = s_, v_[p_ + i_] = r_; } } while (0)
#define MT_ALLTOALLW(sbuf, scounts, stypes, rcounts, rtypes, comm) do { MT_ON(comm); int p_ = MT_SIZE; \
    int in_ = MT_INPLACE(sbuf); int64_t *v_ = mt_vec(T, &R, 2 * (int64_t)p_); \
    for (int i_ = 0; i_ < p_; i_++) { \
        int64_t r_ = (int64_t)(rcounts)[i_] * mt_tsize((rtypes)[i_]); R.bytes_recv += r_; \
        int64_t s_ = in_ ? r_ : (int64_t)(scounts)[i_] * mt_tsize((stypes)[i_]); \
        R.bytes_sent += s_; \
        if (v_) v_[i_] = s_, v_[p_ + i_] = r_; } \
    } while (0)
/* the request of a non-blocking collective */
#define MT_IREQ(req) (R.request = MT_REQ_NEW((req), CI, R.comm, 0, 0, 0))

/* ---- communicators ---- */
#define MT_NEWCOMM(parent, newcomm) (MT_ON(parent), R.request = mt_comm_register(T, *(newcomm)))
#define MT_SPLIT(parent, newcomm, color, key) do { MT_NEWCOMM(parent, newcomm); \
    mt_vec2(T, &R, (color), (key)); } while (0)
/* Cartesian topologies: cart_create [dims..., periods...]; cart_sub [remain_dims...] */
#define MT_CART(parent, newcomm, ndims, dims, periods) do { MT_NEWCOMM(parent, newcomm); \
    int64_t *v_ = mt_vec(T, &R, 2 * (int64_t)(ndims)); \
    for (int d_ = 0; v_ && d_ < (ndims); d_++) { v_[d_] = (dims)[d_]; \
        v_[(ndims) + d_] = (periods)[d_] != 0; } } while (0)
#define MT_CARTSUB(parent, newcomm, remain) do { MT_NEWCOMM(parent, newcomm); int nd_ = 0; \
    if (PMPI_Cartdim_get(parent, &nd_) != MPI_SUCCESS) nd_ = 0; \
    int64_t *v_ = nd_ > 0 ? mt_vec(T, &R, nd_) : NULL; \
    for (int d_ = 0; v_ && d_ < nd_; d_++) v_[d_] = (remain)[d_] != 0; } while (0)
#define MT_FREE_PRE(comm) int32_t freed_ = mt_comm_forget(*(comm))
#define MT_FREE() (R.comm = freed_)

#endif
