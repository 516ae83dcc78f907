"""validate(): passes on consistent traces, names each kind of inconsistency exactly."""
from __future__ import annotations


import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder, TraceColumns
from tests.support.synthetic import ring_trace
from minitrace.validate import validate


def good_builder() -> TraceBuilder:
    """3 ranks: blocking and non-blocking p2p, sendrecv, persistent, collectives, v-collectives."""
    b = TraceBuilder(3)
    for r in range(3):
        b.add(r, "init")
    # 0 -> 1 blocking, 1 -> 0 non-blocking pair
    b.add(0, "send", peer=1, tag=5, bytes_sent=100)
    b.add(1, "recv", peer=0, tag=5, bytes_recv=100)
    b.add(1, "isend", peer=0, tag=6, bytes_sent=8, request=0)
    b.add(0, "irecv", peer=1, tag=6, bytes_recv=8, request=0, flags=K.FLAG_ANY_SOURCE)
    b.add(1, "wait", request=0)
    b.add(0, "waitall", vector=[0])
    # ring sendrecv: r sends to r+1, receives from r-1
    for r in range(3):
        b.add(r, "sendrecv", peer=(r + 1) % 3, tag=1, bytes_sent=16, bytes_recv=16,
              vector=[(r - 1) % 3, 1])
    # persistent 2 -> 0, started twice
    b.add(2, "send_init", peer=0, tag=9, bytes_sent=32, request=4)
    b.add(0, "recv_init", peer=2, tag=9, bytes_recv=32, request=7)
    for _ in range(2):
        b.add(2, "start", request=4, flags=K.FLAG_PERSISTENT)
        b.add(2, "wait", request=4)
        b.add(0, "startall", vector=[7])
        b.add(0, "test", request=7, flags=K.FLAG_COMPLETED)
    # collectives on world
    for r in range(3):
        b.add(r, "bcast", peer=1, bytes_sent=64 if r == 1 else 0, bytes_recv=0 if r == 1 else 64)
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, volume=3.0)
        b.add(r, "gather", peer=0, bytes_sent=4, bytes_recv=12 if r == 0 else 0)
        b.add(r, "alltoall", bytes_sent=30, bytes_recv=30)
        b.add(r, "allgatherv", bytes_sent=r + 1, bytes_recv=6, vector=[1, 2, 3])
        send = [10 * r + j for j in range(3)]
        recv = [10 * j + r for j in range(3)]
        b.add(r, "alltoallv", bytes_sent=sum(send), bytes_recv=sum(recv), vector=send + recv)
        b.add(r, "ibarrier", request=20)
        b.add(r, "wait", request=20)
    # a sub-communicator of ranks 2 and 0 (comm rank order 2, 0)
    b.add_comm(3, [2, 0])
    for r in (2, 0):
        b.add(r, "reduce", comm=3, peer=2, bytes_sent=8, bytes_recv=8 if r == 2 else 0)
    for r in range(3):
        b.add(r, "compute", volume=1e6)
        b.add(r, "finalize")
    return b


def test_correct_trace_passes():
    rep = validate(good_builder().build())
    assert rep.ok, str(rep)
    assert rep.problems == [] and rep.nproblems == 0
    assert "no problems" in str(rep)


def _drop(data: TraceColumns, rank: int, index: int) -> TraceColumns:
    """The same trace without one action (vector offsets rebuilt)."""
    row = int(data.rank_offsets[rank]) + index
    a = data.actions
    keep = np.ones(len(a), bool)
    keep[row] = False
    vec_keep = np.ones(len(data.vectors), bool)
    if a["vec_len"][row] > 0:
        vec_keep[a["vec_off"][row]:a["vec_off"][row] + a["vec_len"][row]] = False
    new = a[keep].copy()
    lens = new["vec_len"].astype(np.int64)
    new["vec_off"] = np.where(lens > 0, np.cumsum(lens) - lens, -1)
    offs = data.rank_offsets.copy()
    offs[rank + 1:] -= 1
    return TraceColumns(new, offs, data.vectors[vec_keep], dict(data.comms), list(data.strings),
                     dict(data.meta))


def _find(data: TraceColumns, rank: int, kind: str, nth: int = 0) -> int:
    a = data.actions[data.rank_slice(rank)]
    return int(np.nonzero(a["kind"] == K.CODE[kind])[0][nth])


def test_unmatched_send():
    d = good_builder().build()
    d = _drop(d, 1, _find(d, 1, "recv"))          # rank 1 no longer receives the tag-5 message
    rep = validate(d)
    assert dict(rep.counts) == {"unmatched-send": 1}
    (p,) = rep.problems
    assert (p.rank, p.index, p.category) == (0, 1, "unmatched-send")
    assert "to 1 tag 5 comm 0 (100 B" in p.message


def test_unmatched_recv_and_order():
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send", peer=1, tag=0, bytes_sent=10)
    b.add(1, "recv", peer=0, tag=0, bytes_recv=10)
    b.add(1, "recv", peer=0, tag=0, bytes_recv=20)      # a second message never sent
    for r in range(2):
        b.add(r, "finalize")
    rep = validate(b.build())
    assert dict(rep.counts) == {"unmatched-recv": 1}
    assert (rep.problems[0].rank, rep.problems[0].index) == (1, 2)


def test_size_mismatch():
    d = good_builder().build()
    row = int(d.rank_offsets[1]) + _find(d, 1, "recv")
    d.actions["bytes_recv"][row] = 99
    rep = validate(d)
    assert dict(rep.counts) == {"size-mismatch": 1}
    p = rep.problems[0]
    assert (p.rank, p.category) == (1, "size-mismatch")
    assert "receives 99 B" in p.message and "sends 100 B" in p.message


