"""Model files' finer epochs (``epochs.merge_choices``, ``files.write_compressed``): an
epoch's total is spread over its stretches between anchors by the calls' means, so where the
ranks take turns at being the slowest (public PENNANT, miniGhost, TeaLeaf at 4 ranks on 2
cores) merged epochs lose the turns and the model's replay runs fast (PENNANT 4r: -2.1% at 6
anchors an epoch, -1.2% at 1).  The model is fitted at the finest merge that keeps them, and
the writer falls back to a coarser one where the file would exceed
``MODEL_BYTES_PER_ACTION``."""
from __future__ import annotations

import os

import numpy as np
import pytest

import minitrace
from minitrace.compress import files as F
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress, refit, write
from minitrace.replay import replay
from tests.test_compress_model import ring_trace

P, ITERATIONS = 4, 200


def turns_trace(turns: bool = True):
    """Each iteration 4 computes with ring messages, then an allreduce; with ``turns`` the
    slowest rank changes every iteration (1.5x the others' work), else it is always rank 0."""
    rng = np.random.default_rng(5)

    def volume(r, kinds, it):
        slow = (it % P == r) if turns else np.full(len(kinds), r == 0)
        return 1e-4 * np.where(slow, 1.5, 1.0) * rng.lognormal(0, 0.02, len(kinds))

    return ring_trace(["compute", "send", "recv"] * 4 + ["compute", "allreduce"], ITERATIONS,
                      P, volume)


def simulated(path) -> float:
    return replay(str(path), engine="native", compute_rate="1Gf").simulated_time


def merge_of(path) -> int:
    with minitrace.open(path) as t:
        return int(t._reader.c.attrs["epoch_merge"])


def test_turns_at_being_slowest_take_finer_epochs():
    """Finer epochs where the ranks take turns, each fallback coarser and saving more, the
    last the merge of :data:`~E.MIN_PER_EPOCH`; none where one rank is always the slowest."""
    c = compress(turns_trace(), "model")
    merges = [m for m, _ in c.coarser]
    saves = [n for _, n in c.coarser]
    assert c.attrs["epoch_merge"] < merges[0] and merges == sorted(merges)
    assert 0 < saves[0] and saves == sorted(saves) and merges[-1] > 2
    steady = compress(turns_trace(turns=False), "model")
    assert steady.coarser == [] and steady.attrs["epoch_merge"] == merges[-1]


def test_finer_epochs_replay_closer_to_the_trace(tmp_path, monkeypatch):
    """(a budget this small trace holds: its file's fixed ~1.4 KB are 0.13 B/action)"""
    monkeypatch.setattr(F, "MODEL_BYTES_PER_ACTION", 0.5)
    d = turns_trace()
    exact, fine, coarse = tmp_path / "x.h5", tmp_path / "m.h5", tmp_path / "c.h5"
    write_compressed(str(exact), d, "exact")
    write_compressed(str(fine), d, "model")
    c = compress(d, "model")
    write(str(coarse), refit(c, d, c.coarser[-1][0]))
    assert merge_of(fine) == c.attrs["epoch_merge"] < merge_of(coarse)
    assert os.path.getsize(fine) <= F.MODEL_BYTES_PER_ACTION * len(d.actions)
    want = simulated(exact)
    assert abs(simulated(fine) - want) < abs(simulated(coarse) - want)


@pytest.mark.parametrize("case", ["none fits", "a coarser one fits"])
def test_a_file_over_the_budget_falls_back_to_coarser_epochs(tmp_path, monkeypatch, case):
    """Over the budget, the writer refits at the finest coarser merge whose saving, as
    estimated, brings the file within (the budget here: halfway between the finest file's
    size and the coarsest's), else at the coarsest whatever its size; one refit each."""
    d = turns_trace()
    c = compress(d, "model")
    out = tmp_path / "m.h5"
    sizes = {}
    for m in (c.attrs["epoch_merge"], c.coarser[-1][0]):
        write_compressed(str(out), d, "model") if m == c.attrs["epoch_merge"] else \
            write(str(out), refit(c, d, m))
        sizes[m] = os.path.getsize(out)
    budget = 0.0 if case == "none fits" else sum(sizes.values()) / 2
    monkeypatch.setattr(F, "MODEL_BYTES_PER_ACTION", budget / len(d.actions))
    calls = []
    monkeypatch.setattr(F, "refit", lambda c, data, m: calls.append(m) or refit(c, data, m))
    write_compressed(str(out), d, "model")
    got = merge_of(out)
    if case == "none fits":
        assert calls == [c.coarser[-1][0]] == [got]
    else:
        assert len(calls) == 1 and c.attrs["epoch_merge"] < got <= c.coarser[-1][0]
        assert os.path.getsize(out) <= budget
    assert os.listdir(tmp_path) == ["m.h5"]                  # (no temporary left)


def test_a_refit_is_the_compression_at_that_merge():
    """The writer fits the volumes again (``store.refit``), not the whole trace: the same
    arrays and attributes, in the same order, as ``compress(merge=)``."""
    d = turns_trace()
    c = compress(d, "model")
    for m, _ in c.coarser:
        want, got = compress(d, "model", merge=m), refit(c, d, m)
        assert list(got.side) == list(want.side) and got.attrs == want.attrs
        assert list(got.attrs) == list(want.attrs) and got.attrs["epoch_merge"] == m
        for k, a in want.side.items():
            b = got.side[k]
            assert a.equals(b) if hasattr(a, "equals") else np.array_equal(a, b), k
