"""Tests and waits of MPI_REQUEST_NULL through OTF2 and back (SNAP tests send handles already
freed, Quicksilver waits on them; tests/programs/null_tests.c): OTF2 has no event for them, so
the archive held a bare MPI_Test region and the reader took it for a test that completed
nothing, dropping the COMPLETED flag of every one, silently.  The reader now reads an
event-less MPI_Test or MPI_Testall as MPI ends one of null handles (completed) and
MPI_Testany or MPI_Testsome as not; the writer says which tests the archive cannot hold that
way (a request the recording does not know).  And validate called each wait on a null handle
of the trace read back a problem (empty-completion: 3630 on Quicksilver's 2 ranks): the
reader now counts the source's waits without a completion (``null_completions``) and validate
takes that many as the source's."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.otf2 import _QUIET_TEST, read_otf2, write_otf2
from minitrace.trace import open as open_trace
from minitrace.validate import validate
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)
_TESTS = ("test", "testall", "testany", "testsome")


@pytest.fixture(scope="module")
def nulls(programs, tmp_path_factory):
    """null_tests recorded on 2 ranks, 3 rounds."""
    out = tmp_path_factory.mktemp("nulls") / "nulls.h5"
    record(out, 2, [programs("null_tests"), "3"], timeout=300)
    with open_trace(str(out)) as t:
        return t.data()


def _completed(data, kind: str) -> tuple[int, int]:
    """(calls of kind, of them COMPLETED)."""
    a = data.actions[data.actions["kind"] == K.CODE[kind]]
    return len(a), int((a["flags"] & K.FLAG_COMPLETED > 0).sum())


def test_the_pattern_is_recorded(nulls):
    """Each rank's 3 rounds: a test of a null handle and a testall of null handles (both
    completed), a testany and a testsome of them (neither), tests with a request."""
    a = nulls.actions
    test = a[a["kind"] == K.CODE["test"]]
    assert (((test["request"] < 0) & (test["flags"] & K.FLAG_COMPLETED > 0)).sum()) == 6
    assert _completed(nulls, "testall") == (6, 6)
    assert _completed(nulls, "testany") == (6, 0)
    assert _completed(nulls, "testsome") == (6, 0)


def test_the_round_trip_keeps_every_tests_outcome(nulls, tmp_path):
    lossy = write_otf2(nulls, tmp_path / "otf2")
    assert not set(lossy) & set(_QUIET_TEST.values())
    back = read_otf2(tmp_path / "otf2" / "traces.otf2")
    for kind in _TESTS:
        assert _completed(back, kind) == _completed(nulls, kind), kind
    assert back.meta["source_messages"]["null_completions"] == 18      # 3 waits x 3 x 2
    rep = validate(back)
    assert rep.ok, str(rep)


def test_an_outcome_the_archive_cannot_hold_is_said(nulls, tmp_path):
    """A test the recorder could not tie to a request (request -1) that did not complete, and
    a testsome of such requests that did: the archive reads them back as tests of null
    handles, and the writer counts them under the key that says so."""
    a = nulls.actions
    flags = a["flags"].copy()
    null_test = np.nonzero((a["kind"] == K.CODE["test"]) & (a["request"] < 0))[0][:2]
    some = np.nonzero(a["kind"] == K.CODE["testsome"])[0][:1]
    a["flags"][null_test] &= ~np.uint8(K.FLAG_COMPLETED)
    a["flags"][some] |= K.FLAG_COMPLETED
    try:
        lossy = write_otf2(nulls, tmp_path / "otf2")
    finally:
        a["flags"][:] = flags
    assert lossy[_QUIET_TEST[True]] == 2
    assert lossy[_QUIET_TEST[False]] == 1


def test_without_any_failed_test_event_eventless_tests_stay_unknown(tmp_path):
    """Score-P writes an event for a failed test only with its XREQTEST group (off by default):
    an archive with no MpiRequestTest event cannot tell a test of null handles (completed)
    from one that failed, so its event-less tests are read as not completed, and counted."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=1e-3)
        b.add(r, "test", request=-1, flags=K.FLAG_COMPLETED, t_start=2e-3, t_end=3e-3)
        b.add(r, "finalize", t_start=4e-3, t_end=5e-3)
    write_otf2(b.build(), tmp_path / "otf2")
    back = read_otf2(tmp_path / "otf2" / "traces.otf2")
    assert _completed(back, "test") == (2, 0)
    assert back.meta["tests_outcome_unknown"] == 2


def test_a_persistent_request_s_failed_test_is_said(tmp_path):
    """OTF2 has no event for a persistent request's completion or test: a test and a testall of
    one that did not complete read back as tests of null handles (completed), and the writer
    counts them (it once counted only tests without a request)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2)
    b.add(0, "send_init", peer=1, tag=1, bytes_sent=64, request=0, flags=K.FLAG_PERSISTENT)
    b.add(0, "start", request=0, flags=K.FLAG_PERSISTENT)
    b.add(0, "test", request=0)                         # not completed
    b.add(0, "testall", vector=[0])                     # not completed
    b.add(0, "wait", request=0, flags=K.FLAG_PERSISTENT)
    b.add(1, "recv", peer=0, tag=1, bytes_recv=64)
    lossy = write_otf2(b.build(), tmp_path / "otf2")
    assert lossy[_QUIET_TEST[True]] == 2
