"""Run under ``mpiexec -n N python -m pytest --with-mpi``: ranks gather their data to one file."""
import numpy as np
import pytest

import minitrace
from minitrace.storage import write_bench


@pytest.mark.mpi(min_size=2)
def test_ranks_gather_and_rank0_writes(tmp_path_factory):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    path = comm.bcast(str(tmp_path_factory.mktemp("mpi") / "g.h5") if rank == 0 else None)
    mine = np.full(5, float(rank)) + np.arange(5)
    allt = comm.gather(mine, root=0)
    if rank == 0:
        times = np.stack(allt, axis=1)
        write_bench(path, "smoke", {"times": times, "maxima": times.max(axis=1)},
                    attrs={"nranks": size})
    comm.Barrier()
    with minitrace.open(path) as t:
        b = t.bench("smoke")
        assert b["times"].shape == (5, size)
        np.testing.assert_array_equal(b["times"][:, rank], mine)
        np.testing.assert_array_equal(b["maxima"], np.arange(5) + size - 1)
    comm.Barrier()
