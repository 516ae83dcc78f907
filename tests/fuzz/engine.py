"""Mutation fuzzing of every reader (issue 13): seeded inputs of each format are damaged at
random (bit flips, interesting values in fields, truncation, lines dropped or duplicated), each
case runs the real command line (``minitrace import/convert/merge/validate/info/export``) in a
forked child (preloaded modules: milliseconds a case) under RLIMIT_AS and a timeout, and the
outcome is classified.  The children are forked by a fork server, a fresh single-threaded
process started once: forking the caller itself (pytest, with the threads earlier tests started:
storage's compression pool, pytest-timeout) left children blocked on locks those threads held.  Acceptable: ``ok`` (and any output it writes opens), ``error`` (one
line ``minitrace: error: ...``, possibly after warnings/notes).  Anything else is a finding:
``internal`` (an uncaught exception), ``noisy`` (other lines on stderr, e.g. a library's own),
``crash`` (a signal or another exit status), ``timeout``, ``unreadable-output``.

Used by tests/test_fuzz.py (a few hundred cases, seeded) and benchmarks/fuzz_readers.py (the
long run)."""
from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

READERS = ("ti", "hdf5", "compressed", "raw", "tau", "otf2", "calibration", "bench",
           "history")
#: Readers of minitrace HDF5 files (damaged as ``hdf5`` is, and structurally).
_H5_KINDS = ("hdf5", "compressed", "calibration", "bench", "history")
MEMORY_LIMIT = 2 << 30
TIME_LIMIT = 30.0
OK_OUTCOMES = ("ok", "error")
_INTERESTING = [0, 1, -1, 2, 255, 256, 65535, 65536, 2 ** 31 - 1, -2 ** 31, 2 ** 32 - 1,
                2 ** 63 - 1, -2 ** 63]
_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_TEXT_VALUES = [b"-1", b"0", b"2147483647", b"-2147483648", b"4294967296", b"1e308", b"-5",
                b"nan", b"inf", b"99999999999999999999999", b"x", b""]


def _cli(argv: list[str]) -> int:
    from minitrace import cli
    return cli.main(argv)


def preload() -> None:
    """Import everything a case may use, once, before forking."""
    import minitrace.cli  # noqa: F401
    from minitrace.commands import (compress, convert, expand, export, import_, info, merge,  # noqa: F401
                                    validate)
    from minitrace.compress import expand as _expand, loop_view  # noqa: F401
    from minitrace.commands import calibrate, gev, regress  # noqa: F401
    from minitrace.converters import otf2, simgrid_ti, tau  # noqa: F401
    from minitrace.analysis import gev as _, projection, regress as _r, regress_history  # noqa
    from minitrace.predict import calibration  # noqa: F401
    from minitrace.analysis import plotting  # noqa: F401 (matplotlib: seconds to import)
    # what the commands import only when they run (their --help stays quick): a case must not
    # spend its time limit importing pandas, the converters or the prediction under load
    import pandas  # noqa: F401
    import minitrace.trace  # noqa: F401
    from minitrace.converters import conversion  # noqa: F401
    from minitrace.predict import prediction  # noqa: F401
    from minitrace.compress import store, files  # noqa: F401


# -- seeds ----------------------------------------------------------------------------------

def _mt(*args) -> None:
    p = subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1) or "error" in p.stderr:
        raise RuntimeError(f"seed: minitrace {args}: {p.stderr}")


