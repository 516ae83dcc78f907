"""The memory term of a collective's buffers (minitrace.replay.work, issue 35): the part of them a
rank finds in memory rises smoothly with its working set (the buffers and the data packed into
the send buffer), from none at half the calibrated share of the caches to
all of them at twice it, so that two ranks of nearly the same buffers get nearly the same term
(a step at the share gave NPB IS's two ranks 2.7 and 0.6 ms)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.replay.work import (copy_seconds, from_memory_seconds, memory_fraction,
                                   own_block_copies, own_block_seconds, working_set)

HOT, COLD, L2, SHARE, MEMORY = 30e9, 13e9, 2 << 20, 48 << 20, 6.5e9   # (SHARE / 12: whole)
COPIES = (HOT, COLD, L2, SHARE, MEMORY)


def _alltoall(blocks):
    """2 ranks, each one MPI_Alltoall of its ``blocks[rank]`` bytes to each rank (buffers:
    4 blocks, a working set of 6), then a compute action of 1 ms."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r, block in enumerate(blocks):
        b.add(r, "init")
        b.add(r, "alltoall", bytes_sent=2 * block, bytes_recv=2 * block)
        b.add(r, "compute", volume=1e-3)
        b.add(r, "finalize")
    return b.build()


def _term(block: int) -> float:
    """Seconds the memory term gives an all-to-all of ``block``-byte blocks (rank 0)."""
    _, seconds, _, _, placed = own_block_seconds(_alltoall([block, block]), COPIES)
    assert placed.all()
    return float(seconds[0])


def test_memory_fraction_is_log_linear_from_half_to_twice_the_share():
    got = memory_fraction([SHARE / 8, SHARE / 2, SHARE / np.sqrt(2), SHARE, SHARE * np.sqrt(2),
                           2 * SHARE, 8 * SHARE], SHARE)
    assert got == pytest.approx([0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0], abs=1e-12)
    # no share measured: nothing in memory, whatever the buffers
    assert memory_fraction([1 << 30, 0], 0).tolist() == [0.0, 0.0]
    # the working set of a collective: its buffers and the data packed into the send buffer
    assert working_set([3, 1 << 20], [5, 0]).tolist() == [11.0, 2.0 * (1 << 20)]


def test_the_term_below_at_and_above_the_share():
    # a working set of 6 blocks: up to half the share, the copy of the own block alone (cached)
    small = SHARE // 12
    assert _term(small) == pytest.approx(float(copy_seconds(small, COPIES)), rel=1e-12)
    # at the share, half of each: the copy's cached time and the time from memory (the own
    # block copied at the memory's rate, the other rank's block sent and one received, each
    # once through memory: block / memory + 2 block / 2 / memory)
    at = SHARE // 6
    want = 0.5 * float(copy_seconds(at, COPIES)) + 0.5 * 2 * at / MEMORY
    assert _term(at) == pytest.approx(want, rel=1e-12)
    # from twice the share, all from memory
    big = SHARE // 3
    assert _term(big) == pytest.approx(2 * big / MEMORY, rel=1e-12)
    assert _term(big) == pytest.approx(float(from_memory_seconds(big, 2 * big, 2 * big,
                                                                 MEMORY)), rel=1e-12)


def test_the_term_is_continuous_and_grows_with_the_buffers():
    # NPB IS's two ranks: 33.63 and 33.48 MB of buffers (working sets of 50.4 and 50.2 MB),
    # with a share of 67.1 MB (64 MiB)
    share = 64 << 20
    rows, seconds, _, deep, _ = own_block_seconds(
        _alltoall([33_630_000 // 4, 33_480_000 // 4]), (HOT, COLD, L2, share, MEMORY))
    assert deep.tolist() == [True, True]
    assert seconds[0] / seconds[1] == pytest.approx(33_630_000 / 33_480_000, rel=0.02)
    # on either side of each bound of the ramp and of the share (blocks of a sixth of the
    # working set), 12 bytes apart: no jump (a step there, the memory term's half or all of it,
    # would be tens of percent of the term; the ramp's slope moves it by about 1e-5)
    for edge in (SHARE // 12, SHARE // 6, SHARE // 3):
        below, above = _term(edge - 6), _term(edge + 6)
        assert above >= below and above - below < 1e-4 * below
    # it grows with the blocks, from the copy in cache to the memory's rate
    blocks = np.unique(np.geomspace(SHARE // 64, 4 * SHARE, 200).astype(np.int64))
    terms = np.array([_term(int(b)) for b in blocks])
    assert (np.diff(terms) > 0).all()


def test_the_counts_say_which_calls_went_partly_through_memory():
    data = _alltoall([SHARE // 12, SHARE // 6])     # rank 0 cached, rank 1 at the share
    actions = data.actions.copy()
    counts = own_block_copies(data, actions, COPIES, 1.0)
    assert counts["copies"] == 2 and counts["from_memory"] == 1
    added = actions["volume"][actions["kind"] == K.code("compute")] - 1e-3
    assert added == pytest.approx([_term(SHARE // 12), _term(SHARE // 6)], rel=1e-12)
