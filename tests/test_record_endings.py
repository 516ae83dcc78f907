"""A run that does not end in MPI_Finalize keeps what every rank recorded, and `minitrace record`
says how it ended: a rank's MPI_Abort (recorded, with its error code; the launcher's status
passed on) and a program returning from main without finalizing (its status 0, the trace
incomplete: record fails)."""
from __future__ import annotations

import pytest

from tests.support.record_util import Ranked, build, record

pytestmark = pytest.mark.timeout(300)


def _allreduces_kept(tr: Ranked, rank: int) -> None:
    """init and the 5 allreduces; a rank the launcher ended while in its last allreduce (the
    others had left it: 4 of them were complete everywhere) has 4."""
    names = tr.names(rank)
    assert names in (["init"] + ["allreduce"] * 5, ["init"] + ["allreduce"] * 4), names


def test_abort_keeps_every_rank(tmp_path):
    program = build("abort_rank", tmp_path)
    p = record(tmp_path / "abort.h5", 3, [program, "abort"], expect_rc=7)
    assert "minitrace: the program exited with status 7; merging what was recorded" in p.stderr
    assert "INCOMPLETE: the run aborted" in p.stdout
    tr = Ranked(tmp_path / "abort.h5")
    assert tr.meta["aborted"]
    assert tr.names(1) == ["init"] + ["allreduce"] * 5 + ["abort"]
    for rank in (0, 2):     # their receive never completed: not recorded
        _allreduces_kept(tr, rank)
    abort = tr.mpi(1, "abort")[0]
    assert (abort["tag"], abort["comm"]) == (7, 0)


def test_return_without_finalize_keeps_every_rank(tmp_path):
    program = build("abort_rank", tmp_path)
    p = record(tmp_path / "ret.h5", 3, [program, "return"], expect_rc=1)
    assert "exited with status" not in p.stderr
    assert "INCOMPLETE: not every rank reached MPI_Finalize" in p.stdout
    tr = Ranked(tmp_path / "ret.h5")
    assert not tr.meta["complete"] and not tr.meta["aborted"]
    for rank in range(3):
        _allreduces_kept(tr, rank)
