"""Pre-posted receives cancelled (LLNL Quicksilver's particle buffers; tests/programs/
cancel_recv.c): MPI_Cancel is not recorded, and the wait that completes the cancelled receive
resolves it like a received message (0 B), so each one shifts the matching of every later
message of its stream: Quicksilver on 4 ranks, 1517 size-mismatch and 120 unmatched-recv
problems, and a replay that waits for messages nobody sent.  The recorder must record the
cancellation (c_shim, helper "shim"; the format has no kind or flag for it yet); until then
this test is an expected failure, strict so that the fix flips it."""
from __future__ import annotations

import pytest

from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)


@pytest.mark.xfail(strict=True, reason="MPI_Cancel is not recorded (c_shim)")
def test_a_cancelled_receive_matches_no_message(programs, tmp_path):
    out = tmp_path / "cr.h5"
    p = record(out, 2, [programs("cancel_recv"), "3"], expect_rc=None)
    assert p.returncode in (0, 1), p.stderr       # 1: recorded, but not valid
    with open_trace(str(out)) as t:
        rep = t.validate()
    assert rep.ok, str(rep)
