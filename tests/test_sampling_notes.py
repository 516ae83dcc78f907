"""A sampled replay's notes say each reason once (issue 38): public Quicksilver at 2 ranks
printed 40 near-identical notes, one per loop whose iteration counts differ between ranks; now
one note names how many loops, which, and their counts, and the phases replayed whole for one
reason are named in one note."""
from __future__ import annotations

import re

from minitrace.model import TraceBuilder
from minitrace.replay.sampling import UNEVEN, _one_per_reason, sampled_replay

#: Iterations of each loop on rank 0 and rank 1 (loop 2 alike on both).
COUNTS = [(30, 41), (50, 38), (20, 20), (25, 33)]


def _loops(counts, apart: bool = True):
    """Per loop, its iterations of a compute and a poll of the other rank (a tag per loop),
    each rank as many as ``counts`` gives it (where a rank's calls depend on when its messages
    arrive), then, ``apart``, as many barriers as the loops before (no outer loop repeats the
    loops; without them, no loop is found in the trace's steps either: one run of calls that
    do not wait)."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        for li, per in enumerate(counts):
            for _ in range(per[r]):
                b.add(r, "compute", volume=1e-4 * (1 + li))
                b.add(r, "iprobe", peer=1 - r, tag=li)
            for _ in range(li + 1 if apart else 0):
                b.add(r, "barrier")
        b.add(r, "finalize")
    return b.build()


def test_loops_of_uneven_counts_make_one_note():
    """Three loops run other counts on the two ranks: one note, naming them and their counts
    (before: a note per loop)."""
    s = sampled_replay(_loops(COUNTS), None, "auto", compute_rate="1Gf")
    said = [n for n in s.notes if UNEVEN in n]
    assert len(said) == 1, s.notes
    uneven = [c for c in COUNTS if c[0] != c[1]]
    lo, hi = min(map(min, uneven)), max(map(max, uneven))
    apart = sorted(abs(a - b) for a, b in uneven)
    assert said[0].startswith(f"{len(uneven)} loops (")
    assert f"{lo} to {hi} iterations on a rank" in said[0]
    assert f"apart by {apart[0]} to {apart[-1]}" in said[0]
    assert s.replayed_share == 1.0


def test_no_even_loop_counts_them_all():
    """Where no loop runs alike on every rank, the replay is full and says of how many loops
    that is, from the one note."""
    counts = [(12, 17), (40, 31), (22, 29)]
    s = sampled_replay(_loops(counts, apart=False), None, "auto", compute_rate="1Gf")
    (said,) = [n for n in s.notes if UNEVEN in n]
    assert said.startswith("3 loops (0-2) are ")
    (why,) = [n for n in s.notes if n.startswith("replayed fully")]
    assert re.search(r"none of the 3 loops found", why), why


def test_one_loop_is_named():
    counts = [(12, 17)]
    s = sampled_replay(_loops(counts), None, "auto", compute_rate="1Gf")
    (said,) = [n for n in s.notes if UNEVEN in n]
    assert said.startswith("1 loop (loop 0) is ") and "apart by 5)" in said


def test_phases_replayed_whole_for_one_reason_make_one_note():
    """Phases replayed whole for one reason are named in one note, at the first's place; other
    reasons and other notes keep theirs, a repeat said once."""
    why = "replayed whole: messages cross the boundaries of the skipped iterations"
    notes = ["a", f"{why} (iterations 4-90 of loop 0)", "b", "other",
             "replayed whole: requests cross them (iterations 7-9 of loop 1)",
             f"{why} (iterations 12-40 of loop 2)", "b", f"{why} (iterations 4-90 of loop 0)"]
    assert _one_per_reason(notes) == [
        "a", f"{why} (iterations 4-90 of loop 0; iterations 12-40 of loop 2)", "b", "other",
        "replayed whole: requests cross them (iterations 7-9 of loop 1)"]
