/* minitrace PMPI shim runtime: volume counters, crash-safe per-rank files, communicators,
 * requests, start-up and shut-down.  The clocks are in shim_clock.c, the handle tables (request
 * and communicator maps) in shim_reqmap.c.
 *
 * Raw file layout (minitrace/rawlayout.py, generated into _generated_rawlayout.h; read by
 * minitrace/merge.py):
 *   [MT_HEADER_BYTES header page: mt_file_hdr]  then  [chunk][chunk]...  (MT_CHUNK_BYTES each)
 *   chunk = record-sized slots; slot 0 is the chunk header (mt_chunk_hdr: owning thread,
 *   records committed), then records (mt_rec) and continuation records holding vectors
 *   (MT_CONT_WORDS int64 each).
 * Each thread owns one chunk at a time, written through a MAP_SHARED mapping: a record is
 * in the page cache as soon as it is written, so SIGKILL loses nothing committed.  The count
 * in the chunk header is stored (release) after the record: a reader never sees half a record.
 *
 * This file is not compiled on its own: build_shim.py prepends the generated kind codes,
 * shim_alloc.c (the shim's memory), shim_clock.c and shim_reqmap.c, and appends the other
 * runtime files and the generated wrappers
 * (generate.py RUNTIME), making one translation unit (so the hot helpers inline).
 */
#include "shim_runtime.h"
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MT_SLOTS (MT_CHUNK_BYTES / sizeof(mt_rec))
#define MT_MAX_COMMS 65536
#define MT_CYCLE 16      /* failed polls folded in cycles of up to this many (mt_absorb): a
                            rank of public Branson with two neighbours tests 2 sends, 2
                            receives and an iallreduce in turn; with cycles of 4 its 3
                            ranks took 2.4 M actions where 2 ranks took 12.7 k */
#define MT_READ_CAP_NS 20000 /* a clock read takes 1-4 us: one that took longer lost its core */

_Static_assert(sizeof(mt_file_hdr) <= MT_HEADER_BYTES, "the header fits its page");
_Static_assert(sizeof(mt_chunk_hdr) == sizeof(mt_rec), "chunk header fills slot 0");

struct mt_thread {
    mt_rec *slots;                  /* current chunk; slot 0 is its header */
    uint32_t pos, id, seq, epoch;
    int depth;                      /* >0 inside a wrapper: nested MPI calls are not traced */
    int64_t t_in, c_in, c_out, pre;
    int64_t g_t, g_cpu;             /* cputime gate: last boundary (raw clock) and CPU ns there */
    int64_t r_cpu, r_g, r_w;        /* at the last clock read: the clock, g_cpu; since: the raw
                                     * ticks of the gaps counted by their wall time */
    int perf_fd;
    struct perf_event_mmap_page *pg;
    void *scratch;
    size_t scratch_cap;
    int64_t *vec;
    int64_t vec_cap;
    void *fbuf[4];                  /* the Fortran twins' buffers (shim_fortran.c) */
    size_t fbuf_cap[4];
    const char *fcopy, *forig;      /* a Fortran twin's C copies of the caller's request */
    size_t fcopy_n, fstep;          /* INTEGERs, how many, an INTEGER's size (mt_where_of) */
    mt_rec *run[MT_CYCLE];          /* the thread's last records, oldest first, while they are
                                     * failed polls in a row in its current chunk (mt_absorb) */
    uint64_t run_sum[MT_CYCLE];     /* their check words' sums (seed + slot sums) */
    int nrun, period, phase;        /* how many; a cycle folding (the last period of them) and
                                     * the one of it the next poll must equal */
};

volatile int mt_on;                 /* tracing now: started, file open, not paused */
static int mt_started, mt_paused;
static volatile uint32_t mt_epoch;
static int mt_volume = MT_VOLUME_WALLTIME, mt_rank, mt_size;
static int mt_fold_polls;           /* fold runs of equal failed polls (mt_absorb) */
static double mt_ns_per_tick = 1.0;
static int64_t mt_gate = MT_GATE_NS, mt_read_cap = MT_READ_CAP_NS;
static int mt_fd = -1;
static mt_file_hdr *mt_hdr;
static uint32_t mt_nchunks, mt_nthreads;
static int64_t mt_req_next;
static uint64_t mt_world_key;
static MPI_Group mt_world_group = MPI_GROUP_NULL; /* made when first needed: mt_world_grp */
static pthread_mutex_t mt_group_lock = PTHREAD_MUTEX_INITIALIZER;
static const mt_comm *mt_comms[MT_MAX_COMMS];
static int32_t mt_ncomms;
static pthread_mutex_t mt_file_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mt_state_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread mt_thread *mt_self __attribute__((tls_model("initial-exec")));

