"""The HDF5 format: round trips, encodings, the kind index, and refusal of bad files."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError
from minitrace import kinds as K
from minitrace.model import TraceBuilder, TraceColumns, empty_actions
from minitrace.storage import FORMAT_VERSION, PLAIN_VERSION, write_bench, write_trace


def small_trace(timed: bool = True) -> TraceColumns:
    b = TraceBuilder(3, {"volume_unit": "seconds", "command_line": ["./app", "-x"]})
    t = 10.0
    for r in range(3):
        b.add(r, "init", t_start=t, t_end=t + 1e-6)
    b.add(0, "send", peer=1, tag=5, bytes_sent=800, t_start=t + 1e-3, t_end=t + 2e-3)
    b.add(1, "irecv", peer=0, tag=5, bytes_recv=800, request=1, flags=K.FLAG_ANY_SOURCE,
          t_start=t + 1e-3, t_end=t + 1.5e-3)
    b.add(1, "compute", volume=0.25, t_start=t + 1.5e-3, t_end=t + 0.2515)
    b.add(1, "wait", request=1, t_start=t + 0.2515, t_end=t + 0.26)
    b.add_comm(1, [2, 0])
    for r in (0, 2):
        b.add(r, "alltoallv", comm=1, bytes_sent=30, bytes_recv=70,
              vector=[10, 20, 30, 40] if r == 0 else [1, 2, 3, 4], t_start=t + 0.3,
              t_end=t + 0.31)
    b.add(2, "region_begin", tag=b.string("solve"), t_start=t + 0.31, t_end=t + 0.31)
    for r in range(3):
        b.add(r, "finalize", t_start=t + 1, t_end=t + 1.001)
    d = b.build()
    if not timed:
        d.actions["t_start"] = np.nan
        d.actions["t_end"] = np.nan
    return d


@pytest.mark.parametrize("timed", [True, False])
def test_round_trip_every_field(tmp_path, timed):
    d = small_trace(timed)
    p = tmp_path / "t.h5"
    write_trace(p, d)
    with minitrace.open(p) as t:
        back = t.data()
        assert t.ranks == [0, 1, 2]
        assert t.meta["command_line"] == ["./app", "-x"]
        assert t.meta["format_version"] == PLAIN_VERSION   # no compressed form: version 1
        assert t.volume_unit == "seconds"
    for name in d.actions.dtype.names:
        if name in ("t_start", "t_end"):
            if timed:  # stored as integer nanoseconds
                np.testing.assert_allclose(back.actions[name], d.actions[name], atol=1e-9,
                                           rtol=0)
            else:
                assert np.isnan(back.actions[name]).all()
        else:
            np.testing.assert_array_equal(back.actions[name], d.actions[name], err_msg=name)
    np.testing.assert_array_equal(back.rank_offsets, d.rank_offsets)
    np.testing.assert_array_equal(back.vectors, d.vectors)
    assert back.comms[1].tolist() == [2, 0]
    assert back.strings == ["solve"]


def test_actions_frames_and_kind_index(tmp_path):
    p = tmp_path / "t.h5"
    write_trace(p, small_trace())
    with minitrace.open(p) as t:
        r1 = t.actions(1)
        assert r1["kind"].tolist() == ["init", "irecv", "compute", "wait", "finalize"]
        assert r1.loc[1, "peer"] == 0 and r1.loc[1, "bytes_recv"] == 800
        assert r1.loc[2, "volume"] == pytest.approx(0.25)
        a2a = t.actions(kind="alltoallv")
        assert a2a["rank"].tolist() == [0, 2]
        assert t.vector(2, 1).tolist() == [1, 2, 3, 4]
        assert t.vector(0, 2).tolist() == [10, 20, 30, 40]
        assert len(t.actions(kind="bcast")) == 0
        s = t.summary()
        assert s.loc[0, "bytes_sent"] == 830 and s.loc[1, "bytes_recv"] == 800
        assert s.loc[1, "n_compute"] == 1 and s.loc[2, "n_region_begin"] == 1
        assert s.loc[0, "span"] == pytest.approx(1.001)
        with pytest.raises(MinitraceError, match="no rank 7"):
            t.actions(7)
        with pytest.raises(MinitraceError, match="no action 9 on rank 1"):
            t.vector(1, 9)


def test_info_names_the_kinds_its_table_leaves_out(tmp_path, capsys):
    """The per-rank table shows six kinds; the others are named with their counts, so that
    the counts shown add up to the actions (public miniMD: 8,538 of 8,541 shown, silently)."""
    from minitrace import cli
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        for _ in range(4):
            b.add(r, "compute", volume=1.0)
            b.add(r, "send", peer=1 - r, tag=0, bytes_sent=8)
            b.add(r, "recv", peer=1 - r, tag=0, bytes_recv=8)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "barrier")
        b.add(r, "bcast", peer=0, bytes_sent=8 if r == 0 else 0, bytes_recv=0 if r == 0 else 8)
        b.add(r, "comm_size")
        b.add(r, "finalize")
    p = tmp_path / "t.h5"
    write_trace(p, b.build())
    assert cli.main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    line = [ln for ln in out.splitlines() if ln.startswith("kinds not shown")]
    assert len(line) == 1, out
    named = dict(re.findall(r"(\w+) (\d+)", line[0].split(":", 1)[1].split(";")[0]))
    table = out.split("rank", 1)[1]
    assert len(named) == 3 and all(f"n_{k}" not in table for k in named), out
    assert sum(map(int, named.values())) == 6       # barrier, bcast, comm_size: 2 each
    assert cli.main(["info", "--kinds", str(p)]) == 0
    assert "kinds not shown" not in capsys.readouterr().out


def test_loop_trace_is_compact(tmp_path):
    """A regular trace compresses far below its in-memory size (the issue's 8 B/action)."""
    n, reps = 4, 20_000
    a = empty_actions(n * reps * 3)
    pat = np.array([K.CODE["compute"], K.CODE["send"], K.CODE["recv"]], np.uint8)
    a["kind"] = np.tile(pat, n * reps)
    a["volume"] = np.where(a["kind"] == K.CODE["compute"], 1000.0, 0)
    a["bytes_sent"] = np.where(a["kind"] == K.CODE["send"], 64, 0)
    d = TraceColumns(a, np.arange(n + 1) * reps * 3, meta={"volume_unit": "instructions"})
    p = tmp_path / "loop.h5"
    write_trace(p, d)
    assert p.stat().st_size / len(a) < 2.0
    with minitrace.open(p) as t:
        assert (t.actions(3)["volume"].to_numpy()[::3] == 1000.0).all()


def test_bench_group_round_trip_and_coexists_with_trace(tmp_path):
    p = tmp_path / "b.h5"
    write_trace(p, small_trace())
    times = np.arange(12.0).reshape(4, 3)
    write_bench(p, "variability", {"times": times, "maxima": times.max(axis=1),
                                    "mode": np.array(["a", "b", "c", "d"])},
                attrs={"iterations": 4, "workload": "ftq"})
    with minitrace.open(p) as t:
        assert t.has_trace and t.suites == ["variability"]
        b = t.bench("variability")
        np.testing.assert_array_equal(b["times"], times)
        assert b.attrs["iterations"] == 4 and b["mode"].tolist() == ["a", "b", "c", "d"]
        assert list(b.table().columns) == ["maxima", "mode"]
        with pytest.raises(MinitraceError, match="no results for bench suite 'pt2pt'"):
            t.bench("pt2pt")


def test_bad_files_are_refused_with_one_line(tmp_path):
    good = tmp_path / "good.h5"
    write_trace(good, small_trace())
    raw = good.read_bytes()
    cases = {}
    (tmp_path / "trunc.h5").write_bytes(raw[: len(raw) // 3])
    cases["trunc.h5"] = "corrupt or truncated"
    (tmp_path / "text.h5").write_text("0 init\n")
    cases["text.h5"] = "not an HDF5 file"
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f["x"] = 1
    cases["foreign.h5"] = "not a minitrace file"
    newer = tmp_path / "newer.h5"
    newer.write_bytes(raw)
    with h5py.File(newer, "a") as f:
        f.attrs["format_version"] = FORMAT_VERSION + 1
    cases["newer.h5"] = "newer minitrace"
    cases["missing.h5"] = "no such file"
    for name, msg in cases.items():
        with pytest.raises(MinitraceError, match=msg) as e:
            minitrace.open(tmp_path / name)
        assert name in str(e.value) and "\n" not in str(e.value)


def test_corrupt_column_is_refused(tmp_path):
    p = tmp_path / "c.h5"
    write_trace(p, small_trace())
    with h5py.File(p, "a") as f:  # a column shorter than the table: a damaged file
        del f["trace/actions/peer"]
        f["trace/actions/peer"] = np.zeros(2, np.int8)
    with pytest.raises(MinitraceError, match="column peer has 2 rows"):
        minitrace.open(p)


def test_failed_write_leaves_previous_file_intact(tmp_path):
    p = tmp_path / "t.h5"
    write_trace(p, small_trace())
    before = p.read_bytes()
    with pytest.raises(MinitraceError, match="unknown volume unit"):
        write_trace(p, small_trace(), meta={"volume_unit": "furlongs"})
    assert p.read_bytes() == before
    assert [x.name for x in tmp_path.iterdir()] == ["t.h5"]


def test_written_file_has_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_trace(tmp_path / "t.h5", small_trace())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.h5").stat().st_mode) == 0o644


def test_write_failure_is_one_line_and_leaves_nothing(tmp_path):
    """A write that fails half way (here: the file size limit, as a full disk would) raises one
    line naming the file and leaves neither the file nor a temporary behind."""
    child = f"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
from tests.support.synthetic import loop_trace
from minitrace.storage import write_trace
try:
    write_trace({str(tmp_path / "x.h5")!r}, loop_trace(4, 400_000, True))
except Exception as e:
    print(type(e).__name__, e)
"""
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert p.stdout.strip() == f"MinitraceError {tmp_path / 'x.h5'}: cannot write: File too large"
    assert list(tmp_path.iterdir()) == []


def test_partly_timed_trace_keeps_its_times_and_gaps(tmp_path):
    """Some actions timed, some not (e.g. a converter's synthesized compute): the times are
    kept as float seconds, exactly, and the untimed ones stay NaN."""
    d = small_trace()
    d.actions["t_start"][[2, 5]] = np.nan
    d.actions["t_end"][[2, 5]] = np.nan
    write_trace(tmp_path / "p.h5", d)
    with minitrace.open(tmp_path / "p.h5") as t:
        back = t.data()
        with h5py.File(tmp_path / "p.h5") as f:
            assert f["trace/actions/t_start"].attrs["encoding"] == "float-seconds"
            assert "t0" not in f["trace"].attrs
    for name in ("t_start", "t_end"):
        np.testing.assert_array_equal(back.actions[name], d.actions[name])


def test_kind_codes_above_127_keep_a_true_index(tmp_path):
    """Kind codes 128-255 (neighbour collectives, one-sided, MPI-IO...) are indexed like the
    others: the file reopens and its index agrees with its kind column."""
    from minitrace.kinds import CODE, NAME
    from minitrace.model import TraceBuilder
    high = sorted(n for n, c in CODE.items() if c > 127)[:3]
    b = TraceBuilder(2)
    for r in range(2):
        for name in ["init", *high, high[0], "finalize"]:
            b.add(r, name)
    p = tmp_path / "high.h5"
    write_trace(p, b.build())
    with minitrace.open(p) as t:
        names, counts = t._need_trace().kind_counts()
        assert dict(zip(names, counts[0].tolist())) == {
            "init": 1, "finalize": 1, high[0]: 2, high[1]: 1, high[2]: 1}
        assert len(t.actions(kind=high[0])) == 4
        assert all(NAME[CODE[n]] == n for n in names)


def test_new_attrs_writes_as_h5py_does(tmp_path):
    """``new_attrs`` (the writers' attributes on new objects, without h5py's look-ups, with
    HDF5 types made once a process) stores each value with the HDF5 type, shape and value
    that h5py's ``attrs.update`` gives it: numbers, booleans, arrays, text as fixed-length
    UTF-8 (``fixed``; h5py given ``string_dtype("utf-8", length)``), and what it leaves to
    h5py (Python text without ``fixed``, lists); in a second file too (the types reused)."""
    from minitrace.storage import new_attrs
    attrs = {"int": 3, "float": 2.5, "bool": True, "np_bool": np.bool_(False),
             "u8": np.uint8(7), "f32": np.float32(1.5), "arr": np.arange(3, dtype=np.int16),
             "grid": np.ones((2, 2)), "list": [1, 2]}
    text = {"fixed": "wörld", "empty": "", "same_length": "wörle"}
    as_h5py = {k: np.array(v.encode(), h5py.string_dtype("utf-8", max(len(v.encode()), 1)))
               for k, v in text.items()}
    for i in range(2):
        with h5py.File(tmp_path / f"a{i}.h5", "w") as f:
            new_attrs(f.create_group("lean"), {**attrs, "text": "héllo"})
            new_attrs(f.create_group("fixed"), {**attrs, **text}, fixed=True)
            f.create_group("h5py").attrs.update({**attrs, "text": "héllo"})
            f.create_group("h5py_fixed").attrs.update({**attrs, **as_h5py})
        with h5py.File(tmp_path / f"a{i}.h5") as f:
            for mine, ref in (("lean", "h5py"), ("fixed", "h5py_fixed")):
                lean, ref = f[mine], f[ref]
                assert sorted(lean.attrs) == sorted(ref.attrs)
                for name in ref.attrs:
                    a, b = lean.attrs.get_id(name), ref.attrs.get_id(name)
                    assert a.get_type() == b.get_type(), name            # (H5Tequal)
                    assert a.shape == b.shape, name
                    x, y = lean.attrs[name], ref.attrs[name]
                    assert type(x) is type(y) and np.array_equal(x, y), name


@pytest.mark.parametrize("size", [0, 1, 5000])
def test_one_chunk_dataset_is_h5pys_gzip_dataset(tmp_path, size):
    """``one_chunk_dataset`` (the pack, lstopo's XML: its chunk deflated by zlib and written
    as stored) makes the dataset h5py's ``create_dataset(chunks=(size,), compression="gzip")``
    makes: the same type, shape, filters, chunk bytes, and the data read back through HDF5's
    own filter."""
    import zlib
    from minitrace.storage import one_chunk_dataset
    data = np.random.default_rng(size).integers(0, 7, size).astype(np.uint8)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        one_chunk_dataset(f, "lean", size, zlib.compress(data.tobytes(), 7), 7)
        if size:                    # (h5py refuses a chunk longer than the data)
            f.create_dataset("ref", data=data, chunks=(size,), compression="gzip",
                             compression_opts=7)
    with h5py.File(tmp_path / "a.h5") as f:
        if not size:
            assert f["lean"].shape == (0,) and f["lean"].compression == "gzip"
            return
        lean, ref = f["lean"], f["ref"]
        assert lean.id.get_type() == ref.id.get_type() and lean.shape == ref.shape == (size,)
        assert (lean.compression, lean.compression_opts, lean.chunks, lean.shuffle) == \
            (ref.compression, ref.compression_opts, ref.chunks, ref.shuffle)
        assert np.array_equal(lean[()], data)
        assert lean.id.read_direct_chunk((0,)) == ref.id.read_direct_chunk((0,))


def test_provenance_static_part_made_once_dynamic_part_each_file(tmp_path, monkeypatch):
    """Files written one after the other by one process: the static provenance (versions,
    machine, lstopo's XML), made storable once, is the same in both; the command line, the
    directory and the MPI environment are each file's own."""
    from minitrace.storage import read_provenance
    d = TraceBuilder(1)
    d.add(0, "init")
    d.add(0, "finalize")
    data = d.build()
    monkeypatch.setenv("MPIR_CVAR_FIRST", "1")
    write_trace(tmp_path / "a.h5", data)
    monkeypatch.delenv("MPIR_CVAR_FIRST")
    monkeypatch.setenv("MPIR_CVAR_SECOND", "b\x01c")        # (a control character dropped)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    write_trace(tmp_path / "b.h5", data)
    a, b = read_provenance(str(tmp_path / "a.h5")), read_provenance(str(tmp_path / "b.h5"))
    assert a["environment"] == {"MPIR_CVAR_FIRST": "1"}
    assert b["environment"] == {"MPIR_CVAR_SECOND": "bc"}
    assert a["cwd"] != b["cwd"] == str(tmp_path / "sub")
    dynamic = {"environment", "cwd", "date", "command_line"}
    assert {k: v for k, v in a.items() if k not in dynamic} == \
        {k: v for k, v in b.items() if k not in dynamic}
    assert {"versions", "hostname", "cpu"} <= set(a)


def _measured_like(n: int, seed: int) -> np.ndarray:
    """int32 'durations' whose shuffled planes hold each kind deflate_planes tells apart: a
    random low byte, a skewed second byte, a nearly constant third, a zero fourth."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, n) + 256 * rng.geometric(0.4, n) +
            65536 * (rng.random(n) < 0.01)).astype(np.int32)


@pytest.mark.parametrize("n", [3, 4096, 300_000])
def test_noisy_chunks_read_back_through_hdf5s_filter(tmp_path, n):
    """A noisy dataset's chunks (their planes deflated each its own way, streams joined:
    ``_deflate_planes``) are what HDF5's shuffle + deflate filters read back, whole and edge
    chunks alike, for 1- to 8-byte types."""
    from minitrace.storage import dataset
    arrays = {"i4": _measured_like(n, 1), "i8": _measured_like(n, 2).astype(np.int64) << 20,
              "u1": np.random.default_rng(3).integers(0, 4, n).astype(np.uint8),
              "f8": np.random.default_rng(4).exponential(1e-5, n)}
    with h5py.File(tmp_path / "n.h5", "w") as f:
        for name, a in arrays.items():
            dataset(f, name, a, noisy=True)
    with h5py.File(tmp_path / "n.h5") as f:
        for name, a in arrays.items():
            assert f[name].shuffle and f[name].compression == "gzip"
            assert np.array_equal(f[name][()], a), name


def _deflate_calls(monkeypatch) -> list:
    """The (bytes, level, strategy) of each raw deflate stream storage makes from now on."""
    from minitrace import storage as S
    calls = []
    real = S._deflated
    monkeypatch.setattr(S, "_deflated", lambda data, level, strategy, flush:
                        calls.append((len(data), level, strategy)) or
                        real(data, level, strategy, flush))
    return calls


def test_each_plane_deflated_by_what_it_holds(monkeypatch):
    """A random plane is stored (its bytes stand in the stream as they are), a nearly
    constant one run-length coded, one that repeats strings (SNAP's durations) deflated
    with match search; the planes' streams joined inflate to the chunk."""
    import zlib
    from minitrace import storage as S
    rng = np.random.default_rng(5)
    n = 1 << 18
    planes = np.stack([rng.integers(0, 256, n),                       # random
                       (rng.random(n) < 0.01).astype(int),            # nearly constant
                       np.tile(rng.integers(0, 40, 1000), n // 1000 + 1)[:n],   # repeats
                       np.zeros(n, int)]).astype(np.uint8)
    calls = _deflate_calls(monkeypatch)
    stream = S._deflate_planes(planes)
    assert zlib.decompress(stream) == planes.tobytes()
    coders = [(level, strategy) for size, level, strategy in calls if size == n]   # (finals)
    assert coders == [(0, zlib.Z_DEFAULT_STRATEGY), (1, zlib.Z_RLE), (4, zlib.Z_FILTERED),
                      (1, zlib.Z_RLE)]
    assert planes[0, 1000:9000].tobytes() in stream


def test_sample_of_a_plane_is_contiguous_blocks():
    """A plane's sample is blocks of consecutive bytes, so that a loop of period 2, 4 or 8
    (every 8th byte the same) does not make a constant-looking plane random or a random
    one constant."""
    from minitrace import storage as S
    plane = np.zeros(1 << 18, np.uint8)
    plane[1::2] = np.random.default_rng(2).integers(0, 256, 1 << 17)   # random odd bytes
    sample = S._sample(plane)
    assert len(sample) == S._SAMPLE_BLOCKS * S._SAMPLE_BLOCK
    assert 4.0 < S._plane_bits(sample) < 5.5                  # half zeros, half random
    small = np.arange(100, dtype=np.uint8)
    assert np.array_equal(S._sample(small), small)


def test_a_small_plane_is_deflated_once(monkeypatch):
    """A plane below twice its sample (32 KiB) is deflated once, without trials: by run
    lengths where nearly constant, else by match search (trials cost as much as the stream);
    a random one stored."""
    import zlib
    from minitrace import storage as S
    rng = np.random.default_rng(6)
    n = 8000
    planes = np.stack([(rng.random(n) < 0.01).astype(int),
                       np.tile(rng.integers(0, 40, 500), n // 500),
                       rng.integers(0, 256, n)]).astype(np.uint8)
    calls = _deflate_calls(monkeypatch)
    stream = S._deflate_planes(planes)
    assert zlib.decompress(stream) == planes.tobytes()
    assert calls == [(n, 1, zlib.Z_RLE), (n, 4, zlib.Z_FILTERED),
                     (n, 0, zlib.Z_DEFAULT_STRATEGY)]
