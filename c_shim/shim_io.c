/* MPI-IO: the recipes of the file calls (mpi.spec) and this rank's open files.
 *
 * Every file action has its file's id in the tag and the file's communicator in comm.  Reads
 * count bytes_recv and writes bytes_sent (count x type size: what was asked); the vector is
 * [offset] (in etypes of the view) for the explicit-offset forms and the individual-pointer
 * forms (the pointer before the call).  Included by generate.py after shim_handles.c.
 */

static mt_objs mt_files = MT_OBJS_INIT;

/* ---- recipes (see mpi.spec) ---- */
#define MT_FILE_OPEN(comm, fh) MT_OBJ_NEW(mt_files, comm, *(fh), MPI_FILE_NULL)
#define MT_ON_FILE(fh) MT_ON_OBJ(mt_files, fh)
#define MT_FILE_CLOSE_PRE(fh) MT_OBJ_FREE_PRE(mt_files, fh)
#define MT_FILE_CLOSE() MT_OBJ_FREE()
/* before an individual-pointer access: where the pointer is */
#define MT_FILE_POS(fh) MPI_Offset pos_ = -1; if (PMPI_File_get_position((fh), &pos_)) pos_ = -1
#define MT_FILE_IO(fh, off, SENT, RECV) do { MT_ON_FILE(fh); R.bytes_sent = (SENT); \
    R.bytes_recv = (RECV); if ((off) >= 0) mt_vec1(T, &R, (int64_t)(off)); } while (0)
