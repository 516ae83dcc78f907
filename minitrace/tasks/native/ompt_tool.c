/* minitrace's OMPT tool: records an OpenMP program's tasks, their dependences (address, size,
 * mode), where and when they ran, and its synchronizations, for minitrace's task simulator.
 *
 * Loaded with LD_PRELOAD (``minitrace record --openmp``): libomp finds ``ompt_start_tool`` in
 * the process, and the preload puts our ``__kmpc_omp_task_with_deps`` / ``__kmpc_omp_wait_deps``
 * before libomp's, which is how dependence sizes are known (OMPT gives only addresses).  Does
 * nothing unless MINITRACE_OMPT_DIR is set.  Each thread appends fixed 56-byte records to its
 * own buffer (no lock); at ompt_finalize_tool (program exit) the process writes them all to
 * MINITRACE_OMPT_DIR/ompt-HOST-PID.bin (an MPI rank's is matched to its rank by host and
 * pid), then a table of the task-creation code addresses
 * (dladdr).  The record kinds and their fields are listed once, in minitrace/tasks/ompt_raw.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include OMPT_HEADER

enum { R_THREAD = 1, R_PARALLEL_BEGIN, R_PARALLEL_END, R_IMPLICIT_BEGIN, R_IMPLICIT_END,
       R_TASK_CREATE, R_DEP, R_DEP_SIZED, R_EDGE, R_SCHEDULE, R_SYNC_BEGIN, R_SYNC_END,
       R_WAIT_BEGIN, R_WAIT_END };

/* time: CLOCK_MONOTONIC ns; cpu: the thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID) on the
 * records that delimit what a task computes (0 on dependence records, the bulk): task times
 * measured in CPU time do not grow when other processes take the core. */
typedef struct { uint32_t kind, thread; uint64_t time, cpu, a, b, c, d; } mt_rec;
/* A thread's records go to blocks of 8 Ki records, then twice as many each time up to 1 Mi,
 * mapped with their pages already in place (MAP_POPULATE): a page fault per 73 records in the
 * middle of the program cost more (and in its tasks' time) than placing them at once.  A
 * block's records are zeroed: its length is where kind 0 starts (block_len). */
#define BLOCK_FIRST 8192
#define BLOCK_MAX (1 << 20)
typedef struct block { struct block *next; size_t cap; mt_rec r[]; } block;
typedef struct { block *head, *tail; } tbuf;

#define MAX_THREADS 4096
static tbuf threads[MAX_THREADS];
static uint64_t next_thread, next_task = 1, next_parallel = 1;
/* Thread-local state in the static TLS block (initial-exec: the library is preloaded), not
 * reached through __tls_get_addr: after a task that streamed megabytes, every page the tool
 * touches is a TLB miss, which in a VM costs far more than the tool's own instructions. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS int my_thread = -1;
static TLS mt_rec *cursor, *limit;        /* the thread's next record, its block's end */
/* The thread's CPU clock is a system call (1-3 us here: a tenth of the overhead budget of a
 * 50 us task), so the frequent records (task creations and switches) read it at most once
 * every WINDOW_NS of wall time and carry cpu = 0 in between: minitrace interpolates their CPU
 * time linearly in wall time between the reads around them (graph.interpolate_cpu), exact
 * when the thread was not descheduled in between.  The other records (waits, regions: where
 * a thread may sleep) always read it.  A read that finds the thread got less than 95% of the
 * wall time since the previous one (it was descheduled: a loaded machine) makes every record
 * read it for the next EXACT_NS, so that the lost time is not spread over the tasks. */
#ifndef WINDOW_NS
#define WINDOW_NS 1000000
#endif
#define EXACT_NS (10 * WINDOW_NS)
/* a record less than SHARE_NS after a read takes it plus the wall time since, whatever its
 * kind (at most SHARE_NS of it could have been spent descheduled): under load, the end of a
 * task, the creation and the start of the next share one read */
#define SHARE_NS 4000
static TLS uint64_t cpu_read, cpu_read_wall, exact_until;
/* the last CPU time a record of the thread was given: a shared one (read + wall time since)
 * can pass the next read when the thread lost its core in between; records never go back */
static TLS uint64_t cpu_given;
static int enabled;
static char out_dir[4096];

int minitrace_ompt_present(void) { return enabled; }

