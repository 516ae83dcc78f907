/* Pipelined wavefront sweep on a 2-D process grid (the KBA pattern of discrete-ordinates
 * transport proxies such as SNAP): MPI_Cart_create, then MPI_Cart_sub row and column
 * communicators; for each of the 4 sweep directions, chunk by chunk, each rank receives its
 * upstream faces (Irecv on the row and column communicators, MPI_PROC_NULL at the grid's
 * edge), polls them with MPI_Testsome, computes, then polls its previous sends with MPI_Test
 * until both are done, tests one again (a completed handle is MPI_REQUEST_NULL: the public code
 * tests such handles) and Isends its downstream faces.  Each sweep ends with
 * a Waitall of the sends left and an Allreduce.  argv: sweeps (default 2), chunks (default 3),
 * jitter (default 0): with 1, each rank computes a random extra amount (seeded by the clock and
 * its rank) before each send, so that how many polls fail downstream changes from one chunk and
 * one sweep to the next, as SNAP's do (no two sweeps then make the same calls).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define FACE 96
int main(int argc, char **argv) {
    int sweeps = argc > 1 ? atoi(argv[1]) : 2, chunks = argc > 2 ? atoi(argv[2]) : 3;
    int jitter = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Init(&argc, &argv);
    int size, dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart, ycomm, zcomm;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int keep_y[2] = {1, 0}, keep_z[2] = {0, 1};
    MPI_Cart_sub(cart, keep_y, &ycomm);
    MPI_Cart_sub(cart, keep_z, &zcomm);
    int rank;
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 2, coords);
    unsigned seed = (unsigned)(MPI_Wtime() * 1e6) ^ (unsigned)(rank * 7919);
    static double yin[FACE], zin[FACE], yout[FACE], zout[FACE];
    double flux = 0;
    for (int s = 0; s < sweeps; s++) {
        MPI_Request sreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        for (int dir = 0; dir < 4; dir++) {
            int dy = dir & 1 ? -1 : 1, dz = dir & 2 ? -1 : 1;
            int yup = coords[0] - dy, ydown = coords[0] + dy;
            int zup = coords[1] - dz, zdown = coords[1] + dz;
            int yfrom = yup >= 0 && yup < dims[0] ? yup : MPI_PROC_NULL;
            int yto = ydown >= 0 && ydown < dims[0] ? ydown : MPI_PROC_NULL;
            int zfrom = zup >= 0 && zup < dims[1] ? zup : MPI_PROC_NULL;
            int zto = zdown >= 0 && zdown < dims[1] ? zdown : MPI_PROC_NULL;
            for (int c = 0; c < chunks; c++) {
                int tag = 100 * dir + c, got = 0, outcount, idx[2];
                MPI_Request rreq[2];
                MPI_Irecv(yin, FACE, MPI_DOUBLE, yfrom, tag, ycomm, &rreq[0]);
                MPI_Irecv(zin, FACE, MPI_DOUBLE, zfrom, tag, zcomm, &rreq[1]);
                while (got < 2) {
                    MPI_Testsome(2, rreq, &outcount, idx, MPI_STATUSES_IGNORE);
                    if (outcount != MPI_UNDEFINED) got += outcount;
                }
                for (int i = 0; i < 20000; i++) flux += 1e-9 * (i % 7) + 1e-12 * yin[i % FACE];
                int extra = jitter ? rand_r(&seed) % 40000 : 0;
                for (int i = 0; i < extra; i++) flux += 1e-12 * (i % 5);
                for (int i = 0; i < FACE; i++) yout[i] = zout[i] = flux + i + zin[i];
                int fy = 0, fz = 0;
                while (!(fy && fz)) {
                    MPI_Test(&sreq[0], &fy, MPI_STATUS_IGNORE);
                    MPI_Test(&sreq[1], &fz, MPI_STATUS_IGNORE);
                }
                MPI_Test(&sreq[0], &fy, MPI_STATUS_IGNORE);   /* done: MPI_REQUEST_NULL */
                MPI_Isend(yout, FACE, MPI_DOUBLE, yto, tag, ycomm, &sreq[0]);
                MPI_Isend(zout, FACE, MPI_DOUBLE, zto, tag, zcomm, &sreq[1]);
            }
        }
        MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE);
        double total;
        MPI_Allreduce(&flux, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("kba done %g\n", flux);
    MPI_Comm_free(&ycomm);
    MPI_Comm_free(&zcomm);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
