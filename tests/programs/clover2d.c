/* A 2-D halo as CloverLeaf (UK-MAC/CloverLeaf_ref, clover.f90) exchanges it.  The process
 * grid is the application's own, chosen from the global mesh's aspect ratio (chunks_y the
 * first divisor c of the size with size / c / c <= x_cells / y_cells), its ranks x fastest,
 * open, no Cartesian communicator.  Per step and field group, left then right: an isend to
 * the neighbour and an irecv from it (tags 1, 2 to the left, 2, 1 to the right), one waitall;
 * then bottom then top likewise (tags 3, 4), one waitall; an edge rank posts only its
 * existing directions'.  Message sizes follow the local extents (depth (ny + 5) doubles per
 * field across x, depth (nx + 5) across y).  Then a minimum time step (allreduce) and, every
 * 5 steps, a field summary (reduce to rank 0).
 * Usage: clover2d STEPS X_CELLS Y_CELLS (the global mesh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void post(double *snd, double *rcv, int n, int peer, int tag_send, int tag_recv,
                 MPI_Request *req) {
    MPI_Isend(snd, n, MPI_DOUBLE, peer, tag_send, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(rcv, n, MPI_DOUBLE, peer, tag_recv, MPI_COMM_WORLD, &req[1]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 10;
    int xc = argc > 2 ? atoi(argv[2]) : 64, yc = argc > 3 ? atoi(argv[3]) : 64;
    double ratio = (double)xc / yc;
    int cx = size, cy = 1;
    for (int c = 1; c <= size; c++)
        if (size % c == 0 && (double)(size / c) / c <= ratio) {
            cy = c;
            cx = size / c;
            break;
        }
    int x = rank % cx, y = rank / cx, nx = xc / cx, ny = yc / cy;
    int left = x > 0 ? rank - 1 : -1, right = x < cx - 1 ? rank + 1 : -1;
    int bottom = y > 0 ? rank - cx : -1, top = y < cy - 1 ? rank + cx : -1;
    int most = 3 * 2 * ((nx > ny ? nx : ny) + 5);
    double *buf = calloc((size_t)8 * most, sizeof(double)), sum = 0.0;
    MPI_Request req[4];
    for (int step = 0; step < steps; step++) {
        for (int fields = 1; fields <= 3; fields += 2) {   /* two exchanges of 1 and 3 fields */
            int depth = 2, n;
            n = fields * depth * (ny + 5);
            int count = 0;
            if (left >= 0) post(buf, buf + most, n, left, 1, 2, &req[count]), count += 2;
            for (long j = 0; j < 50L * nx * ny; j++) sum += 1e-9 * (double)(j & 7);
            if (right >= 0) post(buf + 2 * most, buf + 3 * most, n, right, 2, 1, &req[count]),
                count += 2;
            MPI_Waitall(count, req, MPI_STATUSES_IGNORE);
            n = fields * depth * (nx + 5);
            count = 0;
            if (bottom >= 0) post(buf + 4 * most, buf + 5 * most, n, bottom, 3, 4, &req[count]),
                count += 2;
            if (top >= 0) post(buf + 6 * most, buf + 7 * most, n, top, 4, 3, &req[count]),
                count += 2;
            MPI_Waitall(count, req, MPI_STATUSES_IGNORE);
        }
        double dt = 1.0 + sum * 1e-12 + rank, least;
        MPI_Allreduce(&dt, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        if (step % 5 == 4) {
            double mine[5] = {sum, dt, 1, 2, 3}, total[5];
            MPI_Reduce(mine, total, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("%d x %d chunks %g\n", cx, cy, sum);
    free(buf);
    MPI_Finalize();
    return 0;
}