static uint64_t clock_ns(clockid_t which) {
    struct timespec ts;
    clock_gettime(which, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static tbuf *mine(void) {
    if (my_thread < 0) {
        uint64_t t = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED);
        if (t >= MAX_THREADS) return NULL;
        my_thread = (int)t;
    }
    return &threads[my_thread];
}

static void put(uint32_t kind, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    int timed = kind != R_DEP && kind != R_DEP_SIZED && kind != R_EDGE;
    if (cursor == limit) {
        tbuf *t = mine();
        size_t cap = !t ? 0 : !t->tail ? BLOCK_FIRST
                     : t->tail->cap < BLOCK_MAX ? 2 * t->tail->cap : BLOCK_MAX;
        block *nb = cap ? mmap(NULL, sizeof(block) + cap * sizeof(mt_rec),
                               PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0) : MAP_FAILED;
        if (nb == MAP_FAILED) return;
        nb->cap = cap;
        if (t->tail) t->tail->next = nb; else t->head = nb;
        t->tail = nb;
        cursor = nb->r;
        limit = nb->r + cap;
    }
    mt_rec *r = cursor++;
    uint64_t now = timed ? clock_ns(CLOCK_MONOTONIC) : 0;   /* dependences: their order tells */
    r->thread = (uint32_t)my_thread; r->time = now;
    int frequent = kind == R_TASK_CREATE || kind == R_SCHEDULE;
    if (!timed) {
        r->cpu = 0;
    } else if (now - cpu_read_wall < SHARE_NS) {
        r->cpu = cpu_given = cpu_read + (now - cpu_read_wall);
    } else if (frequent && now < cpu_read_wall + WINDOW_NS && now >= exact_until) {
        r->cpu = 0;
    } else {
        uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        /* (signed: cpu_read may be above this read, a shared value having passed it) */
        if (cpu_read_wall && (int64_t)(cpu - cpu_read) * 20 < (int64_t)(now - cpu_read_wall) * 19)
            exact_until = now + EXACT_NS;
        if (cpu < cpu_given) cpu = cpu_given;
        r->cpu = cpu_read = cpu_given = cpu;
        cpu_read_wall = now;
    }
    r->a = a; r->b = b; r->c = c; r->d = d;
    r->kind = kind;
}

static uint64_t id_of(ompt_data_t *d) { return d ? d->value : 0; }
static uint64_t new_id(uint64_t *counter) { return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

/* ---- OMPT callbacks ---- */
static void on_thread_begin(ompt_thread_t type, ompt_data_t *thread_data) {
    put(R_THREAD, (uint64_t)type, 0, 0, 0);
    thread_data->value = (uint64_t)my_thread;
}

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *par,
                              unsigned int requested, int flags, const void *code) {
    (void)frame; (void)flags; (void)code;
    par->value = new_id(&next_parallel);
    put(R_PARALLEL_BEGIN, par->value, id_of(task), requested, 0);
}

static void on_parallel_end(ompt_data_t *par, ompt_data_t *task, int flags, const void *code) {
    (void)flags; (void)code;
    put(R_PARALLEL_END, id_of(par), id_of(task), 0, 0);
}

static void on_implicit_task(ompt_scope_endpoint_t ep, ompt_data_t *par, ompt_data_t *task,
                             unsigned int team, unsigned int index, int flags) {
    if (ep == ompt_scope_begin) {
        task->value = new_id(&next_task);
        put(R_IMPLICIT_BEGIN, task->value, id_of(par), team,
            (uint64_t)index | ((uint64_t)(uint32_t)flags << 32));
    } else {
        put(R_IMPLICIT_END, id_of(task), id_of(par), team, index);
    }
}

static void on_task_create(ompt_data_t *parent, const ompt_frame_t *frame, ompt_data_t *task,
                           int flags, int has_deps, const void *code) {
    (void)frame;
    task->value = new_id(&next_task);
    put(R_TASK_CREATE, task->value, id_of(parent),
        (uint64_t)(uint32_t)flags | ((uint64_t)(has_deps != 0) << 32), (uint64_t)code);
}

/* The addresses of the last dependences libomp's entry point was given on this thread (those of
 * the task OMPT reports next): when OMPT reports the same, its records would only repeat them. */
#define SIZED_KEPT 64
static TLS uint64_t sized_addr[SIZED_KEPT];
static TLS int sized_n = -1;

static void on_dependences(ompt_data_t *task, const ompt_dependence_t *deps, int n) {
    int same = sized_n == n;
    for (int i = 0; same && i < n; i++)
        same = sized_addr[i] == (uint64_t)deps[i].variable.ptr;
    sized_n = -1;
    if (same) return;
    for (int i = 0; i < n; i++)
        put(R_DEP, id_of(task), (uint64_t)deps[i].variable.ptr,
            (uint64_t)deps[i].dependence_type, 0);
}

static void on_task_dependence(ompt_data_t *src, ompt_data_t *sink) {
    put(R_EDGE, id_of(src), id_of(sink), 0, 0);
}

static void on_task_schedule(ompt_data_t *prior, ompt_task_status_t status, ompt_data_t *next) {
    put(R_SCHEDULE, id_of(prior), (uint64_t)status, id_of(next), (uint64_t)sched_getcpu());
}

static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t ep, ompt_data_t *par,
                           ompt_data_t *task, const void *code) {
    (void)code;
    put(ep == ompt_scope_begin ? R_SYNC_BEGIN : R_SYNC_END, id_of(task), (uint64_t)kind,
        id_of(par), 0);
}