def test_sendrecv_receive_half_is_matched():
    d = good_builder().build()
    row = int(d.rank_offsets[2]) + _find(d, 2, "sendrecv")
    d.actions["bytes_recv"][row] = 15                  # receives from rank 1's sendrecv
    rep = validate(d)
    assert dict(rep.counts) == {"size-mismatch": 1}
    assert rep.problems[0].rank == 2


def test_persistent_start_matched_by_init_bytes():
    d = good_builder().build()
    row = int(d.rank_offsets[0]) + _find(d, 0, "recv_init")
    d.actions["bytes_recv"][row] = 31
    rep = validate(d)
    assert dict(rep.counts) == {"size-mismatch": 2}    # both starts carry the init's size


def test_missing_finalize_and_init():
    d = good_builder().build()
    d = _drop(d, 2, _find(d, 2, "finalize"))
    d = _drop(d, 0, _find(d, 0, "init"))
    rep = validate(d)
    assert dict(rep.counts) == {"missing-finalize": 1, "missing-init": 1}
    cats = {(p.rank, p.category) for p in rep.problems}
    assert cats == {(2, "missing-finalize"), (0, "missing-init")}


def test_finalize_not_last():
    b = TraceBuilder(1)
    b.add(0, "init")
    b.add(0, "finalize")
    b.add(0, "region_end", tag=0)      # the end of a user region is fine (OTF2's main)
    b.add(0, "compute", volume=5)      # computation is not: a replay would time it
    b.add(0, "barrier")
    rep = validate(b.build())
    assert dict(rep.counts) == {"finalize-not-last": 1}
    assert rep.problems[0].index == 3


def test_collective_kind_mismatch():
    d = good_builder().build()
    row = int(d.rank_offsets[2]) + _find(d, 2, "allreduce")
    d.actions["kind"][row] = K.CODE["reduce"]
    d.actions["peer"][row] = 0
    rep = validate(d)
    assert dict(rep.counts) == {"collective-mismatch": 1}
    p = rep.problems[0]
    assert p.rank == 2 and "is reduce here but allreduce" in p.message


def test_collective_missing_on_one_member():
    d = good_builder().build()
    d = _drop(d, 1, _find(d, 1, "alltoall"))
    rep = validate(d)
    assert rep.counts["collective-mismatch"] >= 1
    assert any(p.rank == 1 and "calls 6 collective(s) on communicator 0, other members up to 7" in p.message for p in rep.problems)


def test_collective_root_and_size_mismatch():
    d = good_builder().build()
    row = int(d.rank_offsets[0]) + _find(d, 0, "bcast")
    d.actions["bytes_recv"][row] = 63
    row = int(d.rank_offsets[2]) + _find(d, 2, "gather")
    d.actions["peer"][row] = 2
    rep = validate(d)
    assert dict(rep.counts) == {"collective-size-mismatch": 1, "collective-mismatch": 1}
    msgs = {p.category: p for p in rep.problems}
    assert msgs["collective-size-mismatch"].rank == 0
    assert "63 B" in msgs["collective-size-mismatch"].message
    assert "root 2 here but 0" in msgs["collective-mismatch"].message


def test_reduce_root_receiving_other_than_its_members_send():
    """A reduce whose root receives nothing while its members send 8 B each: public UK-MAC
    TeaLeaf extrapolated from 1-D runs to a 2-D grid was written so and passed."""
    d = good_builder().build()
    row = int(d.rank_offsets[2]) + _find(d, 2, "reduce")
    d.actions["bytes_recv"][row] = 0
    rep = validate(d)
    assert dict(rep.counts) == {"collective-size-mismatch": 1}
    assert "reduce (collective 0 on communicator 3) receives 0 B, expected 8 B" in \
        rep.problems[0].message


def test_vector_collective_mismatch():
    d = good_builder().build()
    row = int(d.rank_offsets[1]) + _find(d, 1, "alltoallv")
    off = int(d.actions["vec_off"][row])
    d.vectors[off + 2] += 1            # rank 1 now sends one byte more to rank 2
    rep = validate(d)
    assert dict(rep.counts) == {"collective-size-mismatch": 1}
    assert "sends 13 B to member 2 which expects 12 B" in rep.problems[0].message


def test_collective_outside_its_communicator():
    d = good_builder().build()
    row = int(d.rank_offsets[1]) + _find(d, 1, "alltoall")
    d.actions["comm"][row] = 3          # rank 1 is not in comm 3
    rep = validate(d)
    assert any(p.rank == 1 and "not a member" in p.message for p in rep.problems)


def test_incomplete_request():
    d = good_builder().build()
    d = _drop(d, 1, _find(d, 1, "wait"))                # isend of rank 1 never waited
    row = int(d.rank_offsets[0]) + _find(d, 0, "test", 1)
    d.actions["flags"][row] = 0                          # second persistent start not completed
    rep = validate(d)
    assert dict(rep.counts) == {"incomplete-request": 2}
    got = {(p.rank, p.index) for p in rep.problems}
    assert got == {(1, _find(d, 1, "isend")), (0, _find(d, 0, "startall", 1))}


def test_report_caps_lines():
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    for i in range(70):
        b.add(0, "send", peer=1, tag=i, bytes_sent=1)
    for r in range(2):
        b.add(r, "finalize")
    rep = validate(b.build())
    assert rep.counts["unmatched-send"] == 70
    lines = rep.lines(50)
    assert len(lines) == 51 and lines[-1] == "... and 20 more problem(s)"


@pytest.mark.slow
def test_large_loop_trace_validates():
    """A loop-like 64-rank ring validates clean (benchmarks/bench_validate.py times 10 M)."""
    rep = validate(ring_trace(64, 640_000))
    assert rep.ok, str(rep)
    assert rep.counts == {} or sum(rep.counts.values()) == 0