/* ---- compute volume counters ---------------------------------------------------------- */
static int64_t mt_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int mt_perf_open_instructions(void) {
    if (getenv("MINITRACE_FORCE_NO_HWCOUNTER")) {
        errno = ENODEV;
        return -1;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

/* Instructions: rdpmc from the event's user page when allowed, else read(). */
static int64_t mt_instructions(mt_thread *T) {
#ifdef MT_HAVE_TSC
    struct perf_event_mmap_page *pg = T->pg;
    if (pg && pg->cap_user_rdpmc) {
        uint32_t seq, idx;
        int64_t cnt;
        do {
            seq = pg->lock;
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            idx = pg->index;
            cnt = pg->offset;
            if (idx) {
                int w = pg->pmc_width;
                int64_t pmc = (int64_t)__builtin_ia32_rdpmc((int)idx - 1);
                pmc = (int64_t)((uint64_t)pmc << (64 - w)) >> (64 - w);
                cnt += pmc;
            }
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
        } while (pg->lock != seq);
        return cnt;
    }
#endif
    uint64_t v = 0;
    if (T->perf_fd < 0 || read(T->perf_fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
    return (int64_t)v;
}

/* The volume counter at raw time t.  cputime: the thread CPU clock is a ~400 ns syscall, so it
 * is read only when more than MT_GATE_NS passed since the previous boundary; shorter gaps
 * (tight MPI loops) are counted as CPU time equal to their wall time (the thread was busy in
 * or between MPI calls).  Each read's time is added to the header (clock_reads, clock_ticks):
 * the recorder's own share of the recorded run, which the prediction's self-check takes out.
 * walltime: the merge derives volumes from the timestamps. */
static inline int64_t mt_counter(mt_thread *T, int64_t t) {
    if (mt_volume == MT_VOLUME_CPUTIME) {
        int64_t w = t - T->g_t;
        if (w > mt_gate) {
            int64_t cpu = mt_thread_cpu_ns(), d = mt_now() - t;
            /* the CPU time at t: the read's own time (1-4 us on a VM after a cache-cold
             * compute) is the recorder's, not the program's compute; a read that took longer
             * lost its core, and its wall time is not CPU time to take out (it was: the gap
             * then got 0, and the gaps after it less, by the time the thread waited) */
            if (d > mt_read_cap) d = mt_read_cap;
            cpu -= (int64_t)((double)d * mt_ns_per_tick);
            /* this gap gets what the clock says since the last read less the short gaps'
             * estimates; when those ran ahead of the clock (the thread lost its core in
             * them, under load), its share of the clock's time by wall time instead: it got
             * 0 then, and so did the gaps after it until the clock caught up.  The short
             * gaps' excess is not paid back by later gaps: the sum can pass the clock by it
             * (at most 50 us per short gap, and only where the thread lost its core) */
            int64_t truth = cpu > T->r_cpu ? cpu - T->r_cpu : 0;
            int64_t gap = truth - (T->g_cpu - T->r_g);
            if (gap < 0) gap = (int64_t)((double)truth * (double)w / (double)(w + T->r_w));
            T->g_cpu += gap;
            T->r_cpu = cpu;
            T->r_g = T->g_cpu;
            T->r_w = 0;
            if (mt_hdr) {
                __atomic_add_fetch(&mt_hdr->clock_ticks, d, __ATOMIC_RELAXED);
                __atomic_add_fetch(&mt_hdr->clock_reads, 1, __ATOMIC_RELAXED);
            }
        } else {
            T->g_cpu += (int64_t)((double)w * mt_ns_per_tick);
            T->r_w += w;
        }
        T->g_t = t;
        return T->g_cpu;
    }
    if (mt_volume == MT_VOLUME_INSTRUCTIONS) return mt_instructions(T);
    return 0;
}

/* ---- the per-rank file --------------------------------------------------------------- */
/* An error's text without the translation strerror looks up, which takes blocks of the
 * program's heap (shim_alloc.c): a program whose recording stopped goes on as untraced. */
static const char *mt_strerror(int err) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *d = strerrordesc_np(err);
    return d ? d : "unknown error";
#else
    return strerror(err);
#endif
}

/* Stop recording, the program going on untraced.  Once the file has a header, the header says
 * so (the merge then marks the trace incomplete); every rank warns (each fails on its own),
 * once. */
static void mt_disable(const char *what, int err) {
    static int once;
    mt_on = 0;
    mt_started = 0;
    if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL)) return; /* another thread said it */
    if (mt_hdr) {
        snprintf(mt_hdr->disabled_what, sizeof mt_hdr->disabled_what, "%s", what);
        mt_hdr->disabled_errno = err;
        __atomic_store_n(&mt_hdr->disabled, 1, __ATOMIC_RELEASE);
        msync(mt_hdr, MT_HEADER_BYTES, MS_ASYNC);
    }
    fprintf(stderr, "minitrace: rank %d: tracing disabled: %s: %s\n", mt_rank, what,
            mt_strerror(err));
}

/* Chunks are provisioned ahead by a helper thread.  On this kind of machine (and any VM that
 * returns freed guest pages to the host) bringing a new page into the page cache costs 2-8 us,
 * i.e. ~100 ns per record if the recording thread pays it.  The helper maps the next chunks and
 * pre-faults them writable (MADV_POPULATE_WRITE) while the threads record into the current
 * ones; it also unmaps full chunks.  A recording thread only swaps pointers, and maps a chunk
 * itself (faulting its pages as it writes) only when the helper is behind.  Crash safety is
 * unchanged: every chunk is a MAP_SHARED window of the file from the start. */
#define MT_READY 2               /* chunks kept mapped ahead */
#define MT_POPULATE_STEP (256u << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static void *mt_ready[MT_READY], *mt_spent[64];
static int mt_made, mt_populated; /* chunks the helper made ready, and pre-faulted */
static int mt_nready, mt_nspent, mt_helper_on;
static uint64_t mt_swaps, mt_behind, mt_swap_ns; /* chunk swaps, those the helper was behind
                                                    * for, and their time (MINITRACE_STATS) */
static pthread_mutex_t mt_prov_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mt_prov_cv = PTHREAD_COND_INITIALIZER;

/* The chunks' windows, in one range reserved at start-up (PROT_NONE, nothing committed): the
 * kernel places a file mapping of 2 MiB or more at an address congruent to its offset modulo
 * 2 MiB, which put the chunks, and the program's large buffers mapped below them, at the same
 * offset in every recording (shim_alloc.c says what that changed).  A window is mapped over its
 * slot (MAP_FIXED) and given back to the reservation when spent; when all are in use (more
 * threads than slots), a chunk is mapped where the kernel puts it.
 * The reservation counts against an address-space limit (ulimit -v, RLIMIT_AS) although it
 * commits nothing: under a limit it takes at most 1/16 of what the program has left (a rank
 * records into 1 + MT_READY chunks per thread at once), and none below MT_MIN_WINDOWS slots,
 * the chunks then mapped where the kernel puts them, as before the reservation; each rank
 * says so on stderr (minitrace record passes it on), as the chunks' placement is then alike
 * in every recording. */
#define MT_WINDOWS 64
#define MT_MIN_WINDOWS 4
static char *mt_windows;                  /* mt_nwindows slots of MT_CHUNK_BYTES, or NULL */
static int mt_nwindows;
static uint64_t mt_window_used;           /* a bit per slot; under mt_window_lock */
static pthread_mutex_t mt_window_lock = PTHREAD_MUTEX_INITIALIZER;

/* The process's mapped bytes (VmSize: what RLIMIT_AS limits), 0 if unknown. */
static uint64_t mt_mapped_bytes(void) {
    char buf[64];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void mt_windows_reserve(void) {
    int n = MT_WINDOWS;
    struct rlimit lim;
    uint64_t used = 0;
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        used = mt_mapped_bytes();
        uint64_t room = lim.rlim_cur > used ? (uint64_t)lim.rlim_cur - used : 0;
        uint64_t fit = room / 16 / MT_CHUNK_BYTES;
        n = fit < MT_WINDOWS ? (int)fit : MT_WINDOWS;
        if (n < MT_MIN_WINDOWS) n = 0;
    }
    int err = 0;
    if (n) {
        size_t len = (size_t)n * MT_CHUNK_BYTES + 4096; /* one page more: not aligned */
        void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            err = errno;
            n = 0;
        } else {
            mt_windows = (char *)p;
        }
    }
    mt_nwindows = n;
    if (n == MT_WINDOWS) return;
    char why[160];
    if (err)
        snprintf(why, sizeof why, "reserving address space failed (%s)", mt_strerror(err));
    else
        snprintf(why, sizeof why, "address-space limit (ulimit -v %llu KiB, %llu KiB mapped)",
                 (unsigned long long)lim.rlim_cur >> 10, (unsigned long long)used >> 10);
    if (n)
        fprintf(stderr, "minitrace: rank %d: %s: the raw file's chunks reserve %d MiB of "
                "address space, not %d\n", mt_rank, why, n * (MT_CHUNK_BYTES >> 20),
                MT_WINDOWS * (MT_CHUNK_BYTES >> 20));
    else
        fprintf(stderr, "minitrace: rank %d: %s: no address space reserved for the raw file's "
                "chunks, mapped where the kernel puts them (at the same offset modulo 2 MiB in "
                "every recording)\n", mt_rank, why);
}

static void *mt_chunk_window(int fd, off_t off) {
    int slot = -1;
    uint64_t all = mt_nwindows == 64 ? ~0ull : (1ull << mt_nwindows) - 1;
    pthread_mutex_lock(&mt_window_lock);
    if (mt_windows && (all & ~mt_window_used)) {
        slot = __builtin_ctzll(all & ~mt_window_used);
        mt_window_used |= 1ull << slot;
    }
    pthread_mutex_unlock(&mt_window_lock);
    if (slot < 0) return mmap(NULL, MT_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    void *p = mmap(mt_windows + (size_t)slot * MT_CHUNK_BYTES, MT_CHUNK_BYTES,
                   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off);
    if (p == MAP_FAILED) { /* the slot stays reserved (PROT_NONE) and free */
        pthread_mutex_lock(&mt_window_lock);
        mt_window_used &= ~(1ull << slot);
        pthread_mutex_unlock(&mt_window_lock);
    }
    return p;
}

/* Unmap a spent chunk: a window goes back to the reservation.  If that fails (no room for
 * another mapping: vm.max_map_count), the chunk stays mapped in its slot, its pages dropped
 * from the process (they stay in the file), and the slot is free: the next chunk is mapped
 * over it.  Only a slot the failed call left unmapped (madvise: ENOMEM) is not used again:
 * the program may have mapped something there since. */
static void mt_chunk_unmap(void *p) {
    char *c = (char *)p;
    if (!mt_windows || c < mt_windows || c >= mt_windows + (size_t)mt_nwindows * MT_CHUNK_BYTES) {
        munmap(p, MT_CHUNK_BYTES);
        return;
    }
    if (mmap(c, MT_CHUNK_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
             -1, 0) == MAP_FAILED && madvise(c, MT_CHUNK_BYTES, MADV_DONTNEED))
        return;
    pthread_mutex_lock(&mt_window_lock);
    mt_window_used &= ~(1ull << ((size_t)(c - mt_windows) / MT_CHUNK_BYTES));
    pthread_mutex_unlock(&mt_window_lock);
}

/* Grow the file by one chunk and map it.  The chunk is first written with zeros by pwrite():
 * that puts its pages in the page cache about 4x cheaper than write faults on a sparse
 * (ftruncate'd) range, which must read the hole and then run the filesystem's page_mkwrite. */
static char mt_zeros[MT_POPULATE_STEP]; /* never written: in .bss, not in the library file */
static void *mt_map_chunk(int *err) {
    pthread_mutex_lock(&mt_file_lock);
    int fd = mt_fd;
    off_t off = MT_HEADER_BYTES + (off_t)mt_nchunks * MT_CHUNK_BYTES;
    if (fd >= 0) mt_nchunks++;
    pthread_mutex_unlock(&mt_file_lock);
    *err = EBADF;
    if (fd < 0) return MAP_FAILED;
    /* a write past a file-size limit (ulimit -f) raises SIGXFSZ, which ends the program: the
     * recording stops before it instead */
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        (uint64_t)off + MT_CHUNK_BYTES > (uint64_t)lim.rlim_cur) {
        *err = EFBIG;
        return MAP_FAILED;
    }
    /* a short write (the disk or a file size limit reached mid-step) is retried for the rest,
     * so that the failure is reported with the errno of the write that cannot proceed */
    for (size_t o = 0; o < MT_CHUNK_BYTES;) {
        size_t n = MT_CHUNK_BYTES - o < MT_POPULATE_STEP ? MT_CHUNK_BYTES - o : MT_POPULATE_STEP;
        ssize_t w = pwrite(fd, mt_zeros, n, off + (off_t)o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            *err = w < 0 ? errno : ENOSPC;
            return MAP_FAILED;
        }
        o += (size_t)w;
    }
    void *p = mt_chunk_window(fd, off);
    if (p == MAP_FAILED) *err = errno;
    return p;
}

