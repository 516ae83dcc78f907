"""MPI-IO: every file access is on a file the rank opened and has not closed, and every file
is closed before the rank ends."""
from .. import kinds as K
from .report import CheckContext, ValidationReport


# -- MPI-IO -----------------------------------------------------------------------------------
def check_files(ctx: CheckContext, rep: ValidationReport) -> None:
    """Files open (by id, per rank) when used, closed by the end: the rank's file actions in
    order.  An open that failed opened nothing (public IOR's MPI-IO backend probes for its
    file with an MPI_File_open that fails: `record` exited 1 on it)."""
    if not len(ctx.rows(K.IO_KINDS)):
        return
    a = ctx.a
    opened: set[tuple] = set()
    rep.phase((7,))
    for row in ctx.rows(K.IO_KINDS | {"finalize"}).tolist():
        rank, name, fid = int(ctx.rank[row]), K.NAME[int(ctx.kind[row])], int(a["tag"][row])
        if name == "finalize":
            for r, f in sorted(opened):
                if r == rank:
                    rep.add(rank, ctx.index[row], "io-not-closed", f"finalize with file {f} open")
            opened = {k for k in opened if k[0] != rank}
        elif name == "file_open":
            if fid >= 0:            # (-1: the open failed, its handle MPI_FILE_NULL: no file)
                opened.add((rank, fid))
        elif name == "file_delete":     # by name, on no open file
            continue
        elif (rank, fid) not in opened:
            rep.add(rank, ctx.index[row], "io-unknown-file",
                    f"{name} on file {fid}, which this rank did not open (or closed)")
        elif name == "file_close":
            opened.discard((rank, fid))
