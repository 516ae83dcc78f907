"""The parallel merge (minitrace/parallel/): real ``mpiexec -n 2/3`` jobs merging raw
directories (a recorded C program, generated ones) into OUT.h5 over OUT.parts/, compared with
the serial merge dataset by dataset; pack; the rerun after a worker died or a part could not
be written; the validate report."""
from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import checked, cli
from minitrace import kinds as K
from minitrace import storage
from minitrace.merge import merge_dir
from minitrace.model import TraceBuilder
from minitrace.parallel.parts import differences
from minitrace.parallel.shares import contiguous_shares
from tests.support.synthetic_raw import write_run
from minitrace.tasks.graph import from_tasks
from minitrace.tasks.taskfile import write_tasks
from minitrace.validate import validate
from tests.support.mpiutil import run_mpi, tool
from tests.support.record_util import build, record

pytestmark = pytest.mark.timeout(300)
MERGE = [sys.executable, "-m", "minitrace", "merge"]


def _serial(raw, out) -> subprocess.CompletedProcess:
    """The serial merge, in this process (what ``minitrace merge`` prints and returns)."""
    out_, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_), contextlib.redirect_stderr(err):
        rc = cli.main(["merge", str(raw), "-o", str(out)])
    return subprocess.CompletedProcess([], rc, out_.getvalue(), err.getvalue())


def _parallel(n, raw, out, check=True) -> subprocess.CompletedProcess:
    return run_mpi(n, [*MERGE, str(raw), "-o", str(out)], check=check)


def _parts(out) -> list[str]:
    pdir = os.path.splitext(str(out))[0] + ".parts"
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(pdir) for f in fs
                  if f.startswith("part-"))