/* the waiting part of a synchronization (libomp reports a taskgroup's region from its start) */
static void on_sync_wait(ompt_sync_region_t kind, ompt_scope_endpoint_t ep, ompt_data_t *par,
                         ompt_data_t *task, const void *code) {
    (void)code;
    put(ep == ompt_scope_begin ? R_WAIT_BEGIN : R_WAIT_END, id_of(task), (uint64_t)kind,
        id_of(par), 0);
}

/* ---- dependence sizes: libomp's entry points, wrapped ---- */
typedef struct { intptr_t base_addr; size_t len; uint8_t flag; } kmp_depend_info;

/* libomp's flag bits (in 1, out 2, mutexinoutset 4, inoutset 8) as an OMPT dependence type;
 * the NUMA node of the first byte (-2: page not yet placed, -1: unknown) goes with it */
static uint64_t mode_of(uint8_t f) {
    if (f & 8) return ompt_dependence_type_inoutset;
    if (f & 4) return ompt_dependence_type_mutexinoutset;
    if ((f & 3) == 3) return ompt_dependence_type_inout;
    return (f & 2) ? ompt_dependence_type_out : ompt_dependence_type_in;
}

/* The NUMA node of the page at p, asked of the kernel once per placed page (a per-thread
 * direct-mapped cache: one move_pages call per dependence would cost microseconds a task). */
#define PAGE_CACHE 1024
static TLS struct { uintptr_t page; int node; } page_cache[PAGE_CACHE];

static long node_of(intptr_t addr) {
    static long page_size;
    if (!page_size) page_size = sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)addr & ~(uintptr_t)(page_size - 1);
    size_t slot = (page / (uintptr_t)page_size) % PAGE_CACHE;
    if (page_cache[slot].page == page && page_cache[slot].node >= 0) return page_cache[slot].node;
    void *p = (void *)page;
    int status = -1;
    long node = syscall(SYS_move_pages, 0, 1UL, &p, NULL, &status, 0) == 0
                    ? (status >= 0 ? status : (status == -ENOENT ? -2 : -1)) : -1;
    page_cache[slot].page = page;
    page_cache[slot].node = (int)node;
    return node;
}

static void record_sized(int n, kmp_depend_info *deps) {
    if (n <= 0 || !deps) return;
    int kept = sized_n < 0 ? 0 : sized_n;
    for (int i = 0; i < n; i++, kept++) {
        if (kept < SIZED_KEPT) sized_addr[kept] = (uint64_t)deps[i].base_addr;
        put(R_DEP_SIZED, 0, (uint64_t)deps[i].base_addr, (uint64_t)deps[i].len,
            mode_of(deps[i].flag) | ((uint64_t)(int64_t)node_of(deps[i].base_addr) << 32));
    }
    sized_n = kept <= SIZED_KEPT ? kept : -1;
}

typedef int32_t (*task_with_deps_fn)(void *, int32_t, void *, int32_t, kmp_depend_info *,
                                     int32_t, kmp_depend_info *);
typedef void (*wait_deps_fn)(void *, int32_t, int32_t, kmp_depend_info *, int32_t,
                             kmp_depend_info *);

int32_t __kmpc_omp_task_with_deps(void *loc, int32_t gtid, void *task, int32_t ndeps,
                                  kmp_depend_info *deps, int32_t nnoalias,
                                  kmp_depend_info *noalias) {
    static task_with_deps_fn real;
    if (!real) real = (task_with_deps_fn)dlsym(RTLD_NEXT, "__kmpc_omp_task_with_deps");
    if (enabled) {
        sized_n = -1;
        record_sized(ndeps, deps);
        record_sized(nnoalias, noalias);
    }
    return real(loc, gtid, task, ndeps, deps, nnoalias, noalias);
}