static void *mt_helper(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals are not ours to take */
    pthread_mutex_lock(&mt_prov_lock);
    for (;;) {
        while (mt_nready >= MT_READY && !mt_nspent) pthread_cond_wait(&mt_prov_cv, &mt_prov_lock);
        while (mt_nspent) {
            void *old = mt_spent[--mt_nspent];
            pthread_mutex_unlock(&mt_prov_lock);
            mt_chunk_unmap(old);
            pthread_mutex_lock(&mt_prov_lock);
        }
        if (mt_nready >= MT_READY) continue;
        pthread_mutex_unlock(&mt_prov_lock);
        int err;
        char *p = (char *)mt_map_chunk(&err);
        if (p == MAP_FAILED) { /* the recording threads will meet the error themselves */
            pthread_mutex_lock(&mt_prov_lock);
            mt_helper_on = 0;
            pthread_mutex_unlock(&mt_prov_lock);
            return NULL;
        }
        pthread_mutex_lock(&mt_prov_lock);
        mt_ready[mt_nready++] = p;  /* usable at once: pages not yet faulted fault on write */
        mt_made++;
        pthread_mutex_unlock(&mt_prov_lock);
        for (size_t o = 0; o < MT_CHUNK_BYTES; o += MT_POPULATE_STEP)
            if (madvise(p + o, MT_POPULATE_STEP, MADV_POPULATE_WRITE)) break; /* < Linux 5.14 */
        pthread_mutex_lock(&mt_prov_lock);
        mt_populated++;
    }
}

/* A child forked by a traced rank (e.g. a subprocess) shares the parent's MAP_SHARED header
 * and chunks and has no helper: it must not record into them, nor mark the parent's file
 * finished or disabled (an MPI_Finalize in the child, e.g. mpi4py's atexit, reaches mt_close).
 * It forgets the parent's file altogether, so its wrappers only pass its calls on.  Of the
 * shim's locks, the child can still take the control's (minitrace_pause, _resume, _region)
 * and the allocator's: fork() takes them first (mt_fork_prepare), so that no other thread of
 * the parent holds them, mid-update, in the child, where that thread does not exist and they
 * would never be released; the other locks guard the recording, which the child never does. */
static void mt_fork_prepare(void) {
    pthread_mutex_lock(&mt_state_lock);
    pthread_mutex_lock(&mt_heap_lock);
}

static void mt_fork_parent(void) {
    pthread_mutex_unlock(&mt_heap_lock);
    pthread_mutex_unlock(&mt_state_lock);
}

static void mt_forked_child(void) {
    mt_on = 0;
    mt_started = 0;
    mt_paused = 0;
    mt_helper_on = 0;
    mt_hdr = NULL;
    mt_fd = -1;
    mt_nready = mt_nspent = 0;
    pthread_mutex_unlock(&mt_heap_lock);
    pthread_mutex_unlock(&mt_state_lock);
}

static void mt_helper_start(void) {
    pthread_atfork(mt_fork_prepare, mt_fork_parent, mt_forked_child);
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 << 10);
    mt_helper_on = pthread_create(&th, &a, mt_helper, NULL) == 0;
    pthread_attr_destroy(&a);
}

/* Wait (at most 1 s) until the helper has MT_READY chunks ready and pre-faulted, inside
 * MPI_Init: ~2 ms of CPU each on a VM, which a rank sharing its core with its helper lost in
 * its first iterations otherwise (a recorded first exchange took 0.6-5 ms, untraced 50 us). */
static void mt_helper_ready(void) {
    struct timespec nap = {0, 200000};
    for (int i = 0; i < 5000; i++) {
        pthread_mutex_lock(&mt_prov_lock);
        int done = !mt_helper_on || (mt_nready >= MT_READY && mt_populated >= mt_made);
        pthread_mutex_unlock(&mt_prov_lock);
        if (done) return;
        nanosleep(&nap, NULL);
    }
}

/* The slot sum of n consecutive slots (rawlayout.CHECK; the record's own check reads 0). */
static inline uint64_t mt_slot_sum(const void *slots, int64_t n) {
    const uint64_t *w = (const uint64_t *)slots;
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++, w += MT_REC_WORDS)
        for (int j = 0; j < MT_REC_WORDS; j++) s += w[j] * mt_check_mult[j];
    return s;
}

static inline uint32_t mt_fold(uint64_t s) { return (uint32_t)(s ^ (s >> 32)); }

/* A fresh chunk for T (the old one is full and fully committed). */
static int mt_new_chunk(mt_thread *T) {
    void *p = NULL, *old = T->slots;
    int64_t t0 = mt_mono_ns();
    pthread_mutex_lock(&mt_prov_lock);
    if (mt_nready) {
        p = mt_ready[0];
        memmove(mt_ready, mt_ready + 1, sizeof(void *) * (size_t)--mt_nready);
    }
    int helper = mt_helper_on;
    if (old && helper && mt_nspent < (int)(sizeof mt_spent / sizeof *mt_spent)) {
        mt_spent[mt_nspent++] = old;
        old = NULL;
    }
    if (helper) pthread_cond_signal(&mt_prov_cv);
    pthread_mutex_unlock(&mt_prov_lock);
    if (old) mt_chunk_unmap(old);
    __atomic_add_fetch(&mt_swaps, 1, __ATOMIC_RELAXED);
    if (!p) {
        int err;
        if (T->slots) /* not a thread's first chunk, which it always maps itself */
            __atomic_add_fetch(&mt_behind, 1, __ATOMIC_RELAXED);
        p = mt_map_chunk(&err);
        if (p == MAP_FAILED) {
            T->slots = NULL;
            mt_disable("cannot grow the raw trace file", err);
            return -1;
        }
    }
    T->slots = (mt_rec *)p;
    mt_chunk_hdr *h = (mt_chunk_hdr *)p;
    h->thread = T->id;
    h->seq = T->seq++;
    h->calib_raw = mt_now();
    h->calib_ns = mt_mono_ns();
    const uint64_t *hw = (const uint64_t *)h;
    h->check = mt_fold(hw[1] * mt_check_mult[1] + hw[2] * mt_check_mult[2] +
                       hw[3] * mt_check_mult[3]);
    T->pos = 1;
    __atomic_add_fetch(&mt_swap_ns, (uint64_t)(h->calib_ns - t0), __ATOMIC_RELAXED);
    return 0;
}

static mt_thread *mt_thread_new(void) {
    mt_thread *T = (mt_thread *)mt_calloc(1, sizeof *T);
    if (!T) return NULL;
    T->id = __atomic_fetch_add(&mt_nthreads, 1, __ATOMIC_RELAXED);
    T->perf_fd = -1;
    if (mt_volume == MT_VOLUME_INSTRUCTIONS) {
        T->perf_fd = mt_perf_open_instructions();
        if (T->perf_fd >= 0) {
            void *pg = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, T->perf_fd, 0);
            T->pg = pg == MAP_FAILED ? NULL : (struct perf_event_mmap_page *)pg;
        }
    }
    if (mt_new_chunk(T)) {
        mt_free(T);
        return NULL;
    }
    int64_t t = mt_now();
    T->g_t = t;
    T->g_cpu = T->r_cpu = T->r_g = mt_volume == MT_VOLUME_CPUTIME ? mt_thread_cpu_ns() : 0;
    T->c_out = mt_counter(T, t);
    T->epoch = mt_epoch;
    if (mt_hdr) mt_hdr->nthreads = mt_nthreads;
    mt_self = T;
    return T;
}

/* Claim n contiguous slots in T's chunk (a new chunk if they do not fit). */
static inline mt_rec *mt_room(mt_thread *T, uint32_t n) {
    if (__builtin_expect(T->pos + n > MT_SLOTS, 0) && mt_new_chunk(T)) return NULL;
    mt_rec *r = T->slots + T->pos;
    T->pos += n;
    return r;
}

static inline void mt_commit(mt_thread *T) {
    __atomic_store_n(&((mt_chunk_hdr *)T->slots)->count, (uint64_t)(T->pos - 1), __ATOMIC_RELEASE);
}

/* ---- the per-call buffers: an action's vector, the recipes' scratch --------------------
 * Tracing never breaks the traced program: when one cannot grow (no memory, e.g. under
 * ulimit -v; or past MINITRACE_SCRATCH_MAX, which tests set to make it happen), mt_vec and
 * mt_scratch return NULL, the call is made as ever, and its action is recorded without its
 * vector, vec_len MT_VEC_DROPPED (the merge counts such actions and says so: the trace is
 * incomplete).  Every recipe checks what they return. */
static size_t mt_buf_max = SIZE_MAX;

