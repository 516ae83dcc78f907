"""One-sided communication under ``minitrace record`` (tests/programs/rma.c, 4 ranks): every
window creation, RMA operation and synchronization, with window ids, targets (world ranks),
bytes, displacements and groups; validate's epoch checks pass; the TI export counts them."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def trace(programs, tmp_path_factory):
    d = tmp_path_factory.mktemp("rma")
    p = record(d / "rma.h5", 4, [programs("rma")])
    assert "validation: OK" in p.stdout
    return Ranked(d / "rma.h5")


def test_every_one_sided_call(trace):
    tr = trace
    for r in range(4):
        right, left, far = (r + 1) % 4, (r + 3) % 4, (r + 2) % 4
        pscw = [("win_start", -1, 0, 0, 0, [right]), ("put", right, 0, 8, 0, [30]),
                ("win_complete", -1, 0, 0, 0, [])] if r % 2 == 0 else \
            [("win_post", -1, 0, 0, 0, [left]), ("win_wait", -1, 0, 0, 0, [])]
        want = [
            ("win_allocate", -1, 0, 0, 0, [512, 8]), ("win_fence", -1, 0, 0, 0, []),
            ("put", right, 0, 16, 0, [4]), ("get", left, 0, 0, 8, [0]),
            ("accumulate", right, 0, 24, 0, [8]), ("win_fence", -1, 0, 0, 0, []),
            ("win_lock", right, 0, 0, 0, [1]), ("get_accumulate", right, 0, 8, 8, [1]),
            ("fetch_and_op", right, 0, 8, 8, [2]), ("compare_and_swap", right, 0, 16, 8, [3]),
            ("win_unlock", right, 0, 0, 0, []), ("win_lock_all", -1, 0, 0, 0, []),
            ("rput", far, 0, 32, 0, [16]), ("rget", far, 0, 0, 16, [20]),
            ("raccumulate", far, 0, 8, 0, [24]), ("rget_accumulate", far, 0, 8, 8, [24]),
            ("win_flush", far, 0, 0, 0, []), ("win_flush_all", -1, 0, 0, 0, []),
            ("win_flush_local", far, 0, 0, 0, []), ("win_flush_local_all", -1, 0, 0, 0, []),
            ("win_sync", -1, 0, 0, 0, []), ("win_unlock_all", -1, 0, 0, 0, []), *pscw,
            ("win_create", -1, 1, 0, 0, [64, 4]), ("win_fence", -1, 1, 0, 0, []),
            ("win_fence", -1, 1, 0, 0, []), ("win_create_dynamic", -1, 2, 0, 0, []),
            ("win_free", -1, 0, 0, 0, []), ("win_free", -1, 1, 0, 0, []),
            ("win_free", -1, 2, 0, 0, [])]
        got = [(K.NAME[int(x["kind"])], int(x["peer"]), int(x["tag"]), int(x["bytes_sent"]),
                int(x["bytes_recv"]), tr.vector(x)) for x in tr.mpi(r)
               if K.NAME[int(x["kind"])] in K.ONE_SIDED]
        assert got == want
        assert all(x["comm"] == 0 for x in tr.mpi(r) if K.NAME[int(x["kind"])] in K.ONE_SIDED)
        # the r* operations' requests are completed by the waits
        reqs = [int(x["request"]) for x in tr.mpi(r)
                if K.NAME[int(x["kind"])] in ("rput", "rget", "raccumulate", "rget_accumulate")]
        waited = [int(w["request"]) for w in tr.mpi(r, "wait")] + tr.vector(tr.mpi(r, "waitall")[0])
        assert reqs == waited and len(set(reqs)) == 4


def test_ti_export_reports_them(trace, tmp_path):
    rep = write_ti(trace.data, tmp_path / "rma.ti", lossy=True)
    assert _reported(rep, "put") == 6 and _reported(rep, "win_fence") == 16
    assert _reported(rep, "win_allocate") == 4 and _reported(rep, "win_post") == 2


def _reported(rep, kind: str) -> int:
    """Actions of ``kind`` the export said it could not write as they are (dropped, lowered or
    approximated)."""
    return rep.dropped[kind] + sum(n for k, n in (*rep.lowered.items(),
                                                  *rep.approximated.items())
                                   if k.split(" ")[0] == kind)
