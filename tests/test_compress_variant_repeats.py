"""A place of a stretch's template that is the largest call of fewer than ``epochs.MIN_REPEATS``
instances makes no variant (session 24): templates of the stretches between anchors (an
iteration) made a variant, its means and each stretch's label, of each iteration with an
outlier, which the tail holds with its own value."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace.compress import epochs as E
from minitrace.compress.files import write_compressed
from minitrace.model import TraceBuilder
from tests.support.synthetic import in_turn

ITERATIONS = 300
#: (rank, iteration) of the outliers: the second compute 100x its usual 0.2 ms.
OUTLIERS = ((0, 40), (0, 170), (1, 90))


def outlier_trace():
    """Each iteration: a compute of 1 ms, a sendrecv, a compute of 0.2 ms, an allreduce (2
    volume calls between two anchors: 16 iterations merged to an epoch); the second compute
    of :data:`OUTLIERS` 20 ms, the largest of its iteration."""
    P = 2
    b = TraceBuilder(P)
    for r in range(P):
        add = in_turn(b, r)
        for i in range(ITERATIONS):
            add("compute", 1e-3 * (1 + 0.01 * ((7 * i + r) % 3)), volume=1e-3)
            add("sendrecv", 1e-5, peer=1 - r, tag=1, bytes_sent=64, bytes_recv=64,
                vector=[1 - r, 1])
            second = 2e-2 if (r, i) in OUTLIERS else 2e-4
            add("compute", second, volume=second)
            add("allreduce", 1e-5, bytes_sent=8, bytes_recv=8)
    return b.build()


def test_a_place_that_peaks_in_few_stretches_makes_no_variant(tmp_path, monkeypatch):
    monkeypatch.setattr(E, "BOTH_UP_TO", 0)            # (the stretches' templates)
    d = outlier_trace()
    out = tmp_path / "m.h5"
    write_compressed(str(out), d, "model")
    with minitrace.open(out) as t:
        back, c = t.data(), t._reader.c
    assert c.attrs["epoch_merge"] > 1 and E.TEMPLATE_UNIT_OFFSETS in c.side
    t = c.side["templates"]
    assert len(t) == 1 and "variants" not in t.columns and "epoch_variant" not in c.side
    for r, i in OUTLIERS:                             # (the tail's, its own value)
        a = back.actions[back.rank_slice(r)]
        got = a["volume"][a["kind"] == 2][2 * i + 1]
        assert got == pytest.approx(2e-2, rel=0.03)
    for r in range(d.nranks):
        a = back.actions[back.rank_slice(r)]
        second = a["volume"][a["kind"] == 2][1::2]
        usual = np.delete(second, [i for q, i in OUTLIERS if q == r])
        assert np.median(usual) == pytest.approx(2e-4, rel=0.05)
