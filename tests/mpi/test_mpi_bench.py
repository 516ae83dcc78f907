"""Under ``mpiexec -n N python -m pytest --with-mpi``: the bench suites run in-process on every
rank of the job (N = 2 and 4 in scripts/test.sh), and rank 0's file holds every rank's data."""
import numpy as np
import pytest

import minitrace
from minitrace.bench.__main__ import main as bench_main


@pytest.fixture
def shared_path(tmp_path_factory):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    d = comm.bcast(str(tmp_path_factory.mktemp("bench")) if comm.rank == 0 else None)
    return d


@pytest.mark.mpi(min_size=2)
def test_variability_in_process(shared_path):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    out = f"{shared_path}/var.h5"
    assert bench_main(["variability", "--workload", "fwq", "--iterations", "12", "--warmup",
                       "1", "--quiet", "--seed", "3", "-o", out]) == 0
    comm.Barrier()
    with minitrace.open(out) as t:
        b = t.bench("variability")
        times = b["times"]
        assert times.shape == (12, comm.size)
        np.testing.assert_array_equal(b["maxima"], times.max(axis=1))
        assert (times > 0).all()
        assert b["node"].tolist() == [0] * comm.size          # one host
        assert b["local_rank"].tolist() == list(range(comm.size))
    comm.Barrier()


@pytest.mark.mpi(min_size=2)
def test_collectives_in_process(shared_path):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    out = f"{shared_path}/coll.h5"
    assert bench_main(["collectives", "--ops", "allreduce,alltoallv", "--min-size", "8",
                       "--max-size", "64", "--iterations", "3", "--warmup", "1", "--quiet",
                       "-o", out]) == 0
    comm.Barrier()
    with minitrace.open(out) as t:
        b = t.bench("collectives")
        assert b["times"].shape[1] == comm.size
        np.testing.assert_array_equal(b["t_max"], b["times"].max(axis=1))
        np.testing.assert_array_equal(b["t_min"], b["times"].min(axis=1))
        assert sorted(set(b["op"].tolist())) == ["allreduce", "alltoallv"]
        assert sorted(set(b["size"].tolist())) == [8, 16, 32, 64]
    comm.Barrier()
