"""Iteration sampling where the ranks' loops start at other iterations: the loops are found on
each rank apart and paired by their order, and public UK-MAC TeaLeaf at 4 ranks began ranks 2
and 3's PPCG loop 31 iterations before ranks 0 and 1's (at 2 ranks three loops 287 to 604
iterations apart).  Its halo sizes change between iterations, so a block of iterations left
out took other messages out on the sender than on the receiver, and the receives left beside
it would take messages of other sizes: ``--sample auto`` replayed TeaLeaf fully at 4 ranks
(1.0x fewer actions), "messages cross the boundaries of the skipped iterations (...)".  The
loops are now cut into pieces whose iterations start on every rank at the same message of each
channel (sampling._aligned_ranks), each rank's taken from whichever of its loops holds them.
tests/programs/shifted_halo.c reproduces the pattern at 2 ranks (31 iterations apart)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.replay import sampling
from minitrace.replay.sampling import load_trace, loops_of, sampled_replay, top_level
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)
ITERATIONS = 400
SHIFT = 31
RATE = "1Gf"


@pytest.fixture(scope="module")
def shifted(programs, tmp_path_factory):
    out = tmp_path_factory.mktemp("shifted") / "sh.h5"
    record(out, 2, [programs("shifted_halo"), str(ITERATIONS), "127"])
    return load_trace(str(out))


def _starts(data, b: np.ndarray) -> np.ndarray:
    """Per rank, the messages of the halo channel it sent before each of the loop's iteration
    starts (rank 0 to 1 and 1 to 0 carry one message each per iteration, alike)."""
    a = data.actions
    rank = data.rank_of()
    sends = (a["kind"] == sampling.K.code("isend")) & (a["peer"] == 1 - rank) & (a["tag"] == 1)
    rows = np.flatnonzero(sends)
    return np.stack([np.searchsorted(rows[rank[rows] == r], b[r]) for r in range(len(b))])


def _found(data) -> np.ndarray:
    """The main loop as the grammar finds it, before :func:`loops_of` cuts it."""
    return max(top_level(sampling._loops_found(data)[0]), key=lambda b: b.shape[1])


def test_the_loops_found_start_at_other_messages(shifted):
    """The loop found runs as many iterations on each rank, but rank 1's begins SHIFT
    exchanges before rank 0's: the mismatch sampling met in TeaLeaf."""
    main = _found(shifted)
    assert main.shape[1] - 1 >= ITERATIONS
    at = _starts(shifted, main)
    assert (at[0] - at[1] == SHIFT).all()
    assert sampling._misaligned(sampling._channels(shifted), main)


def test_loops_of_cuts_it_to_the_iterations_both_ranks_run(shifted):
    """:func:`loops_of` gives the loop cut to the iterations both ranks run, each starting on
    both at the same message, and says so."""
    loops, notes = loops_of(shifted)
    main = max(top_level(loops), key=lambda b: b.shape[1])
    assert main.shape[1] - 1 >= ITERATIONS - 2
    at = _starts(shifted, main)
    assert (at[0] == at[1]).all()
    assert any("cut into pieces" in n for n in notes)


def test_sampling_skips_the_aligned_iterations(shifted):
    """Sampled, not replayed fully: the loop is cut to the iterations both ranks run, each
    starting on both at the same message, and what it skips leaves every receive kept the
    message (and size) it got."""
    s = sampled_replay(shifted, None, "auto", compute_rate=RATE)
    assert not any(n.startswith("replayed fully") for n in s.notes), s.notes
    assert not any("receives left after them" in n for n in s.notes), s.notes
    assert any("cut into pieces" in n for n in s.notes)
    assert s.skipped_share > 0.3 and s.replays >= 1
    main = max(s.loops, key=lambda b: b.shape[1])
    assert main.shape[1] - 1 >= ITERATIONS - 2
    at = _starts(shifted, main)
    assert (at[0] == at[1]).all()
    for p in s.phases:
        if p.skipped:
            rows = sampling._skipped_rows(s.loops[p.loop], p)
            assert sampling.check_separable(shifted, rows) is None
    assert s.rank_end_times and all(t > 0 for t in s.rank_end_times)


def test_loops_already_aligned_are_left_as_they_are(shifted):
    """A loop whose iterations start at the same messages on every rank is not cut."""
    main = _found(shifted)
    at = _starts(shifted, main)
    d = int(at[0, 0] - at[1, 0])
    aligned = np.stack([main[0, :-d], main[1, d:]])
    got, cut = sampling._aligned_ranks(shifted, [aligned])
    assert not cut and got[0] is aligned
