/* An MPI_File_open that fails (a missing file opened read-only: MPI-IO's default error handler
 * returns the error and leaves the handle MPI_FILE_NULL), as public IOR's MPI-IO backend probes
 * for its file; then argv[1] opened (created) and closed by every rank. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    char missing[4096];
    MPI_File fh;
    MPI_Init(&argc, &argv);
    snprintf(missing, sizeof missing, "%s.missing", argv[1]);
    if (MPI_File_open(MPI_COMM_SELF, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS)
        MPI_File_close(&fh);
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