/* R's vector is dropped (R NULL: a receive's resolution is); said once per rank, on stderr. */
static void mt_dropped(mt_rec *R, const char *what, int64_t n, const char *unit) {
    static int once;
    if (R) R->vec_len = MT_VEC_DROPPED;
    if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL)) return;
    fprintf(stderr, "minitrace: rank %d: %s of %lld %s: such calls are recorded without their "
            "vectors, marked (said once)\n", mt_rank, what, (long long)n, unit);
}

/* Write R and its vector (R->vec_len words of vec) as one committed unit. */
static inline int mt_fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* One or two int32 values (sendrecv's [source, recvtag], a waitall of two requests) ride in
 * the request field when the action has no request: vec_len = -n, low word first.  One slot
 * instead of two: the page cache is what costs most per record.  Returns the values left for
 * continuation records. */
static inline int64_t mt_inline(mt_rec *R, const int64_t *vec) {
    int64_t n = R->vec_len;
    if (n > 0 && n <= 2 && R->request == -1 && R->kind < MT_INTERNAL_RESOLVE &&
        mt_fits32(vec[0]) && (n == 1 || mt_fits32(vec[1]))) {
        R->request = (int64_t)(((uint64_t)(uint32_t)(n == 2 ? vec[1] : 0) << 32) |
                               (uint32_t)vec[0]);
        R->vec_len = (int32_t)-n;
        n = 0;
    }
    return n < 0 ? 0 : n;       /* inlined, or MT_VEC_DROPPED */
}

/* A poll that found nothing: a test, testany, testall or testsome that completed no request,
 * an iprobe or improbe that found no message; with its vector, if it has one (a dropped one
 * cannot be compared). */
static inline int mt_failed_poll(const mt_rec *R) {
    switch (R->kind) {
    case MT_K_TEST: case MT_K_TESTANY: case MT_K_TESTALL: case MT_K_TESTSOME:
    case MT_K_IPROBE: case MT_K_IMPROBE:
        return !(R->flags & MT_COMPLETED) && R->vec_len != MT_VEC_DROPPED;
    }
    return 0;
}

static void mt_write(mt_thread *T, mt_rec *R, const int64_t *vec) {
    /* (a chunk is told by its number: a new one may be mapped where the last one was) */
    uint64_t chunk = (uint64_t)T->seq;
    int poll = mt_fold_polls && mt_failed_poll(R);
    T->period = 0;
    if (!poll) T->nrun = 0;
    int64_t n = mt_inline(R, vec);
    int64_t nc = (n + MT_CONT_WORDS - 1) / MT_CONT_WORDS;
    if (nc + 1 > (int64_t)MT_SLOTS - 1) { /* a vector larger than a chunk: dropped, not split */
        mt_dropped(R, "a vector longer than a chunk", n, "values");
        nc = 0;
    }
    mt_rec *r = mt_room(T, (uint32_t)(nc + 1));
    if ((uint64_t)T->seq != chunk) T->nrun = 0;   /* the run's records: a chunk given up */
    if (!r) return;
    *r = *R;
    for (int64_t c = 0; c < nc; c++) {
        uint64_t *w = (uint64_t *)(r + 1 + c);
        w[0] = MT_INTERNAL_CONT;
        int64_t k = n - c * MT_CONT_WORDS < MT_CONT_WORDS ? n - c * MT_CONT_WORDS : MT_CONT_WORDS;
        memcpy(w + 1, vec + c * MT_CONT_WORDS, (size_t)k * sizeof(int64_t));
    }
    uint64_t sum = MT_CHECK_SEED + mt_slot_sum(r, nc + 1);
    r->check = mt_fold(sum);
    mt_commit(T);
    if (poll && r->vec_len != MT_VEC_DROPPED) {   /* (mt_write may have dropped it) */
        if (T->nrun == MT_CYCLE) {
            memmove(T->run, T->run + 1, sizeof(T->run[0]) * (MT_CYCLE - 1));
            memmove(T->run_sum, T->run_sum + 1, sizeof(T->run_sum[0]) * (MT_CYCLE - 1));
            T->nrun--;
        }
        T->run[T->nrun] = r;
        T->run_sum[T->nrun++] = sum;
    } else {
        T->nrun = 0;
    }
}

/* Whether the written record p has the arguments of c (a record as mt_write would write it,
 * its vector's n values in vec, continuation records of p). */
static int mt_same(const mt_rec *p, const mt_rec *c, const int64_t *vec, int64_t n) {
    if (c->kind != p->kind || c->flags != p->flags || c->vec_len != p->vec_len ||
        c->peer != p->peer || c->tag != p->tag || c->comm != p->comm ||
        c->bytes_sent != p->bytes_sent || c->bytes_recv != p->bytes_recv ||
        c->request != p->request)
        return 0;
    for (int64_t k = 0; k < n; k++)
        if (((const int64_t *)(p + 1 + k / MT_CONT_WORDS))[1 + k % MT_CONT_WORDS] != vec[k])
            return 0;
    return 1;
}

/* Rewrite the run's record i with these volumes and times, its check word last (the check's
 * sum is linear in the words: pre_volume, volume, t_start, t_end are words 5, 6, 8, 9). */
static void mt_rewrite(mt_thread *T, int i, int64_t pre, int64_t vol, int64_t ts, int64_t te) {
    mt_rec *p = T->run[i];
    uint64_t sum = T->run_sum[i] +
        ((uint64_t)pre - (uint64_t)p->pre_volume) * mt_check_mult[5] +
        ((uint64_t)vol - (uint64_t)p->volume) * mt_check_mult[6] +
        ((uint64_t)ts - (uint64_t)p->t_start) * mt_check_mult[8] +
        ((uint64_t)te - (uint64_t)p->t_end) * mt_check_mult[9];
    p->pre_volume = pre;
    p->volume = vol;
    p->t_start = ts;
    p->t_end = te;
    __atomic_store_n(&p->check, mt_fold(sum), __ATOMIC_RELEASE);
    T->run_sum[i] = sum;
}

/* A failed poll is not written when it repeats the thread's last failed polls: one made with
 * exactly the arguments (kind, flags, peer, tag, communicator, request, sizes and vector, as
 * written) of the record p back among the thread's last records, p <= MT_CYCLE, all failed
 * polls in a row in its current chunk, and the polls after it in the same cycle of p (a loop
 * polling an iprobe and a testall in turn: public AMG/hypre) the records after it.  The
 * record it equals absorbs it: its in-call volume adds the call's, its duration the call's;
 * the first record of the cycle takes the compute before the call, and at the first fold the
 * computes between the cycle's records (they move before the run, which completes nothing);
 * the cycle's records are laid back to back, ending when the call ends, so that each lasts
 * its calls' time inside MPI and the compute before the run spans the run's gaps.  Records
 * are updated in place, each check word last (a rank killed within those few stores leaves
 * one failing its check: the merge drops it as damaged).  Never across a chunk, a pause
 * (mt_enter), a record of another kind, or threads; not with walltime volumes (the merge
 * takes computes from the gaps).  1: folded. */
static int mt_absorb(mt_thread *T, mt_rec *R) {
    if (!mt_failed_poll(R)) return 0;
    mt_rec c = *R;
    int64_t n = mt_inline(&c, T->vec);
    int first, at;
    if (T->period) {
        first = T->nrun - T->period;
        at = first + T->phase;
        if (!mt_same(T->run[at], &c, T->vec, n)) return 0;
    } else {
        int p = 1;
        while (p <= T->nrun && !mt_same(T->run[T->nrun - p], &c, T->vec, n)) p++;
        if (p > T->nrun) return 0;
        T->period = p;
        T->phase = 0;
        first = at = T->nrun - p;
        int64_t pre = T->run[first]->pre_volume;
        for (int i = first + 1; i < T->nrun; i++) {  /* the computes between them move first */
            mt_rec *q = T->run[i];
            pre += q->pre_volume;
            mt_rewrite(T, i, 0, q->volume, q->t_start, q->t_end);
        }
        mt_rec *f = T->run[first];
        mt_rewrite(T, first, pre, f->volume, f->t_start, f->t_end);
    }
    T->phase = (T->phase + 1) % T->period;
    int64_t end = R->t_end;
    for (int i = T->nrun - 1; i >= first; i--) {
        mt_rec *q = T->run[i];
        int64_t d = (q->t_end - q->t_start) + (i == at ? R->t_end - R->t_start : 0);
        mt_rewrite(T, i, q->pre_volume + (i == first ? R->pre_volume : 0),
                   q->volume + (i == at ? R->volume : 0), end - d, end);
        end -= d;
    }
    if (mt_hdr) __atomic_add_fetch(&mt_hdr->folded_polls, 1, __ATOMIC_RELAXED);
    return 1;
}

static void mt_defaults(mt_thread *T, mt_rec *R, int kind) {
    R->kind = (uint8_t)kind;
    R->flags = 0;
    R->thread = (uint16_t)T->id;
    R->vec_len = 0;
    R->peer = R->tag = -1;
    R->comm = 0;
    R->check = 0;
    R->bytes_sent = R->bytes_recv = 0;
    R->pre_volume = R->volume = 0;
    R->request = -1;
}

/* Internal records (communicator definitions, strings, receive resolutions) for the merge. */
static void mt_internal(mt_thread *T, int kind, int32_t peer, int32_t tag, int64_t request,
                        int64_t bytes, const int64_t *vec, int64_t n, int64_t sent) {
    mt_rec R;
    mt_defaults(T, &R, kind);
    R.peer = peer;
    R.tag = tag;
    R.request = request;
    R.bytes_recv = bytes;
    R.bytes_sent = sent;
    R.t_start = R.t_end = mt_now();
    R.vec_len = (int32_t)n;
    mt_write(T, &R, vec);
}

/* ---- the hot path used by every wrapper ------------------------------------------------ */
static inline mt_thread *mt_enter(void) {
    if (!mt_on) return NULL;
    mt_thread *T = mt_self;
    if (__builtin_expect(T == NULL, 0) && !(T = mt_thread_new())) return NULL;
    if (T->depth) return NULL;
    T->depth = 1;
    int64_t t = mt_now();
    int64_t c = mt_counter(T, t);
    if (__builtin_expect(T->epoch != mt_epoch, 0)) { /* resumed: the paused gap is not compute */
        T->epoch = mt_epoch;
        T->c_out = c;
        T->nrun = T->period = 0;
    }
    T->t_in = t;
    T->c_in = c;
    T->pre = c - T->c_out;
    return T;
}

static inline void mt_leave(mt_thread *T, mt_rec *R, int kind) {
    int64_t t = mt_now();
    int64_t c = mt_counter(T, t);
    mt_defaults(T, R, kind);
    R->pre_volume = T->pre;
    R->volume = c - T->c_in;
    R->t_start = T->t_in;
    R->t_end = t;
    T->c_out = c;
}

static inline void mt_emit(mt_thread *T, mt_rec *R) {
    if (!T->nrun || !mt_absorb(T, R)) mt_write(T, R, T->vec);
    T->depth = 0;
    T->fcopy = NULL;
}

/* Where the request variable p is (mt_req.where): p itself, or, for a Fortran twin's C copy
 * (Open MPI: its handles are pointers, not INTEGERs), the caller's INTEGER it stands for, so
 * that a post and a completion through different copies name the same variable. */
static mt_where mt_where_of(mt_thread *T, const MPI_Request *p) {
    uintptr_t c = (uintptr_t)p, first = (uintptr_t)(T ? T->fcopy : NULL);
    if (first && c >= first && c < first + T->fcopy_n * sizeof(MPI_Request))
        return (mt_where){T->forig + (c - first) / sizeof(MPI_Request) * T->fstep, T->fstep};
    return (mt_where){(const char *)p, sizeof(MPI_Request)};
}

/* Grow *buf (capacity *cap bytes) to `bytes`; 0 when it cannot (left as it was). */
static int mt_grow(void **buf, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return 1;
    void *p = bytes <= mt_buf_max ? mt_realloc(*buf, bytes) : NULL;
    if (!p) return 0;
    *buf = p;
    *cap = bytes;
    return 1;
}

/* The most values a vector can have: what a chunk holds after its header and the record. */
#define MT_VEC_MAX ((int64_t)(MT_SLOTS - 2) * MT_CONT_WORDS)

/* Room for R's vector of n values (vec_len n), or NULL (vec_len MT_VEC_DROPPED). */
static int64_t *mt_vec(mt_thread *T, mt_rec *R, int64_t n) {
    if (n > MT_VEC_MAX) {   /* mt_write could not write it: not even allocated */
        mt_dropped(R, "a vector longer than a chunk", n, "values");
        return NULL;
    }
    if (n > T->vec_cap) {
        size_t cap = (size_t)(n < 64 ? 64 : n), bytes = (size_t)T->vec_cap * sizeof(int64_t);
        void *v = T->vec;
        if (!mt_grow(&v, &bytes, cap * sizeof(int64_t))) {
            mt_dropped(R, "no memory for a call's vector", n, "values");
            return NULL;
        }
        T->vec = (int64_t *)v;
        T->vec_cap = (int64_t)cap;
    }
    R->vec_len = (int32_t)n;
    return T->vec;
}

/* The recipes' scratch of `bytes`, or NULL (the caller drops what needed it). */
static void *mt_scratch(mt_thread *T, size_t bytes) {
    if (mt_grow(&T->scratch, &T->scratch_cap, bytes)) return T->scratch;
    mt_dropped(NULL, "no memory for a call's scratch", (int64_t)bytes, "bytes");
    return NULL;
}

/* ---- communicators ------------------------------------------------------------------- */
static int mt_world(const mt_comm *c, int r) {
    if (!c || r < 0 || r >= c->size) return -1; /* PROC_NULL, ANY_SOURCE, ROOT, unknown */
    return c->members[r];
}

/* Learn a communicator: its members' world ranks, by group translation.  Lock held. */
/* The world's group, made on the first communicator other than the world (or window group)
 * learnt: MPI keeps the world's group once made, a block of the program's heap that the shim's
 * start-up would otherwise take before the program's own (shim_alloc.c). */
static MPI_Group mt_world_grp(void) {
    pthread_mutex_lock(&mt_group_lock);
    if (mt_world_group == MPI_GROUP_NULL) PMPI_Comm_group(MPI_COMM_WORLD, &mt_world_group);
    pthread_mutex_unlock(&mt_group_lock);
    return mt_world_group;
}

static int32_t mt_comm_learn(MPI_Comm c, uint64_t key) {
    if (mt_ncomms >= MT_MAX_COMMS) return -1;
    int world = key == mt_world_key, inter = 0, n = mt_size, me = mt_rank;
    MPI_Group g = MPI_GROUP_NULL;
    if (!world) {
        PMPI_Comm_test_inter(c, &inter);
        if ((inter ? PMPI_Comm_remote_group(c, &g) : PMPI_Comm_group(c, &g)) != MPI_SUCCESS)
            return -1;
        PMPI_Group_size(g, &n);
        PMPI_Comm_rank(c, &me);
    }
    mt_comm *e = (mt_comm *)mt_malloc(sizeof *e + sizeof(int) * (size_t)(n ? n : 1));
    int *ranks = (int *)mt_malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!e || !ranks) {
        mt_free(e);
        mt_free(ranks);
        if (!world) PMPI_Group_free(&g);
        return -1;
    }
    for (int i = 0; i < n; i++) ranks[i] = e->members[i] = i; /* the world's: its own ranks */
    if (!world) {
        PMPI_Group_translate_ranks(g, n, ranks, mt_world_grp(), e->members);
        PMPI_Group_free(&g);
    }
    mt_free(ranks);
    e->size = n;
    e->myrank = me;
    e->inter = inter;
    int32_t id = mt_ncomms++;
    mt_req v = {.id = id, .key = key};
    mt_map_add(&mt_commmap, &v);
    __atomic_store_n(&mt_comms[id], e, __ATOMIC_RELEASE);
    mt_thread *T = mt_self;
    if (T) {
        int64_t *w = (int64_t *)mt_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (w) {
            for (int i = 0; i < n; i++) w[i] = e->members[i];
            mt_internal(T, MT_INTERNAL_COMMDEF, inter, id, -1, 0, w, n, 0);
            mt_free(w);
        }
    }
    return id;
}

