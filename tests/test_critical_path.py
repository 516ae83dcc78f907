"""The compute critical path (minitrace.replay.critical_path): messages cost nothing, so an
iteration lasts as long as its longest chain of compute through the messages and collectives
that order it; ranks that wait on some neighbours only are followed as they are."""
from __future__ import annotations

import numpy as np

from minitrace.replay.critical_path import clocks, iteration_path
from minitrace.replay.sampling import superstep_compute
from tests.support.synthetic_loops import Step, build

N = 30


def _pair_and_loner():
    """Ranks 0 and 1 exchange a message after their first compute; rank 2 exchanges nothing;
    all three end each iteration in an allreduce.  Returns (trace, bounds, volumes [3, 2, N])."""
    rng = np.random.default_rng(11)
    vol = rng.uniform(1e-4, 3e-4, (3, 2, N))

    def body(r):
        if r == 2:
            return [Step("compute", volume=vol[r, 0]), Step("compute", volume=vol[r, 1]),
                    Step("allreduce", nbytes=8)]
        other = 1 - r
        return [Step("compute", volume=vol[r, 0]), Step("irecv", other, 5, 64),
                Step("isend", other, 5, 64), Step("waitall", waits=(1, 2)),
                Step("compute", volume=vol[r, 1]), Step("allreduce", nbytes=8)]
    data, bounds = build(3, N, body)
    return data, bounds, vol


def test_iteration_path_follows_the_messages_and_the_collective():
    data, bounds, vol = _pair_and_loner()
    at = clocks(data)
    assert at is not None
    pair = vol[:2, 0].max(axis=0) + vol[:2, 1]            # ranks 0 and 1 after their exchange
    expected = np.maximum(pair.max(axis=0), vol[2].sum(axis=0))
    np.testing.assert_allclose(iteration_path(data, bounds, at), expected, rtol=1e-12)
    # the supersteps' cost sees only the allreduce (rank 2 makes no waitall): each rank's total
    assert (superstep_compute(data, bounds) <= expected + 1e-15).all()
    assert (superstep_compute(data, bounds) < expected - 1e-9).any()


def test_a_receive_no_send_matches_gives_none():
    def body(r):
        steps = [Step("compute", volume=1e-4)]
        if r == 0:           # waits for a message rank 1 never sends
            steps += [Step("irecv", 1, 9, 64), Step("waitall", waits=(1,))]
        return steps + [Step("allreduce", nbytes=8)]
    data, _ = build(2, 5, body)
    assert clocks(data) is None


def test_a_sendrecv_waits_for_the_send_of_its_own_receive_tag():
    """A sendrecv's receive is matched by its own source and tag (the action's vector), not by
    its send tag: the two directions of an exchange on tags 1 and 2 wait for each other."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2)
    for r, (work, send_tag) in enumerate(((3.0, 1), (1.0, 2))):
        b.add(r, "compute", volume=work)
        b.add(r, "sendrecv", peer=1 - r, tag=send_tag, bytes_sent=8, bytes_recv=8,
              vector=[1 - r, 3 - send_tag])
        b.add(r, "compute", volume=0.5)
    at = clocks(b.build())
    assert at is not None
    np.testing.assert_allclose(at[-2:], [3.5, 3.5])       # rank 1 waited for rank 0's send
