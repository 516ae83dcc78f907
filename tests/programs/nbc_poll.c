/* The shape of OSU's non-blocking collective benchmarks (osu_ialltoallw -m 4096 -i 20 -x 5 -t 5):
 * for each size 1..4096: 25 x (Ialltoallw; Wait), barrier, 25 x (Ialltoallw; compute with 5
 * MPI_Test calls; Wait), reductions of the timings, barrier. */
#include <mpi.h>
#include <stdlib.h>
static double spin(double s) { double t = MPI_Wtime(), x = 0; while (MPI_Wtime() - t < s) x += 1; return x; }
int main(int argc, char **argv) {
    int rank, P;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    char *sb = calloc((size_t)P, 4096), *rb = calloc((size_t)P, 4096);
    int *cnt = malloc(P * sizeof(int)), *dsp = malloc(P * sizeof(int));
    MPI_Datatype *ty = malloc(P * sizeof(MPI_Datatype));
    for (int size = 1; size <= 4096; size *= 2) {
        for (int j = 0; j < P; j++) { cnt[j] = size; dsp[j] = j * size; ty[j] = MPI_CHAR; }
        MPI_Request rq; double lat = 0, tot;
        for (int i = 0; i < 25; i++) {
            MPI_Ialltoallw(sb, cnt, dsp, ty, rb, cnt, dsp, ty, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 25; i++) {
            int flag = 0;
            MPI_Ialltoallw(sb, cnt, dsp, ty, rb, cnt, dsp, ty, MPI_COMM_WORLD, &rq);
            for (int k = 0; k < 5; k++) { lat += spin(2e-5); MPI_Test(&rq, &flag, MPI_STATUS_IGNORE); }
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
        MPI_Reduce(&lat, &tot, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&lat, &tot, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
