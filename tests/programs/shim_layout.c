/* Where the program's memory lands after MPI_Init (tests/test_shim_layout.py): a small heap
 * block's offset in its page (the brk heap: the same in every run of one binary, ASLR moves it
 * by whole pages) and an 8 MiB buffer's offset modulo 2 MiB (malloc maps it below the lowest
 * mapping: random under ASLR, unless a mapping made before it was aligned by the kernel).
 * Prints "layout RANK SMALL_OFFSET BIG_OFFSET". */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *small = malloc(24), *big = malloc(8u << 20);
    double x = rank, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("layout %d %lu %lu\n", rank, (unsigned long)((uintptr_t)small % 4096),
           (unsigned long)((uintptr_t)big % (2u << 20)));
    free(small);
    free(big);
    MPI_Finalize();
    return 0;
}