def make_seeds(root: Path, repo: Path, raw_dir: Path | None = None,
               shared: Path | None = None) -> dict[str, list[Path]]:
    """Seed inputs of every reader in ``root``: the repository's TI traces, minitrace files
    imported from them, an OTF2 archive written by ``convert --to otf2``, a TAU trace in TAU's
    layout (tests/test_convert_tau.py), ``raw_dir`` (a recorded raw directory) and, when
    ``shared`` (../shared/fixtures) exists, its traces."""
    root.mkdir(parents=True, exist_ok=True)
    ti_dir = repo / "tests" / "data" / "ti"
    seeds: dict[str, list[Path]] = {r: [] for r in READERS}
    for name in ("p2p.txt", "collectives.txt", "types.txt"):
        seeds["ti"].append(ti_dir / name)
    split = root / "split"
    if not split.exists():
        split.mkdir()
        for f in ("split_traces", "split0.txt", "split1.txt"):
            shutil.copy(ti_dir / f, split / f)
    seeds["ti"].append(split / "split_traces")
    for t in seeds["ti"][:2]:
        h5 = root / (t.stem + ".h5")
        if not h5.exists():
            _mt("import", t, "-o", h5)
        seeds["hdf5"].append(h5)
        archive = root / (t.stem + "_otf2")
        if not archive.exists():
            _mt("convert", h5, "--to", "otf2", "-o", archive)
        seeds["otf2"].append(archive)
    for h5 in list(seeds["hdf5"]):         # the compressed form of each, and of a loop
        packed = root / (h5.stem + "_compressed.h5")
        if not packed.exists():
            _mt("compress", h5, "-o", packed, *(["--volumes", "model"] if "coll" in h5.stem
                                                  else []))
        seeds["compressed"].append(packed)
    bounded = root / "bounded_compressed.h5"     # (arrays of the adaptive context coder)
    if not bounded.exists():
        from tests.test_compress_bounded import _timed_stencil
        from minitrace.compress.files import write_compressed
        write_compressed(str(bounded), _timed_stencil(300), "bounded:1%", times="bounded:1us")
    seeds["compressed"].append(bounded)
    loop = root / "loop_compressed.h5"
    if not loop.exists():
        from tests.support import synthetic
        from minitrace.compress.files import write_compressed
        write_compressed(str(loop), synthetic.ring_trace(3, 3 * 802))
    seeds["compressed"].append(loop)
    tau = root / "tau"
    if not tau.exists():
        tau.mkdir()
        sys.path.insert(0, str(repo))
        from tests.test_convert_tau import osu_like
        osu_like(tau)
    seeds["tau"].append(tau)
    if raw_dir is not None:
        seeds["raw"].append(raw_dir)
        h5 = root / "recorded.h5"
        if not h5.exists():
            _mt("merge", raw_dir, "-o", h5)
        seeds["hdf5"].append(h5)
    seeds["calibration"].append(_seed_calibration(root / "calibration.h5"))
    seeds["bench"].append(_seed_bench(root / "variability.h5"))
    seeds["history"].append(_seed_history(root / "history.h5"))
    if shared is not None and shared.is_dir():
        seeds["ti"] += sorted((shared / "simgrid_ti").glob("*.txt"))[:4]
        seeds["tau"] += [p for p in (shared / "tau").iterdir() if p.is_dir()]
        seeds["otf2"] += [p for p in (shared / "otf2").iterdir() if p.is_dir()]
    return seeds


def _seed_calibration(path: Path) -> Path:
    """A fitted calibration of two synthetic runs (tests/support/synthetic.py: calibration_run)."""
    if not path.exists():
        from minitrace.predict import calibration as C
        from tests.support.synthetic import calibration_run
        for k in range(2):
            C.append_run(str(path), calibration_run(k))
        C.refit(str(path))
    return path


def _seed_bench(path: Path) -> Path:
    """A variability suite (what ``gev`` and ``info`` read) of a real 2-rank run."""
    if not path.exists():
        from tests.support.mpiutil import tool
        p = subprocess.run([tool("mpiexec"), "-n", "2", sys.executable, "-m", "minitrace.bench",
                            "variability", "--iterations", "40", "--warmup", "1", "--mu",
                            "2e-4", "--sigma", "2e-5", "-o", str(path)],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"seed: variability bench: {p.stderr}")
    return path


def _seed_history(path: Path) -> Path:
    """A 40-run, 6-metric regression history with one shift."""
    if not path.exists():
        from minitrace.analysis import regress_history as H
        rng = np.random.default_rng(1)
        v = 1 + 0.01 * rng.standard_normal((40, 6))
        v[25:, :2] *= 1.1
        runs = {"date": np.array([f"2026-01-{1 + i % 28:02d}T00:00:00+00:00" for i in range(40)],
                                 dtype=object),
                "host": np.full(40, "n1", dtype=object), "source": np.full(40, "r.h5", dtype=object),
                "command_line": np.full(40, "bench", dtype=object),
                "provenance_index": np.zeros(40, np.int32)}
        H.write(str(path), H.History([f"s/m{j // 2}/{j % 2}" for j in range(6)],
                                     np.array([1, 1, -1, -1, 0, 0], np.int8), v, runs, ["{}"]))
    return path


