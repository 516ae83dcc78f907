/* Pre-posted receives cancelled (Quicksilver's particle buffers: each rank keeps a receive of
 * the largest buffer posted to each neighbour, messages arrive smaller, and at the end of a
 * cycle the pending receives are cancelled with MPI_Cancel, completed by MPI_Wait, and
 * MPI_Test_cancelled confirms it).  2 ranks: each round rank 0 sends a message of a size that
 * changes with the round, rank 1 receives it into a buffer of the largest size, posts the next
 * receive, and after a barrier (nothing is in flight) cancels it.  argv: rounds (default 3).
 */
#include <mpi.h>
#include <stdlib.h>
#define MAXN 1024
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3, rank, bad = 0;
    static double buf[MAXN];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int r = 0; r < rounds; r++) {
        int n = 16 * (r + 1);
        MPI_Request q;
        if (rank == 0) {
            MPI_Isend(buf, n, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Irecv(buf, MAXN, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            MPI_Irecv(buf, MAXN, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &q);  /* the next one */
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Status st;
            int cancelled;
            MPI_Cancel(&q);
            MPI_Wait(&q, &st);
            MPI_Test_cancelled(&st, &cancelled);
            bad += !cancelled;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return bad;
}
