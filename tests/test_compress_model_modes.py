"""Model files' call sites of two modes (``epochs.site_modes``, ``model/mode_gaps``, format
version 16).  Public LAMMPS's force kernel (milliseconds) sits between the last forward swap's
wait and the first reverse swap's irecv, the same calls as around its 1 us pack computes: one
site, one mean, which took the kernel's volume to the packs; the model's replay of lj at 4
ranks was 13.5% slower than the exact file's (tests/programs/lj_swaps.c: 11%)."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError
from minitrace import kinds as K
from minitrace.compress import epochs as E
from minitrace.compress.files import write_compressed
from minitrace.compress.store import lost
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from tests.support.record_util import record
from tests.support.synthetic import in_turn
from tests.support.versions import assert_refused_as_newer

STEPS, SWAPS = 120, 4
PACK, KERNEL = 1e-6, 1e-3


def swaps_trace(P: int = 4):
    """:data:`STEPS` steps of :data:`SWAPS` swaps (irecv, send, wait, compute) with the ranks
    on a ring; the compute after the last swap is the kernel (growing over the steps, more
    on odd ranks), the others 1 us packs, all at one call site; an allreduce every 50 steps."""
    b = TraceBuilder(P)
    for r in range(P):
        add = in_turn(b, r)
        add("init", 1e-6)
        for i in range(STEPS):
            for s in range(SWAPS):
                peer = (r + (1 if s % 2 else -1)) % P
                add("irecv", 1e-6, peer=peer, tag=0, bytes_recv=4096, request=i * SWAPS + s)
                add("send", 1e-6, peer=(r - (1 if s % 2 else -1)) % P, tag=0,
                    bytes_sent=4096)
                add("wait", 1e-6, request=i * SWAPS + s)
                v = KERNEL * (1 + i / STEPS) * (1.2 if r % 2 else 1.0) \
                    if s == SWAPS - 1 else PACK
                add("compute", v, volume=v)
            if i % 50 == 49:
                add("allreduce", 1e-5, bytes_sent=8, bytes_recv=8)
        add("finalize", 1e-6)
    return b.build()


def computes(data, r: int, between: tuple = ()) -> np.ndarray:
    """Rank ``r``'s compute volumes (``between``: only those between these two kinds)."""
    a = data.actions[data.rank_slice(r)]
    k = a["kind"]
    at = k == K.CODE["compute"]
    if between:
        at[1:-1] &= (k[:-2] == K.CODE[between[0]]) & (k[2:] == K.CODE[between[1]])
        at[[0, -1]] = False
    return a["volume"][at]


def simulated(path) -> float:
    return replay(str(path), engine="native", compute_rate="1Gf").simulated_time


def test_a_site_of_two_modes_keeps_a_mean_for_each(tmp_path):
    d = swaps_trace()
    exact, model = tmp_path / "z.h5", tmp_path / "m.h5"
    write_compressed(str(exact), d, "exact")
    write_compressed(str(model), d, "model")
    with minitrace.open(model) as t:
        back, c = t.data(), t._reader.c
    gaps = np.asarray(c.side[E.MODE_GAPS])
    # each rank's kernels but the 3 before an allreduce or the finalize (other sites), one a
    # step, at least 3 packs apart; but those the tail holds with their own values
    n = gaps[:d.nranks]
    assert ((0 < n) & (n < STEPS - 3)).all()
    assert gaps[d.nranks:].min() >= SWAPS - 1
    for r in range(d.nranks):
        was, got = computes(d, r), computes(back, r)
        kernel = was > 10 * PACK
        assert got[kernel].min() > 100 * got[~kernel].max()
        assert got[kernel].sum() == pytest.approx(was[kernel].sum(), rel=0.02)
    assert assert_refused_as_newer(model) == 16
    assert simulated(model) == pytest.approx(simulated(exact), rel=0.02)
    assert f"a second mode of {int(n.sum())} calls" in lost(c)


