"""The kind vocabulary (minitrace.kinds) and the consumers that must agree on it: validation, the
OTF2 and TAU readers' call names, the OTF2 and TI writers."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.callstream import mpi_kind
from minitrace.converters.simgrid_ti import write_ti
from minitrace.model import TraceBuilder
from minitrace.validate import validate


def test_named_sets_follow_the_categories():
    cat = {c: {n for _, n, c2 in K.KINDS if c2 == c} for _, _, c in K.KINDS}
    assert K.SENDS == cat["send"] and K.RECVS == cat["recv"]
    assert K.BLOCKING_SENDS | K.NONBLOCKING_SENDS == K.SENDS
    assert not K.BLOCKING_SENDS & K.NONBLOCKING_SENDS
    assert K.INITS | K.STARTS <= cat["persist"] and K.RECV_INITS <= K.INITS
    assert K.ALL_COLLECTIVES == cat["coll"] | cat["icoll"]
    assert K.SINGLE_COMPLETIONS | K.MULTI_COMPLETIONS == K.COMPLETIONS == cat["complete"]
    for s in (K.REDUCTIONS, K.ROOTED, K.VECTOR_KINDS):
        assert s <= K.ALL_COLLECTIVES
    assert set(K.BLOCKING_OF.values()) <= K.COLLECTIVES
    assert K.REQUEST_KINDS == K.NONBLOCKING_SENDS | {"irecv", "imrecv", "comm_idup"} | \
        K.NONBLOCKING_COLLECTIVES | K.NONBLOCKING_NEIGHBOR_COLLECTIVES | \
        {"rput", "rget", "raccumulate", "rget_accumulate"} | K.NONBLOCKING_IO | \
        K.NONBLOCKING_SENDRECVS
    m = K.mask(K.SENDS)
    assert m.sum() == len(K.SENDS) and np.nonzero(m)[0].tolist() == K.codes(K.SENDS).tolist()


def _one_message(kind: str) -> TraceBuilder:
    """Rank 0 sends 16 B with tag 3 to rank 1 with ``kind``; rank 1 posts an irecv."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    if kind in K.NONBLOCKING_SENDS:
        b.add(0, kind, peer=1, tag=3, bytes_sent=16, request=0)
        b.add(0, "wait", request=0)
    else:
        b.add(0, kind, peer=1, tag=3, bytes_sent=16)
    b.add(1, "irecv", peer=0, tag=3, bytes_recv=16, request=0)
    b.add(1, "wait", request=0)
    for r in range(2):
        b.add(r, "finalize")
    return b


@pytest.mark.parametrize("kind", sorted(K.SENDS))
def test_every_send_mode_is_a_send_everywhere(kind, tmp_path):
    """Blocking or not, every mode is matched by validation, keeps its request through OTF2
    (non-blocking modes used to be a separate set there), is named alike by the OTF2/TAU call
    decoder, and is written to SimGrid as its standard-mode send."""
    from minitrace.converters.otf2 import read_otf2, write_otf2

    data = _one_message(kind).build()
    assert validate(data).ok, validate(data).lines()
    assert mpi_kind(f"MPI_{kind.capitalize()}()") == kind

    assert write_otf2(data, tmp_path / "a") == {}
    back = read_otf2(tmp_path / "a")
    for f in ("kind", "peer", "tag", "bytes_sent", "bytes_recv", "request"):
        assert back.actions[f].tolist() == data.actions[f].tolist(), f
    assert validate(back).ok, validate(back).lines()

    rep = write_ti(data, tmp_path / "t.txt", layout="single")
    lines = (tmp_path / "t.txt").read_text().splitlines()
    standard = "isend" if kind in K.NONBLOCKING_SENDS or kind == "bsend" else "send"
    assert f"0 {standard} 1 3 16" in lines
    assert not rep.dropped
    if kind in ("ssend", "issend"):     # lowered: plus an acknowledgement from its receive
        assert not rep.approximated and rep.lowered[
            f"{kind} ({standard}, completed by a 0-byte acknowledgement from its receive)"] == 1
        return
    if kind == "bsend":                 # lowered: an isend, waited for at the rank's end
        assert not rep.approximated and rep.lowered[
            "bsend (isend, waited for at the rank's end: the attached buffer holds it)"] == 1
        return
    assert list(rep.approximated) == ([] if kind == standard else
                                      [f"{kind} (written as {standard})"])


def test_abort_is_an_mpi_call_in_otf2(tmp_path):
    """The recorder keeps MPI_Abort as an ``abort`` action: OTF2 keeps it as an MPI_Abort region
    (its error code, in ``tag``, has no OTF2 event) and reads it back; TI cannot express it."""
    from minitrace.converters.otf2 import read_otf2, write_otf2

    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "abort", tag=3)
    data = b.build()
    assert mpi_kind("MPI_Abort") == "abort"
    assert write_otf2(data, tmp_path / "a") == {"abort": 1}
    back = read_otf2(tmp_path / "a")
    assert [K.NAME[int(k)] for k in back.actions["kind"]] == ["init", "abort", "init"]
    assert "dropped_mpi_calls" not in back.meta
    rep = write_ti(data, tmp_path / "t.txt", layout="single", lossy=True)
    assert rep.dropped == {"abort": 1}


def test_comm_size_survives_otf2(tmp_path):
    """The recorder keeps MPI_Comm_size (LLNL CoMD calls it once): OTF2 holds it as a region
    with no communicator, read back as comm_size of the world, exact when it was the world's
    and counted as approximated otherwise (it used to be dropped on the way back)."""
    from minitrace.converters.otf2 import read_otf2, write_otf2

    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "comm_size")
        b.add(r, "barrier")
    data = b.build()
    assert write_otf2(data, tmp_path / "a") == {}
    back = read_otf2(tmp_path / "a")
    assert [K.NAME[int(k)] for k in back.actions["kind"] if k != K.CODE["compute"]] == \
        ["init", "comm_size", "barrier"] * 2
    assert back.actions["comm"][back.actions["kind"] == K.CODE["comm_size"]].tolist() == [0, 0]
    assert "dropped_mpi_calls" not in back.meta
    assert back.meta["comm_calls_without_comms"] == {"comm_size": 2}
    sub = TraceBuilder(1)
    sub.add(0, "init")
    sub.add(0, "comm_size", comm=1)
    sub.add_comm(1, [0])
    assert write_otf2(sub.build(), tmp_path / "b") == {"comm_size": 1}
