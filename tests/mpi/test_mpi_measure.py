"""Under ``mpiexec -n N python -m pytest --with-mpi``: the calibration's loops on application
buffers (minitrace.predict.measure) move what an application's pack and unpack leave there."""
import numpy as np
import pytest


@pytest.mark.mpi(min_size=2)
def test_packed_pingpong_sends_what_was_packed_and_rank_0_gets_the_time():
    """Every message leaves from the buffer its sender packed just before (the receiver ends
    with the last round's bytes), and rank 0 gets (one-way seconds, seconds in Send) once its
    partner's unpack and pack are taken out; the partner gets nothing."""
    from mpi4py import MPI
    from minitrace.predict import app_memory, measure
    comm = MPI.COMM_WORLD
    if comm.rank < 2:
        out_buf, in_buf = app_memory.array(1 << 16, fill=7), app_memory.array(1 << 16, fill=9)
        got = measure._pingpong_packed(comm, 1 - comm.rank, comm.rank == 0, out_buf, in_buf, 3)
        assert (in_buf == 2).all() and (out_buf == 2).all()      # rounds 0, 1, 2
        if comm.rank == 0:
            assert len(got) == 2 and np.isfinite(got).all() and min(got) > 0
        else:
            assert got is None
    comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_copy_rates_of_every_rank_reach_rank_0():
    from mpi4py import MPI
    from minitrace.predict import measure
    comm = MPI.COMM_WORLD
    got = measure._copies(comm, seconds=0.005, size=1 << 20)
    if comm.rank == 0:
        assert got.shape == (comm.size, 2) and (got > 0).all() and np.isfinite(got).all()
    else:
        assert got is None
