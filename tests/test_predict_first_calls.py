"""The first call of each kind replayed at the set-up cost the recording shows
(minitrace/predict/first_calls.py), on timed traces whose answer is known."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict.first_calls import setup_costs, with_first_calls
from tests.support.synthetic import in_turn

US = 1e-6


def _trace(first_allreduce=(1000 * US, 400 * US), first_send=(300 * US, None),
           unit="seconds"):
    """2 ranks: init, then 5 x (compute 100 us, allreduce 10 us); rank 0 also sends 3 times
    (20 us each) after its last compute; the first allreduce of rank r takes
    ``first_allreduce[r]``; rank 0's first send ``first_send[0]``."""
    b = TraceBuilder(2, {"volume_unit": unit})
    for r in range(2):
        add = in_turn(b, r)
        add("init", 0.0)
        for i in range(5):
            add("compute", 100 * US, volume=100 * US)
            add("allreduce", first_allreduce[r] if i == 0 else 10 * US, bytes_sent=8,
                bytes_recv=8)
        if r == 0:
            for i in range(3):
                add("send", first_send[0] if i == 0 else 20 * US, peer=1, bytes_sent=8)
        else:
            for i in range(3):
                add("recv", 20 * US, peer=0, bytes_recv=8)
        add("finalize", 0.0)
    return b.build()


def test_the_set_up_is_the_smallest_first_call_excess_over_the_ranks():
    costs = setup_costs(_trace())
    # allreduce: rank 0 990 us above its median (10 us), rank 1 390 us: the later rank's 390
    assert set(costs) == {K.code("allreduce")}      # send and recv: one rank each, left out
    assert costs[K.code("allreduce")] == pytest.approx(390 * US)
    # no excess: nothing
    assert setup_costs(_trace(first_allreduce=(10 * US, 10 * US))) == {}


def test_the_cost_goes_into_the_compute_before_each_ranks_first_call():
    data = _trace()
    got, added = with_first_calls(data)
    assert added == pytest.approx([390 * US, 390 * US])
    comp = np.flatnonzero(data.actions["kind"] == K.code("compute"))
    firsts = [comp[comp >= data.rank_slice(r).start][0] for r in range(2)]
    diff = got.actions["volume"] - data.actions["volume"]
    assert diff[firsts] == pytest.approx([390 * US, 390 * US])
    assert np.count_nonzero(diff) == 2
    assert (data.actions["volume"] == _trace().actions["volume"]).all()     # a copy


def test_untimed_or_flops_traces_are_left_as_they_are():
    data = _trace(unit="flops")
    same, added = with_first_calls(data)
    assert same is data and not added.any()
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "compute", volume=1e-3)
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    untimed = b.build()
    assert setup_costs(untimed) == {} and with_first_calls(untimed)[0] is untimed
