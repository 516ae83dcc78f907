"""The raw file's chunks: many chunks provisioned ahead by the shim's helper thread lose and
duplicate nothing, and a child forked by a traced rank records nothing into its parent's file."""
from __future__ import annotations

import numpy as np
import pytest

from tests.mpiutil import mpicc
from tests.record_util import Ranked, build, record

pytestmark = pytest.mark.timeout(300)

FORK_SRC = r"""
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pid_t pid = fork();
    if (pid == 0) { /* the child makes (local) MPI calls, then leaves without finalizing */
        for (int i = 0; i < 120000; i++) MPI_Comm_size(MPI_COMM_WORLD, &size);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}
"""


def test_many_chunks_keep_every_record(tmp_path):
    n = 60000   # 60000 comm_size + 60000 sendrecv (+ a vector record each): 4+ chunks of 4 MiB
    exe = build("callcost", tmp_path)
    p = record(tmp_path / "cc.h5", 1, [exe, str(n)])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "cc.h5")
    assert tr.meta["complete"]
    assert tr.names(0, skip=()) == ["init"] + ["comm_size"] * n + ["sendrecv"] * n + ["finalize"]
    sr = tr.mpi(0, "sendrecv")
    assert len(sr) == n
    assert (sr["peer"] == 0).all() and (sr["tag"] == 0).all()
    assert (sr["bytes_sent"] == 8).all() and (sr["bytes_recv"] == 8).all()
    assert all(tr.vector(r) == [0, 0] for r in sr[:: n // 50])
    t = tr.mpi(0)["t_start"]
    assert (np.diff(t) >= 0).all()


def test_forked_child_records_nothing(tmp_path):
    src = tmp_path / "forker.c"
    src.write_text(FORK_SRC)
    exe = str(mpicc(src, tmp_path / "forker"))
    p = record(tmp_path / "f.h5", 2, [exe])
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "f.h5")
    for r in range(2):
        assert tr.names(r, skip=()) == ["init", "barrier", "finalize"]
