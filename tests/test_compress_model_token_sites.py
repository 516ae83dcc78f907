"""The model's call sites where message sizes are tokens (format version 12): a call whose sizes
change every few steps (public miniMD's halo sendrecvs at each re-neighbouring) is one call site
per phase of its step, not one per size, so that its neighbours' means do not grow with the
re-neighbourings, and the computes between different exchanges keep their own means."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.compress import epochs as E
from minitrace.compress.files import write_compressed
from minitrace.compress.store import compress
from minitrace.model import TraceBuilder
from tests.support.synthetic import in_turn

#: The computes of a step: after its first exchange, after its second.
VOLUMES = (2e-5, 5e-5)


def resized_halo(blocks: int, P: int = 2):
    """Each step two sendrecvs with the other rank, each followed by a compute
    (:data:`VOLUMES`), their sizes (each rank's own) new at each block of steps: both computes
    between two sendrecvs of one size site; an allreduce ends each block, of 5, 6, 7... steps:
    no stretch between two repeats, so that every compute's mean is its call site's."""
    b = TraceBuilder(P)
    for r in range(P):
        add = in_turn(b, r, 2e-6, 1e-7)
        add("init")
        for blk in range(blocks):
            sizes = [8 * (500 + (r * 7919 + blk * 104729 + k * 613) % 400) for k in range(2)]
            for _ in range(5 + blk):
                for k, v in enumerate(VOLUMES):
                    add("sendrecv", peer=(r + 1) % P, tag=0, bytes_sent=sizes[k],
                        bytes_recv=sizes[k], vector=[(r - 1) % P, 0])
                    add("compute", v, volume=v)
            add("allreduce", bytes_sent=8, bytes_recv=8)
        add("finalize")
    return b.build()


def test_sites_do_not_grow_with_the_resized_steps(monkeypatch):
    """Twice the re-neighbourings, the same call sites (one per size before), in the
    stretches' fit (the only one beyond epochs.BOTH_UP_TO actions)."""
    monkeypatch.setattr(E, "BOTH_UP_TO", 0)
    c10, c20 = (compress(resized_halo(n), "model") for n in (10, 20))
    for c in (c10, c20):
        assert c.tokens is not None and c.attrs["epoch_sites"] == E.SITE_PHASES
    assert len(c20.side["rank_site_means"]) == len(c10.side["rank_site_means"])


def test_each_phase_of_a_resized_step_keeps_its_own_mean(tmp_path, monkeypatch):
    """The computes after the first and after the second exchange (one size site) are apart:
    each keeps its volume in the model file, not their pooled mean."""
    monkeypatch.setattr(E, "BOTH_UP_TO", 0)
    d = resized_halo(12)
    path = tmp_path / "m.h5"
    write_compressed(str(path), d, "model")
    with minitrace.open(path) as t:
        back = t.data().actions
        assert t._reader.c.attrs["epoch_sites"] == E.SITE_PHASES
    a = d.actions
    comp = a["kind"] == K.CODE["compute"]
    assert np.array_equal(back["kind"], a["kind"]) and \
        np.array_equal(back["bytes_sent"], a["bytes_sent"])
    for v in VOLUMES:
        mine = comp & (a["volume"] == v)
        assert back["volume"][mine] == pytest.approx(np.full(int(mine.sum()), v), rel=0.02)


def test_site_ids_by_phase():
    """A rank's calls at a tokened site get the site's phase, its period the commonest
    distance back to the same signature; other calls keep their signature."""
    site = np.array([0, 1, 1, 1, 1])          # signature 0 alone; 1-4 one site of sizes
    tokened = np.array([False, True])
    ids = np.array([0, 1, 2, 0, 1, 2, 0, 3, 4, 0, 3, 4, 0, 1])
    got = E.site_ids(ids, np.array([0, len(ids)]), site, tokened)
    base = len(site) + E.MAX_PERIOD * 0
    assert got[ids == 0].tolist() == [0] * 5
    assert got[ids != 0].tolist() == [base + p for p in (0, 1, 0, 1, 0, 1, 0, 1, 0)]
    assert E.site_key_space(site, tokened) == len(site) + E.MAX_PERIOD
    two = E.site_ids(np.concatenate([ids, ids]), np.array([0, len(ids), 2 * len(ids)]), site,
                     tokened)
    assert np.array_equal(two[:len(ids)], got) and np.array_equal(two[len(ids):], got)


def test_phases_unknown_or_without_tokens_are_refused(tmp_path, monkeypatch):
    """A model file whose epoch_sites this reader does not know, or that names phases without
    size tokens, is a corrupt trace, not volumes matched to other sites."""
    import h5py
    monkeypatch.setattr(E, "BOTH_UP_TO", 0)
    path = tmp_path / "m.h5"
    write_compressed(str(path), resized_halo(4), "model", pack=False)
    with h5py.File(path, "r+") as f:
        f["trace"].attrs["epoch_sites"] = "by-moon"
    with pytest.raises(minitrace.MinitraceError, match="corrupt"):
        with minitrace.open(path) as t:
            t.data()