/* Id of a communicator (learning it on first sight); world is the lock-free fast path. */
static inline int32_t mt_comm_of(MPI_Comm c, const mt_comm **out) {
    uint64_t key = mt_key(c);
    if (key == mt_world_key) {
        *out = mt_comms[0];
        return 0;
    }
    if (c == MPI_COMM_NULL) {
        *out = NULL;
        return -1;
    }
    pthread_mutex_lock(&mt_commmap.lock);
    mt_slot *s = mt_map_slot(&mt_commmap, key);
    int32_t id = s ? (int32_t)mt_entry(s, s->n - 1)->id : mt_comm_learn(c, key);
    pthread_mutex_unlock(&mt_commmap.lock);
    *out = id >= 0 ? mt_comms[id] : NULL;
    return id;
}

static int32_t mt_comm_register(mt_thread *T, MPI_Comm c) {
    (void)T;
    if (c == MPI_COMM_NULL) return -1;
    pthread_mutex_lock(&mt_commmap.lock);
    int32_t id = mt_comm_learn(c, mt_key(c));
    pthread_mutex_unlock(&mt_commmap.lock);
    return id;
}

static int32_t mt_comm_forget(MPI_Comm c) {
    const mt_comm *ci;
    int32_t id = mt_comm_of(c, &ci);
    if (id > 0) {
        pthread_mutex_lock(&mt_commmap.lock);
        mt_map_remove(&mt_commmap, mt_key(c), id);
        pthread_mutex_unlock(&mt_commmap.lock);
    }
    return id;
}

