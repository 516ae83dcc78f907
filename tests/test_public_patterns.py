"""Patterns of public codes nobody here wrote, each reproduced by a small program of
tests/programs (issues 35 and 38).

SNAP (LANL's discrete-ordinates transport proxy, a pipelined KBA sweep; tests/programs/
kba_sweep.c): its row and column communicators come from MPI_Cart_create and MPI_Cart_sub, and
it tests send handles that are already MPI_REQUEST_NULL.  The TI export refused both ("cannot
express 2 cart_create, 4 cart_sub, 16608 test"), so neither replay nor predict ran on it: a test
of a null request is a no-op in MPI, and SimGrid's replay ignores communicator creation as it
does comm_split (the sub-communicator traffic is lowered onto world ranks before)."""
from __future__ import annotations

import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import write_ti
from minitrace.extrapolate import structure as ST
from minitrace.replay import replay
from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def kba(programs, tmp_path_factory):
    """kba_sweep recorded on a 2x2 grid."""
    out = tmp_path_factory.mktemp("kba") / "kba.h5"
    record(out, 4, [programs("kba_sweep")], timeout=300)
    return out


def test_the_pattern_is_recorded(kba):
    """The case is exercised: communicators from cart_create and cart_sub, and tests of
    MPI_REQUEST_NULL (request -1); and the trace is valid."""
    with open_trace(str(kba)) as t:
        assert t.validate().ok
        data = t.data()
    a = data.actions
    for r in range(4):
        ra = a[data.rank_slice(r)]
        kind = ra["kind"]
        assert (kind == K.CODE["cart_create"]).sum() == 1
        assert (kind == K.CODE["cart_sub"]).sum() == 2
        assert ((kind == K.CODE["test"]) & (ra["request"] < 0)).any()


def test_exported_without_loss_and_replayed(kba, tmp_path):
    """No action is dropped: the null tests write nothing, the creations are left out (and
    said); the replay runs without --lossy."""
    with open_trace(str(kba)) as t:
        data = t.data()
    rep = write_ti(data, tmp_path / "kba.txt")
    assert not rep.dropped
    left_out = {k: n for k, n in rep.approximated.items() if "communicator creation" in k}
    assert left_out == {"cart_create (left out: SimGrid's replay ignores communicator "
                        "creation)": 4,
                        "cart_sub (left out: SimGrid's replay ignores communicator "
                        "creation)": 8}
    text = "".join(p.read_text() for p in sorted((tmp_path / "kba.txt_files").iterdir()))
    assert "cart" not in text
    a = data.actions
    nulls = sum(int(((a["kind"] == K.CODE[k]) & (a["request"] < 0)).sum())
                for k in ("test", "wait"))
    assert rep.approximated["test (left out: no request)"] + \
        rep.approximated["wait (left out: no request)"] == nulls > 0
    r = replay(kba, compute_rate="1Gf", engine="native")
    assert r.simulated_time > 0


def test_polls_are_replayed_without_simgrids_injected_sleep(kba):
    """SimGrid sleeps 100 us inside every MPI_Test and MPI_Iprobe unless told not to: the
    replay of a recorded polling loop (whose compute between polls is in the trace) sets both
    to 0 (SNAP: 0.826 s replayed against 0.468 s without the sleeps, runs of 0.54-0.59 s)."""
    plain = replay(kba, compute_rate="1Gf", engine="native")
    assert plain.config["smpi/test"] == "0" and plain.config["smpi/iprobe"] == "0"
    slept = replay(kba, compute_rate="1Gf", engine="native", config={"smpi/test": "1e-4"})
    assert slept.simulated_time > plain.simulated_time


def test_a_refusal_names_what_differs_between_two_alike_calls():
    """SNAP at 4 and 8 ranks was refused with "item 47: testsome (tag -1, comm 0) vs testsome
    (tag -1, comm 0)": its polls complete at different places at each scale, and the line did
    not say what differed.  Two calls of one kind, tag and communicator now name it."""
    completed = (K.CODE["testsome"], K.FLAG_COMPLETED, 0, 1, -1, 0, (1,))
    failed = (K.CODE["testsome"], 0, 0, 1, -1, 0, ())
    assert ST.fields_differing(completed, failed) == \
        " (differing in flags 8 vs 0, vector (1,) vs ())"
    assert ST.fields_differing(completed, completed) == ""
    assert ST.fields_differing(completed, ("loop", failed)) == ""
