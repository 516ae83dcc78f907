"""Nothing lost (issue 13): the recorder's failure paths keep the raw data and say how to finish
the merge; outputs are checked before any work; temporary files go on every exit path, SIGTERM
included; damaged raw directories merge into files every reader opens; concurrent writers of
one file are serialized.  Real mpiexec runs, real signals, real processes."""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from tests.support.mpiutil import tool
from tests.support.record_util import first_chunk

pytestmark = pytest.mark.timeout(300)
ROUNDS = 40
TI = Path(__file__).resolve().parent / "data" / "ti" / "p2p.txt"


def mt(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=240, **kw)


@pytest.fixture(scope="module")
def ring(programs) -> str:
    return programs("ring")


@pytest.fixture(scope="module")
def raw(tmp_path_factory, ring) -> Path:
    """The raw directory of a 3-rank ring (kept with --keep-raw)."""
    d = tmp_path_factory.mktemp("raw")
    p = mt("record", "--keep-raw", "-o", d / "ring.h5", "--", tool("mpiexec"), "-n", 3, ring,
           ROUNDS)
    assert p.returncode == 0, p.stderr
    (rawdir,) = glob.glob(str(d / "ring.h5.raw-*"))
    return Path(rawdir)


def _copy(raw: Path, dest: Path) -> Path:
    shutil.copytree(raw, dest)
    return dest


def _readable(path: Path):
    """Every reader opens the file: the whole trace, its summary, its validation."""
    with minitrace.open(str(path)) as t:
        data = t.data()
        t.summary()
    assert mt("validate", path).returncode in (0, 1)
    assert "internal error" not in mt("info", path).stderr
    return data


def _no_temporaries(d: Path) -> None:
    assert not [f for f in os.listdir(d) if f.endswith(".tmp")], os.listdir(d)


# -- damaged raw directories --------------------------------------------------------------

@pytest.mark.parametrize("damage", ["deleted", "header-only", "empty"])
def test_last_rank_without_actions_merges_readable(raw, tmp_path, damage):
    d = _copy(raw, tmp_path / "raw")
    last = d / "rank-000002.mtr"
    if damage == "deleted":
        last.unlink()
    else:
        os.truncate(last, 4096 if damage == "header-only" else 0)
    p = mt("merge", d, "-o", tmp_path / "out.h5")
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr
    if damage == "empty":       # killed inside MPI_Init: zero bytes is not a raw file
        assert p.returncode == 1 and p.stderr.count("\n") == 1
        return
    assert p.returncode == 1 and "INCOMPLETE" in p.stdout      # incomplete, not failed
    data = _readable(tmp_path / "out.h5")
    assert data.nranks == 3 and len(data.actions[data.rank_slice(2)]) == 0
    assert len(data.actions[data.rank_slice(0)]) > 2 * ROUNDS


def test_ti_list_whose_last_file_is_comments_only_reads_back(tmp_path):
    (tmp_path / "a.txt").write_text("0 init\n0 send 0 8\n0 recv 0 8\n0 finalize\n")
    (tmp_path / "b.txt").write_text("# nothing recorded\n")
    (tmp_path / "list").write_text("a.txt\nb.txt\n")
    p = mt("import", tmp_path / "list", "-o", tmp_path / "l.h5")
    assert p.returncode == 0, p.stderr
    data = _readable(tmp_path / "l.h5")
    assert data.nranks == 2 and len(data.actions[data.rank_slice(1)]) == 0
    with minitrace.open(str(tmp_path / "l.h5")) as t:
        assert len(t.actions(0)) == 4 and len(t.actions(1)) == 0


def test_duplicated_raw_file_is_one_line_error(raw, tmp_path):
    d = _copy(raw, tmp_path / "raw")
    shutil.copy(d / "rank-000001.mtr", d / "rank-000002.mtr")
    p = mt("merge", d, "-o", tmp_path / "out.h5")
    assert p.returncode == 1 and p.stderr.count("\n") == 1
    assert "two raw files of rank 1" in p.stderr
    assert not (tmp_path / "out.h5").exists()


