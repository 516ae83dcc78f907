/* Tests and waits of MPI_REQUEST_NULL, as public codes poll and wait on handles that an earlier
 * test or wait already freed (SNAP's sends, Quicksilver's waits): MPI_Test and MPI_Testall of
 * null handles complete (flag true, nothing done), MPI_Testany and MPI_Testsome of them
 * complete nothing (index and count MPI_UNDEFINED); MPI_Wait, MPI_Waitany and MPI_Waitsome
 * return at once.  Between them, one real exchange with the next rank on a ring, polled with
 * MPI_Test until done, so the trace also holds tests that complete and, each round before any
 * rank sends (a barrier between), one that does not (the poll alone completed at once in a
 * CI run: the archive then held no failed test, which the OTF2 reader's rule needs).
 * argv: rounds (default 3).
 */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double out = rank, in = 0;
    for (int r = 0; r < rounds; r++) {
        MPI_Request q[2];
        MPI_Irecv(&in, 1, MPI_DOUBLE, (rank + size - 1) % size, r, MPI_COMM_WORLD, &q[0]);
        int early = 0;                  /* no rank has sent yet: a test that does not complete */
        MPI_Test(&q[0], &early, MPI_STATUS_IGNORE);     /* (the poll below may complete at once) */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Isend(&out, 1, MPI_DOUBLE, (rank + 1) % size, r, MPI_COMM_WORLD, &q[1]);
        for (int i = 0; i < 2; i++) {
            int flag = 0;
            while (!flag) MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
        }
        int flag = 0, index, count, idx[2];
        MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE);               /* null: flag true */
        MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE);           /* all null: flag true */
        MPI_Testany(2, q, &index, &flag, MPI_STATUS_IGNORE);     /* index MPI_UNDEFINED */
        MPI_Testsome(2, q, &count, idx, MPI_STATUSES_IGNORE);    /* count MPI_UNDEFINED */
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);                      /* null: returns */
        MPI_Waitany(2, q, &index, MPI_STATUS_IGNORE);            /* index MPI_UNDEFINED */
        MPI_Waitsome(2, q, &count, idx, MPI_STATUSES_IGNORE);    /* count MPI_UNDEFINED */
        out += in;
    }
    MPI_Finalize();
    return 0;
}
