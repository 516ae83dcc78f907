/* UK-MAC TeaLeaf's halo exchange (tea.f90 tea_exchange), reduced: per CG iteration, isend and
 * irecv with the left/right neighbours, an MPI_Testall (that completes or not depending on
 * arrival order), an MPI_Waitall of the same requests when the test did not complete, an
 * MPI_Waitall of zero requests (the up/down direction of a 1-D grid), a little compute and two
 * allreduces.  Usage: testall_halo ITERATIONS DOUBLES */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P, n = argc > 1 ? atoi(argv[1]) : 400, m = argc > 2 ? atoi(argv[2]) : 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    double *s = calloc(2 * m, sizeof(double)), *r = calloc(2 * m, sizeof(double)), x = 1, y;
    double *w = calloc(100000, sizeof(double));
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < P - 1 ? rank + 1 : MPI_PROC_NULL;
    for (int it = 0; it < n; it++) {
        MPI_Request q[4], none[1];
        int k = 0, done = 0;
        if (left != MPI_PROC_NULL) {
            MPI_Isend(s, m, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[k++]);
            MPI_Irecv(r, m, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &q[k++]);
        }
        if (right != MPI_PROC_NULL) {
            MPI_Isend(s + m, m, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &q[k++]);
            MPI_Irecv(r + m, m, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[k++]);
        }
        /* a compute whose length varies, so that the peer's message is there or not */
        for (int i = 0; i < ((it * 7 + rank) % 3) * 50000; i++) w[i] = w[i] * 0.5 + x;
        MPI_Testall(k, q, &done, MPI_STATUSES_IGNORE);
        if (!done) MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
        MPI_Waitall(0, none, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 100000; i++) w[i] = w[i] * 0.5 + x;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