def test_raw_file_cut_inside_a_chunk_keeps_whole_records(raw, tmp_path):
    whole = mt("merge", raw, "-o", tmp_path / "whole.h5")
    assert whole.returncode == 0, whole.stderr
    d = _copy(raw, tmp_path / "raw")
    first = first_chunk(d / "rank-000001.mtr")     # a 40-round ring uses one chunk per rank
    cut = first + 80 * 60 + 40         # inside record 60 of the first chunk (after its header)
    os.truncate(d / "rank-000001.mtr", cut)
    p = mt("merge", d, "-o", tmp_path / "cut.h5")
    assert "is cut short" in p.stderr and "record(s) of its last chunk lost" in p.stderr
    assert "INCOMPLETE: a raw file is damaged" in p.stdout
    full = _readable(tmp_path / "whole.h5")
    part = _readable(tmp_path / "cut.h5")
    a, b = full.actions[full.rank_slice(1)], part.actions[part.rank_slice(1)]
    # every whole record is kept (59; a ring has no vectors; two of them are internal
    # records): the cut rank's MPI actions are the first ones of the whole trace
    mpi_a, mpi_b = (x[x["kind"] != K.CODE["compute"]] for x in (a, b))
    assert len(mpi_b) == 57
    assert np.array_equal(mpi_a[:57][["kind", "peer", "tag", "bytes_sent", "bytes_recv"]],
                          mpi_b[["kind", "peer", "tag", "bytes_sent", "bytes_recv"]])
    count = int(np.fromfile(raw / "rank-000001.mtr", np.uint64, 1, offset=first)[0])
    dropped = int(p.stderr.split("is cut short: ")[1].split()[0])
    assert dropped == count - 59


def _mpi_rows(path: Path, rank: int) -> np.ndarray:
    data = _readable(path)
    a = data.actions[data.rank_slice(rank)]
    return a[a["kind"] != K.CODE["compute"]][["kind", "peer", "tag", "bytes_sent",
                                               "bytes_recv"]]


def test_flipped_bit_in_a_raw_record_drops_that_record_only(raw, tmp_path):
    assert mt("merge", raw, "-o", tmp_path / "whole.h5").returncode == 0
    d = _copy(raw, tmp_path / "raw")
    f = d / "rank-000001.mtr"
    at = first_chunk(f) + 80 * 30 + 44    # record 30's bytes_sent (offset 40), bit 5 of byte 4
    data = bytearray(f.read_bytes())
    data[at] ^= 0x20
    f.write_bytes(bytes(data))
    p = mt("merge", d, "-o", tmp_path / "flip.h5")
    assert "rank-000001.mtr: 1 record(s) fail their check word (damaged) and were dropped" \
        in p.stderr, p.stderr
    assert "INCOMPLETE: a raw file is damaged" in p.stdout
    whole, flip = _mpi_rows(tmp_path / "whole.h5", 1), _mpi_rows(tmp_path / "flip.h5", 1)
    # one action is gone (record 30: some earlier records are internal), no other changed
    assert len(flip) == len(whole) - 1
    gone = int(np.flatnonzero(whole[:-1] != flip)[0])
    assert 20 <= gone <= 30
    assert np.array_equal(np.delete(whole, gone), flip)


def test_damaged_chunk_header_is_reported_not_misfiled(raw, tmp_path):
    d = _copy(raw, tmp_path / "raw")
    f = d / "rank-000000.mtr"
    at = first_chunk(f) + 12               # the first chunk's seq
    data = bytearray(f.read_bytes())
    data[at] ^= 0x01
    f.write_bytes(bytes(data))
    p = mt("merge", d, "-o", tmp_path / "out.h5")
    assert "rank-000000.mtr: 1 chunk header(s) fail their check word (damaged)" in p.stderr, \
        p.stderr
    assert "INCOMPLETE" in p.stdout
    _readable(tmp_path / "out.h5")


def test_raw_files_of_version_3_still_merge(raw, tmp_path):
    """Raw directories kept by an older minitrace (no check words) are not refused."""
    d = _copy(raw, tmp_path / "raw")
    for f in d.glob("rank-*.mtr"):
        data = bytearray(f.read_bytes())
        data[8:12] = (3).to_bytes(4, "little")
        f.write_bytes(bytes(data))
    p = mt("merge", d, "-o", tmp_path / "v3.h5")
    assert p.returncode == 0 and "check word" not in p.stderr, p.stderr
    assert mt("merge", raw, "-o", tmp_path / "v4.h5").returncode == 0
    assert np.array_equal(_mpi_rows(tmp_path / "v3.h5", 2), _mpi_rows(tmp_path / "v4.h5", 2))


# -- outputs checked before any work --------------------------------------------------------

