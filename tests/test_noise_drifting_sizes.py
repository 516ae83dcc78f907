"""Replicas' noise on a loop whose messages change size every step, as ECP CoMD's atom
exchange sends them (a generated trace of the pattern: no replay here): a call site is told
apart by the bytes of the calls around it, so each step is a site of its own, too small for a
law, and replayed as recorded.  The note said these were "one-off phases such as a set-up or
an assembly" (CoMD: 631 such sites, all of its compute, 20 replicas within 1.3e-5 s of 1.9 s);
it now gives their share of the compute and, when they repeat between the same kinds of
calls, says so (tests/test_one_off_sites.py: computes done once are still one-off phases)."""
from __future__ import annotations

import numpy as np

from minitrace.model import TraceBuilder
from minitrace.replay.noise import noise_model


def _md(drift: bool):
    """2 ranks, 60 steps: the forces (1 ms, 5% noise), then a sendrecv of the atoms that
    crossed (56 bytes an atom: a count that changes every step when ``drift``); a 0.1 ms
    set-up first."""
    rng = np.random.default_rng(7)
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "compute", volume=1e-4)
        for step in range(60):
            b.add(r, "compute", volume=1e-3 * (1 + 0.05 * rng.standard_normal()))
            n = 56 * (400 + (step * 7 % 97 if drift else 0))
            b.add(r, "sendrecv", peer=1 - r, bytes_sent=n, bytes_recv=n)
    return b.build()


def _few_note(data) -> str:
    notes = noise_model(data, "trace").assumptions
    return next((n for n in notes if "site(s) with fewer than" in n), "")


def test_drifting_sizes_are_not_called_one_off_phases():
    """Every step its own site: their share of the compute is said, and that they repeat
    between the same calls, not a set-up."""
    note = _few_note(_md(drift=True))
    assert "(122 volumes, 100% of the compute: 118 of them between the same kinds of calls " \
        "as 20 or more others of their rank: repetitions told apart by the bytes" in note
    assert "one-off phases such as" not in note


def test_a_set_up_alone_is_a_one_off_phase():
    """With the same sizes every step, only the set-up and the first step (no call before
    them) are small sites: one-off phases."""
    note = _few_note(_md(drift=False))
    assert "2% of the compute: one-off phases such as a set-up" in note
