/* Two ranks' loops found at other iterations (UK-MAC TeaLeaf's PPCG solve at 2 and 4 ranks):
 * a halo exchange with the other rank (irecv, isend, a little compute, waitall) whose message
 * size changes from one iteration to the next (1 to 4 times DOUBLES, drawn alike on both
 * ranks: TeaLeaf's halo depths), after 31 exchanges of DOUBLES in which rank 0 also sends
 * itself a message of a tag of the step's own, and before 31 in which rank 1 does.  Each
 * rank's loop of alike exchanges (sizes aside) then runs ITERATIONS + 31 iterations, rank 1's
 * from the first 31 exchanges, rank 0's to the last 31: iteration j of the loop starts on
 * rank 1 at the message rank 0 sent in its iteration j - 31.  Usage: shifted_halo ITERATIONS
 * DOUBLES */
#include <mpi.h>
#include <stdlib.h>
static double *s, *r, *w, *self, v = 1;
static int rank, peer;
static void step(int len, int tag) {
    MPI_Request q[2];
    MPI_Irecv(r, len, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(s, len, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &q[1]);
    if (tag) {      /* a message to itself, of a tag of its own: no two such steps alike */
        MPI_Request o;
        MPI_Isend(self, 4, MPI_DOUBLE, rank, tag, MPI_COMM_WORLD, &o);
        MPI_Recv(self + 4, 4, MPI_DOUBLE, rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&o, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 20000; i++) w[i] = w[i] * 0.5 + v;
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 400, m = argc > 2 ? atoi(argv[2]) : 127;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    s = calloc(4 * m, sizeof(double));
    r = calloc(4 * m, sizeof(double));
    self = calloc(8, sizeof(double));
    w = calloc(20000, sizeof(double));
    for (int it = 0; it < 31; it++) step(m, rank == 0 ? 100 + it : 0);
    unsigned x = 12345;
    for (int it = 0; it < n; it++) {
        x = x * 1103515245u + 12345u;
        step((1 + (x >> 16) % 4) * m, 0);
    }
    for (int it = 0; it < 31; it++) step(m, rank == 1 ? 100 + it : 0);
    MPI_Finalize();
    return 0;
}
