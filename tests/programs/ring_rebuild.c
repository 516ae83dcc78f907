/* A periodic 1-D ring whose halo sizes change at each rebuild, as public Mantevo miniMD's
 * ghost counts do at each re-neighbouring: each step computes and swaps its halo with two
 * sendrecvs (a forward one, a compute, a reverse one of half the size); every `every` steps,
 * after the step's first compute, each rank picks new counts and tells its right neighbour (a
 * 4-byte sendrecv, then a compute); every `thermo` steps the energies are summed (two
 * allreduces), as miniMD's thermo output does.  With the sizes, no run of steps repeats for
 * longer than `every`; without them, each step is two or three (compute, sendrecv) pairs and
 * only the sums break their run.  Usage: ring_rebuild [steps [every [thermo]]] */
#include <mpi.h>
#include <stdlib.h>

static double work(int n)
{
    volatile double s = 0;
    for (int i = 0; i < n; i++) s += i * 1e-9;
    return s;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 240, every = argc > 2 ? atoi(argv[2]) : 12;
    int thermo = argc > 3 ? atoi(argv[3]) : 60;
    int P, me, left, right, ns = 0, nr = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    left = (me + P - 1) % P;
    right = (me + 1) % P;
    double *sb = calloc(4096, sizeof(double)), *rb = calloc(4096, sizeof(double)), e[2] = {1, 1};
    for (int step = 0; step < steps; step++) {
        work(100000);
        if (step % every == 0) {                      /* rebuild: new counts */
            ns = 1000 + (me * 7919 + (step / every) * 104729) % 97;
            MPI_Sendrecv(&ns, 1, MPI_INT, right, 1, &nr, 1, MPI_INT, left, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            work(2000);
        }
        MPI_Sendrecv(sb, ns, MPI_DOUBLE, right, 1, rb, nr, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        work(20000);
        MPI_Sendrecv(rb, nr / 2, MPI_DOUBLE, left, 1, sb, ns / 2, MPI_DOUBLE, right, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (step % thermo == thermo - 1) {            /* thermo output: the energies */
            MPI_Allreduce(MPI_IN_PLACE, e, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            work(5000);
            MPI_Allreduce(MPI_IN_PLACE, e + 1, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