# -- mutations ------------------------------------------------------------------------------

def _flip_bytes(b: bytearray, rng: random.Random, lo: int = 0, hi: int | None = None) -> None:
    hi = len(b) if hi is None else min(hi, len(b))
    if hi <= lo:
        return
    for _ in range(rng.choice((1, 1, 2, 4, 8, 32))):
        i = rng.randrange(lo, hi)
        op = rng.random()
        if op < 0.5:
            b[i] ^= 1 << rng.randrange(8)
        elif op < 0.8:
            b[i] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x01))
        else:
            v = rng.choice(_INTERESTING) & 0xFFFFFFFF
            b[i:i + 4] = v.to_bytes(4, "little")[:len(b[i:i + 4])]


def mutate_bytes(data: bytes, rng: random.Random, lo: int = 0, hi: int | None = None) -> bytes:
    """Bit flips / interesting values in [lo, hi), or a truncation, a cut-out or a repeat."""
    b = bytearray(data)
    r = rng.random()
    if r < 0.7 or len(b) < 2:
        _flip_bytes(b, rng, lo, hi)
    elif r < 0.85:
        del b[rng.randrange(len(b)):]
    elif r < 0.93:
        i = rng.randrange(len(b))
        del b[i:i + rng.randrange(1, 256)]
    else:
        i = rng.randrange(len(b))
        b[i:i] = b[i:i + rng.randrange(1, 256)]
    return bytes(b)


def mutate_text(data: bytes, rng: random.Random) -> bytes:
    """A TI/EDF text: numbers replaced by interesting ones, lines dropped, repeated, swapped
    or truncated; sometimes raw byte damage."""
    if rng.random() < 0.15:
        return mutate_bytes(data, rng)
    lines = data.split(b"\n")
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        if not lines:
            break
        i = rng.randrange(len(lines))
        r = rng.random()
        if r < 0.6:
            nums = list(_NUMBER.finditer(lines[i]))
            if nums:
                m = rng.choice(nums)
                lines[i] = lines[i][:m.start()] + rng.choice(_TEXT_VALUES) + lines[i][m.end():]
        elif r < 0.7:
            del lines[i]
        elif r < 0.8:
            lines.insert(i, lines[i])
        elif r < 0.9:
            toks = lines[i].split(b" ")
            if len(toks) > 1:
                del toks[rng.randrange(len(toks))]
            lines[i] = b" ".join(toks)
        else:
            lines = lines[:i]
    return b"\n".join(lines)


def _copy_tree(src: Path, dst: Path) -> None:
    """A copy keeping holes (raw files are mostly sparse 4 MiB chunks)."""
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        _sparse_copy(src, dst)
        return
    for p in src.rglob("*"):
        q = dst / p.relative_to(src)
        if p.is_dir():
            q.mkdir(parents=True, exist_ok=True)
        else:
            q.parent.mkdir(parents=True, exist_ok=True)
            _sparse_copy(p, q)


def _sparse_copy(src: Path, dst: Path, block: int = 1 << 16) -> None:
    size = src.stat().st_size
    with open(src, "rb") as f, open(dst, "wb") as g:
        while (b := f.read(block)):
            if b.count(0) == len(b):
                g.seek(len(b), 1)
            else:
                g.write(b)
        g.truncate(size)


def _used_end(path: Path) -> int:
    """Offset past the last non-zero byte (where mutations of a sparse file matter)."""
    size = path.stat().st_size
    end, block = 0, 1 << 16
    with open(path, "rb") as f:
        for off in range(0, size, block):
            b = f.read(block)
            nz = np.flatnonzero(np.frombuffer(b, np.uint8))
            if len(nz):
                end = off + int(nz[-1]) + 1
    return end


