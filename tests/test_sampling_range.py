"""Skipped iterations whose compute lies beyond the range of the replayed ones' (issue 38): an
iteration's time is a maximum of sums of computes and messages, its slope against its compute
anywhere from 0 (hidden behind a message) to 1, so the line of the replayed iterations, or
their critical path at slope 1, says nothing of it there (:func:`minitrace.replay.sampling.
_outside`): the bound covers the farthest slope they leave open."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.sampling import Phase, _fit, sampled_replay

HALO = 4 << 20


def _overlapped(work: np.ndarray):
    """Ranks ``len(work)``; per iteration a 4 MB exchange with the other rank overlapped with
    the compute ``work[r, i]`` (2% jitter), then an allreduce."""
    nranks, n = work.shape
    work = work * (1 + 0.02 * np.random.default_rng(3).standard_normal(work.shape))
    b = TraceBuilder(nranks)
    for r in range(nranks):
        b.add(r, "init")
    for i in range(n):
        for r in range(nranks):
            b.add(r, "irecv", peer=1 - r, tag=7, bytes_recv=HALO, request=1)
            b.add(r, "isend", peer=1 - r, tag=7, bytes_sent=HALO, request=0)
            b.add(r, "compute", volume=float(work[r, i]))
            b.add(r, "waitall", vector=[0, 1])
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in range(nranks):
        b.add(r, "finalize")
    return b.build()


def _spike(n: int = 1200):
    """Compute under the halo's time but twice as long in 60 iterations the sampler skips:
    there it outlasts the halo (the line of the replayed ones, all hidden: slope 0)."""
    work = np.full((2, n), 3e-4)
    work[:, n // 2 - 100:n // 2 - 40] *= 2.0
    return _overlapped(work)


def _drift(n: int = 1200):
    """The ranks' balance drifting and back (the path at slope 1 follows it), the compute over
    the halo's time at the ends and under it in the middle, which the sampler skips."""
    x = np.sin(np.pi * np.arange(n) / n)
    return _overlapped(6e-4 * np.vstack([1 - 0.5 * x, 1 - 0.25 * x]))


def _rising(n: int = 1200):
    """The same, the compute under the halo's time at the ends (slope 0 there) and over it in
    the middle, where the path at slope 1 puts all of its growth."""
    x = np.sin(np.pi * np.arange(n) / n)
    return _overlapped(4e-4 * np.vstack([1 + 0.6 * x, 1 + 0.25 * x]))


@pytest.mark.parametrize("trace", [_spike, _drift, _rising])
def test_the_bound_covers_compute_beyond_the_replayed_range(trace):
    data = trace()
    s = sampled_replay(data, None, "auto", compute_rate="1Gf")
    full = replay(data, compute_rate="1Gf")
    assert s.skipped_share > 0, s.notes
    assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.notes


@pytest.mark.parametrize("scale", [0.25, 1.0, 4.0])
def test_a_line_at_the_phases_own_slope_within_its_range_adds_nothing(scale):
    """Times of ``scale`` replay seconds a unit of compute (--compute-rate over the hosts'
    speed), the skipped iterations' compute within the fitted ones' range: the line's slope is
    the phase's own, in the replay's seconds, and nothing lies beyond (with the line's slope
    taken as ``scale`` squared, 4 Gf added 15 times the skipped compute about the mean); the
    tail's first iteration, which follows the skip, is predicted with them."""
    rng = np.random.default_rng(1)
    n, w = 200, 5
    compute = 1e-4 * (1 + 0.1 * rng.standard_normal(n))
    compute[4 * w:n - w + 1] = np.clip(compute[4 * w:n - w + 1], compute[:4 * w].min(),
                                       compute[:4 * w].max())
    t = scale * compute + 2e-5
    p = Phase(0, 0, n, w, replayed=4 * w, tail=w, steady_from=0)
    _fit([p], [(t[:4 * w], t[n - w:])], [compute[:, None]], scale=scale)
    assert p.outside <= 1e-12 * p.skipped_time
