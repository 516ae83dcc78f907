"""Skipping iterations leaves each receive after them a message of the size it got: a message
is the n-th sent on its channel (source, destination, tag, communicator) and the n-th received
on it, and a block whose sends and receives are as many on every channel but not the same n
gives a receive kept beside it another message (one receive per message of shift), alike in a
pipeline skipped by whole periods, but not in public PENNANT at 4 ranks under --sample auto
(SimGrid's MPI_ERR_TRUNCATE: a receive of 408 bytes given 816)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import check_separable, sampled_replay
from tests.support.synthetic_loops import stencil

ITERATIONS = 20


def _channel(sizes=(16, 8)):
    """Rank 0 sends rank 1 one message per iteration (a compute and a call on each rank), of
    ``sizes`` in turn."""
    b = TraceBuilder(2)
    for i in range(ITERATIONS):
        size = sizes[i % len(sizes)]
        b.add(0, "compute", volume=1.0)
        b.add(0, "send", peer=1, tag=1, bytes_sent=size)
        b.add(1, "compute", volume=1.0)
        b.add(1, "recv", peer=0, tag=1, bytes_recv=size)
    return b.build()


def _rows(data, first: list[int], stop: list[int]) -> np.ndarray:
    """Iterations first[r] to stop[r] - 1 of each rank r (two rows each)."""
    return np.concatenate([data.rank_offsets[r] + np.arange(2 * first[r], 2 * stop[r])
                           for r in (0, 1)])


def test_a_block_shifted_by_a_message_is_not_skipped():
    """Iterations 5-9 on both ranks leave out messages 5-9; rank 1's iterations 6-10 as many
    receives, of messages 6-10, and rank 1's receive 5, kept, would take message 10, of the
    other size: the balance of the channel alone took them for separable."""
    data = _channel()
    assert check_separable(data, _rows(data, [5, 5], [10, 10])) is None
    why = check_separable(data, _rows(data, [5, 6], [10, 11]))
    assert why is not None and "messages of other sizes" in why


def test_a_shift_among_messages_alike_is_skipped():
    """The same shift where every message is of one size: each receive takes a message like
    its own, as in a pipeline skipped by whole periods."""
    data = _channel((8,))
    assert check_separable(data, _rows(data, [5, 6], [10, 11])) is None


def test_sizes_that_change_inside_a_block_of_alike_iterations():
    """Where a block's iterations repeat call for call, one of them is checked for all; sizes
    that change later in the block (800 bytes, then 808 from message 150) with the receiver's
    iterations a message later than the sender's left a receive a message of the other size:
    the check on one iteration skipped it, and SimGrid failed (MPI_ERR_TRUNCATE; a reviewer's
    find).  The phase is replayed whole, saying why."""
    n, change = 200, 150
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for i in range(n):
        size = 800 if i < change else 808
        b.add(0, "compute", volume=1e-3)
        b.add(0, "send", peer=1, tag=1, bytes_sent=size)
        b.add(1, "compute", volume=1e-3)
        b.add(1, "recv", peer=0, tag=1, bytes_recv=size)
    for r in (0, 1):
        b.add(r, "finalize")
    data = b.build()
    off, its = data.rank_offsets, n - 2
    loop = np.stack([off[0] + 1 + 2 * np.arange(its + 1), off[1] + 3 + 2 * np.arange(its + 1)])
    s = sampled_replay(data, [loop], "auto", compute_rate="1Gf")
    (why,) = [x for x in s.notes if x.startswith("replayed fully")]
    assert "messages of other sizes" in why


def test_a_truncated_sampled_replay_says_to_replay_whole():
    """SimGrid's MPI_ERR_TRUNCATE in a sampled replay (here a replay that gives a receive of
    1024 bytes a message of 4096, as a block skipped wrongly would) says to try --sample off,
    not to validate the trace, which is sound."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send", peer=1, bytes_sent=4096)
    b.add(1, "recv", peer=0, bytes_recv=1024)
    for r in range(2):
        b.add(r, "finalize")
    truncated = b.build()
    data, bounds = stencil(2, 300)
    with pytest.raises(MinitraceError) as e:
        sampled_replay(data, [bounds], "auto", compute_rate="1Gf",
                       replay_fn=lambda trace, **kw: replay(truncated, **kw))
    said = str(e.value)
    assert "MPI_ERR_TRUNCATE" in said and "--sample off" in said and "validate" not in said
    assert "\n" not in said