def _rewrite(path: Path, fn) -> None:
    data = path.read_bytes()
    path.write_bytes(fn(data))


def _mutate_file_region(path: Path, rng: random.Random, lo: int, hi: int) -> None:
    """Damage bytes [lo, hi) of ``path`` in place (sparse files: no full rewrite)."""
    with open(path, "r+b") as f:
        f.seek(lo)
        b = bytearray(f.read(hi - lo))
        _flip_bytes(b, rng)
        f.seek(lo)
        f.write(b)


def mutate_case(reader: str, seed: Path, case: Path, rng: random.Random) -> Path:
    """Write one damaged copy of ``seed`` under ``case``; returns the input to give the
    reader."""
    case.mkdir(parents=True, exist_ok=True)
    if reader == "ti":
        if seed.is_file():
            out = case / seed.name
            out.write_bytes(mutate_text(seed.read_bytes(), rng))
            return out
        # a list file and its per-rank files: damage the list or one of them
        _copy_tree(seed.parent, case)
        target = case / seed.name
        files = [target] + [case / ln.strip() for ln in target.read_text().splitlines()
                            if ln.strip() and (case / ln.strip()).is_file()]
        f = rng.choice(files)
        _rewrite(f, lambda d: mutate_text(d, rng))
        return target
    if reader in _H5_KINDS:
        out = case / seed.name
        shutil.copy(seed, out)
        if rng.random() < 0.35:
            _mutate_structure(out, rng)
        else:
            _mutate_hdf5(out, rng)
        return out
    if reader == "raw":
        out = case / "raw"
        _copy_tree(seed, out)
        _mutate_raw(out, rng)
        return out
    if reader == "tau":
        out = case / "tau"
        _copy_tree(seed, out)
        files = sorted(p for p in out.iterdir() if p.is_file())
        f = rng.choice(files)
        if f.suffix == ".trc":
            _mutate_tau_trc(f, rng)
        else:
            _rewrite(f, lambda d: mutate_text(d, rng))
        return out
    if reader == "otf2":
        out = case / "otf2"
        _copy_tree(seed, out)
        files = sorted(p for p in out.rglob("*") if p.is_file())
        _rewrite(rng.choice(files), lambda d: mutate_bytes(d, rng))
        anchors = sorted(out.glob("*.otf2"))
        return anchors[0] if anchors else out
    raise ValueError(reader)


def _mutate_hdf5(path: Path, rng: random.Random) -> None:
    """Bit flips inside a dataset's stored bytes (chunks or contiguous), or a changed attribute
    or dataset value (what an h5py-level corruption or another writer could leave)."""
    import h5py
    with h5py.File(path, "r+") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append(n) if isinstance(o, h5py.Dataset) else None)
        if not dsets:       # (a small compressed file: its pack and metadata are attributes)
            _mutate_attribute(f, rng)
            return
        r = rng.random()
        name = rng.choice(dsets)
        ds = f[name]
        if r < 0.25 and ds.size and ds.dtype.kind in "iuf":
            v = ds[...]
            flat = v.reshape(-1)
            i = rng.randrange(len(flat))
            if ds.dtype.kind in "iu":
                info = np.iinfo(ds.dtype)
                flat[i] = min(max(rng.choice(_INTERESTING), info.min), info.max)
            else:
                flat[i] = rng.choice([-1.0, 1e308, float("nan"), -1e-9])
            ds[...] = v
            return
        if r < 0.45:
            objs = [f["/"]] + [f[n] for n in ("trace", "trace/actions/volume",
                                              "trace/actions/t_start", "trace/requests/new")
                               if n in f]
            o = rng.choice(objs)
            keys = list(o.attrs)
            if keys:
                k = rng.choice(keys)
                o.attrs[k] = rng.choice([-1, 0, 2 ** 31 - 1, 10 ** 12, "x", "[1, 2",
                                         float("nan"), "{}"])
            return
        if r < 0.5:
            del f[name]
            return
        regions = []
        if ds.chunks:
            for i in range(ds.id.get_num_chunks()):
                info = ds.id.get_chunk_info(i)
                regions.append((info.byte_offset, info.byte_offset + info.size))
        elif ds.id.get_offset() is not None:
            off = ds.id.get_offset()
            regions.append((off, off + ds.id.get_storage_size()))
    if not regions:
        _rewrite(path, lambda d: mutate_bytes(d, rng))
        return
    lo, hi = rng.choice(regions)
    _mutate_file_region(path, rng, lo, hi)