/* ---- requests ------------------------------------------------------------------------ */
static int64_t mt_req_new(MPI_Request r, mt_where where, const mt_comm *comm, int32_t comm_id,
                          int recv, int flags, int persistent) {
    if (r == MPI_REQUEST_NULL) return -1;
    mt_req v = {.key = mt_key(r), .where = where.at, .comm = comm, .comm_id = comm_id,
                .recv = (uint8_t)recv, .flags = (uint8_t)flags, .persistent = (uint8_t)persistent};
    pthread_mutex_lock(&mt_reqs.lock);
    /* numbered under the lock: a handle's entries are in id order (mt_pick relies on it) */
    v.id = mt_req_next;
    __atomic_store_n(&mt_req_next, v.id + 1, __ATOMIC_RELAXED);
    mt_map_add(&mt_reqs, &v);
    pthread_mutex_unlock(&mt_reqs.lock);
    return v.id;
}

/* Taken before a completion call: entries numbered from here on were made during the call
 * (another thread reusing a handle MPI freed in it) and are not what it completed.  MPI's own
 * synchronization orders that reuse after this load, so a relaxed load is enough. */
static inline int64_t mt_req_mark(void) {
    return __atomic_load_n(&mt_req_next, __ATOMIC_RELAXED);
}

/* The entries of the handles h[p] for the positions p = pos[0..k) (ascending; NULL: 0..k-1),
 * as they stood at mark, into out[p] (id -1: not recorded); how = MT_LOOK_DONE removes those
 * not persistent, MT_LOOK_FREE every one, MT_LOOK_PEEK none.  One lock for the whole call.
 * A position's entry is the one written to its variable (where.at + p * where.step), if a
 * handle has several (mt_pick).  Else a handle appearing several times in h takes its entries
 * in order, its last occurrence the newest: a position's entry is the nth newest, n being the
 * occurrences after it that stay in the table.  n matters only for a handle with several
 * entries: only then are the positions after it counted, by compares against the short list
 * of such handles (or by lookups when it is incomplete), each position once per call.  So a
 * call costs a lookup per position looked up, plus, when it completes a shared handle, up to
 * 2 x MT_WHERE compares per position and at most one compare per element of h. */
static void mt_req_lookup(const MPI_Request *h, mt_where where, int n, const int *pos, int k,
                          int64_t mark, int how, mt_req *out) {
    mt_map *m = &mt_reqs;
    pthread_mutex_lock(&m->lock);
    int listed = m->ndup == m->ndk;
    uint32_t ndk = m->ndk, stamp = ++m->stamp, seen[MT_DUPS] = {0}, named = 0;
    uint64_t dk[MT_DUPS];
    memcpy(dk, m->dk, sizeof dk);
    int i = n, last = n; /* the positions >= i are counted; the last one looked up */
    for (int j = k - 1; j >= 0; j--) {
        int p = pos ? pos[j] : j;
        if (p < 0 || p >= last) continue;
        last = p;
        mt_slot *s = mt_map_slot(m, mt_key(h[p]));
        uint32_t *c = NULL;
        for (; s && s->n > 1 && i > p; i--) { /* the positions after p; c: h[p]'s counter */
            uint64_t key = mt_key(h[i - 1]);
            c = NULL;
            if (listed) {
                for (uint32_t d = 0; d < ndk; d++)
                    if (dk[d] == key) c = &seen[d];
            } else {
                mt_slot *o = mt_map_slot(m, key);
                if (o) {
                    if (o->stamp != stamp) {
                        o->stamp = stamp;
                        o->cur = 0;
                    }
                    c = &o->cur;
                }
            }
            if (c && i - 1 > p) (*c)++; /* a later occurrence that is not looked up: it stays */
        }
        uint32_t at;
        int own;
        const void *var = where.at ? where.at + (size_t)p * where.step : NULL;
        mt_req *e = s ? mt_pick(s, mark, c ? *c : 0, var, stamp, named, &at, &own) : NULL;
        if (!e) {
            out[p].id = -1;
            if (c) (*c)++;
            continue;
        }
        if (how == MT_LOOK_START && e->persistent) {
            e->active = ++e->starts;
            e->epoch = __atomic_load_n(&mt_epoch, __ATOMIC_ACQUIRE);
        }
        out[p] = *e;
        if (how == MT_LOOK_DONE && e->persistent) e->active = 0;  /* inactive until started */
        if (how == MT_LOOK_FREE || (how == MT_LOOK_DONE && !e->persistent)) {
            mt_slot_remove(m, s, at);
        } else if (own) { /* stays, named: not the nth newest of a position without a match */
            e->named = stamp;
            named++;
        } else if (c) {
            (*c)++;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static int mt_req_get(MPI_Request r, mt_req *out, int how) {
    mt_req_lookup(&r, (mt_where){NULL, 0}, 1, NULL, 1, INT64_MAX, how, out);
    return out->id >= 0;
}

/* Sort a[0..k) in place (heapsort: glibc's qsort takes a buffer from the program's heap for
 * more than 1 KiB of data, shim_alloc.c). */
static void mt_sort_ints(int *a, int k) {
    for (int end = k, i = k / 2 - 1; end > 1; ) {
        int root;
        if (i >= 0) {
            root = i--;              /* building the heap */
        } else {
            int t = a[0];            /* the largest to the end */
            a[0] = a[--end];
            a[end] = t;
            root = 0;
        }
        for (int c; (c = 2 * root + 1) < end; root = c) {
            if (c + 1 < end && a[c + 1] > a[c]) c++;
            if (a[root] >= a[c]) break;
            int t = a[root];
            a[root] = a[c];
            a[c] = t;
        }
    }
}

/* idx[0..k) in ascending order: idx itself, or sorted into buf. */
static const int *mt_ascending(const int *idx, int k, int *buf) {
    for (int j = 1; j < k; j++)
        if (idx[j] <= idx[j - 1]) {
            memcpy(buf, idx, sizeof(int) * (size_t)k);
            mt_sort_ints(buf, k);
            return buf;
        }
    return idx;
}

static int64_t mt_tsize(MPI_Datatype t) {
    int s = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS || s == MPI_UNDEFINED)
        return 0;
    return s;
}

static int64_t mt_status_bytes(const MPI_Status *st) {
    int n = 0;
    if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED) return 0;
    return n;
}

/* A non-blocking receive completed: its real source, tag and size, for the merge to patch:
 * an irecv, or a persistent receive's activation (its number in bytes_sent; an inactive one
 * completes at once with an empty status, no message: nothing written, nor for one started
 * before a pause: which completion it had is unknown). */
static void mt_resolve(mt_thread *T, const mt_req *q, const MPI_Status *st) {
    if (!st) return;         /* a Fortran twin without room for the statuses: left unresolved */
    /* (paused since its start: its completion may have come unseen, this one empty) */
    if (q->persistent && (!q->active || q->epoch != __atomic_load_n(&mt_epoch, __ATOMIC_ACQUIRE)))
        return;
    int cancelled = 0;       /* MPI_Cancel took: no message (the status's source is undefined) */
    PMPI_Test_cancelled(st, &cancelled);
    mt_internal(T, MT_INTERNAL_RESOLVE, cancelled ? MT_CANCELLED_PEER
                : mt_world(q->comm, st->MPI_SOURCE), st->MPI_TAG, q->id,
                cancelled ? 0 : mt_status_bytes(st), NULL, 0, q->active);
}

/* ---- start-up and shut-down ---------------------------------------------------------- */
static int mt_volume_choice(void) {
    const char *v = getenv("MINITRACE_VOLUME");
    if (!v || !*v || !strcmp(v, "auto")) return MT_VOLUME_AUTO;
    if (!strcmp(v, "instructions")) return MT_VOLUME_INSTRUCTIONS;
    if (!strcmp(v, "cputime")) return MT_VOLUME_CPUTIME;
    if (!strcmp(v, "walltime")) return MT_VOLUME_WALLTIME;
    if (mt_rank == 0) fprintf(stderr, "minitrace: unknown MINITRACE_VOLUME=%s, using auto\n", v);
    return MT_VOLUME_AUTO;
}

/* instructions > cputime > walltime, unless told otherwise; an explicit instructions request
 * that the machine cannot honour falls back with one warning (tracing must go on). */
static void mt_volume_setup(void) {
    int want = mt_volume_choice();
    mt_volume = want == MT_VOLUME_AUTO ? MT_VOLUME_INSTRUCTIONS : want;
    if (mt_volume == MT_VOLUME_INSTRUCTIONS) {
        int fd = mt_perf_open_instructions();
        if (fd >= 0) {
            close(fd);
        } else {
            if (want == MT_VOLUME_INSTRUCTIONS && mt_rank == 0)
                fprintf(stderr, "minitrace: no hardware instruction counter (%s); "
                        "measuring compute volume as thread CPU time\n", mt_strerror(errno));
            mt_volume = MT_VOLUME_CPUTIME;
        }
    }
    if (mt_volume == MT_VOLUME_CPUTIME) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) mt_volume = MT_VOLUME_WALLTIME;
    }
    mt_hdr->volume_requested = (uint32_t)want;
    mt_hdr->volume = (uint32_t)mt_volume;
}

