"""What a measured trace replays as work (issue 9, part 1): the CPU time (or instructions) a rank
spent inside an MPI call is mostly busy-polling while it waits; the simulation models waiting
itself, so that volume must never reach SimGrid as computation."""
from __future__ import annotations

import pytest

from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.replay.platforms import Cluster
from minitrace.replay import replay

pytestmark = pytest.mark.timeout(120)
CLUSTER = Cluster(2, speed="1Gf", bandwidth="10GBps", latency="1us")


def _measured(unit="seconds", in_call=5.0, nbytes=8_000_000):
    """Two ranks timed in ``unit``: 1 unit of compute, then collectives that 'took' ``in_call``
    units inside the call each (allreduce, reduce, scan, barrier, bcast)."""
    b = TraceBuilder(2, {"volume_unit": unit})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1.0)
        b.add(r, "allreduce", bytes_sent=nbytes, bytes_recv=nbytes, volume=in_call)
        b.add(r, "reduce", peer=0, bytes_sent=nbytes, bytes_recv=nbytes if r == 0 else 0,
              volume=in_call)
        b.add(r, "barrier", volume=in_call)
        b.add(r, "bcast", peer=0, bytes_sent=8 if r == 0 else 0, bytes_recv=8 if r else 0,
              volume=in_call)
        b.add(r, "finalize")
    return b.build()


@pytest.mark.parametrize("unit,rate", [("seconds", "1Gf"), ("instructions", 1e9),
                                       ("cycles", 1e9)])
def test_in_call_volume_is_not_replayed_as_work(unit, rate):
    res = replay(_measured(unit), cluster=CLUSTER, compute_rate=rate)
    # 1 s of compute at 1 Gf on 1 Gf hosts plus 16 MB of messages at 10 GB/s: a few ms more.
    # Replaying the 5 units inside each reduction as work would add 10 s.
    assert 1.0 < res.simulated_time < 1.05
    assert any("4 reduction calls do no work" in n for n in res.notes), res.notes


def test_reduction_rate_models_the_reduction_from_its_bytes():
    base = replay(_measured(), cluster=CLUSTER, compute_rate="1Gf").simulated_time
    res = replay(_measured(), cluster=CLUSTER, compute_rate="1Gf", reduction_rate="8MBps")
    # two reductions of 8 MB at 8 MB/s: one second of work each, on both ranks
    assert res.simulated_time - base == pytest.approx(2.0, rel=1e-3)
    assert any("4 reduction calls do bytes / 8e+06 B/s" in n for n in res.notes), res.notes


def test_flops_traces_keep_their_reduction_work():
    # a SimGrid TI trace's comp_flops is an explicit model input, not a measurement
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, volume=1e9)
        b.add(r, "finalize")
    assert replay(b.build(), cluster=CLUSTER).simulated_time == pytest.approx(1.0, rel=1e-3)
    with pytest.raises(MinitraceError, match="no compute, reduction or copy rate applies"):
        replay(b.build(), cluster=CLUSTER, reduction_rate="1GBps")


def test_reduction_rate_needs_seconds():
    with pytest.raises(MinitraceError, match="reduction and copy rates apply to traces timed in seconds"):
        replay(_measured("instructions"), cluster=CLUSTER, compute_rate=1.0,
               reduction_rate="1GBps")


def test_a_counter_unit_asks_for_flops_per_unit():
    with pytest.raises(MinitraceError, match="flops per cycle"):
        replay(_measured("cycles"), cluster=CLUSTER)


def _alltoall(nbytes: int, in_place: bool = False):
    """Two ranks: compute, an alltoall of ``nbytes`` per rank (half of it the rank's own
    block), compute."""
    from minitrace import kinds as K
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=0.01)
        b.add(r, "alltoall", bytes_sent=nbytes, bytes_recv=nbytes,
              flags=K.FLAG_IN_PLACE if in_place else 0)
        b.add(r, "compute", volume=0.01)
        b.add(r, "finalize")
    return b.build()


def test_copies_without_a_cache_size_run_at_the_cold_rate():
    """calibrate --cold-from 0 (no cache boundary) with copy rates measured: a ZeroDivisionError
    in the replay's copy time."""
    from minitrace.replay.work import copy_seconds
    assert copy_seconds([1 << 10, 1 << 20], (1e10, 1e9, 0)).tolist() == \
        [(1 << 10) / 1e9, (1 << 20) / 1e9]


def test_copy_of_the_own_block_is_modelled_at_the_copy_rates():
    rates = (1e10, 1e9, 1 << 20)           # 10 GB/s in cache, 1 GB/s from 1 MiB touched (L2)
    # own block = half of nbytes; it touches twice that: 8 MiB, 1 MiB (= L2: cold), 256 KiB
    # (a quarter of L2: in cache), 512 KiB (halfway in log: the two times per byte averaged)
    for nbytes, per_byte in ((8 << 20, 1e-9), (1 << 20, 1e-9), (1 << 18, 1e-10),
                             (1 << 19, (1e-9 + 1e-10) / 2)):
        base = replay(_alltoall(nbytes), cluster=CLUSTER, compute_rate="1Gf").simulated_time
        res = replay(_alltoall(nbytes), cluster=CLUSTER, compute_rate="1Gf", copy_rates=rates)
        assert res.simulated_time - base == pytest.approx(nbytes / 2 * per_byte, rel=1e-6)
        assert any("2 collective calls copy the rank's own block" in n for n in res.notes)
    # MPI_IN_PLACE: nothing to copy
    base = replay(_alltoall(8 << 20, True), cluster=CLUSTER, compute_rate="1Gf")
    res = replay(_alltoall(8 << 20, True), cluster=CLUSTER, compute_rate="1Gf",
                 copy_rates=rates)
    assert res.simulated_time == base.simulated_time
