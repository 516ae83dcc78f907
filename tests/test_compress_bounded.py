"""Bounded compression (``--volumes bounded:P%``, ``--times bounded:T``): every volume within P%
of the recorded one, every start and end within T, the structure untouched; ``info`` says what
the file kept; bad bounds are one-line errors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minitrace
from minitrace import storage
from minitrace.compress.files import write_compressed
from minitrace.errors import MinitraceError
from tests.support.mpiutil import mpicc
from tests.support.record_util import record
from tests.support.synthetic_loops import stencil
from tests.test_compress_store import set_trace_attr, stored_pack

APPS = Path(__file__).resolve().parents[1] / "benchmarks" / "apps"


def _check_bounds(plain, packed, rel, half):
    with minitrace.open(str(plain)) as u, minitrace.open(str(packed)) as c:
        a, b = u.data().actions, c.data().actions
        for f in a.dtype.names:
            if f not in ("volume", "t_start", "t_end"):
                assert np.array_equal(a[f], b[f]), f
        v, w = a["volume"], b["volume"]
        assert (np.abs(w - v) <= rel * np.abs(v) + 1e-300).all()
        assert ((v == 0) == (w == 0)).all()
        for f in ("t_start", "t_end"):           # (plus the doubles' own rounding of t)
            slack = 4 * np.spacing(np.nanmax(np.abs(a[f])))
            assert np.nanmax(np.abs(b[f] - a[f])) <= half + slack
        assert (b["t_end"] >= b["t_start"]).all()
        assert c.validate().ok
        return c.compressed_form


def _timed_stencil(iterations: int = 200, nranks: int = 4):
    data, _ = stencil(nranks, iterations, seed=3)
    rng = np.random.default_rng(3)             # timed, as recorded: gaps and durations
    a = data.actions
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        dur = a["volume"][sl] + rng.exponential(3e-6, sl.stop - sl.start)
        end = 10.0 + np.cumsum(dur + rng.exponential(1e-7, len(dur)))
        a["t_start"][sl], a["t_end"][sl] = end - dur, end
    return data


@pytest.mark.parametrize("rel,half", [(0.01, 1e-6), (0.001, 1e-7)])
def test_every_value_within_its_bound(tmp_path, rel, half):
    data = _timed_stencil()
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, f"bounded:{100 * rel:g}%",
                     times=f"bounded:{half * 1e9:g}ns")
    _check_bounds(plain, packed, rel, half)


def test_exact_volumes_in_ns_with_bounded_times(tmp_path):
    """Volumes exact in integer ns (which an exact file takes out of the durations) with times
    on a coarser grid: each time still within its bound (the durations were once stored in
    grid units less ns volumes, 28 s off on a recorded trace)."""
    data = _timed_stencil()
    data.meta["volume_unit"] = "seconds"
    data.actions["volume"] = np.rint(data.actions["volume"] * 1e9) / 1e9
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "exact", times="bounded:1us")
    with minitrace.open(str(packed)) as c:
        assert "volume_divisor" in c.compressed_form.attrs
    _check_bounds(plain, packed, 0.0, 1e-6)
    # a file of the old writer (durations less the volumes, on the coarse grid) is refused in
    # one line, not read 28 s off
    import h5py
    with h5py.File(packed, "a") as f:
        set_trace_attr(f, "duration_less_volume", True)
    with pytest.raises(MinitraceError, match="compress the recording again"):
        with minitrace.open(str(packed)) as c:
            c.data()


def test_recorded_program_bounded_is_smaller_and_within_bounds(tmp_path):
    exe = mpicc(APPS / "cg3d.c", tmp_path / "cg3d")
    plain, exact, bounded = (tmp_path / f for f in ("plain.h5", "exact.h5", "bounded.h5"))
    record(plain, 4, [str(exe), "16", "30"])
    with minitrace.open(str(plain)) as t:
        data = t.data()
    write_compressed(str(exact), data)
    write_compressed(str(bounded), data, "bounded:1%", times="bounded:1us")
    _check_bounds(plain, bounded, 0.01, 1e-6)
    from minitrace.compress.files import sizes
    assert sizes(str(bounded))["side_bytes"] < sizes(str(exact))["side_bytes"]
    p = subprocess.run([sys.executable, "-m", "minitrace", "info", str(bounded)],
                       capture_output=True, text=True)
    assert "compressed: volumes each within 1% of its own, times each within 1 us of its " \
           "own" in p.stdout


@pytest.mark.parametrize("volumes,times,message", [
    ("bounded:0%", "exact", "percentage above 0"),
    ("bounded:1", "exact", "percentage above 0"),
    ("exact", "bounded:1", "--times wants exact or bounded:T"),
    ("exact", "bounded:2s", "--times wants exact or bounded:T"),
    ("model", "bounded:1us", "model mode models the times"),
    ("lossy", "exact", "unknown volume mode"),
])
def test_bad_bounds_are_refused(volumes, times, message):
    data, _ = stencil(2, 20)
    with pytest.raises(MinitraceError, match=message):
        write_compressed("/nonexistent/never.h5", data, volumes, times=times)


def _ranges_match_whole(path):
    """Every rank read in ranges (each starting from the counted prefix) equals the whole
    read: the predicted times' chain and running maximum restart right mid-rank."""
    with minitrace.open(str(path)) as c:
        whole = c.data()
        for r in range(whole.nranks):
            sl = whole.rank_slice(r)
            n = sl.stop - sl.start
            for lo, hi in ((0, n // 3), (n // 3, n // 3 + 7), (n - 5, n)):
                part = c.actions(r, rows=slice(lo, hi))
                for f in ("t_start", "t_end", "volume"):
                    assert np.array_equal(np.asarray(part[f]),
                                          whole.actions[f][sl][lo:hi]), (r, lo, f)


@pytest.mark.parametrize("cpu_over_wall", [1.0, 3.0])
def test_times_predicted_by_volumes_within_bounds(tmp_path, cpu_over_wall):
    """Bounded times are coded as steps against a prediction (a start at the previous end, a
    compute's end after its volume); computes shorter than the bound whose volume is above
    their wall time (3x: the prediction overshoots, the coded chain goes back) still give
    every time within its bound and no end before its start (the decoder's running
    maximum)."""
    data = _timed_stencil()
    a = data.actions
    comp = a["volume"] != 0
    a["t_end"][comp] = a["t_start"][comp] + np.random.default_rng(5).uniform(
        0.1e-6, 1.5e-6, int(comp.sum()))
    a["volume"] = np.where(comp, (a["t_end"] - a["t_start"]) * cpu_over_wall, 0.0)
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    form = _check_bounds(plain, packed, 0.01, 1e-6)
    assert form.attrs.get("time_coding") == "predicted-by-volume-octaves"
    _ranges_match_whole(packed)


def test_times_going_back_are_coded_on_the_grid(tmp_path):
    """A rank whose action starts before the previous one ends cannot take the running
    maximum: its times are coded on the plain grid, each still within its bound."""
    data = _timed_stencil()
    a = data.actions
    sl = data.rank_slice(1)
    a["t_start"][sl.start + 10] = a["t_start"][sl.start + 9] - 5e-6
    plain, packed = tmp_path / "plain.h5", tmp_path / "packed.h5"
    storage.write_trace(str(plain), data)
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    form = _check_bounds(plain, packed, 0.01, 1e-6)
    assert "time_coding" not in form.attrs
    _ranges_match_whole(packed)


def test_unknown_time_coding_is_refused(tmp_path):
    import h5py
    data = _timed_stencil()
    packed = tmp_path / "packed.h5"
    write_compressed(str(packed), data, "bounded:1%", times="bounded:1us")
    with h5py.File(packed, "a") as f:
        set_trace_attr(f, "time_coding", "by-magic")
    with pytest.raises(MinitraceError, match="time coding"):
        with minitrace.open(str(packed)) as c:
            c.data()


def _waiting_stencil():
    """The timed stencil with waits of ~0.5 ms on one call in eight: duration steps of 9-12
    bits that the context coder escapes (a power of two and its rest)."""
    data = _timed_stencil()
    a = data.actions
    rng = np.random.default_rng(11)
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        wait = np.where(rng.uniform(size=sl.stop - sl.start) < 0.125,
                        rng.exponential(5e-4, sl.stop - sl.start), 0.0)
        wait[a["volume"][sl] != 0] = 0.0
        shift = np.cumsum(wait)
        a["t_end"][sl] += shift
        a["t_start"][sl] += shift - wait
    return data


def test_escaped_steps_bit_packed_within_bounds_and_older_codings_read(tmp_path, monkeypatch):
    """Duration steps of long waits are escaped with their rests bit-packed (context coding
    version 3 on): every time within its bound, the coding smaller than version 2's
    whole-byte rests of the same values, version 4's (count codes for frequencies) smaller
    than version 3's, version 5 (a second window) written and every version read, and a
    file written with version 2 (session 13) reads back the same trace."""
    import h5py
    from minitrace.compress import context_rans as CR, pack as P, store
    monkeypatch.setattr(store, "ADAPTIVE", False)    # (the static coder's files, which read)
    data = _waiting_stencil()
    plain, new, old = (tmp_path / f"{x}.h5" for x in ("plain", "new", "old"))
    storage.write_trace(str(plain), data)
    write_compressed(str(new), data, "bounded:1%", times="bounded:1us")
    _check_bounds(plain, new, 0.01, 1e-6)
    c = store.compress(data, "bounded:1%", times="bounded:1us")
    steps = c.side["t_duration"]
    keys = store._context_keys(c, "t_duration", {})
    v5 = CR.encode(steps, *keys)
    with h5py.File(new, "r") as f:
        raw = stored_pack(f["trace"])
        packed = P.unpack(raw) if raw is not None else {}
        stored = packed.get("exact/t_duration.ctx")
        if stored is None:
            stored = f["trace/exact/t_duration.ctx"][()]
    assert np.array_equal(stored, v5) and np.frombuffer(v5[:4].tobytes(), "<u4")[0] == 5
    monkeypatch.setattr(CR, "VERSION", 4)
    v4 = CR.encode(steps, *keys)
    monkeypatch.setattr(CR, "VERSION", 3)
    v3 = CR.encode(steps, *keys)
    monkeypatch.setattr(CR, "VERSION", 2)
    v2 = CR.encode(steps, *keys)
    write_compressed(str(old), data, "bounded:1%", times="bounded:1us")
    monkeypatch.undo()
    escaped = np.frombuffer(v3[:36].tobytes(), "<u4")[4]
    assert escaped > 0 and len(v4) < len(v3) < len(v2)
    for v in (v2, v3, v4, v5):
        assert np.array_equal(CR.decode(v, *keys), steps)
    with minitrace.open(str(new)) as t, minitrace.open(str(old)) as u:
        a, b = t.data().actions, u.data().actions
    assert all(np.array_equal(a[f], b[f]) for f in a.dtype.names)


def test_predicted_durations_of_codes_by_their_table():
    """The durations bounded times predict from bounded volumes' log codes (by a table over
    the codes' range) are those of the volumes the codes decode to, code by code: narrow and
    wide ranges, negative and zero codes, other bounds."""
    from minitrace.compress import volumes as V
    rng = np.random.default_rng(4)
    for bound in (0.01, 0.001, 0.2):
        for lo, hi in ((1_047_000, 1_049_000), (-1_049_000, -1_047_000), (-3, 3),
                       (-(1 << 21), 1 << 21)):
            codes = rng.integers(lo, hi, 50_000)
            attrs = {"volume_bound": bound}
            want = V.predicted_durations(V.dequantize(codes, attrs))
            got = V.coded_durations(codes, attrs)
            assert got.dtype == want.dtype and np.array_equal(got, want)
    stored = rng.integers(0, 1000, 100)              # (not codes: value by value)
    assert np.array_equal(V.coded_durations(stored, {"volume_divisor": 1e6}),
                          V.predicted_durations(stored / 1e6))
