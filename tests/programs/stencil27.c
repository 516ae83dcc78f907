/* A 3-D 27-point halo as HPCG exchanges it, on two multigrid levels of different sizes: the
 * process grid is MPI_Dims_create's, its ranks x fastest (rank = x + px (y + py z), not the
 * C order of MPI_Cart_create), no Cartesian communicator; each rank lists its neighbours
 * (faces, edges, corners: up to 26) in increasing rank order, posts an irecv from each, a
 * blocking send to each, a wait per request in posting order; then some work and a
 * reduction.  Small runs lack positions (8 ranks: 2x2x2, corners only; 12: 3x2x2 ...): the
 * interior exists from 27 ranks (3x3x3) on.
 * Usage: stencil27 ITERATIONS N (local block N^3 doubles: weak scaling). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 10, n = argc > 2 ? atoi(argv[2]) : 16;
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(size, 3, dims);
    int px = dims[0], py = dims[1], pz = dims[2];
    int x = rank % px, y = (rank / px) % py, z = rank / (px * py);
    int nb[26], flat[26], k = 0;
    for (int dz = -1; dz <= 1; dz++)           /* increasing rank order, as HPCG's std::map */
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                int X = x + dx, Y = y + dy, Z = z + dz;
                if ((dx | dy | dz) == 0 || X < 0 || Y < 0 || Z < 0 || X >= px || Y >= py ||
                    Z >= pz)
                    continue;
                flat[k] = (dx != 0) + (dy != 0) + (dz != 0);  /* face 1, edge 2, corner 3 */
                nb[k++] = X + px * (Y + py * Z);
            }
    double *out = calloc((size_t)n * n, sizeof(double)), *in = calloc((size_t)26 * n * n,
                                                                         sizeof(double));
    double sum = 0.0;
    MPI_Request req[26];
    for (int it = 0; it < iters; it++) {
        for (int level = 0; level < 2; level++) {  /* the coarse level: half the extent */
            int m = n >> level, len[26];
            for (int i = 0; i < k; i++)
                len[i] = flat[i] == 1 ? m * m : flat[i] == 2 ? m : 1;
            for (int i = 0; i < k; i++)
                MPI_Irecv(in + (size_t)i * n * n, len[i], MPI_DOUBLE, nb[i], 99, MPI_COMM_WORLD,
                          &req[i]);
            for (int i = 0; i < k; i++)
                MPI_Send(out, len[i], MPI_DOUBLE, nb[i], 99, MPI_COMM_WORLD);
            for (int i = 0; i < k; i++) MPI_Wait(&req[i], MPI_STATUS_IGNORE);
            long work = (long)n * n * n >> (3 * level);
            for (long j = 0; j < 20 * work; j++) sum += 1e-9 * (double)(j & 7);
        }
        double local = sum, global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%g\n", sum);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