static void mt_read_cmdline(char *out, size_t cap) {
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0) return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++)
        if (!out[i]) out[i] = ' ';
    out[n > 0 ? n : 0] = 0;
}

static void mt_start(int64_t raw0, int64_t ns0, int thread_level) {
    int64_t raw1 = mt_now(), ns1 = mt_mono_ns();
    while (ns1 - ns0 < 2000000) { /* >= 2 ms between the two calibration points */
        raw1 = mt_now();
        ns1 = mt_mono_ns();
    }
    mt_ns_per_tick = (double)(ns1 - ns0) / (double)(raw1 - raw0);
    mt_gate = (int64_t)(MT_GATE_NS / mt_ns_per_tick);
    mt_read_cap = (int64_t)(MT_READ_CAP_NS / mt_ns_per_tick);
    PMPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    MPI_Comm parent = MPI_COMM_NULL;
    PMPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) return; /* spawned (MPI_Comm_spawn): not traced, its world
                                          * ranks would write over the parents' rank files */

    const char *max = getenv("MINITRACE_SCRATCH_MAX");     /* tests only: see mt_buf_max */
    if (max && *max) mt_buf_max = (size_t)strtoull(max, NULL, 10);
    const char *dir = getenv("MINITRACE_DIR");
    if (!dir || !*dir) dir = "minitrace-raw";
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%06d.mtr", dir, mt_rank);
    if (mkdir(dir, 0777) && errno != EEXIST) {
        mt_disable(dir, errno);
        return;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        mt_disable(path, errno);
        return;
    }
    void *h = MAP_FAILED;
    struct rlimit lim;      /* (past a file-size limit, ftruncate raises SIGXFSZ: mt_map_chunk) */
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        lim.rlim_cur < MT_HEADER_BYTES)
        errno = EFBIG;
    else if (ftruncate(fd, MT_HEADER_BYTES) == 0)
        h = mmap(NULL, MT_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        int err = errno;
        close(fd);
        mt_disable(path, err);
        return;
    }
    mt_fd = fd;
    mt_hdr = (mt_file_hdr *)h;
    mt_file_hdr *H = mt_hdr;
    H->version = MT_RAW_VERSION;
    H->header_bytes = MT_HEADER_BYTES;
    H->rank = (uint32_t)mt_rank;
    H->size = (uint32_t)mt_size;
    H->chunk_bytes = MT_CHUNK_BYTES;
    H->rec_bytes = sizeof(mt_rec);
    H->clock = mt_use_tsc ? MT_CLOCK_TSC : MT_CLOCK_MONOTONIC;
    H->calib[0][0] = raw0;
    H->calib[0][1] = ns0;
    H->calib[1][0] = raw1;
    H->calib[1][1] = ns1;
    H->pid = (int32_t)getpid();
    H->thread_level = thread_level;
    gethostname(H->host, sizeof H->host - 1);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    if (PMPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
        lib[len < (int)sizeof lib ? len : (int)sizeof lib - 1] = 0;
        char *nl = strchr(lib, '\n');
        if (nl) *nl = 0;
        snprintf(H->library, sizeof H->library, "%s", lib);
    }
    mt_read_cmdline(H->cmdline, sizeof H->cmdline);
    mt_volume_setup();
    const char *fold = getenv("MINITRACE_FOLD_POLLS");
    mt_fold_polls = mt_volume != MT_VOLUME_WALLTIME && !(fold && !strcmp(fold, "0"));

    mt_world_key = mt_key(MPI_COMM_WORLD);
    mt_windows_reserve(); /* before the helper: it maps chunks */
    mt_helper_start();
    mt_thread *T = mt_thread_new();
    if (!T) return;
    for (size_t o = 0; o < MT_CHUNK_BYTES; o += MT_POPULATE_STEP) /* its first chunk too */
        if (madvise((char *)T->slots + o, MT_POPULATE_STEP, MADV_POPULATE_WRITE)) break;
    mt_helper_ready();
    pthread_mutex_lock(&mt_commmap.lock);
    mt_comm_learn(MPI_COMM_WORLD, mt_world_key); /* id 0 */
    pthread_mutex_unlock(&mt_commmap.lock);
    memcpy(H->magic, MT_MAGIC, sizeof H->magic); /* the file is now readable */

    mt_rec R;
    mt_defaults(T, &R, MT_K_INIT);
    R.t_start = raw0;
    R.t_end = mt_now(); /* the shim's start-up (file, first chunk: ~4 ms) is not the program's */
    mt_write(T, &R, NULL);
    T->c_out = mt_counter(T, mt_now());
    mt_started = 1;
    mt_on = 1;
}

/* MINITRACE_STATS=1: at the end, each rank tells how its request table and its chunk
 * provisioning fared.  The counters are kept where the work is done anyway (a compare per new
 * request, a few per chunk of 52428 records): nothing to pay when the variable is unset. */
static void mt_report(void) {
    const char *v = getenv("MINITRACE_STATS");
    if (!v || !*v || !strcmp(v, "0")) return;
    pthread_mutex_lock(&mt_reqs.lock);
    fprintf(stderr, "minitrace: rank %d: stats: requests %lld live-max %llu per-handle-max %llu "
            "probe-max %llu chunk-swaps %llu helper-behind %llu swap-ms %.3f\n", mt_rank,
            (long long)mt_req_next, (unsigned long long)mt_reqs.peak,
            (unsigned long long)mt_reqs.most, (unsigned long long)mt_reqs.probe,
            (unsigned long long)mt_swaps, (unsigned long long)mt_behind, (double)mt_swap_ns / 1e6);
    pthread_mutex_unlock(&mt_reqs.lock);
}

static void mt_close(int finalized) {
    mt_on = 0;
    mt_started = 0;
    if (!mt_hdr) return;
    mt_report();
    mt_hdr->calib[2][0] = mt_now();
    mt_hdr->calib[2][1] = mt_mono_ns();
    if (finalized) mt_hdr->finalized = 1;
    else mt_hdr->aborted = 1;
    msync(mt_hdr, MT_HEADER_BYTES, MS_ASYNC);
}

/* ---- the MPI the program runs ----------------------------------------------------------
 * The shim is compiled against one MPI's mpi.h, and its wrappers have that MPI's handle types:
 * MPI_Comm is an int in MPICH's ABI, a pointer in Open MPI's.  Preloaded into a C program of
 * the other family, it would crash inside MPI_Init (MPICH's shim under Open MPI: a pointer
 * passed through a wrapper is cut to 32 bits) or abort with "Invalid communicator" (the
 * reverse).  A Python program is worse off: mpi4py's wheel takes whichever libmpi is already
 * loaded, the shim's, which then fails under the other family's launcher (MPICH cannot use
 * PMIx) or starts every rank alone (Open MPI under Hydra).  Passing the calls through untraced
 * is not possible (the wrappers' signatures are the wrong ones), so before the first PMPI call
 * the shim looks for the other family, by a symbol only its library exports (among all loaded
 * objects) and by the variable only its launcher sets, and when it finds either, exits with
 * status 1 after one line (from rank 0, or from every process when the launcher does not say
 * its rank; the others exit a second later, after its line). */
#if defined(OMPI_MAJOR_VERSION)
#define MT_MPI_BUILT "Open MPI"
#define MT_MPI_OTHER "an MPICH-family MPI"
#define MT_MPI_OTHER_SYMBOL "MPIR_Err_create_code"   /* MPICH, Intel MPI, MVAPICH, Cray MPICH */
#define MT_MPI_OTHER_LAUNCHED (getenv("PMI_RANK") && !getenv("PMIX_RANK"))     /* Hydra's PMI */
#define MT_MPI_OTHER_VAR "PMI_RANK"
#else
#define MT_MPI_BUILT "MPICH"
#define MT_MPI_OTHER "Open MPI"
#define MT_MPI_OTHER_SYMBOL "ompi_mpi_comm_world"
#define MT_MPI_OTHER_LAUNCHED (getenv("OMPI_COMM_WORLD_RANK") != NULL)   /* Open MPI's prterun */
#define MT_MPI_OTHER_VAR "OMPI_COMM_WORLD_RANK"
#endif

static int mt_says(void) {
    static const char *vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return !strcmp(v, "0");
    }
    return 1;
}

