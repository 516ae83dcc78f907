/* Windows of requests with constant handle reuse (issue 15): rank 0 posts W Isends of 8 bytes,
 * rank 1 W Irecvs, the even positions between the two ranks, the odd ones with MPI_PROC_NULL;
 * then both complete the window, in turn by: 0 MPI_Wait in posting order, 1 MPI_Waitall, 2 an
 * MPI_Testany loop, 3 an MPI_Waitsome loop.  MPICH returns one shared handle for the requests
 * that complete at once (every PROC_NULL one, and the sends that go out at once), and reuses a
 * freed receive's handle at once.  A barrier every 64 windows keeps the sender from running
 * far ahead.
 * usage: reqwindow WINDOWS W OUTDIR  -- writes OUTDIR/order-RANK.bin: the position in its window
 * of every completed request, in completion order (int32), for the test to rebuild the links. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    long windows = atol(argv[1]);
    int w = atoi(argv[2]), rank, k = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *buf = calloc((size_t)w, sizeof *buf);
    MPI_Request *r = malloc(sizeof *r * (size_t)w);
    int *idx = malloc(sizeof *idx * (size_t)w);
    int *order = malloc(sizeof *order * (size_t)w * (size_t)windows);
    for (long win = 0; win < windows; win++) {
        for (int i = 0; i < w; i++) {
            int peer = i % 2 ? MPI_PROC_NULL : 1 - rank;
            if (rank == 0) MPI_Isend(&buf[i], 1, MPI_DOUBLE, peer, i, MPI_COMM_WORLD, &r[i]);
            else MPI_Irecv(&buf[i], 1, MPI_DOUBLE, peer, i, MPI_COMM_WORLD, &r[i]);
        }
        switch (win % 4) {
        case 0:
            for (int i = 0; i < w; i++) {
                MPI_Wait(&r[i], MPI_STATUS_IGNORE);
                order[k++] = i;
            }
            break;
        case 1:
            MPI_Waitall(w, r, MPI_STATUSES_IGNORE);
            for (int i = 0; i < w; i++) order[k++] = i;
            break;
        case 2:
            for (int left = w; left;) {
                int i, flag;
                MPI_Testany(w, r, &i, &flag, MPI_STATUS_IGNORE);
                if (flag && i != MPI_UNDEFINED) {
                    order[k++] = i;
                    left--;
                }
            }
            break;
        default:
            for (int left = w; left;) {
                int n;
                MPI_Waitsome(w, r, &n, idx, MPI_STATUSES_IGNORE);
                for (int j = 0; j < n; j++) order[k++] = idx[j];
                left -= n;
            }
        }
        if (win % 64 == 63) MPI_Barrier(MPI_COMM_WORLD);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/order-%d.bin", argv[3], rank);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(order, sizeof *order, (size_t)k, f) != (size_t)k || fclose(f)) return 3;
    MPI_Finalize();
    return 0;
}
