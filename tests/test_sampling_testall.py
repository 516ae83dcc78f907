"""Iteration sampling where a rank's calls depend on when its messages arrive: UK-MAC TeaLeaf
tests its halo requests (``MPI_Testall``) and waits for them (``MPI_Waitall``) only where the
test did not complete them, so each iteration has one waitall more or less as the arrival
order chose, every rank a program of its own, and its CG loop was broken into ~25 loops of
different iteration counts on different ranks (under MPICH at 2 ranks): ``--sample auto``
replayed fully, saying "no loop found in the trace".  The loops are now found with each
completed testall taken as the incomplete test and the waitall it stands for (as extrapolation
does: minitrace/tested_waits.py), and where none is even so, the note says what was
found and why it cannot be sampled.  tests/programs/testall_halo.c reproduces the pattern."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.cli import main
from minitrace.model import TraceBuilder
from minitrace.replay import sampling
from minitrace.replay.sampling import load_trace, loops_of, sampled_replay, top_level
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(600)
ITERATIONS = 400
RATE = "1Gf"


@pytest.fixture(scope="module")
def recorded(programs, tmp_path_factory):
    out = tmp_path_factory.mktemp("testall") / "th.h5"
    record(out, 2, [programs("testall_halo"), str(ITERATIONS), "100"])
    return out


@pytest.fixture(scope="module")
def halo(recorded):
    return load_trace(str(recorded))


def test_the_tests_complete_or_not(halo):
    """Some testalls completed their requests and some did not (the arrival order's choice):
    the ranks' programs differ."""
    a = halo.actions
    done = (a["flags"][a["kind"] == K.code("testall")] & K.FLAG_COMPLETED) != 0
    assert done.any() and not done.all()


def test_the_loop_is_found_with_completed_tests_as_waits(halo):
    loops, notes = loops_of(halo)
    main = max(top_level(loops), key=lambda b: b.shape[1])
    assert main.shape[1] - 1 >= ITERATIONS - 2
    assert (np.diff(main, axis=1) > 0).all()
    assert (main[:, 0] >= halo.rank_offsets[:-1]).all()
    assert (main[:, -1] <= halo.rank_offsets[1:]).all()
    assert any("completed testall calls taken as the incomplete test" in n for n in notes)
    s = sampled_replay(halo, None, "auto", compute_rate=RATE)
    assert s.skipped_share > 0.5 and s.replays >= 1
    assert not any(n.startswith("replayed fully") for n in s.notes)


def _uneven_programs():
    """Both ranks exchange and reduce in each of ITERATIONS iterations, and send themselves a
    message in every 3rd (rank 0) or 5th (rank 1): each rank's loop runs its own iteration
    count, as TeaLeaf's ranks' did where a completed testall stood as it was recorded (the
    arrival order's choice: a recording of testall_halo, with the rewriting left out, gave
    such loops in 10 of 12 runs and not in 2, too seldom to test on)."""
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for i in range(ITERATIONS):
        for r in (0, 1):
            b.add(r, "isend", peer=1 - r, tag=1, bytes_sent=800, request=0)
            b.add(r, "irecv", peer=1 - r, tag=1, bytes_recv=800, request=1)
            b.add(r, "waitall", vector=[0, 1])
            if i % (3 + 2 * r) == 1:
                b.add(r, "isend", peer=r, tag=2, bytes_sent=8, request=2)
                b.add(r, "recv", peer=r, tag=2, bytes_recv=8)
                b.add(r, "wait", request=2)
            b.add(r, "compute", volume=1e-4)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    return b.build()


def test_uneven_loops_are_named_in_the_note():
    """Where no loop runs as many iterations on every rank, the note says so, not that no
    loop was found."""
    s = sampled_replay(_uneven_programs(), None, "auto", compute_rate=RATE)
    (why,) = [n for n in s.notes if n.startswith("replayed fully")]
    assert "no loop found" not in why
    assert "runs the same iteration count on every rank" in why


def test_a_compressed_recording_samples_as_the_recording(recorded, halo):
    """A compressed file's loops are its stored grammar's, in which the completed tests break
    the loop as in the recording: its expanded trace is searched too (a reviewer's find: the
    compressed TeaLeaf replayed fully, "no dominant loop")."""
    z = recorded.with_name("th.z.h5")
    assert main(["compress", str(recorded), "-o", str(z)]) == 0
    plain = sampled_replay(halo, None, "auto", compute_rate=RATE)
    packed = sampled_replay(load_trace(str(z)), None, "auto", compute_rate=RATE)
    assert packed.skipped_share == plain.skipped_share > 0.5
    assert packed.simulated_time == plain.simulated_time


def test_a_completed_test_costs_the_call_it_stands_for(halo):
    """Each iteration of the program makes the same calls; whether a rank's test completed (no
    waitall after it) is the arrival order's choice: counted as the test and the waitall it
    stands for, every iteration but the loop's edges costs as many calls, so none is a
    variant to replay."""
    main = max(top_level(loops_of(halo)[0]), key=lambda b: b.shape[1])
    calls = sampling.iteration_cost(halo, main)[1:-1, 1]
    assert np.ptp(calls) == 0
