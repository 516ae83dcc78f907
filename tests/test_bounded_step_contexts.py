"""Bounded times' duration steps coded in contexts of their predicted duration's octave
(``volumes.step_keys``, ``time_coding`` "predicted-by-volume-octaves", format version 12): one
call site whose computes last ~10 us or ~10 ms (their steps ~0 or spread over ~100) reads back
within its bounds, its steps in a table per octave; files of the earlier coding still read."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress import context_rans as CR
from minitrace.compress import store as ST
from minitrace.compress import volumes as V
from minitrace.compress.files import write_compressed
from tests.test_compress_bounded import _check_bounds, _timed_stencil


def _short_and_long_computes():
    """The timed stencil whose computes last (and cost) ~10 us or ~10 ms, at random."""
    data = _timed_stencil()
    a = data.actions
    comp = a["volume"] != 0
    rng = np.random.default_rng(8)
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        c = comp[sl]
        dur = a["t_end"][sl] - a["t_start"][sl]
        dur[c] = np.where(rng.random(int(c.sum())) < 0.5, 1e-5, 1e-2) * rng.uniform(1, 1.5,
                                                                              int(c.sum()))
        gap = np.diff(a["t_start"][sl], prepend=a["t_start"][sl][0]) - \
            np.diff(a["t_end"][sl] - a["t_start"][sl], prepend=0.0)
        end = 10.0 + np.cumsum(dur + np.maximum(gap, 0))
        a["t_start"][sl], a["t_end"][sl] = end - dur, end
    a["volume"] = np.where(comp, (a["t_end"] - a["t_start"]) * rng.uniform(0.98, 1.0,
                                                                           len(a)), 0.0)
    return data


def test_octaves_of_predicted_durations():
    """Each volume's octave of its predicted duration in steps, by a table over the codes or
    code by code alike: below one step 0, from one step 1, 1000 steps 9."""
    attrs = {"volume_bound": 0.01}
    _, step = V.feedback_step(2000)
    seconds = np.array([0.0, (step - 10) * 1e-9, (step + 30) * 1e-9, 1000.5 * step * 1e-9,
                        1e3])
    codes = V.log_codes(seconds, 0.01)
    pred = V.coded_durations(codes, attrs)
    want = [int(np.floor(np.log2(p // step + 1))) for p in pred.tolist()]
    assert want[:4] == [0, 0, 1, 9]
    assert list(V.duration_octaves(codes, attrs, 2000)) == want          # (code by code)
    many = np.repeat(codes[:4], 3)                                        # (by a table)
    assert list(V.duration_octaves(many, attrs, 2000)) == np.repeat(want[:4], 3).tolist()
    fine, coarse = np.arange(5) * 3, np.arange(5)
    f, c = V.step_keys(fine, coarse, np.array(want))
    assert list(f) == [k * V.STEP_OCTAVES + o for k, o in zip(fine, want)]
    assert list(c) == [k * V.STEP_OCTAVES + o for k, o in zip(coarse, want)]


def test_short_and_long_computes_read_back_within_bounds(tmp_path, monkeypatch):
    monkeypatch.setattr(ST, "ADAPTIVE", False)   # (version 12; the adaptive coder's: 15)
    data = _short_and_long_computes()
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    form = _check_bounds(plain, packed, 0.01, 1e-6)
    assert form.attrs["time_coding"] == ST.TIME_CODING_OCTAVES
    with h5py.File(packed, "r") as f:
        assert f.attrs["format_version"] == storage.SIZE_TOKENS_VERSION == 12
    c = ST.compress(data, "bounded:1%", 0.01, "bounded:1us", None)
    fine, coarse = ST._context_keys(c, "t_duration", {})
    assert len(np.unique(fine % V.STEP_OCTAVES)) >= 2
    steps = c.side["t_duration"]
    assert np.array_equal(CR.decode(CR.encode(steps, fine, coarse), fine, coarse), steps)


def test_a_version_11_reader_refuses_the_octave_coding(tmp_path, monkeypatch):
    """A reader of version 11 would have refused the time coding as unknown ("corrupt"): it
    refuses the file as newer."""
    monkeypatch.setattr(ST, "ADAPTIVE", False)   # (version 12; the adaptive coder's: 15)
    packed = tmp_path / "packed.h5"
    write_compressed(str(packed), _short_and_long_computes(), "bounded:1%", times="bounded:1us")
    monkeypatch.setattr(storage, "FORMAT_VERSION", 11)
    with pytest.raises(minitrace.MinitraceError, match="newer minitrace .format version 12"):
        minitrace.open(str(packed))
