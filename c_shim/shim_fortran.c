/* What the Fortran twins of the wrappers share (generate.py's fortran_source): the library's
 * Fortran sentinels seen from C, statuses, request arrays and indices turned into C values, the
 * names each twin is exported under, and the hand-written twins of MPI_Init, MPI_Init_thread,
 * MPI_Finalize and MPI_Abort.
 *
 * Why twins at all: Open MPI's Fortran bindings call PMPI_* directly (MPI_SEND calls
 * PMPI_Send), so the C wrappers never see a Fortran program, not even its MPI_Init.  MPICH's
 * call the C MPI_* functions: there the twin records and the nested C wrapper passes the call
 * through (mt_enter: depth), so nothing is counted twice.  A twin calls the library's Fortran
 * profiling entry (pmpi_send_) with the caller's arguments, declared weak: a C program, which
 * loads no Fortran library, never calls a twin and needs none of them.
 *
 * Exported names: gfortran's mpi_send_, the other manglings (mpi_send__, mpi_send, MPI_SEND),
 * and for Open MPI the C-callable aliases its libmpi_mpifh exports (MPI_Send_f, MPI_Send_f08)
 * and ompi_send_f, which its `use mpi_f08` module (mpi_send_f08_) calls.  MPICH's mpi_f08
 * entries (mpi_send_f08ts_, mpi_wait_f08_) call PMPI_* directly: they have twins of their own
 * (the "f08" binding of generate.py), calling MPICH's pmpir_send_f08ts_.
 * Included by generate.py after shim_io.c, before the generated wrappers.
 */
