/* Persistent receives restarted after each completion, as public graph500's aml receives
 * (MPI_Recv_init from MPI_ANY_SOURCE/MPI_ANY_TAG + MPI_Start + MPI_Testany): rank 0 sends N
 * messages of 10 + i bytes with tag i to rank 1, which keeps NR receives of 64 bytes posted.
 * argv[1]: how rank 1 completes them (testany, waitany, test or wait). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#define N 5
#define NR 2
int main(int argc, char **argv) {
    int rank;
    char buf[NR][64], msg[64] = "x";
    const char *how = argc > 1 ? argv[1] : "testany";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < N; i++) MPI_Send(msg, 10 + i, MPI_CHAR, 1, i, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Request rq[NR];
        MPI_Status st;
        int got = 0, posted = NR;
        for (int j = 0; j < NR; j++) {
            MPI_Recv_init(buf[j], 64, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                          &rq[j]);
            MPI_Start(&rq[j]);
        }
        while (got < N) {
            int idx = 0, flag = 0;
            if (!strcmp(how, "testany")) MPI_Testany(NR, rq, &idx, &flag, &st);
            else if (!strcmp(how, "waitany")) { MPI_Waitany(NR, rq, &idx, &st); flag = 1; }
            else if (!strcmp(how, "test")) { idx = got % NR; MPI_Test(&rq[idx], &flag, &st); }
            else { idx = got % NR; MPI_Wait(&rq[idx], MPI_STATUS_IGNORE); flag = 1; }
            if (flag) {
                got++;
                if (posted < N) { MPI_Start(&rq[idx]); posted++; }
            }
        }
        MPI_Waitall(NR, rq, MPI_STATUSES_IGNORE);   /* inactive: empty statuses, no message */
        for (int j = 0; j < NR; j++) MPI_Request_free(&rq[j]);
    }
    MPI_Finalize();
    return 0;
}