def test_existing_directory_as_output_refused_up_front(raw, ring, tmp_path):
    out = tmp_path / "out.h5"
    out.mkdir()
    trace = tmp_path / "t.h5"
    assert mt("import", TI, "-o", trace).returncode == 0
    runs = {
        "merge": mt("merge", raw, "-o", out),
        "import": mt("import", TI, "-o", out),
        "convert": mt("convert", TI, "-o", out),
        "export": mt("export", trace, "--format", "csv", "-o", out),
        "record": mt("record", "-o", out, "--", tool("mpiexec"), "-n", 2, ring, 2),
    }
    for name, p in runs.items():
        assert p.returncode == 1, name
        assert p.stderr == f"minitrace: error: {out}: is a directory: name a file to write\n", \
            (name, p.stderr)
        assert "rank 0 done" not in p.stdout, "record ran the program"
    _no_temporaries(tmp_path)
    assert not glob.glob(str(tmp_path / "out.h5.raw-*"))
    assert os.listdir(out) == []


# -- record never loses the raw data ----------------------------------------------------------

def test_record_keeps_raw_when_merge_fails(ring, tmp_path):
    out = tmp_path / "ring.h5"
    # the output becomes a directory while the program runs: the merge cannot write it
    script = f"{tool('mpiexec')} -n 3 {ring} {ROUNDS} && mkdir {out}"
    p = mt("record", "-o", out, "--", "sh", "-c", script)
    assert p.returncode == 1
    assert "the merge did not complete; the raw data is kept in" in p.stderr
    (rawdir,) = glob.glob(str(tmp_path / "ring.h5.raw-*"))
    assert f"finish with: minitrace merge {rawdir} -o {out}" in p.stderr
    out.rmdir()
    done = mt("merge", rawdir, "-o", out)
    assert done.returncode == 0, done.stderr
    data = _readable(out)
    assert (data.actions["kind"] == K.CODE["send"]).sum() == 3 * ROUNDS
    _no_temporaries(tmp_path)


@pytest.mark.parametrize("sig,rc,word", [(signal.SIGINT, 130, "interrupted"),
                                         (signal.SIGTERM, 143, "terminated")])
def test_record_interrupted_says_where_the_raw_data_is(ring, tmp_path, sig, rc, word):
    out = tmp_path / "ring.h5"
    # the signal comes once mpiexec has returned (not while it may still be finishing)
    script = (f"{tool('mpiexec')} -n 2 {ring} {ROUNDS} > {tmp_path}/ran && "
              f"touch {tmp_path}/returned && exec sleep 120")
    # as a foreground command gets Ctrl-C: a job started in the background by a shell without
    # job control (a CI runner) inherits SIGINT ignored, which Python then leaves ignored
    proc = subprocess.Popen([sys.executable, "-m", "minitrace", "record", "-o", str(out), "--",
                             "sh", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not (tmp_path / "returned").exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert (tmp_path / "ran").read_text().count("done") == 2
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == rc, err
    (rawdir,) = glob.glob(str(tmp_path / "ring.h5.raw-*"))
    assert f"its raw data is kept in {rawdir}: finish with: minitrace merge {rawdir}" in err
    assert err.endswith(f"minitrace: {word}\n")
    assert mt("merge", rawdir, "-o", out).returncode == 0
    data = _readable(out)
    assert (data.actions["kind"] == K.CODE["recv"]).sum() == 2 * ROUNDS


def test_sigterm_during_a_write_leaves_no_temporary(tmp_path):
    """SIGTERM delivered while the HDF5 file is being written (from inside the writer, so
    that it lands there every time): the temporary file is removed, exit status 143."""
    script = f"""
import os, signal, sys
from minitrace import cli, storage
orig = storage.dataset
def dataset(*a, **k):
    os.kill(os.getpid(), signal.SIGTERM)
    return orig(*a, **k)
storage.dataset = dataset
sys.exit(cli.main(["import", {str(TI)!r}, "-o", {str(tmp_path / "t.h5")!r}]))
"""
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 143 and p.stderr == "minitrace: terminated\n", p.stderr
    assert os.listdir(tmp_path) == []


# -- concurrent writers ---------------------------------------------------------------------

def test_concurrent_bench_writers_lose_nothing(tmp_path):
    out = tmp_path / "bench.h5"
    script = """
import sys
import numpy as np
from minitrace.storage import write_bench
w = int(sys.argv[1])
for i in range(15):
    write_bench(sys.argv[2], f"suite_{w}_{i}", {"x": np.arange(1000) * w})
"""
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w), str(out)])
             for w in range(4)]
    assert all(p.wait(timeout=240) == 0 for p in procs)
    with minitrace.open(str(out)) as t:
        suites = set(t.suites)
    assert suites == {f"suite_{w}_{i}" for w in range(4) for i in range(15)}
    _no_temporaries(tmp_path)


