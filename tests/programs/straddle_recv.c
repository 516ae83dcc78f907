/* Messages of one (source, tag) whose sizes straddle the eager threshold, received into
 * buffers of the largest size (LLNL Quicksilver's particle buffers: each rank keeps receives of
 * its largest buffer posted to each neighbour, the messages' sizes change from one to the next,
 * and the last receive of a cycle is cancelled).  2 ranks: rank 0 sends, alternately, a large
 * (2048 doubles) and a small (64 doubles) message on tag 5 before a barrier and completes them
 * after it; rank 1 receives them one at a time after the barrier, in the order sent (MPI does
 * not let messages of one source and tag overtake each other), then posts one more receive and
 * cancels it.  argv: pairs (default 2), cancel (default 1; 0: no last receive).
 */
#include <mpi.h>
#include <stdlib.h>
#define BIG 2048
#define SMALL 64
#define MAXPAIRS 64
int main(int argc, char **argv) {
    int pairs = argc > 1 ? atoi(argv[1]) : 2, cancel = argc > 2 ? atoi(argv[2]) : 1;
    int rank, bad = 0;
    static double buf[2 * MAXPAIRS][BIG];
    MPI_Request q[2 * MAXPAIRS];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (pairs > MAXPAIRS)
        pairs = MAXPAIRS;
    if (rank == 0)
        for (int i = 0; i < 2 * pairs; i++)
            MPI_Isend(buf[i], i % 2 ? SMALL : BIG, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, &q[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Waitall(2 * pairs, q, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        MPI_Status st;
        int n, cancelled;
        for (int i = 0; i < 2 * pairs; i++) {
            MPI_Irecv(buf[0], BIG, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &q[0]);
            MPI_Wait(&q[0], &st);
            MPI_Get_count(&st, MPI_DOUBLE, &n);
            bad += n != (i % 2 ? SMALL : BIG);
        }
        if (cancel) {
            MPI_Irecv(buf[0], BIG, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &q[0]);
            MPI_Cancel(&q[0]);
            MPI_Wait(&q[0], &st);
            MPI_Test_cancelled(&st, &cancelled);
            bad += !cancelled;
        }
    }
    MPI_Finalize();
    return bad;
}