def _mutate_attribute(f, rng: random.Random) -> None:
    """Bytes flipped in a root or ``/trace`` attribute of bytes (a compressed file's
    ``packed_meta`` or ``packed_bytes``), or another attribute's value changed."""
    o = rng.choice([f["/"]] + ([f["trace"]] if "trace" in f else []))
    k = rng.choice(list(o.attrs))
    v = o.attrs[k]
    if isinstance(v, np.ndarray) and v.dtype == np.uint8 and v.size:
        v = v.copy()
        for _ in range(rng.choice((1, 1, 2, 8))):
            v[rng.randrange(v.size)] ^= np.uint8(1 << rng.randrange(8))
        o.attrs[k] = v
    else:
        o.attrs[k] = rng.choice([-1, 0, 2 ** 31 - 1, "x", "[1, 2", float("nan"), "{}"])


def _mutate_structure(path: Path, rng: random.Random) -> None:
    """What a byte-level fuzzer rarely builds: a 4 KiB page zeroed, a dataset replaced by a
    group, by a soft link (to itself or elsewhere) or an external link, a dataset rewritten
    with another shape (transposed, cut, flattened) or a text column with repeated values."""
    import h5py
    r = rng.random()
    with h5py.File(path, "r") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append(n) if isinstance(o, h5py.Dataset) else None)
    if r < 0.3 or not dsets:        # (a small compressed file has no dataset)
        size = path.stat().st_size
        page = rng.randrange(max(size // 4096, 1))
        with open(path, "r+b") as fh:
            fh.seek(page * 4096)
            fh.write(b"\0" * min(4096, size - page * 4096))
        return
    with h5py.File(path, "r+") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append(n) if isinstance(o, h5py.Dataset) else None)
        name = rng.choice(dsets)
        parent, leaf = name.rsplit("/", 1) if "/" in name else ("", name)
        g = f[parent] if parent else f
        v = g[leaf][()]
        dtype = g[leaf].dtype
        if r < 0.6:
            del g[leaf]
            what = rng.randrange(4)
            if what == 0:
                g.create_group(leaf)
            elif what == 1:
                g[leaf] = h5py.SoftLink(f"/{name}")
            elif what == 2:
                g[leaf] = h5py.SoftLink("/" + rng.choice(dsets))
            else:
                g[leaf] = h5py.ExternalLink("/etc/hostname", "/x")
            return
        v = np.asarray(v)
        if v.size and rng.random() < 0.5 and v.dtype == object:
            v = np.full(v.shape, v.ravel()[0], dtype=object)     # repeated names
        else:
            v = rng.choice([lambda a: a.T, lambda a: a.reshape(-1),
                            lambda a: a[:max(len(a) - 1, 0)] if a.ndim else a,
                            lambda a: a.reshape(-1)[:-1] if a.size > 1 else a])(v)
        del g[leaf]
        g.create_dataset(leaf, data=v, dtype=dtype)


def _mutate_raw(d: Path, rng: random.Random) -> None:
    """A raw directory: a header field, a chunk header or record bytes damaged, a file cut,
    deleted, emptied or duplicated."""
    from minitrace import rawlayout as L
    files = sorted(d.glob("rank-*.mtr"))
    f = rng.choice(files)
    r = rng.random()
    if r < 0.05:
        f.unlink()
    elif r < 0.1:
        shutil.copy(files[0], d / f"rank-{len(files):06d}.mtr")
    elif r < 0.25:
        os.truncate(f, rng.randrange(_used_end(f) + 1))
    elif r < 0.5:                                   # a header field
        hdr = L.HEADER.dtype()
        fld = rng.choice([n for n in hdr.names if n not in ("host", "library", "cmdline")])
        off = hdr.fields[fld][1]
        size = min(hdr.fields[fld][0].itemsize, 8)
        with open(f, "r+b") as g:
            g.seek(off)
            v = rng.choice(_INTERESTING) & ((1 << (8 * size)) - 1)
            g.write(v.to_bytes(size, "little"))
    elif r < 0.65:                                  # the first chunk's header
        with open(f, "r+b") as g:
            g.seek(L.HEADER_BYTES + rng.choice((0, 8, 12)))
            g.write((rng.choice(_INTERESTING) & 0xFFFFFFFF).to_bytes(4, "little"))
    else:                                           # records
        end = _used_end(f)
        if end > L.HEADER_BYTES + 80:
            _mutate_file_region(f, rng, L.HEADER_BYTES + 80, end)


def _mutate_tau_trc(f: Path, rng: random.Random) -> None:
    """A TAU record field (event id, node, thread, parameter, time) set to an interesting
    value, or byte damage."""
    data = bytearray(f.read_bytes())
    n = len(data) // 24
    if n and rng.random() < 0.6:
        i = rng.randrange(n) * 24
        off, size = rng.choice([(0, 4), (4, 2), (6, 2), (8, 8), (16, 8)])
        v = rng.choice(_INTERESTING) & ((1 << (8 * size)) - 1)
        data[i + off:i + off + size] = v.to_bytes(size, "little")
        f.write_bytes(bytes(data))
    else:
        f.write_bytes(mutate_bytes(bytes(data), rng))


# -- running a case ---------------------------------------------------------------------------

def commands(reader: str, inp: Path, out: Path, k: int) -> list[str]:
    """The command line reading ``inp`` (for HDF5, by turns validate/info/export csv)."""
    if reader == "ti":
        return ["import", str(inp), "-o", str(out)]
    if reader == "raw":
        return ["merge", str(inp), "-o", str(out)]
    if reader in ("tau", "otf2"):
        return ["convert", str(inp), "--from", reader, "-o", str(out)]
    if reader == "compressed":
        return [["validate", str(inp)], ["info", "--loops", str(inp)],
                ["expand", str(inp), "-o", str(out)]][k % 3]
    if reader == "calibration":     # read back (info); refitted (runs read, file written, plot)
        return ([["info", str(inp)]] * 3 + [["calibrate", "-o", str(inp), "--plot",
                                               str(out.with_suffix(".png"))]])[k % 4]
    if reader == "bench":
        return [["info", str(inp)], ["gev", str(inp), "--method", "pwm", "--replicas", "20",
                                     "--no-backtest", "--scale", "8"]][k % 2]
    if reader == "history":
        return [["regress", str(inp), "--permutations", "99", "--alpha", "0.05"],
                ["info", str(inp)]][k % 2]
    return [["validate", str(inp)], ["info", str(inp)],
            ["export", str(inp), "--format", "csv", "-o", str(out.with_suffix(".csv"))]][k % 3]


@dataclass
class Result:
    outcome: str
    seconds: float
    stderr: str


_SERVER: subprocess.Popen | None = None


def _fork_server() -> subprocess.Popen:
    """The single-threaded process that forks every case (started once, modules preloaded)."""
    global _SERVER
    if _SERVER is None or _SERVER.poll() is not None:
        root = str(Path(__file__).resolve().parents[2])
        _SERVER = subprocess.Popen(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {root!r}); "
                                   "from tests.fuzz.engine import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return _SERVER


def serve() -> None:
    """Fork server loop: one JSON job per line in, ``[status, seconds]`` per line out."""
    os.environ["TQDM_DISABLE"] = "1"      # progress bars are not a reader's output
    preload()
    for line in sys.stdin:
        argv, workdir, timeout, memory = json.loads(line)
        rc, secs = _fork_one(argv, Path(workdir), timeout, memory)
        print(json.dumps([rc, secs]), flush=True)


def run_forked(argv: list[str], workdir: Path, timeout: float = TIME_LIMIT,
               memory: int = MEMORY_LIMIT) -> tuple[int | None, str, float]:
    """(exit status or -signal or None on timeout, stderr, seconds) of ``minitrace ARGV`` in a
    child forked by the fork server under RLIMIT_AS = ``memory``."""
    srv = _fork_server()
    srv.stdin.write(json.dumps([argv, str(workdir), timeout, memory]) + "\n")
    srv.stdin.flush()
    reply = srv.stdout.readline()
    if not reply:
        raise RuntimeError("the fuzz fork server died")
    rc, secs = json.loads(reply)
    err = workdir / "stderr"
    return rc, err.read_text(errors="replace") if err.exists() else "", secs


def _fork_one(argv: list[str], workdir: Path, timeout: float,
              memory: int) -> tuple[int | None, float]:
    """(exit status or -signal or None on timeout, seconds) of one forked case."""
    err = workdir / "stderr"
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        try:
            fd = os.open(str(err), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            sys.stderr = os.fdopen(2, "w", buffering=1)
            sys.stdout = open(os.devnull, "w")
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            rc = _cli(argv)
            sys.stderr.flush()
            os._exit(rc)
        except BaseException as e:   # noqa: BLE001 (the harness must not escape the child)
            os.write(2, f"harness: {type(e).__name__}: {e}\n".encode())
            os._exit(99)
    status = None
    while time.monotonic() - t0 < timeout:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        time.sleep(0.002)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None, timeout
    return os.waitstatus_to_exitcode(status), time.monotonic() - t0


def classify(rc: int | None, stderr: str) -> str:
    if rc is None:
        return "timeout"
    if "internal error" in stderr:
        return "internal"
    if rc not in (0, 1):
        return "crash"
    lines = [ln for ln in stderr.split("\n") if ln.strip() and "%|" not in ln]  # (progress)
    other = [ln for ln in lines if not ln.startswith(("minitrace: warning:", "minitrace: note:"))]
    if rc == 0:
        return "ok" if not other else "noisy"
    if len(other) == 1 and other[0].startswith("minitrace: error:"):
        return "error"
    if not other:     # merge/validate: 1 = incomplete or invalid trace, reported on stdout
        return "ok"
    return "noisy"


def run_case(reader: str, seed: Path, case: Path, rng: random.Random, k: int) -> Result:
    """Mutate, run the reader, and check that any output it wrote opens."""
    inp = mutate_case(reader, seed, case, rng)
    out = case / "out.h5"
    rc, err, secs = run_forked(commands(reader, inp, out, k), case)
    outcome = classify(rc, err)
    if outcome == "ok" and out.exists():
        rc2, err2, _ = run_forked(["info", str(out)], case)
        if rc2 != 0:
            return Result("unreadable-output", secs, err2)
    return Result(outcome, secs, err)


@dataclass
class Table:
    counts: dict = field(default_factory=lambda: {r: Counter() for r in READERS})
    findings: list = field(default_factory=list)
    slowest: dict = field(default_factory=lambda: {r: 0.0 for r in READERS})

    def add(self, reader: str, res: Result, label: str) -> None:
        self.counts[reader][res.outcome] += 1
        self.slowest[reader] = max(self.slowest[reader], res.seconds)
        if res.outcome not in OK_OUTCOMES:
            self.findings.append((reader, label, res.outcome, res.stderr.strip()[-400:]))


def fuzz(seeds: dict[str, list[Path]], work: Path, per_reader: int, seed: int = 0,
         keep_failures: bool = False, table: Table | None = None) -> Table:
    """``per_reader`` cases of every reader with seeds; deterministic for a given ``seed``."""
    table = table or Table()
    for reader in READERS:
        if not seeds.get(reader):
            continue
        rng = random.Random(f"{seed}-{reader}")
        for k in range(per_reader):
            s = seeds[reader][k % len(seeds[reader])]
            case = work / f"{reader}-{k}"
            state = rng.getstate()
            res = run_case(reader, s, case, rng, k)
            table.add(reader, res, f"{reader}#{k} seed={s.name} rng={hash(state) & 0xFFFF:x}")
            if keep_failures and res.outcome not in OK_OUTCOMES:
                continue
            shutil.rmtree(case, ignore_errors=True)
    return table
