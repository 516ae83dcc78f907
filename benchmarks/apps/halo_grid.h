/* A Cartesian halo exchange in NDIMS dimensions (halo2d.c, halo3d.c define NDIMS), for
 * extrapolation (bench_extrapolate): MPI_Dims_create + MPI_Cart_create + MPI_Cart_shift, per
 * iteration and dimension Irecv from both neighbours (tags 2d, 2d+1), Isend to both, one Waitall,
 * then a compute loop over the local block and an Allreduce of one double on the grid.
 * argv: iterations, side (of the local block: weak; of the global grid: strong), periodic|open,
 * weak|strong, then options: "rows": also an Allreduce per iteration on the row (MPI_Cart_sub
 * keeping the last dimension); "colreduce": also an MPI_Reduce to the first rank of the column
 * (MPI_Cart_sub keeping dimension 0);
 * "sendrecv": per dimension two MPI_Sendrecv (to the high neighbour
 * from the low one, then the other way) instead of the Irecv/Isend/Waitall.  Faces are the block's (side^(NDIMS-1) doubles in weak scaling, the global side
 * divided by the grid's extents in strong scaling); the compute loop is 20 additions per point. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 10, side = argc > 2 ? atoi(argv[2]) : 32;
    int periodic = !(argc > 3 && strcmp(argv[3], "open") == 0);
    int strong = argc > 4 && strcmp(argv[4], "strong") == 0;
    int rows = 0, sendrecv = 0, colreduce = 0;
    for (int a = 5; a < argc; a++) {
        colreduce |= strcmp(argv[a], "colreduce") == 0;
        rows |= strcmp(argv[a], "rows") == 0;
        sendrecv |= strcmp(argv[a], "sendrecv") == 0;
    }
    MPI_Init(&argc, &argv);
    int size, rank, dims[NDIMS] = {0}, periods[NDIMS], lo[NDIMS], hi[NDIMS];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, NDIMS, dims);
    for (int d = 0; d < NDIMS; d++) periods[d] = periodic;
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, NDIMS, dims, periods, 0, &grid);
    MPI_Comm_rank(grid, &rank);
    MPI_Comm row = MPI_COMM_NULL, column = MPI_COMM_NULL;
    if (rows) {
        int keep[NDIMS] = {0};
        keep[NDIMS - 1] = 1;
        MPI_Cart_sub(grid, keep, &row);
    }
    if (colreduce) {
        int keep[NDIMS] = {0};
        keep[0] = 1;
        MPI_Cart_sub(grid, keep, &column);
    }
    long extent[NDIMS], points = 1;
    for (int d = 0; d < NDIMS; d++) {
        MPI_Cart_shift(grid, d, 1, &lo[d], &hi[d]);
        extent[d] = strong ? (side + dims[d] - 1) / dims[d] : side;
        points *= extent[d];
    }
    double *out = calloc((size_t)points, sizeof(double)), *in = calloc(2 * NDIMS * (size_t)points, sizeof(double));
    double acc = 0, res = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request req[4 * NDIMS];
        for (int d = 0; sendrecv && d < NDIMS; d++) {
            int face = (int)(points / extent[d]);
            MPI_Sendrecv(out, face, MPI_DOUBLE, hi[d], 2 * d, in + 2 * d * points, face, MPI_DOUBLE,
                         lo[d], 2 * d, grid, MPI_STATUS_IGNORE);
            MPI_Sendrecv(out, face, MPI_DOUBLE, lo[d], 2 * d + 1, in + (2 * d + 1) * points, face,
                         MPI_DOUBLE, hi[d], 2 * d + 1, grid, MPI_STATUS_IGNORE);
        }
        for (int d = 0; !sendrecv && d < NDIMS; d++) {
            int face = (int)(points / extent[d]);
            MPI_Irecv(in + 2 * d * points, face, MPI_DOUBLE, lo[d], 2 * d, grid, &req[4 * d]);
            MPI_Irecv(in + (2 * d + 1) * points, face, MPI_DOUBLE, hi[d], 2 * d + 1, grid, &req[4 * d + 1]);
            MPI_Isend(out, face, MPI_DOUBLE, hi[d], 2 * d, grid, &req[4 * d + 2]);
            MPI_Isend(out, face, MPI_DOUBLE, lo[d], 2 * d + 1, grid, &req[4 * d + 3]);
        }
        if (!sendrecv) MPI_Waitall(4 * NDIMS, req, MPI_STATUSES_IGNORE);
        for (long i = 0; i < 20 * points; i++) acc += 1e-9 * (double)(i & 1023);
        out[0] = acc + in[0];
        MPI_Allreduce(&acc, &res, 1, MPI_DOUBLE, MPI_SUM, grid);
        if (rows) MPI_Allreduce(&res, &acc, 1, MPI_DOUBLE, MPI_MAX, row);
        if (colreduce) MPI_Reduce(&res, &acc, 1, MPI_DOUBLE, MPI_SUM, 0, column);
    }
    if (rank == 0)
        printf("halo%dd %d ranks (%s, %s) acc %g\n", NDIMS, size, periodic ? "periodic" : "open",
               strong ? "strong" : "weak", res);
    free(out); free(in);
    if (rows) MPI_Comm_free(&row);
    if (colreduce) MPI_Comm_free(&column);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
