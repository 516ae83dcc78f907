/* MPI-IO on 3 ranks, one shared file (argv[1]): rank r writes 8 ints at byte offset 32 r with
 * File_write_at, then every rank File_write_at_all's 4 doubles at 96 + 32 r; a File_set_view
 * (displacement 96 + 32 r, etype MPI_DOUBLE), then File_read (2 doubles; the pointer at 0),
 * File_read_all (2 doubles; the pointer at 2); a File_set_view back to bytes (the pointer back
 * at 0), File_iwrite_at (1 int at 200 + 4 r) + Wait and File_iread (1 double, pointer at 0) +
 * Wait; File_write_shared of 3 chars; File_write_ordered of r + 1 chars; File_preallocate
 * (4096 B); split collectives File_write_at_all_begin (1 double at 300 + 8 r) / _end and
 * File_read_ordered_begin (2 chars) / _end; File_sync; File_close.  Then a second file
 * (argv[1].2) opened, File_set_size (100 B), closed, and deleted by rank 0. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ints[8] = {0};
    double d[4] = {0};
    char c[8] = "abcdefg";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, 32 * rank, ints, 8, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_write_at_all(fh, 96 + 32 * rank, d, 4, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_set_view(fh, 96 + 32 * rank, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL);
    MPI_File_read(fh, d, 2, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_read_all(fh, d, 2, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_Request req;
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_iwrite_at(fh, 200 + 4 * rank, ints, 1, MPI_INT, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_File_iread(fh, d, 1, MPI_DOUBLE, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_File_write_shared(fh, c, 3, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_File_write_ordered(fh, c, rank + 1, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_File_preallocate(fh, 4096);
    MPI_File_write_at_all_begin(fh, 300 + 8 * rank, d, 1, MPI_DOUBLE);
    MPI_File_write_at_all_end(fh, d, MPI_STATUS_IGNORE);
    MPI_File_read_ordered_begin(fh, c, 2, MPI_CHAR);
    MPI_File_read_ordered_end(fh, c, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_File_close(&fh);
    char other[4096];
    snprintf(other, sizeof other, "%s.2", argv[1]);
    MPI_File_open(MPI_COMM_WORLD, other, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_set_size(fh, 100);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_File_delete(other, MPI_INFO_NULL);
    printf("io rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