void __kmpc_omp_wait_deps(void *loc, int32_t gtid, int32_t ndeps, kmp_depend_info *deps,
                          int32_t nnoalias, kmp_depend_info *noalias) {
    static wait_deps_fn real;
    if (!real) real = (wait_deps_fn)dlsym(RTLD_NEXT, "__kmpc_omp_wait_deps");
    if (enabled) {   /* an undeferred task's dependences (if(0)): the next task created */
        sized_n = -1;
        record_sized(ndeps, deps);
        record_sized(nnoalias, noalias);
    }
    real(loc, gtid, ndeps, deps, nnoalias, noalias);
}

/* ---- start and finish ---- */
static size_t block_len(const block *b) {
    if (b->next) return b->cap;
    size_t n = 0;
    while (n < b->cap && b->r[n].kind) n++;
    return n;
}

static void write_all(void) {
    char path[4400], host[64] = "";   /* as the PMPI shim's raw header holds it */
    gethostname(host, sizeof host - 1);
    for (char *h = host; *h; h++)
        if (*h == '/') *h = '_';
    snprintf(path, sizeof path, "%s/ompt-%s-%d.bin", out_dir, host, (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) { fprintf(stderr, "minitrace OMPT tool: cannot write %s\n", path); return; }
    uint64_t n = 0, nthreads = next_thread < MAX_THREADS ? next_thread : MAX_THREADS;
    for (uint64_t t = 0; t < nthreads; t++)
        for (block *b = threads[t].head; b; b = b->next) n += block_len(b);
    uint32_t head[4] = {0x544d4f4d /* "MOMT" */, 3, (uint32_t)sizeof(mt_rec), 0};
    fwrite(head, sizeof head, 1, f);
    fwrite(&n, sizeof n, 1, f);
    for (uint64_t t = 0; t < nthreads; t++)
        for (block *b = threads[t].head; b; b = b->next) fwrite(b->r, sizeof(mt_rec), block_len(b), f);
    /* the code addresses that created tasks: file, symbol, offset from the file's base */
    uint64_t seen[1024]; size_t nseen = 0;
    for (uint64_t t = 0; t < nthreads; t++)
        for (block *b = threads[t].head; b; b = b->next)
            for (size_t i = 0, len = block_len(b); i < len; i++) {
                if (b->r[i].kind != R_TASK_CREATE) continue;
                uint64_t code = b->r[i].d;
                size_t k = 0;
                while (k < nseen && seen[k] != code) k++;
                if (k < nseen || nseen == 1024) continue;
                seen[nseen++] = code;
                Dl_info info;
                if (code && dladdr((void *)code, &info))
                    fprintf(f, "%llu\t%s\t%s\t%llu\n", (unsigned long long)code,
                            info.dli_fname ? info.dli_fname : "", info.dli_sname ? info.dli_sname : "",
                            (unsigned long long)(code - (uint64_t)info.dli_fbase));
                else
                    fprintf(f, "%llu\t\t\t0\n", (unsigned long long)code);
            }
    fclose(f);
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
    (void)device; (void)data;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
#define CB(event, fn) set(event, (ompt_callback_t)fn)
    CB(ompt_callback_thread_begin, on_thread_begin);
    CB(ompt_callback_parallel_begin, on_parallel_begin);
    CB(ompt_callback_parallel_end, on_parallel_end);
    CB(ompt_callback_implicit_task, on_implicit_task);
    CB(ompt_callback_task_create, on_task_create);
    CB(ompt_callback_dependences, on_dependences);
    CB(ompt_callback_task_dependence, on_task_dependence);
    CB(ompt_callback_task_schedule, on_task_schedule);
    CB(ompt_callback_sync_region, on_sync_region);
    CB(ompt_callback_sync_region_wait, on_sync_wait);
#undef CB
    enabled = 1;
    return 1;
}

static void finalize(ompt_data_t *data) {
    (void)data;
    enabled = 0;
    write_all();
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime) {
    (void)omp_version; (void)runtime;
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    const char *dir = getenv("MINITRACE_OMPT_DIR");
    if (!dir || !*dir) return NULL;
    snprintf(out_dir, sizeof out_dir, "%s", dir);
    return &result;
}
