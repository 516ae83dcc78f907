"""Every reader fails in one line (issue 13): a seeded mutation corpus per reader (TI text,
HDF5 with damaged datasets and attributes, raw recorder files of a real run, TAU, OTF2) run
through the real command line, plus the damaged inputs the fuzzer found, each a regression
case.  The long run is benchmarks/fuzz_readers.py."""
from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from minitrace import kinds as K
from minitrace import rawlayout as L
from tests.support.fixtures import DATA
from tests.fuzz import engine as E
from tests.support.mpiutil import tool
from tests.support.record_util import first_chunk

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]
CASES_PER_READER = 24


def mt(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 1 and p.stderr.startswith("minitrace: error: ") and \
        p.stderr.count("\n") == 1, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


@pytest.fixture(scope="module")
def raw(programs, tmp_path_factory) -> Path:
    """A recorded raw directory (3-rank ring), made once."""
    d = tmp_path_factory.mktemp("rec")
    exe = programs("ring")
    p = mt("record", "--keep-raw", "-o", d / "ring.h5", "--", tool("mpiexec"), "-n", 3, exe, 20)
    assert p.returncode == 0, p.stderr
    return Path(glob.glob(str(d / "ring.h5.raw-*"))[0])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory, raw) -> dict:
    return E.make_seeds(tmp_path_factory.mktemp("seeds"), REPO, raw)


@pytest.mark.parametrize("reader", E.READERS)
def test_mutated_inputs_fail_in_one_line(seeds, tmp_path, reader):
    """No internal error, crash, noise, timeout or unreadable output on a seeded corpus."""
    table = E.fuzz({reader: seeds[reader]}, tmp_path, CASES_PER_READER, seed=13)
    assert sum(table.counts[reader].values()) == CASES_PER_READER
    assert table.findings == [], "\n".join(map(str, table.findings))


def test_classification():
    assert E.classify(1, "minitrace: warning: w\nminitrace: error: x: bad\n") == "error"
    assert E.classify(1, "otf2: noise\nminitrace: error: x: bad\n") == "noisy"
    assert E.classify(1, "minitrace: internal error: KeyError\n") == "internal"
    assert E.classify(-9, "") == "crash" and E.classify(None, "") == "timeout"


# -- what the fuzzer found: each failed on the code before issue 13 -------------------------

def test_ti_rank_far_beyond_the_ranks_present(tmp_path):
    t = tmp_path / "t.txt"
    t.write_text("0 init\n0 compute 10\n2147483647 compute 5\n0 finalize\n")
    one_line_error(mt("import", t, "-o", tmp_path / "o.h5"), "rank 2147483647",
                   "corrupt rank number")


@pytest.mark.parametrize("line", ["0 send 1 4294967296 4000", "0 send 1 0 1e30"])
def test_ti_values_beyond_their_columns(tmp_path, line):
    t = tmp_path / "t.txt"
    t.write_text(f"0 init\n1 init\n{line}\n1 recv 0 0 4000\n0 finalize\n1 finalize\n")
    one_line_error(mt("import", t, "-o", tmp_path / "o.h5"), "out of range")


def _imported(tmp_path) -> Path:
    out = tmp_path / "p2p.h5"
    assert mt("import", DATA / "ti" / "p2p.txt", "-o", out).returncode == 0
    return out


@pytest.mark.parametrize("damage", ["drop-column", "quantum-text", "offsets-backwards",
                                    "unknown-kind", "vec-len-beyond", "attr-garbage",
                                    "version-nan"])
def test_hdf5_damage_is_one_line(tmp_path, damage):
    f = _imported(tmp_path)
    with h5py.File(f, "r+") as h:
        a = h["trace/actions"]
        if damage == "drop-column":
            del a["flags"]
        elif damage == "quantum-text":
            a["volume"].attrs["quantum"] = "x"
        elif damage == "offsets-backwards":
            off = h["trace/index/rank_offsets"]
            v = off[...]
            v[1] = v[2] + 1
            off[...] = v
        elif damage == "unknown-kind":
            k = a["kind"][...]
            k[3] = -6          # 250 as the uint8 kind: no such kind
            a["kind"][...] = k
        elif damage == "vec-len-beyond":
            v = a["vec_len"][...]
            v[-1] = 100
            a["vec_len"][...] = v
        elif damage == "attr-garbage":
            h.attrs["volume_unit"] = "[1, 2"
        else:
            h.attrs["format_version"] = float("nan")
    for cmd in (["validate", f], ["export", f, "--format", "csv", "-o", tmp_path / "o.csv"]):
        one_line_error(mt(*cmd), str(f), "corrupt")


def _raw_copy(raw: Path, dest: Path) -> Path:
    shutil.copytree(raw, dest)
    return dest


def _set_vec_len(path: Path, value: int, version: int | None = None) -> None:
    rec = L.RECORD.dtype()
    off = first_chunk(path) + rec.itemsize * 3 + rec.fields["vec_len"][1]   # record 3's vec_len
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(np.int32(value).tobytes())
        if version is not None:
            f.seek(L.HEADER.dtype().fields["version"][1])
            f.write(np.uint32(version).tobytes())