@pytest.fixture(scope="module")
def raw33(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw") / "ring33"
    write_run(str(d), 33, 40, seed=3)
    return d


def test_generated_raw_merges_valid(raw33):
    data = merge_dir(str(raw33))
    assert data.nranks == 33 and data.meta["complete"]
    assert validate(data).ok
    a = data.actions[data.rank_slice(5)]
    mpi = a[a["kind"] != K.CODE["compute"]]
    assert K.NAME[int(mpi["kind"][0])] == "init" and K.NAME[int(mpi["kind"][-1])] == "finalize"
    assert (mpi["kind"] == K.CODE["sendrecv"]).sum() == 40
    irecv = mpi[mpi["kind"] == K.CODE["irecv"]]
    assert (irecv["bytes_recv"] == 4096).all() and (irecv["peer"] == 4).all()   # resolved
    assert data.comms[1].tolist() == list(range(16))                           # its group


def test_threads_starting_in_one_nanosecond_keep_each_compute_before_its_call(tmp_path):
    """Threads of a rank interleave by start time; two threads' calls that start in the same
    nanosecond (a CI saw it under Open MPI) must not part a compute from its call."""
    write_run(str(tmp_path / "raw"), 4, 30, threads=3)
    data = merge_dir(str(tmp_path / "raw"))
    assert validate(data).ok
    for r in range(4):
        a = data.actions[data.rank_slice(r)]
        comp = a["kind"] == K.CODE["compute"]
        calls = np.flatnonzero(~comp & (a["kind"] != K.CODE["init"]))
        assert (a["kind"][calls - 1] == K.CODE["compute"]).all()
        assert (a["t_end"][calls - 1] == a["t_start"][calls]).all()
        assert (a["kind"][~comp] == K.CODE["sendrecv"]).sum() == 3 * 30


def test_shares_balance_bytes_not_count():
    mb = 1 << 20
    assert contiguous_shares(np.array([mb] * 6 + [10 * mb] * 2), 2) == [(0, 7), (7, 8)]
    assert contiguous_shares(np.full(9, mb), 3) == [(0, 3), (3, 6), (6, 9)]
    few = contiguous_shares(np.ones(2), 4)                  # more workers than ranks
    assert few[0][0] == 0 and few[-1][1] == 2 and sum(hi - lo for lo, hi in few) == 2


def test_parallel_merge_of_recorded_program_equals_serial(tmp_path):
    exe = build("halo", tmp_path)
    p = record(tmp_path / "rec.h5", 4, [exe, "3"], extra=["--keep-raw"])
    raw = re.search(r"raw files kept in (\S+)", p.stdout).group(1)
    assert _serial(raw, tmp_path / "s.h5").returncode == 0
    par = _parallel(2, raw, tmp_path / "p.h5")
    assert "validation: OK" in par.stdout
    assert len(_parts(tmp_path / "p.h5")) == 2
    assert differences(str(tmp_path / "s.h5"), str(tmp_path / "p.h5")) == []
    with minitrace.open(str(tmp_path / "p.h5")) as t:       # read through the virtual datasets
        assert t.nranks == 4 and len(t.actions(rank=3)) > 0


def test_three_workers_pack_info_and_validate_report(raw33, tmp_path):
    # a problem to report: one rank's file is gone (its messages unmatched)
    raw = tmp_path / "raw"
    raw.mkdir()
    for f in sorted(os.listdir(raw33)):
        if f != "rank-000007.mtr":
            os.link(raw33 / f, raw / f)
    s, par = _serial(raw, tmp_path / "s.h5"), _parallel(3, raw, tmp_path / "p.h5", check=False)
    assert s.returncode == par.returncode == 1             # incomplete: rank 7 missing
    assert differences(str(tmp_path / "s.h5"), str(tmp_path / "p.h5")) == []
    report = [ln for ln in s.stdout.splitlines() if "validation" in ln or ln.startswith("  ")]
    assert report and report == [ln for ln in par.stdout.splitlines()
                                 if "validation" in ln or ln.startswith("  ")]
    info = io.StringIO()
    with contextlib.redirect_stdout(info):
        assert cli.main(["info", str(tmp_path / "p.h5")]) == 0
    assert run_mpi(3, [sys.executable, "-m", "minitrace", "info",
                       str(tmp_path / "p.h5")]).stdout == info.getvalue()
    packed = tmp_path / "one.h5"
    subprocess.run([sys.executable, "-m", "minitrace", "pack", str(tmp_path / "p.h5"), "-o",
                    str(packed)], check=True, capture_output=True, timeout=300)
    assert differences(str(tmp_path / "s.h5"), str(packed)) == []
    os.rename(tmp_path / "p.parts", tmp_path / "gone")     # the parts are needed, the pack not
    assert minitrace.open(str(packed)).nranks == 33
    with pytest.raises(minitrace.MinitraceError, match="part file .* is missing"):
        minitrace.open(str(tmp_path / "p.h5")).data()
    gone = subprocess.run([sys.executable, "-m", "minitrace", "validate", str(tmp_path / "p.h5")],
                          capture_output=True, text=True, timeout=300)
    assert gone.returncode != 0 and "Traceback" not in gone.stderr
    assert re.fullmatch(r".*p\.h5: part file \S+ of this trace is missing .*\n", gone.stderr)


def test_virtual_dataset_reads_only_present_files_beside_it(tmp_path):
    """checked.py takes a virtual dataset (no link) over files in the file's directory tree,
    bounded by what they hold; one reading a file outside, or a missing one, is refused."""
    (tmp_path / "d").mkdir()
    big = np.arange(1 << 21, dtype=np.int64) % 7      # 16 MB: more than 1,100 x v-*.h5
    for src in (tmp_path / "outside.h5", tmp_path / "d" / "inside.h5"):
        with h5py.File(src, "w") as f:
            f.create_dataset("x", data=big, chunks=True, compression="gzip")
    for name in ("inside.h5", "../outside.h5", "absent.h5"):
        v = tmp_path / "d" / f"v-{name.strip('./')}"
        with h5py.File(v, "w") as f:
            layout = h5py.VirtualLayout(shape=big.shape, dtype=big.dtype)
            layout[:] = h5py.VirtualSource(name, "x", shape=big.shape)
            f.create_virtual_dataset("x", layout)
        with h5py.File(v, "r") as f:
            if name == "inside.h5":
                assert (checked.array(f, "x", "trace", str(v)) == big).all()
                continue
            with pytest.raises(minitrace.MinitraceError,
                               match="outside the file's directory" if ".." in name
                               else "part file absent.h5 of this trace is missing"):
                checked.array(f, "x", "trace", str(v))


def test_part_that_cannot_be_written_then_rerun_merges_only_it(raw33, tmp_path):
    out = tmp_path / "p.h5"
    _parallel(2, raw33, out)
    first, second = _parts(out)
    kept = os.stat(first).st_mtime_ns
    os.unlink(out)
    os.unlink(second)
    os.mkdir(second)                                       # squats the part's name
    p = _parallel(2, raw33, out, check=False)
    assert p.returncode == 1 and not out.exists()
    # (Open MPI's launcher adds its own banner after the job's stderr: find minitrace's line)
    err = next((ln for ln in p.stderr.splitlines() if ln.startswith("minitrace: error:")), "")
    assert "writing the parts failed on worker" in err and "ranks 16-32 are not merged" in err
    assert "1 part(s) written are kept" in err
    os.rmdir(second)
    p = _parallel(2, raw33, out)
    assert "resuming: 1 of 2 part(s) already written; merging ranks 16-32" in p.stdout
    assert os.stat(first).st_mtime_ns == kept and os.path.exists(second)
    _serial(raw33, tmp_path / "s.h5")
    assert differences(str(tmp_path / "s.h5"), str(out)) == []
    assert len(os.listdir(raw33)) == 33                    # the raw files are never touched


def test_killed_worker_then_rerun(tmp_path):
    """Worker 1 is killed (SIGKILL) while it writes its part: no OUT.h5 appears, the raw files
    and any part written stay, the job fails, and a rerun completes the same trace."""
    killed = None
    # (a larger run where the watcher missed worker 1's write: a CI run at nice 19 saw the
    # merge of 4 x 4000 iterations end before it looked, session 29)
    for iterations in (4000, 20000, 100000):
        raw, out = tmp_path / f"raw{iterations}" / "raw", tmp_path / f"{iterations}" / "p.h5"
        write_run(str(raw), 4, iterations)
        out.parent.mkdir()
        job = subprocess.Popen([tool("mpiexec"), "-n", "2", *MERGE, str(raw), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pdir = out.parent / "p.parts"
        try:
            while killed is None and job.poll() is None:
                tmps = [f for _, _, fs in os.walk(pdir) for f in fs
                        if re.match(r"\.part-00001-.*\.tmp$", f)]
                if tmps:
                    killed = int(tmps[0].split(".")[3])            # .NAME.h5.PID.TOKEN.tmp
                    os.kill(killed, signal.SIGKILL)
            job.communicate(timeout=300)
        finally:
            if job.poll() is None:
                job.kill()
        if killed:
            break
    assert killed, "the merge ended before worker 1 began writing its part"
    assert job.returncode != 0 and not out.exists()
    assert all(f.endswith("ranks-0-1.h5") for f in _parts(out))   # at most worker 0's
    rerun = _parallel(2, raw, out)
    assert "validation: OK" in rerun.stdout
    assert not [f for _, _, fs in os.walk(pdir) for f in fs if f.endswith(".tmp")]
    _serial(raw, tmp_path / "s.h5")
    assert differences(str(tmp_path / "s.h5"), str(out)) == []
    assert len(os.listdir(raw)) == 4


def test_kind_index_of_codes_above_127(tmp_path):
    """Kind codes above 127 make the kind column int16: the index is built from the kinds
    themselves (it was built from a byte view of the narrowed column: rows beyond the table)."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "allreduce_init", request=1, bytes_sent=8, bytes_recv=8)
        b.add(r, "start", request=1)
        b.add(r, "wait", request=1)
        b.add(r, "finalize")
    storage.write_trace(str(tmp_path / "k.h5"), b.build())
    with minitrace.open(str(tmp_path / "k.h5")) as t:
        assert t.actions(kind="wait")["rank"].tolist() == [0, 1]
        assert t.actions(kind="allreduce_init").index.tolist() == [1, 1]


def _problem_trace(path):
    """A trace with problems of many kinds (values, messages, a receive cycle, collectives,
    vectors, requests, structure), more of some than the report keeps."""
    from tests.support import synthetic
    d = synthetic.loop_trace(5, 12000, True, seed=5)
    a = d.actions
    a["bytes_sent"][::7] = -1
    a["peer"][::301] = 99
    a["t_end"][::57] -= 1
    a["bytes_recv"][5::41] += 3
    storage.write_trace(str(path / "many.h5"), d)
    b = TraceBuilder(4)
    for r in range(4):
        b.add(r, "init")
    b.add(1, "recv", peer=2, tag=0, bytes_recv=8)
    b.add(2, "recv", peer=1, tag=0, bytes_recv=8)
    b.add(1, "send", peer=2, tag=0, bytes_sent=8)
    b.add(2, "send", peer=1, tag=0, bytes_sent=8)
    b.add(3, "send", peer=0, tag=5, bytes_sent=100)
    b.add(0, "recv", peer=3, tag=5, bytes_recv=90)
    for r in range(4):
        b.add(r, "bcast", peer=1 if r == 2 else 0, bytes_sent=8 if r == 0 else 0,
              bytes_recv=0 if r == 0 else 8)
    for r in range(3):
        b.add(r, "allreduce", bytes_sent=8 * (r + 1), bytes_recv=8)
    b.add(2, "irecv", peer=3, tag=1, request=7, flags=K.FLAG_UNRESOLVED)
    b.add(0, "isend", peer=3, tag=2, request=3, bytes_sent=4)
    for r in range(3):
        b.add(r, "finalize")
    storage.write_trace(str(path / "few.h5"), b.build())
    return [path / "many.h5", path / "few.h5"]


def test_parallel_validate_report_is_the_serial_one(tmp_path):
    for f, n in zip(_problem_trace(tmp_path), (3, 2)):
        args = ["validate", "--max", "0", str(f)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(args) == 1
        assert len(out.getvalue().splitlines()) > 8
        par = run_mpi(n, [sys.executable, "-m", "minitrace", *args], check=False)
        assert par.returncode == 1 and par.stdout == out.getvalue(), (f, n)


def _collective_problems(path):
    """Collectives on MPI_COMM_WORLD and a sub-communicator, mismatched at scattered positions
    (a kind, a root, a size, a vector, a rank one call short), and a third communicator clean:
    what the parallel validate's screen by position must pass on to the whole check."""
    b = TraceBuilder(5)
    b.add_comm(1, [1, 3, 4])
    b.add_comm(2, [0, 2])
    for r in range(5):
        b.add(r, "init")
        for i in range(40):
            kind = "barrier" if (i == 17 and r == 3) else "allreduce"
            size = 16 if (i == 22 and r == 4) else 8
            b.add(r, kind, bytes_sent=size, bytes_recv=size)
            root = 1 if (i == 9 and r == 2) else 0
            b.add(r, "bcast", peer=root, bytes_sent=4 if r == 0 else 0,
                  bytes_recv=0 if r == 0 else 4)
        for i in range(7 if r != 4 else 6):
            if r in (1, 3, 4):
                b.add(r, "allgather", comm=1, bytes_sent=8, bytes_recv=24 if i != 3 else 20)
        for i in range(11):
            if r in (0, 2):
                b.add(r, "allreduce", comm=2, bytes_sent=8, bytes_recv=8)
        b.add(r, "allgatherv", bytes_sent=4, bytes_recv=20,
              vector=[4, 4, 4, 4, 4] if r != 1 else [4, 4, 8, 4, 4])
        b.add(r, "finalize")
    storage.write_trace(str(path / "coll.h5"), b.build())
    return path / "coll.h5"


def test_parallel_validate_collectives_screened_by_position(tmp_path):
    """The report of mismatched collectives at scattered positions is the serial one with 2 and
    3 workers (each checks a share of the positions, the communicators with a problem whole)."""
    f = _collective_problems(tmp_path)
    args = ["validate", "--max", "0", str(f)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(args) == 1
    text = out.getvalue()
    assert "collective 34 on communicator 0" in text and "communicator 1" in text, text
    assert "communicator 2" not in text
    for n in (2, 3):
        par = run_mpi(n, [sys.executable, "-m", "minitrace", *args], check=False)
        assert par.returncode == 1 and par.stdout == text, (n, par.stdout, par.stderr)


def test_task_graph_validated_once_under_mpiexec(tmp_path):
    """A task-graph file (no /trace) under `mpiexec -n 2 minitrace validate`: its checks, one
    report (worker 0's), not the parallel trace validation."""
    path = tmp_path / "g.h5"
    write_tasks(str(path), from_tasks(durations={1: 1.0, 2: 2.0, 3: 1.0},
                                      edges=[(1, 3), (2, 3)]))
    p = run_mpi(2, [sys.executable, "-m", "minitrace", "validate", str(path)])
    assert p.stdout.count("task graph sound: 3 tasks") == 1, p.stdout
