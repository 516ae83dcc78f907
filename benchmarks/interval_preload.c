/* The untraced reference of bench_accuracy.py: preloaded (LD_PRELOAD) into an MPI program
 * instead of minitrace's shim, it notes only when each rank returns from MPI_Init(_thread)
 * and when it enters MPI_Finalize (CLOCK_MONOTONIC ns), and writes them to
 * $INTERVAL_DIR/rank-N at the end: the same span the prediction's self-check takes from a
 * recording (from the last rank out of MPI_Init to each rank's MPI_Finalize), without the
 * recorder's work on every call.
 * Built by bench_accuracy.py: mpicc -O2 -shared -fPIC -o interval_preload.so interval_preload.c */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long init_end;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    init_end = now_ns();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    init_end = now_ns();
    return rc;
}

int MPI_Finalize(void) {
    long long fin = now_ns();
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("INTERVAL_DIR");
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d", dir, rank);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%lld %lld\n", init_end, fin);
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