/* The address of `name` if a loaded object defines it, read from its dynamic symbol table in
 * memory (GNU or SysV hash), else NULL: dlopen and a failed dlsym took blocks of the program's
 * heap (scopes, error strings), which moved its blocks allocated later (shim_alloc.c). */
static void *mt_object_symbol(const struct dl_phdr_info *info, const char *name) {
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Sym) *sym = NULL;
    const char *str = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = dyn->d_un.d_ptr;
        if (p < info->dlpi_addr) p += info->dlpi_addr; /* not relocated by ld.so (the vDSO) */
        if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)p;
        else if (dyn->d_tag == DT_STRTAB) str = (const char *)p;
        else if (dyn->d_tag == DT_GNU_HASH) gnu = (const uint32_t *)p;
        else if (dyn->d_tag == DT_HASH) sysv = (const uint32_t *)p;
    }
    if (!sym || !str) return NULL;
    const unsigned char *n = (const unsigned char *)name;
    if (gnu) {
        uint32_t nb = gnu[0], off = gnu[1], h = 5381;
        const uint32_t *bucket = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + gnu[2]);
        const uint32_t *chain = bucket + nb;
        for (const unsigned char *c = n; *c; c++) h = h * 33 + *c;
        if (!nb || bucket[h % nb] < off) return NULL;
        for (uint32_t i = bucket[h % nb];; i++) {
            uint32_t h2 = chain[i - off];
            if ((h | 1) == (h2 | 1) && sym[i].st_shndx != SHN_UNDEF &&
                !strcmp(str + sym[i].st_name, name))
                return (void *)(info->dlpi_addr + sym[i].st_value);
            if (h2 & 1) return NULL;
        }
    }
    if (sysv && sysv[0]) {
        uint32_t h = 0;
        for (const unsigned char *c = n; *c; c++) {
            h = (h << 4) + *c;
            uint32_t g = h & 0xf0000000u;
            if (g) h ^= g >> 24;
            h &= ~g;
        }
        const uint32_t *bucket = sysv + 2, *chain = bucket + sysv[0];
        for (uint32_t i = bucket[h % sysv[0]]; i; i = chain[i])
            if (sym[i].st_shndx != SHN_UNDEF && !strcmp(str + sym[i].st_name, name))
                return (void *)(info->dlpi_addr + sym[i].st_value);
    }
    return NULL;
}

/* Whether a loaded object defines the other family's symbol: every loaded object, not only the
 * global scope, where a library loaded with RTLD_LOCAL is not. */
static int mt_defines_other(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (mt_object_symbol(info, MT_MPI_OTHER_SYMBOL)) *(const char **)found = info->dlpi_name;
    return *(const char **)found != NULL;
}

typedef struct {
    const char *name;
    void *at;
} mt_lookup;

static int mt_first_symbol(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    mt_lookup *q = (mt_lookup *)arg;
    return (q->at = mt_object_symbol(info, q->name)) != NULL;
}

/* dlsym(RTLD_DEFAULT, name) without dlsym's heap blocks: the first loaded object's definition
 * (in load order). */
static void *mt_symbol(const char *name) {
    mt_lookup q = {name, NULL};
    dl_iterate_phdr(mt_first_symbol, &q);
    return q.at;
}

static void mt_check_mpi(void) {
#ifdef MPI_ABI_VERSION
    return;       /* built for the MPI-5 ABI: every library that implements it fits */
#endif
    const char *found = NULL;
    dl_iterate_phdr(mt_defines_other, &found);
    if (!found && !MT_MPI_OTHER_LAUNCHED) return;
    if (mt_says())
        fprintf(stderr, "minitrace: the PMPI shim was built for " MT_MPI_BUILT " but the program "
                "runs " MT_MPI_OTHER " (%s): stopped before MPI_Init, as its calls cannot "
                "pass through the shim; reinstall minitrace with the program's MPI (its mpicc) "
                "and run it with that MPI's mpiexec\n",
                found ? (*found ? found : "linked into the program")
                      : "started by its launcher: " MT_MPI_OTHER_VAR " is set");
    else
        sleep(1); /* a launcher ends the job at the first rank's exit: rank 0's line goes first */
    _exit(1);
}

/* The first MPI_Init* wrapper entered, C or Fortran (shim_fortran.c), checks the MPI and starts
 * tracing; a nested one (MPICH's Fortran MPI_INIT calls its C MPI_Init) passes the call on.
 * The same for MPI_Finalize. */
static int mt_init_entered, mt_finalize_entered;

static int mt_init_begin(int64_t *raw0, int64_t *ns0) {
    if (__atomic_exchange_n(&mt_init_entered, 1, __ATOMIC_ACQ_REL)) return 0;
    mt_check_mpi();
    mt_clock_setup();
    *raw0 = mt_now();
    *ns0 = mt_mono_ns();
    return 1;
}

int MPI_Init(int *argc, char ***argv) {
    int64_t raw0, ns0;
    if (!mt_init_begin(&raw0, &ns0)) return PMPI_Init(argc, argv);
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) mt_start(raw0, ns0, -1);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int64_t raw0, ns0;
    if (!mt_init_begin(&raw0, &ns0)) return PMPI_Init_thread(argc, argv, required, provided);
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) mt_start(raw0, ns0, *provided);
    return rc;
}

static void mt_finalized(mt_thread *T) {
    if (T) {
        mt_rec R;
        mt_leave(T, &R, MT_K_FINALIZE);
        mt_emit(T, &R);
    }
    mt_close(1);
}

int MPI_Finalize(void) {
    if (__atomic_exchange_n(&mt_finalize_entered, 1, __ATOMIC_ACQ_REL)) return PMPI_Finalize();
    mt_thread *T = mt_enter();
    int rc = PMPI_Finalize();
    mt_finalized(T);
    return rc;
}

/* Before the library aborts: the abort recorded, the file closed. */
static void mt_aborting(MPI_Comm comm, int errorcode) {
    mt_thread *T = mt_enter();
    if (T) {
        mt_rec R;
        mt_leave(T, &R, MT_K_ABORT);
        const mt_comm *CI = NULL;
        MT_ON(comm);
        R.tag = errorcode;
        mt_emit(T, &R);
        mt_close(0);
    }
}

int MPI_Abort(MPI_Comm comm, int errorcode) {
    mt_aborting(comm, errorcode);
    return PMPI_Abort(comm, errorcode);
}

/* ---- control from Python (cdef'd in build_shim.py) ------------------------------------ */
int minitrace_shim_present(void) { return 1; }

int minitrace_shim_tracing(void) { return mt_on; }

static void mt_marker(int kind, int32_t tag) {
    mt_thread *T = mt_enter();
    if (!T) return;
    mt_rec R;
    mt_leave(T, &R, kind);
    R.tag = tag;
    mt_emit(T, &R);
}

int minitrace_pause(void) {
    pthread_mutex_lock(&mt_state_lock);
    if (mt_on) {
        mt_marker(MT_K_PAUSE, -1);
        mt_paused = 1;
        mt_on = 0;
    }
    pthread_mutex_unlock(&mt_state_lock);
    return mt_paused;
}

int minitrace_resume(void) {
    pthread_mutex_lock(&mt_state_lock);
    if (mt_paused && mt_started) {
        mt_paused = 0;
        __atomic_add_fetch(&mt_epoch, 1, __ATOMIC_RELEASE);
        mt_on = 1;
        mt_marker(MT_K_RESUME, -1);
    }
    pthread_mutex_unlock(&mt_state_lock);
    return mt_on;
}

/* Region names: a per-rank string table, each new name written as an internal record. */
static char **mt_strings;
static int32_t mt_nstrings;

int minitrace_region(int begin, const char *name) {
    if (!mt_on) return 0;
    pthread_mutex_lock(&mt_state_lock);
    int32_t idx = -1;
    for (int32_t i = 0; i < mt_nstrings; i++)
        if (!strcmp(mt_strings[i], name)) idx = i;
    if (idx < 0) {
        char **s = (char **)mt_realloc(mt_strings, sizeof(char *) * (size_t)(mt_nstrings + 1));
        mt_thread *T = mt_self;
        if (s && (T || (T = mt_thread_new()))) {
            mt_strings = s;
            idx = mt_nstrings++;
            mt_strings[idx] = mt_strdup(name);
            size_t n = strlen(name);
            int64_t words = (int64_t)(n + 7) / 8;
            int64_t *w = (int64_t *)mt_calloc((size_t)(words ? words : 1), sizeof(int64_t));
            if (w) {
                memcpy(w, name, n);
                mt_internal(T, MT_INTERNAL_STRING, (int32_t)n, idx, -1, 0, w, words, 0);
                mt_free(w);
            }
        }
    }
    pthread_mutex_unlock(&mt_state_lock);
    if (idx >= 0) mt_marker(begin ? MT_K_REGION_BEGIN : MT_K_REGION_END, idx);
    return idx;
}
