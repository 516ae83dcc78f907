"""What sampling computes faster than it did (issue 38, the sampled replay's own work): the
variant runs next to a loop judged a block at a time as they were one by one, the F test
without scipy, and the critical-path clocks stepping through the calls only, each adding the
computes before it in order."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.model import TraceBuilder
from minitrace.replay.critical_path import clocks
from minitrace.replay.sampling import VARIANT_LENGTH, VARIANT_SHARE, _f_survival, _variants


def test_f_survival_is_scipys_fdtrc():
    from scipy.special import fdtrc
    for d1 in (3, 4, 7, 40, 333, 2500):
        for d2 in (3, 5, 12, 48, 1000):
            for f in (0.0, 0.3, 1.0, 1.7, 3.0, 12.0, 250.0):
                assert _f_survival(d1, d2, f) == pytest.approx(float(fdtrc(d1, d2, f)),
                                                              rel=1e-10, abs=1e-300)


def _variants_one_by_one(edge, at, ids, ref, length, free):
    """The rule of :func:`_variants` applied to one run after another (its former form)."""
    out = []
    if len(at) < 2 or at[0] != edge:
        return out
    for a, b in zip(at[:-1], at[1:]):
        seg = ids[min(a, b):max(a, b)]
        if not len(seg) or len(seg) > VARIANT_LENGTH * length:
            break
        c = np.bincount(seg, minlength=len(ref))
        if free is not None:
            c[free] = 0
        common = int(np.minimum(c[:len(ref)], ref).sum())
        need = VARIANT_SHARE * max(int(c.sum()), int(ref.sum()))
        if common < need or (common == need and ref.sum() <= 2 and free is None):
            break
        out.append(int(b))
    return out


@pytest.mark.parametrize("free", [None, 0])
def test_variant_runs_judged_a_block_at_a_time_as_one_by_one(free):
    """Random bodies and runs: anchored runs that repeat the body, vary it a little, or not
    at all, walked forwards and backwards, with and without an id that does not count."""
    rng = np.random.default_rng(5)
    for case in range(300):
        length = int(rng.integers(1, 9))
        body = rng.integers(0, 6, length)
        runs = []
        for _ in range(int(rng.integers(0, 40))):
            run = body.copy()
            if rng.random() < 0.3:         # a variant (or not): ids changed, added, dropped
                run = np.r_[run, rng.integers(0, 9, int(rng.integers(0, 2 * length)))]
                run[rng.random(len(run)) < 0.3] = rng.integers(0, 9)
            runs.append(run if len(run) else body)
        ids = np.concatenate([body] + runs).astype(np.int64)
        at = np.cumsum([0, length] + [len(r) for r in runs])[:-1]
        ref = np.bincount(body)
        if free is not None and free < len(ref):
            ref[free] = 0
        if case % 2:                       # walking back from the end
            at = at[::-1]
        edge = int(at[0])
        assert _variants(edge, at, ids, ref, length, free) == \
            _variants_one_by_one(edge, at, ids, ref, length, free)


def test_clocks_add_each_compute_in_order_between_calls():
    """Computes before a rank's first call, two in a row between calls and after its last
    call: each compute's clock, each call's and each rank's end as a pass over every row gives
    them (rank 1's receive waits for rank 0's send; a wait on a send's request waits for
    nothing)."""
    b = TraceBuilder(2)
    for v in (1.0, 2.0):
        b.add(0, "compute", volume=v)
    b.add(0, "isend", peer=1, tag=3, bytes_sent=8, request=7)
    b.add(0, "wait", request=7)
    for v in (0.5, 0.25):
        b.add(0, "compute", volume=v)
    b.add(1, "compute", volume=0.125)
    b.add(1, "irecv", peer=0, tag=3, bytes_recv=8, request=4)
    b.add(1, "waitall", vector=[4])
    for v in (1.0, 1.0):
        b.add(1, "compute", volume=v)
    at = clocks(b.build())
    assert at is not None
    assert at.tolist() == [0.0, 1.0, 3.0, 3.0, 3.0, 3.5,          # rank 0's rows
                           0.0, 0.125, 0.125, 3.0, 4.0,            # rank 1's
                           3.75, 5.0]                              # their ends