# -- validate: input that parses but is wrong ---------------------------------------------------

def _validate_ti(tmp_path, body: str) -> subprocess.CompletedProcess:
    t = tmp_path / "t.txt"
    t.write_text(body)
    imp = mt("import", t, "-o", tmp_path / "t.h5")
    assert imp.returncode == 0, imp.stderr
    return mt("validate", tmp_path / "t.h5")


def test_validate_negative_values(tmp_path):
    p = _validate_ti(tmp_path, "0 init\n0 compute -1\n0 sleep -5\n0 bcast -8\n0 finalize\n")
    assert p.returncode == 1 and "3 negative-value" in p.stdout, p.stdout
    assert "compute with volume -1" in p.stdout and "bcast with bytes sent -8" in p.stdout


def test_validate_head_to_head_blocking_receives(tmp_path):
    p = _validate_ti(tmp_path, "0 init\n1 init\n0 recv 1 100\n1 recv 0 100\n0 send 1 100\n"
                               "1 send 0 100\n0 finalize\n1 finalize\n")
    assert p.returncode == 1 and "1 deadlock" in p.stdout, p.stdout
    assert "rank 0 action 1: deadlock: blocking receive from 1 while rank 1 is blocked" in p.stdout
    ok = _validate_ti(tmp_path, "0 init\n1 init\n0 recv 1 100\n1 send 0 100\n0 send 1 100\n"
                                "1 recv 0 100\n0 finalize\n1 finalize\n")
    assert ok.returncode == 0, ok.stdout


def test_validate_blocking_self_send_above_eager(tmp_path):
    p = _validate_ti(tmp_path, "0 init\n0 send 0 100000000\n0 recv 0 100000000\n0 finalize\n")
    assert p.returncode == 1 and "1 deadlock" in p.stdout and "to itself" in p.stdout, p.stdout
    small = _validate_ti(tmp_path, "0 init\n0 send 0 1000\n0 recv 0 1000\n0 finalize\n")
    assert small.returncode == 0, small.stdout
    # SimGrid's threshold: 65,536 B waits for its receive (its replay deadlocks), 65,535 not
    for size, rc in ((65535, 0), (65536, 1)):
        at = _validate_ti(tmp_path, f"0 init\n0 send 0 {size}\n0 recv 0 {size}\n0 finalize\n")
        assert at.returncode == rc, at.stdout
    posted = _validate_ti(tmp_path, "0 init\n0 irecv 0 100000000\n0 send 0 100000000\n0 wait\n"
                                    "0 finalize\n")
    assert posted.returncode == 0, posted.stdout


def test_validate_zero_ranks_and_far_peers(tmp_path):
    from minitrace import storage
    from minitrace.model import ACTION_DTYPE, TraceColumns
    empty = TraceColumns(np.zeros(0, ACTION_DTYPE), np.zeros(1, np.int64), np.zeros(0, np.int64),
                      {}, [], {"volume_unit": "seconds"})
    storage.write_trace(str(tmp_path / "empty.h5"), empty)
    p = mt("validate", tmp_path / "empty.h5")
    assert p.returncode == 1 and "no-ranks" in p.stdout, p.stdout
    with minitrace.open(str(tmp_path / "empty.h5")) as t:
        pass
    p = _validate_ti(tmp_path, "0 init\n1 init\n0 send 1 8\n1 recv 0 8\n0 finalize\n1 finalize\n")
    assert p.returncode == 0
    import h5py
    with h5py.File(tmp_path / "t.h5", "r+") as h:
        peer = h["trace/actions/peer"]
        v = peer[...].astype(np.int32)
        row = int(np.flatnonzero(h["trace/actions/kind"][...] == K.CODE["send"])[0])
        del h["trace/actions/peer"]
        v[row] = 2 ** 31 - 1
        h["trace/actions"].create_dataset("peer", data=v)
    p = mt("validate", tmp_path / "t.h5")
    assert p.returncode == 1 and "bad-peer" in p.stdout and "2147483647" in p.stdout, p.stdout


# -- exports and conversions: whole or not at all ---------------------------------------------

LIMIT = 100_000     # bytes any one file may grow to in the "full disk" children below


@pytest.fixture(scope="module")
def loop_h5(tmp_path_factory) -> Path:
    """A 2-rank, 20,000-action timed trace: every export of it is well over LIMIT."""
    from minitrace.storage import write_trace
    from tests.support.synthetic import loop_trace
    path = tmp_path_factory.mktemp("in") / "loop.h5"
    write_trace(str(path), loop_trace(2, 20_000, True))
    return path


