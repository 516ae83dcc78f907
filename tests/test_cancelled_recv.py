"""Pre-posted receives cancelled (LLNL Quicksilver's particle buffers; tests/programs/
cancel_recv.c).  MPI_Cancel was not recorded, and the wait that completed the cancelled receive
resolved it like a received message (0 B), so each one shifted the matching of every later
message of its stream (Quicksilver on 4 ranks: 1517 size-mismatch and 120 unmatched-recv
problems, and a replay that waited for messages nobody sent).  Now the recorder reads the
completion's status (MPI_Test_cancelled): a cancelled receive is one of no message (peer -1,
0 bytes, as from MPI_PROC_NULL), and the ``cancel`` action of its request holds what was posted,
with FLAG_COMPLETED."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.replay import replay
from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)


def test_a_cancelled_receive_matches_no_message(programs, tmp_path):
    out = tmp_path / "cr.h5"
    p = record(out, 2, [programs("cancel_recv"), "3"])
    assert p.returncode == 0, p.stderr
    with open_trace(str(out)) as t:
        rep = t.validate()
        data = t.data()
    assert rep.ok, str(rep)
    a = data.actions[data.rank_slice(1)]
    cancel = a[a["kind"] == K.code("cancel")]
    irecv = a[a["kind"] == K.code("irecv")]
    assert len(cancel) == 3 and len(irecv) == 6
    # each cancel names its receive's request, took, and keeps what the receive posted
    assert set(cancel["request"]) <= set(irecv["request"])
    assert (cancel["flags"] & K.FLAG_COMPLETED).all()
    assert (cancel["peer"] == 0).all() and (cancel["tag"] == 7).all()
    assert (cancel["bytes_recv"] == 1024 * 8).all()
    # the cancelled receives got no message; the others got theirs (16, 32, 48 doubles)
    gone = np.isin(irecv["request"], cancel["request"])
    assert (irecv["peer"][gone] == -1).all() and (irecv["bytes_recv"][gone] == 0).all()
    assert irecv["bytes_recv"][~gone].tolist() == [128, 256, 384]
    assert not (irecv["flags"] & K.FLAG_UNRESOLVED).any()
    # the replay waits for no message nobody sent
    assert replay(str(out), compute_rate="1Gf").simulated_time > 0
