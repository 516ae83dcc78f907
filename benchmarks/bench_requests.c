/* Request-heavy MPI patterns, recording against paused blocks in one traced run (issue 15).
 *
 * usage: bench_requests QUARTETS BLOCK_MS SPEC...        SPEC = pattern:bytes:window
 * patterns (2 ranks: rank 0 sends, rank 1 receives unless said; 1 rank: it posts the window's
 * receives from itself, then its sends to itself, a window of 2 x window requests, no ack):
 *   bw        window x Isend / Irecv, Waitall, then a 4-byte acknowledgement (OSU-style bandwidth)
 *   testany   window posted as in bw, then drained by a Testany loop, then the acknowledgement
 *   waitsome  the same drained by a Waitsome loop
 *   persist   window persistent Send_init / Recv_init made once per block; Startall, Waitall, ack
 *   iallreduce  window Iallreduce of bytes/8 doubles on every rank, then Waitall
 *   rate      each rank alone: MPI_Comm_size in a loop (the cheapest recorded call: record rate)
 * Each spec is calibrated (paused) to about BLOCK_MS per block, then runs QUARTETS quartets of
 * blocks paused / recording / recording / paused (ABBA: a change of load hits both kinds alike).
 * minitrace_pause/resume are found with dlsym; without the shim every block is untraced and
 * marked so (traced column -1).  Harness calls use PMPI_ and are never recorded.
 * Each rank prints per block:  blk SPEC BLOCK TRACED SECONDS ITERS CALLS REQUESTS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, peer;
static long calls, nreqs;         /* MPI calls and requests handled by this rank in a block */
static char *sbuf, *rbuf;         /* window x bytes each */
static MPI_Request *reqs;
static int *idx;
static int ack;

static void acknowledge(void) {
    if (size == 1) return;
    if (rank == 0) MPI_Recv(&ack, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    calls++;
}

/* The window's requests (w, or 2 w on one rank); how many. */
static int post(int bytes, int w) {
    int n = 0;
    if (rank == 1 || size == 1)
        for (int i = 0; i < w; i++)
            MPI_Irecv(rbuf + (size_t)i * bytes, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[n++]);
    if (rank == 0)
        for (int i = 0; i < w; i++)
            MPI_Isend(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[n++]);
    calls += n;
    nreqs += n;
    return n;
}

static void make_persistent(int bytes, int w, int *n) {
    *n = 0;
    if (rank == 1 || size == 1)
        for (int i = 0; i < w; i++)
            MPI_Recv_init(rbuf + (size_t)i * bytes, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                          &reqs[(*n)++]);
    if (rank == 0)
        for (int i = 0; i < w; i++)
            MPI_Send_init(sbuf, bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &reqs[(*n)++]);
}

/* One iteration of a pattern; persistent requests are made by the caller. */
static void iteration(const char *pat, int bytes, int w, int np) {
    if (!strcmp(pat, "bw")) {
        int n = post(bytes, w);
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        calls++;
        acknowledge();
    } else if (!strcmp(pat, "testany")) {
        int n = post(bytes, w);
        for (int left = n; left;) {
            int i, flag;
            MPI_Testany(n, reqs, &i, &flag, MPI_STATUS_IGNORE);
            calls++;
            if (flag && i != MPI_UNDEFINED) left--;
        }
        acknowledge();
    } else if (!strcmp(pat, "waitsome")) {
        int n = post(bytes, w);
        for (int left = n; left;) {
            int out;
            MPI_Waitsome(n, reqs, &out, idx, MPI_STATUSES_IGNORE);
            calls++;
            if (out != MPI_UNDEFINED) left -= out;
        }
        acknowledge();
    } else if (!strcmp(pat, "persist")) {
        MPI_Startall(np, reqs);
        MPI_Waitall(np, reqs, MPI_STATUSES_IGNORE);
        calls += 2;
        nreqs += np;
        acknowledge();
    } else if (!strcmp(pat, "iallreduce")) {
        int n = bytes / 8;
        for (int i = 0; i < w; i++)
            MPI_Iallreduce(sbuf + (size_t)i * bytes, rbuf + (size_t)i * bytes, n, MPI_DOUBLE,
                           MPI_SUM, MPI_COMM_WORLD, &reqs[i]);
        MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
        calls += w + 1;
        nreqs += w;
    } else if (!strcmp(pat, "rate")) {
        int s;
        MPI_Comm_size(MPI_COMM_WORLD, &s);
        calls++;
    } else {
        if (rank == 0) fprintf(stderr, "unknown pattern %s\n", pat);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Seconds for iters iterations (the slowest rank), persistent requests made outside the timing. */
static double block(const char *pat, int bytes, int w, long iters) {
    int persist = !strcmp(pat, "persist"), np = 0;
    if (persist) make_persistent(bytes, w, &np);
    calls = nreqs = 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long k = 0; k < iters; k++) iteration(pat, bytes, w, np);
    double t = MPI_Wtime() - t0;
    for (int i = 0; i < np; i++) MPI_Request_free(&reqs[i]);
    return t;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_requests QUARTETS BLOCK_MS pattern:bytes:window...\n");
        return 2;
    }
    int quartets = atoi(argv[1]);
    double block_s = atof(argv[2]) / 1e3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 2) {
        if (rank == 0) fprintf(stderr, "bench_requests runs on 1 or 2 ranks\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = size == 1 ? 0 : 1 - rank;
    int (*pause_)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "minitrace_pause");
    int (*resume_)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "minitrace_resume");
    size_t cap = 0;
    int wmax = 1;
    for (int a = 3; a < argc; a++) {
        int bytes, w;
        if (sscanf(argv[a], "%*[a-z]:%d:%d", &bytes, &w) != 2 || bytes < 8 || w < 1) {
            if (rank == 0) fprintf(stderr, "bad spec %s\n", argv[a]);
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        if ((size_t)bytes * w > cap) cap = (size_t)bytes * w;
        if (w > wmax) wmax = w;
    }
    sbuf = malloc(cap);
    rbuf = malloc(cap);
    reqs = malloc(sizeof *reqs * 2 * (size_t)wmax);
    idx = malloc(sizeof *idx * 2 * (size_t)wmax);
    if (!sbuf || !rbuf || !reqs || !idx) PMPI_Abort(MPI_COMM_WORLD, 3);
    memset(sbuf, 1, cap);
    memset(rbuf, 0, cap);
    if (pause_) pause_();
    for (int a = 3; a < argc; a++) {
        char pat[32];
        int bytes, w;
        sscanf(argv[a], "%31[a-z]:%d:%d", pat, &bytes, &w);
        long iters = 1;
        for (int scaled = 0; scaled < 2;) { /* calibrate, paused: double until a quarter of a
                                               block, then scale to a block, twice */
            double t = block(pat, bytes, w, iters), tmax;
            PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (tmax >= block_s / 4 || iters >= (1L << 26)) {
                iters = (long)(iters * block_s / (tmax > 0 ? tmax : 1e-9));
                if (iters < 1) iters = 1;
                scaled++;
            } else {
                iters *= 2;
            }
        }
        for (int b = 0; b < 4 * quartets; b++) {
            int traced = (b % 4 == 1 || b % 4 == 2);
            if (pause_) traced ? resume_() : pause_();
            double t = block(pat, bytes, w, iters);
            if (pause_) pause_();
            printf("blk %s %d %d %.9f %ld %ld %ld\n", argv[a], b, pause_ ? traced : -1, t, iters,
                   calls, nreqs);
        }
        fflush(stdout);
    }
    if (resume_) resume_();
    MPI_Finalize();
    return 0;
}