def _cli_child(args: list, prelude: str = "") -> subprocess.CompletedProcess:
    """``minitrace ARGS`` in a child that runs ``prelude`` first."""
    script = f"import sys\n{prelude}\nfrom minitrace import cli\nsys.exit(cli.main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=240)


#: A full disk, without root: RLIMIT_FSIZE makes every file stop growing at LIMIT (EFBIG).
_FULL_DISK = f"""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
"""


def _hidden(d: Path) -> list[str]:
    return [f for f in os.listdir(d) if f.startswith(".")]


@pytest.mark.parametrize("fmt", ["csv", "perfetto", "ti"])
@pytest.mark.parametrize("before", [None, "the previous export\n"])
def test_disk_full_during_export_leaves_no_partial_file(loop_h5, tmp_path, fmt, before):
    out = tmp_path / f"out.{fmt}"
    if before is not None:
        out.write_text(before)
    extra = ["--layout", "single"] if fmt == "ti" else []
    p = _cli_child(["export", str(loop_h5), "--format", fmt, "-o", str(out), *extra],
                   _FULL_DISK)
    assert p.returncode == 1
    assert p.stderr == f"minitrace: error: {out}: cannot write: File too large\n", p.stderr
    if before is None:
        assert not out.exists()
    else:
        assert out.read_text() == before
    assert _hidden(tmp_path) == []


def test_disk_full_during_otf2_conversion_leaves_no_directory(loop_h5, tmp_path):
    """The OTF2 library reports this failure only on stderr (no exception): the conversion used
    to exit 0 with a partial archive."""
    out = tmp_path / "otf2"
    p = _cli_child(["convert", str(loop_h5), "--to", "otf2", "-o", str(out)], _FULL_DISK)
    assert p.returncode == 1
    assert p.stderr == (f"minitrace: error: {out}: cannot write the OTF2 archive: File is too "
                        "large\n"), p.stderr
    assert os.listdir(tmp_path) == []


@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs: a real full disk (ENOSPC).  Needs the right to mount (root)."""
    d = tmp_path / "small"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=True)


def test_really_full_disk_during_otf2_conversion(loop_h5, small_fs):
    """ENOSPC makes the OTF2 library raise too (it used to be an internal error, the library's
    messages and a traceback from the bindings' writer when it was garbage collected)."""
    out = small_fs / "otf2"
    p = mt("convert", loop_h5, "--to", "otf2", "-o", out)
    assert p.returncode == 1
    assert p.stderr == (f"minitrace: error: {out}: cannot write the OTF2 archive: No space left "
                        "on device\n"), p.stderr
    assert os.listdir(small_fs) == []
    csv = mt("export", loop_h5, "--format", "csv", "-o", small_fs / "out.csv")
    assert csv.stderr == (f"minitrace: error: {small_fs / 'out.csv'}: cannot write: No space "
                          "left on device\n"), csv.stderr
    assert os.listdir(small_fs) == []


def test_sigterm_during_csv_export_keeps_the_previous_file(loop_h5, tmp_path):
    """SIGTERM delivered once half the rows are written (from inside the writer, so that it
    lands there every time): the previous export is intact, no temporary is left."""
    out = tmp_path / "out.csv"
    out.write_text("the previous export\n")
    kill_half_way = """
import os, signal
import pandas as pd
orig = pd.DataFrame.to_csv
def to_csv(self, buf, **kw):
    orig(self.iloc[:len(self) // 2], buf, **kw)
    os.kill(os.getpid(), signal.SIGTERM)
    orig(self.iloc[len(self) // 2:], buf, **kw)
pd.DataFrame.to_csv = to_csv
"""
    p = _cli_child(["export", str(loop_h5), "--format", "csv", "-o", str(out)], kill_half_way)
    assert p.returncode == 143 and p.stderr == "minitrace: terminated\n", p.stderr
    assert out.read_text() == "the previous export\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_sigterm_during_otf2_conversion_leaves_no_directory(loop_h5, tmp_path):
    out = tmp_path / "otf2"
    kill_at_rank_1 = """
import os, signal
from minitrace.converters import otf2
orig = otf2._write_rank
def write_rank(otf2_, w, data, rank, *a):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    return orig(otf2_, w, data, rank, *a)
otf2._write_rank = write_rank
"""
    p = _cli_child(["convert", str(loop_h5), "--to", "otf2", "-o", str(out)], kill_at_rank_1)
    assert p.returncode == 143 and p.stderr == "minitrace: terminated\n", p.stderr
    assert os.listdir(tmp_path) == []
