/* UK-MAC TeaLeaf's CG solve (tea_solve.f90) on its 2-D grid of ranks, reduced: time steps, each
 * a halo exchange of depth 2, one of depth 1, two allreduces and one more exchange before its CG
 * loop, and one exchange and an allreduce after it; each CG iteration two allreduces and an
 * exchange of depth 1.  An exchange (tea.f90 tea_exchange) posts isend and irecv with the
 * left/right neighbours, tests them (MPI_Testall, which completes them or not depending on
 * arrival order) at depth 1 or waits for them (MPI_Waitall) at depth 2, posts isend and irecv
 * with the bottom/top neighbours, waits for the left/right ones if the test did not complete
 * them, then for the bottom/top ones; a message is as long as its depth times its fields (the
 * exchange just before the CG loop carries two fields, the others one).
 * Usage: tea_steps STEPS ITERATIONS DOUBLES */
#include <mpi.h>
#include <stdlib.h>
static int left, right, bottom, top, m;
static double *s, *r, *w, v = 1, t;
static void post(int i, int len, int peer, int stag, int rtag, MPI_Request *q, int *k) {
    if (peer == MPI_PROC_NULL) return;
    MPI_Isend(s + i * len, len, MPI_DOUBLE, peer, stag, MPI_COMM_WORLD, &q[(*k)++]);
    MPI_Irecv(r + i * len, len, MPI_DOUBLE, peer, rtag, MPI_COMM_WORLD, &q[(*k)++]);
}
static void exchange(int depth, int fields, int it) {
    MPI_Request lr[4], ud[4];
    int klr = 0, kud = 0, done = 1, len = fields * depth * (m + 2 * depth), rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    post(0, len, left, 1, 2, lr, &klr);
    post(1, len, right, 2, 1, lr, &klr);
    /* a compute whose length varies, so that the peer's message is there or not */
    for (int i = 0; i < ((it * 7 + rank) % 3) * 30000; i++) w[i] = w[i] * 0.5 + v;
    if (depth == 1) MPI_Testall(klr, lr, &done, MPI_STATUSES_IGNORE);
    else MPI_Waitall(klr, lr, MPI_STATUSES_IGNORE);
    post(2, len, bottom, 3, 4, ud, &kud);
    post(3, len, top, 4, 3, ud, &kud);
    if (!done) MPI_Waitall(klr, lr, MPI_STATUSES_IGNORE);
    MPI_Waitall(kud, ud, MPI_STATUSES_IGNORE);
}
static void allsum(int work) {
    for (int i = 0; i < work; i++) w[i] = w[i] * 0.5 + v;
    MPI_Allreduce(&v, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P, steps = argc > 1 ? atoi(argv[1]) : 2, n = argc > 2 ? atoi(argv[2]) : 250;
    int dims[2] = {0, 0};
    m = argc > 3 ? atoi(argv[3]) : 100;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Dims_create(P, 2, dims);
    int x = rank % dims[0], y = rank / dims[0];
    left = x > 0 ? rank - 1 : MPI_PROC_NULL;
    right = x < dims[0] - 1 ? rank + 1 : MPI_PROC_NULL;
    bottom = y > 0 ? rank - dims[0] : MPI_PROC_NULL;
    top = y < dims[1] - 1 ? rank + dims[0] : MPI_PROC_NULL;
    s = calloc(16 * (m + 4), sizeof(double));
    r = calloc(16 * (m + 4), sizeof(double));
    w = calloc(100000, sizeof(double));
    for (int step = 0; step < steps; step++) {
        exchange(2, 1, 0);
        exchange(1, 1, 1);
        allsum(20000);
        allsum(1000);
        exchange(1, 2, 2);
        for (int it = 0; it < n + 37 * step; it++) {
            allsum(60000);
            allsum(30000);
            exchange(1, 1, it);
        }
        exchange(1, 1, 3);
        allsum(20000);
    }
    MPI_Finalize();
    return 0;
}