#if MT_FORTRAN
#define MT_F_ALIAS(fn, name) extern __typeof__(fn) name __attribute__((alias(#fn)));
#if defined(OMPI_MAJOR_VERSION)
#define MT_F_OMPI_NAMES(fn, Mixed, short) \
    MT_F_ALIAS(fn, Mixed##_f) MT_F_ALIAS(fn, Mixed##_f08) MT_F_ALIAS(fn, ompi_##short##_f)
#else
#define MT_F_OMPI_NAMES(fn, Mixed, short)
#endif
#define MT_F_NAMES(fn, low, UP, Mixed, short) MT_F_ALIAS(fn, low##_) MT_F_ALIAS(fn, low##__) \
    MT_F_ALIAS(fn, low) MT_F_ALIAS(fn, UP) MT_F_OMPI_NAMES(fn, Mixed, short)

/* INTEGERs per Fortran status (MPI-4's MPI_F_STATUS_SIZE; Open MPI 4 sizes it as the C one) */
#ifdef MPI_F_STATUS_SIZE
#define MT_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define MT_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "INTEGER arrays are read as int arrays");

/* The Fortran MPI_IN_PLACE: its address in Fortran programs (MPICH keeps it in a pointer, and
 * mpi_f08's in a variable; Open MPI in a common block under each compiler's mangling), found
 * once (mt_symbol: a failed dlsym would take a block of the program's heap). */
static const void *mt_f_in_place[4], *mt_f08_in_place;
static int mt_f_ready;

static void mt_f_setup(void) {
#if defined(OMPI_MAJOR_VERSION)
    static const char *names[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place__",
                                  "mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        mt_f_in_place[i] = mt_symbol(names[i]);
#else
    const void **p = (const void **)mt_symbol("MPIR_F_MPI_IN_PLACE");
    if (p) mt_f_in_place[0] = *p;
    mt_f08_in_place = mt_symbol("MPIR_F08_MPI_IN_PLACE");
#endif
    __atomic_store_n(&mt_f_ready, 1, __ATOMIC_RELEASE);
}

/* A Fortran buffer argument as the recipes see it: MPI_IN_PLACE for Fortran's. */
static inline const void *mt_f_buf(const void *b) {
    if (__builtin_expect(!__atomic_load_n(&mt_f_ready, __ATOMIC_ACQUIRE), 0)) mt_f_setup();
    for (int i = 0; i < 4; i++)
        if (b == mt_f_in_place[i] && b) return MPI_IN_PLACE;
    return b;
}

/* An mpi_f08 choice buffer comes as an array descriptor, its address first (gfortran's and
 * TS 29113's alike). */
static inline const void *mt_f08_buf(const void *desc) {
    if (__builtin_expect(!__atomic_load_n(&mt_f_ready, __ATOMIC_ACQUIRE), 0)) mt_f_setup();
    const void *b = desc ? *(const void *const *)desc : NULL;
    return b && b == mt_f08_in_place ? MPI_IN_PLACE : b;
}

/* Per-thread buffers of the twins: 0 requests, 1 statuses the caller ignores, 2 C statuses,
 * 3 indices (mt_scratch is the recipes'); NULL when there is no room (mt_grow): the twin then
 * calls MPI with the caller's own arguments, and the recipes go without what it would hold. */
static void *mt_fbuf(mt_thread *T, int slot, size_t bytes) {
    if (mt_grow(&T->fbuf[slot], &T->fbuf_cap[slot], bytes)) return T->fbuf[slot];
    mt_dropped(NULL, "no memory for a Fortran call's buffer", (int64_t)bytes, "bytes");
    return NULL;
}

/* Where MPI writes the statuses the caller ignores (f): the twin's own, or f if it has none. */
static MPI_Fint *mt_f_own_statuses(mt_thread *T, MPI_Fint *f, size_t bytes) {
    MPI_Fint *own = (MPI_Fint *)mt_fbuf(T, 1, bytes);
    return own ? own : f;
}

/* Fortran statuses as C ones (NULL when there is no room to convert them).  MPICH's and Open
 * MPI's INTEGER status is their C MPI_Status itself (MPI_Status_f2c copies it field by field,
 * in order): read in place, no copy.  One status is converted into the twin's own (c). */
#if defined(MPICH_NUMVERSION) || defined(OMPI_MAJOR_VERSION)
#define MT_F_STATUS_IS_C (sizeof(MPI_Status) == MT_F_STATUS_SIZE * sizeof(MPI_Fint))
#else
#define MT_F_STATUS_IS_C 0
#endif
static MPI_Status *mt_f_statuses(mt_thread *T, MPI_Fint *f, int n) {
    if (MT_F_STATUS_IS_C) return (MPI_Status *)f;
    MPI_Status *st = (MPI_Status *)mt_fbuf(T, 2, sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; st && i < n; i++) PMPI_Status_f2c(f + (size_t)i * MT_F_STATUS_SIZE, &st[i]);
    return st;
}

static MPI_Status *mt_f_status(MPI_Fint *f, MPI_Status *c) {
    if (MT_F_STATUS_IS_C) return (MPI_Status *)f;
    PMPI_Status_f2c(f, c);
    return c;
}

#if defined(MPICH_NUMVERSION)
#define MT_F08_STATUS_SIZE (sizeof(MPI_F08_status) / sizeof(MPI_Fint))
static MPI_Status *mt_f08_statuses(mt_thread *T, MPI_Fint *f, int n) {
    if (sizeof(MPI_F08_status) == sizeof(MPI_Status)) return (MPI_Status *)f; /* its layout */
    MPI_Status *st = (MPI_Status *)mt_fbuf(T, 2, sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; st && i < n; i++) PMPI_Status_f082c((const MPI_F08_status *)f + i, &st[i]);
    return st;
}

static MPI_Status *mt_f08_status(MPI_Fint *f, MPI_Status *c) {
    if (sizeof(MPI_F08_status) == sizeof(MPI_Status)) return (MPI_Status *)f;
    PMPI_Status_f082c((const MPI_F08_status *)f, c);
    return c;
}
#endif

/* The caller's request variables as C requests.  Entries of one shared handle are told apart
 * by the variable each was written to (shim_reqmap.c, mt_pick; TeaLeaf's halo exchange, whose
 * eager isends share one handle under MPICH and Open MPI alike).  Under MPICH an MPI_Request
 * is the INTEGER itself: the variables are used in place.  Elsewhere (Open MPI's handles are
 * pointers) C copies, refreshed after the call, which mt_where_of maps back to the INTEGERs. */
#if defined(MPICH_NUMVERSION)
_Static_assert(sizeof(MPI_Request) == sizeof(MPI_Fint), "MPICH's requests are INTEGERs");
#define MT_F_REQUEST(name, f) MPI_Request *name = (MPI_Request *)(f)
#define MT_F_REQUEST_AGAIN(name, f) (void)0
static MPI_Request *mt_f_requests(mt_thread *T, const MPI_Fint *f, int n) {
    (void)T, (void)n;
    return (MPI_Request *)f;
}
#else
/* the copies c of the caller's INTEGERs f, noted for mt_where_of until the twin's action is
 * written (mt_emit) */
static MPI_Request *mt_f_copied(mt_thread *T, MPI_Request *c, const MPI_Fint *f, int n) {
    T->fcopy = (const char *)c;
    T->forig = (const char *)f;
    T->fcopy_n = (size_t)(n > 0 ? n : 0);
    T->fstep = sizeof(MPI_Fint);
    return c;
}
#define MT_F_REQUEST(name, f) \
    MPI_Request name##_v = PMPI_Request_f2c(*(f)), *name = mt_f_copied(T, &name##_v, (f), 1)
#define MT_F_REQUEST_AGAIN(name, f) (name##_v = PMPI_Request_f2c(*(f)))
static MPI_Request *mt_f_requests(mt_thread *T, const MPI_Fint *f, int n) {
    MPI_Request *r = (MPI_Request *)mt_fbuf(T, 0, sizeof(MPI_Request) * (size_t)(n > 0 ? n : 1));
    if (!r) return NULL;        /* the recipes go without them (MT_KEEPN, MT_STARTALL) */
    for (int i = 0; i < n; i++) r[i] = PMPI_Request_f2c(f[i]);
    return mt_f_copied(T, r, f, n);
}
#endif

static int *mt_f_indices(mt_thread *T, const MPI_Fint *f, int n) {
    int *idx = (int *)mt_fbuf(T, 3, sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; idx && i < n; i++) idx[i] = f[i] - 1;      /* (NULL: MT_WAITSOME) */
    return idx;
}

/* ---- start-up and shut-down, as their C wrappers (shim_runtime.c); MPICH's mpi_f08 forms
 * (which call PMPI_Init...) go to its pmpir_*_f08_ ---- */
typedef void mt_f_call1(MPI_Fint *ierr);
typedef void mt_f_call3(MPI_Fint *a, MPI_Fint *b, MPI_Fint *ierr);
#define MT_WEAK __attribute__((weak))  /* each: the address of a missing one is NULL */
extern mt_f_call1 pmpi_init_ MT_WEAK, pmpi_finalize_ MT_WEAK, pmpir_init_f08_ MT_WEAK,
    pmpir_finalize_f08_ MT_WEAK;
extern mt_f_call3 pmpi_init_thread_ MT_WEAK, pmpi_abort_ MT_WEAK, pmpir_init_thread_f08_ MT_WEAK,
    pmpir_abort_f08_ MT_WEAK;

static int mt_f_started(void) {
    int on = 0;
    return PMPI_Initialized(&on) == MPI_SUCCESS && on;
}

static void mt_f_init_via(mt_f_call1 *init, MPI_Fint *ierr) {
    int64_t raw0, ns0;
    int first = mt_init_begin(&raw0, &ns0);
    init(ierr);
    if (first && mt_f_started()) mt_start(raw0, ns0, -1);
}

static void mt_f_init_thread_via(mt_f_call3 *init, MPI_Fint *required, MPI_Fint *provided,
                                 MPI_Fint *ierr) {
    int64_t raw0, ns0;
    int first = mt_init_begin(&raw0, &ns0);
    init(required, provided, ierr);
    if (first && mt_f_started()) mt_start(raw0, ns0, *provided);
}

static void mt_f_finalize_via(mt_f_call1 *finalize, MPI_Fint *ierr) {
    if (__atomic_exchange_n(&mt_finalize_entered, 1, __ATOMIC_ACQ_REL)) {
        finalize(ierr);
        return;
    }
    mt_thread *T = mt_enter();
    finalize(ierr);
    mt_finalized(T);
}

static void mt_f_abort_via(mt_f_call3 *abort_, MPI_Fint *comm, MPI_Fint *errorcode,
                           MPI_Fint *ierr) {
    mt_aborting(PMPI_Comm_f2c(*comm), *errorcode);
    abort_(comm, errorcode, ierr);
}

/* The four twins of one binding (b: f or f08), calling the library's entries. */
#define MT_F_START_TWINS(b, init, init_thread, finalize, abort_) \
    static void mt_##b##_init(MPI_Fint *ierr) { mt_f_init_via(init, ierr); } \
    static void mt_##b##_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) { \
        mt_f_init_thread_via(init_thread, required, provided, ierr); } \
    static void mt_##b##_finalize(MPI_Fint *ierr) { mt_f_finalize_via(finalize, ierr); } \
    static void mt_##b##_abort(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr) { \
        mt_f_abort_via(abort_, comm, errorcode, ierr); }

MT_F_START_TWINS(f, pmpi_init_, pmpi_init_thread_, pmpi_finalize_, pmpi_abort_)
MT_F_NAMES(mt_f_init, mpi_init, MPI_INIT, MPI_Init, init)
MT_F_NAMES(mt_f_init_thread, mpi_init_thread, MPI_INIT_THREAD, MPI_Init_thread, init_thread)
MT_F_NAMES(mt_f_finalize, mpi_finalize, MPI_FINALIZE, MPI_Finalize, finalize)
MT_F_NAMES(mt_f_abort, mpi_abort, MPI_ABORT, MPI_Abort, abort)

#if defined(MPICH_NUMVERSION)
MT_F_START_TWINS(f08, pmpir_init_f08_, pmpir_init_thread_f08_, pmpir_finalize_f08_,
                 pmpir_abort_f08_)
MT_F_ALIAS(mt_f08_init, mpi_init_f08_)
MT_F_ALIAS(mt_f08_init_thread, mpi_init_thread_f08_)
MT_F_ALIAS(mt_f08_finalize, mpi_finalize_f08_)
MT_F_ALIAS(mt_f08_abort, mpi_abort_f08_)
#endif
#endif /* MT_FORTRAN */
