"""Phases alike (issue 38): a code that runs the same solve at several problem sizes (public
Nekbone: one CG loop of 201 iterations per element count, two solves of 100 and a step
between them) fits one line for all of them, an intercept each; the first of its kind is cut
before the step and replays a start and a tail in each piece, the others a window at each end
and skip over the step, which the first replayed (3.1x fewer actions before: every solve a
start of four windows and a tail)."""
from __future__ import annotations

import numpy as np

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import GAIN, sampled_replay
from tests.support.overlapped_solves import overlapped_solves

RATE = "1Gf"


def _solves(sizes: int = 6, iterations: int = 100, seed: int = 5, step=lambda k: 8):
    """Two ranks; per size a set-up outside the loops, then two CG solves of ``iterations``
    (a halo exchange of the size's bytes, its compute, jittered and warming up in the first
    solve's first iterations, an allreduce) with a barrier and a broadcast between them (of
    ``step(size)`` bytes)."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for k in range(1, sizes + 1):
        for r in (0, 1):
            b.add(r, "bcast", bytes_sent=64 * k, bytes_recv=64 * k, peer=0)
            b.add(r, "compute", volume=2e-3 * k)
        for solve in range(2):
            if solve:
                for r in (0, 1):
                    b.add(r, "barrier")
                    b.add(r, "bcast", bytes_sent=step(k), bytes_recv=step(k), peer=0)
            for i in range(iterations):
                warm = 1.5 if solve == 0 and i < 3 else 1.0
                work = 1e-4 * k * warm * (1 + 0.02 * rng.standard_normal(2))
                for r in (0, 1):
                    size = 4096 * k
                    b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=size, request=1)
                    b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=size, request=0)
                    b.add(r, "waitall", vector=[0, 1])
                    b.add(r, "compute", volume=float(work[r]))
                    b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    return b.build()


def test_alike_solves_share_a_line_and_skip_the_step():
    data = _solves()
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
    assert s.skipped_share > 1 - 1 / GAIN, s.notes
    like = [p for p in s.phases if p.like is not None]
    assert like and all(s.phases[p.like].like is None for p in like)
    assert any(n.startswith(f"{len(like)} phase(s) share the line of an earlier one")
               for n in s.notes)
    # the solves after the first kind's skip over the step between their two solves
    assert any(p.first < p.iterations // 2 < p.stop - p.tail and
               p.first + p.replayed < p.iterations // 2 for p in like)


def test_a_step_that_moves_more_at_each_size_is_replayed_in_each():
    """The step's broadcast grows with the size (1 to 36 MB): the first size's step, the
    only one replayed where a variant replayed anywhere pinned it for all, says nothing of
    the others' (the shared line has no column for bytes), so each solve replays its own."""
    data = _solves(step=lambda k: (k * k) << 20)
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    barriers = np.flatnonzero(data.actions["kind"] == K.code("barrier"))
    steps = [(p, j) for p in s.phases for j in range(p.first, p.stop)
             if ((barriers >= s.loops[p.loop][0, j]) &
                 (barriers < s.loops[p.loop][0, j + 1])).any()]
    assert len(steps) == 6 and any(p.like is not None for p in s.phases)
    assert all(j - p.first < p.replayed or j >= p.stop - p.tail for p, j in steps)
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_solves_of_other_calls_are_not_alike():
    """A solve whose iterations make other calls (an allreduce more) keeps its own line."""
    b = TraceBuilder(2)
    for r in (0, 1):
        b.add(r, "init")
    for k in range(2):
        for _ in range(100):
            for r in (0, 1):
                b.add(r, "compute", volume=1e-4)
                for _ in range(k + 1):
                    b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    s = sampled_replay(b.build(), None, "auto", compute_rate=RATE)
    assert len(s.phases) == 2 and all(p.like is None for p in s.phases)


def test_a_solve_whose_messages_hide_its_compute_is_fitted_alone():
    """The same solve at six sizes, each its compute overlapped with its halo exchange and a
    transient in its middle (iterations 60-139 take 1.3 times the compute): the first's 4 KB
    halo leaves its time its compute's, the others' 4 MB halos take longer than it, so their
    time does not follow their compute.  On the first's slope their skipped transients were
    +4.0% from the full replay against a bound of 0.22%; fitted alone, each its own line."""
    data = overlapped_solves([200] * 6, bump=1.3)
    s = sampled_replay(data, None, "auto", compute_rate=RATE)
    assert any(n.startswith("5 phase(s) fitted alone") for n in s.notes), s.notes
    full = replay(data, compute_rate=RATE)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
