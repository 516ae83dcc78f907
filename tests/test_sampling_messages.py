"""Skipping iterations leaves each receive after them a message of the size it got: a message
is the n-th sent on its channel (source, destination, tag, communicator) and the n-th received
on it, and a block whose sends and receives are as many on every channel but not the same n
leaves every later receive matched with another message, alike in a pipeline skipped by whole
periods, but not in public PENNANT at 4 ranks under --sample auto (SimGrid's MPI_ERR_TRUNCATE:
a receive of 408 bytes given 816)."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder
from minitrace.replay.sampling import check_separable

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
    receives, of messages 6-10, and each receive after them would take the message before its
    own, of the other size: the balance of the channel alone took them for separable."""
    data = _channel()
    assert check_separable(data, _rows(data, [5, 5], [10, 10])) is None
    why = check_separable(data, _rows(data, [5, 6], [10, 11]))
    assert why is not None and "messages of other sizes" in why


def test_a_shift_among_messages_alike_is_skipped():
    """The same shift where every message is of one size: each receive takes a message like
    its own, as in a pipeline skipped by whole periods."""
    data = _channel((8,))
    assert check_separable(data, _rows(data, [5, 6], [10, 11])) is None
