"""The CPU time of posting receives and completing requests (minitrace/predict/call_costs.py),
on traces whose answer is known."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict import call_costs
from minitrace.predict.calibration import Calibration, load
from minitrace.predict.prediction import replay_options, with_call_costs
from minitrace.replay import replay

US = 1e-6
COSTS = {"post": 0.3 * US, "complete": 0.1 * US}


def _trace(unit="seconds", n=3, scale=1.0):
    """Rank 0: irecv (before any compute), compute 100 us, ``n`` irecvs, compute 50 us, a
    waitall of the ``n + 1`` receives, an isend and its wait, compute 10 us.  Rank 1: compute 20 us,
    ``n + 1`` sends of 8 bytes, an isend and its wait.  Compute volumes times ``scale``."""
    b = TraceBuilder(2, {"volume_unit": unit})
    b.add(0, "irecv", peer=1, bytes_recv=8, request=0)
    b.add(0, "compute", volume=100 * US * scale)
    for i in range(n):
        b.add(0, "irecv", peer=1, bytes_recv=8, request=1 + i)
    b.add(0, "compute", volume=50 * US * scale)
    b.add(0, "waitall", vector=list(range(n + 1)))
    b.add(0, "isend", peer=1, bytes_sent=8, request=n + 1)
    b.add(0, "wait", request=n + 1)
    b.add(0, "compute", volume=10 * US * scale)
    b.add(1, "compute", volume=20 * US * scale)
    for i in range(n + 1):
        b.add(1, "send", peer=0, bytes_sent=8)
    b.add(1, "recv", peer=0, bytes_recv=8)
    return b.build()


def test_each_call_costs_its_terms():
    data = _trace()
    cost = call_costs.per_call(data, COSTS)
    name = {code: n for code, n, _ in K.KINDS}
    names = [name[k] for k in data.actions["kind"]]
    # (the waitall completes 4 receives; the wait, an isend's request: nothing)
    want = {"irecv": 0.3 * US, "waitall": 4 * 0.1 * US}
    assert cost == pytest.approx([want.get(n, 0.0) for n in names])
    # a waitall of receives and sends: its receives only; rank 1's ids are its own
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "irecv", peer=1 - r, bytes_recv=8, request=0)
        b.add(r, "isend", peer=1 - r, bytes_sent=8, request=1)
        b.add(r, "compute", volume=1 * US)
        b.add(r, "waitall", vector=[1, 0] if r == 0 else [1])
    mixed = call_costs.per_call(b.build(), COSTS)
    assert mixed == pytest.approx([0.3 * US, 0, 0, 0.1 * US, 0.3 * US, 0, 0, 0])


def test_a_wait_on_no_request_completes_no_receive():
    """A wait on request -1 (MPI_REQUEST_NULL, or one the recorder did not know) was keyed as
    the previous rank's largest request id: charged a completion it did not make."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    b.add(0, "irecv", peer=1, bytes_recv=8, request=0)
    b.add(0, "irecv", peer=1, bytes_recv=8, request=1)
    b.add(0, "waitall", vector=[0, 1])
    b.add(1, "wait", request=-1)
    b.add(1, "waitall", vector=[-1])
    assert call_costs.per_call(b.build(), COSTS) == pytest.approx(
        [0.3 * US, 0.3 * US, 2 * 0.1 * US, 0, 0])


def test_the_costs_go_into_the_compute_before_each_call():
    data = _trace()
    got, added = call_costs.add_to_compute(data, COSTS, speed=1e9)
    diff = got.actions["volume"] - data.actions["volume"]
    comp = np.flatnonzero(data.actions["kind"] == K.code("compute"))
    # rank 0: the first irecv has no compute before it (the first after it takes it), the 3
    # irecvs after the first compute go into it, the waitall (4 receives) into the second;
    # the third compute pays nothing.  Rank 1 posts and completes no receive.
    assert diff[comp] == pytest.approx([4 * 0.3 * US, 4 * 0.1 * US, 0.0, 0.0])
    assert np.count_nonzero(diff) == 2
    assert added == pytest.approx([1.6 * US, 0.0])
    assert (data.actions["volume"] == _trace().actions["volume"]).all()       # a copy


