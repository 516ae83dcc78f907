"""Noise replicas of a run whose computes are each done once (NPB BT and SP on one rank;
tests/programs/one_offs.c): every call site is a one-off, replayed as recorded, so no site is
left to draw from, and `replay --replicas` / `predict --replicas` died with "internal error:
ValueError: zero-size array to reduction operation maximum" (minitrace/replay/noise.py,
_correlations: occ.max() of no occurrence)."""
from __future__ import annotations

import pytest

from minitrace.replay.replicas import replicas
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def one_offs(programs, tmp_path_factory):
    """one_offs recorded on 2 ranks."""
    out = tmp_path_factory.mktemp("oneoffs") / "oo.h5"
    record(out, 2, [programs("one_offs")], timeout=300)
    return out


def test_replicas_of_a_run_of_one_off_computes(one_offs):
    """Every replica is the recorded run: nothing to draw, and the assumptions say so."""
    r = replicas(str(one_offs), 3, seed=1, workers=1, compute_rate="1Gf")
    assert len(r.times) == 3 and len(set(r.times)) == 1
    said = " ".join(r.assumptions)
    assert "replayed as recorded in every replica" in said and "not measurable here" in said
    assert "of the compute: one-off phases such as a set-up" in said   # not a drifting loop