def test_raw_record_with_impossible_vector_length(raw, tmp_path):
    """Caught by the record's check word: that record is dropped, the rest merges."""
    d = _raw_copy(raw, tmp_path / "raw")
    _set_vec_len(d / "rank-000001.mtr", -2 ** 31)
    p = mt("merge", d, "-o", tmp_path / "o.h5")
    assert "rank-000001.mtr: 1 record(s) fail their check word" in p.stderr, p.stderr
    assert "internal error" not in p.stderr and (tmp_path / "o.h5").exists()


def test_raw_record_with_impossible_vector_length_unchecked(raw, tmp_path):
    """In a raw file of version 3 (no check words) the vector length itself is checked."""
    d = _raw_copy(raw, tmp_path / "raw")
    _set_vec_len(d / "rank-000001.mtr", -2 ** 31, version=3)
    one_line_error(mt("merge", d, "-o", tmp_path / "o.h5"), "rank-000001.mtr",
                   "corrupt record")


@pytest.mark.parametrize("field,value", [("rank", 2 ** 31), ("size", 2 ** 31 - 1),
                                         ("chunk_bytes", 0)])
def test_raw_header_fields_checked(raw, tmp_path, field, value):
    d = _raw_copy(raw, tmp_path / "raw")
    hdr = L.HEADER.dtype()
    with open(d / "rank-000002.mtr", "r+b") as f:
        f.seek(hdr.fields[field][1])
        f.write(np.uint32(value).tobytes())
    one_line_error(mt("merge", d, "-o", tmp_path / "o.h5"), "rank-000002.mtr",
                   "corrupt header")


def test_times_beyond_int64_nanoseconds_store_readably(tmp_path):
    """A damaged TAU time stamp (~2**63 us) gave a span beyond int64 nanoseconds: the
    delta-coded columns wrapped around (a RuntimeWarning and wrong times); now stored as
    float seconds and read back as they were."""
    from minitrace import storage
    from minitrace.model import ACTION_DTYPE, TraceColumns
    a = np.zeros(3, ACTION_DTYPE)
    a["kind"] = [K.CODE["init"], K.CODE["compute"], K.CODE["finalize"]]
    a["peer"] = a["tag"] = a["comm"] = a["request"] = -1
    a["t_start"] = [0.0, 1.0, 9.2e12]
    a["t_end"] = [1.0, 2.0, 9.2e12 + 1]
    data = TraceColumns(a, np.array([0, 3]), np.zeros(0, np.int64), {0: np.array([0])}, [],
                     {"volume_unit": "seconds"})
    p = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c",
                        "import pickle, sys; from minitrace import storage; "
                        "storage.write_trace(sys.argv[1], pickle.load(open(sys.argv[2], 'rb')))",
                        str(tmp_path / "o.h5"), str(_pickled(tmp_path, data))],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with storage.h5py.File(tmp_path / "o.h5") as f:
        back = storage.HDF5TraceReader(f, "o.h5").all().actions
    assert np.array_equal(back["t_start"], a["t_start"]) and \
        np.array_equal(back["t_end"], a["t_end"])


def _pickled(tmp_path, obj) -> Path:
    import pickle
    path = tmp_path / "obj.pkl"
    path.write_bytes(pickle.dumps(obj))
    return path


def test_otf2_event_value_beyond_int64(tmp_path):
    """tests/fuzz/corpus: an OTF2 archive whose damaged event holds a value near 2**64."""
    anchor = REPO / "tests" / "fuzz" / "corpus" / "otf2_length_overflow" / "traces.otf2"
    one_line_error(mt("convert", anchor, "--from", "otf2", "-o", tmp_path / "o.h5"),
                   "traces.otf2", "beyond its column's range")


def test_nul_in_names_and_metadata_is_stored(tmp_path):
    """A damaged TAU EDF gave a region name and a producer with a NUL inside: HDF5 strings
    cannot hold one (ValueError, an internal error); stored as U+FFFD."""
    from minitrace import storage
    from minitrace.model import ACTION_DTYPE, TraceColumns
    a = np.zeros(1, ACTION_DTYPE)
    a["kind"] = K.CODE["init"]
    a["peer"] = a["tag"] = a["comm"] = a["request"] = -1
    data = TraceColumns(a, np.array([0, 1]), np.zeros(0, np.int64), {0: np.array([0])},
                     ["MPI\0_Send"], {"volume_unit": "seconds", "producer": "TAU\0 2.3"})
    storage.write_trace(str(tmp_path / "o.h5"), data)
    assert mt("info", tmp_path / "o.h5").returncode == 0
    with storage.h5py.File(tmp_path / "o.h5") as f:
        assert storage.HDF5TraceReader(f, "o.h5").strings() == ["MPI\ufffd_Send"]
        assert f.attrs["producer"] == "TAU\ufffd 2.3"


def test_tau_time_stamp_beyond_int64(tmp_path):
    """A TAU record whose time stamp is 2**63 us overflowed the int64 time arithmetic."""
    from tests.test_convert_tau import REC, osu_like
    trc = osu_like(tmp_path)
    recs = np.fromfile(trc, REC)
    recs["ti"][0] = 2 ** 63           # as the fuzzer found it: the first record
    recs.tofile(trc)
    one_line_error(mt("convert", tmp_path, "--from", "tau", "-o", tmp_path / "o.h5"),
                   "a corrupt record")