def test_a_trace_in_flops_gets_the_costs_in_flops():
    got, added = call_costs.add_to_compute(_trace("flops", scale=2e9), COSTS, speed=2e9)
    comp = got.actions["kind"] == K.code("compute")
    assert got.actions["volume"][comp][:2] == pytest.approx(
        [(100 * US + 1.2 * US) * 2e9, (50 * US + 0.4 * US) * 2e9])
    assert added == pytest.approx([1.6 * US, 0.0])


def test_the_fit_and_its_check():
    runs = [{"attrs": {"call_costs": {"post": p, "complete": c}}}
            for p, c in ((1e-7, 3e-8), (3e-7, 1e-8), (2e-7, 2e-8))] + [{"attrs": {}}]
    assert call_costs.fit(runs) == pytest.approx({"post": 2e-7, "complete": 2e-8})
    # (completion less the receive overhead the replay gives already, not below 0)
    assert call_costs.fit(runs, 5e-9) == pytest.approx({"post": 2e-7, "complete": 1.5e-8})
    assert call_costs.fit(runs, 1e-7) == pytest.approx({"post": 2e-7, "complete": 0.0})
    assert call_costs.fit([{"attrs": {}}]) == {}
    assert call_costs.fit([{"attrs": {"call_costs": {}}}]) == {}
    assert call_costs.valid({}) and call_costs.valid({"post": 0.0, "complete": 1e-7})
    for bad in ({"post": -1e-7, "complete": 0.0}, {"post": 1e-7}, {"post": np.nan,
                                                                    "complete": 0.0},
                {"post": True, "complete": 0.0}, []):
        assert not call_costs.valid(bad)


@pytest.mark.timeout(300)
def test_the_replay_of_a_rank_posting_and_completing_is_longer_by_their_cost(demo):
    """Rank 0 computes 1 ms while rank 1's eager messages arrive, then posts 50 receives and
    completes them: the replayed run is longer by exactly 50 posts and 50 completions (the
    calls' CPU time is on rank 0's path and nothing else changes)."""
    cal = load(str(demo.out / "machine.h5"))
    cal = replace(cal, after_compute={})          # (this term alone)
    n = 50
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "compute", volume=1e-3)
    for i in range(n):
        b.add(0, "irecv", peer=1, tag=0, bytes_recv=8, request=i)
    b.add(0, "compute", volume=1 * US)
    b.add(0, "waitall", vector=list(range(n)))
    b.add(0, "compute", volume=1 * US)
    b.add(1, "compute", volume=10 * US)
    for i in range(n):
        b.add(1, "send", peer=0, tag=0, bytes_sent=8)
    for r in range(2):
        b.add(r, "finalize")
    data = b.build()
    times = []
    for costs in ({}, {"post": 2 * US, "complete": 1 * US}):
        c = replace(cal, call_costs=costs)
        d = with_call_costs(data, c)[0]
        times.append(replay(d, **replay_options(d, c)).simulated_time)
    assert times[1] - times[0] == pytest.approx(n * 3 * US, rel=1e-6)


def test_calibrations_made_before_the_costs_add_nothing():
    assert Calibration.__dataclass_fields__["call_costs"].default_factory() == {}
    data = _trace()
    cal = Calibration(config={}, latency=1e-6, bandwidth=1e9, loopback_latency=1e-7,
                      loopback_bandwidth=1e10, speed=1e9, compute_rate=1e9,
                      reduction_rate=1e9, ranks_per_host=2, cores_per_host=2,
                      size_range=[1, 1 << 20], eager_threshold=1 << 16, pair="intra",
                      speed_spread=0.0, core_share=[1.0, 1.0], runs=1, points=1)
    got, after, posted = with_call_costs(data, cal)
    assert got is data and after is None and posted is None