def test_second_mode_calls_the_tail_holds_keep_their_values(tmp_path, monkeypatch):
    """Few steps: the tail, chosen against the site's one mean, holds every kernel exactly,
    so the kernels keep their drift; chosen against their own mean (the modes split first),
    it left them to that mean, and public LAMMPS lj 3r replayed +5.25% (+0.37% now)."""
    monkeypatch.setitem(globals(), "STEPS", 12)
    d = swaps_trace()
    write_compressed(str(tmp_path / "m.h5"), d, "model")
    with minitrace.open(tmp_path / "m.h5") as t:
        back, c = t.data(), t._reader.c
    for r in range(d.nranks):
        was, got = computes(d, r), computes(back, r)
        kernel = was > 10 * PACK
        assert np.allclose(got[kernel], was[kernel], rtol=0.01)
    # (a second mode whose every call the tail holds is none: the file is of the version
    # before, which older readers read; the second reviewer, session 32)
    assert E.MODE_GAPS not in c.side


def test_without_modes_the_file_is_of_the_version_before(tmp_path, monkeypatch):
    """Without a site of two modes a model file holds no ``mode_gaps`` and is of the version
    before (here with the modes turned off, as files of version 15 model this trace)."""
    d = swaps_trace()
    p = tmp_path / "m.h5"
    monkeypatch.setattr(E, "MODE_RATIO", np.inf)
    write_compressed(str(p), d, "model")
    with h5py.File(p, "r") as f:
        assert f.attrs["format_version"] < 16
    with minitrace.open(p) as t:
        assert E.MODE_GAPS not in t._reader.c.side
        assert len(t.data().actions) == len(d.actions)


@pytest.mark.parametrize("ratio,modes", [(E.MODE_RATIO, True), (0.999 * E.MODE_RATIO, False)])
def test_the_mode_ratio_holds_at_its_edge(ratio, modes):
    """Calls :data:`~E.MODE_RATIO` times apart are two modes, a little less are one, also
    where the difference of their logs rounds below log(8) (the second reviewer's L3 of
    session 32)."""
    v = 1.2499624981249062e-06
    assert np.log(8 * v) - np.log(v) < np.log(8.0)
    vol = np.array([v] * 4 + [ratio * v] * 3)
    got = E.site_modes(np.zeros(7, np.int64), np.zeros(1, np.int64), vol, np.ones(7, bool), 10)
    assert got.tolist() == [False] * 4 + [modes] * 3


@pytest.mark.parametrize("damage,why", [
    (lambda g: np.append(g, 3), "mode_gaps inconsistent"),
    (lambda g: np.concatenate([g[:1] + 5000, g[1:]]), "mode_gaps"),
    (lambda g: np.concatenate([g[:4], g[4:] + 10 ** 6]), "mode_gaps point past"),
])
def test_damaged_mode_gaps_are_one_line_errors(tmp_path, damage, why):
    p = tmp_path / "m.h5"
    write_compressed(str(p), swaps_trace(), "model", pack=False)
    with h5py.File(p, "r+") as f:
        g = f["trace/model/mode_gaps"][()].astype(np.int64)
        del f["trace/model/mode_gaps"]
        f["trace/model/mode_gaps"] = damage(g)
    with pytest.raises(MinitraceError, match=f"corrupt trace: .*{why}") as e:
        with minitrace.open(p) as t:
            t.data()
    assert "\n" not in str(e.value)


def test_recorded_swaps_keep_the_kernel_apart_from_the_packs(tmp_path, programs):
    """tests/programs/lj_swaps.c at 4 ranks (a 2x2 grid): the kernel's site is the packs'."""
    rec = tmp_path / "lj.h5"
    record(rec, 4, [programs("lj_swaps"), "60", "300000"], volume="cputime")
    with minitrace.open(rec) as t:
        d = t.data()
    model = tmp_path / "m.h5"
    write_compressed(str(model), d, "model")
    with minitrace.open(model) as t:
        back = t.data()
    for r in range(d.nranks):
        was, got = computes(d, r, ("wait", "irecv")), computes(back, r, ("wait", "irecv"))
        kernel = was > 1e-4
        assert kernel.sum() >= 57         # (but those before an allreduce or the finalize)
        # each kernel keeps a kernel's value: as the site's second mode, the tail's (which
        # holds them all in some loaded recordings: chosen against the site's one mean, test
        # above; no mode_gaps then) or its epoch template's; the site's one mean, ~1/5 of a
        # kernel's, would be below
        assert got[kernel].min() > 0.5 * was[kernel].min()
        # the packs keep their microseconds, the kernels their volume
        assert got[~kernel].sum() < 0.1 * got[kernel].sum()
        assert got[kernel].sum() == pytest.approx(was[kernel].sum(), rel=0.1)
