"""Tracing never breaks the traced program, at the edges of its process (c_shim/shim_runtime.c):
under an address-space limit (ulimit -v) the chunks' reserved range takes a share of what the
program has left, or none, and says so, so that a program that fits its limit untraced fits it
recorded; under a file-size limit (ulimit -f) the recording stops where its file would pass
it, before the write that would raise SIGXFSZ and end the program; a rank that forks while
another of its threads records has children that run (the shim's locks are taken around
fork, its recording forgotten in the child); a spent chunk's window that cannot be given back
to the reserved range is reused, not kept mapped for good; a call whose record needs more of
the recorder's memory than it can have (a vector, the scratch of a completion, a Fortran twin's
statuses) is made as untraced and recorded without it, marked (rawlayout.VEC_DROPPED), which
the merge counts and says."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitrace.record import traced_command
from tests.support.mpiutil import tool
from tests.support.record_util import PROGRAMS, Ranked, build, record
from tests.support.twins import FAMILIES, missing, shim_cache_env

pytestmark = pytest.mark.timeout(300)


def _idle_vm_mib(program: str, tmp_path: Path) -> int:
    """The largest VmSize of a 2-rank job's ranks after MPI_Init with the shim loaded and not
    recording (its raw directory cannot be made), in MiB."""
    argv, env = traced_command([tool("mpiexec"), "-n", "2", program, "0", "0"],
                               str(tmp_path / "absent" / "raw"), "cputime")
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return max(int(k) for k in re.findall(r"^vm \d+ (\d+)$", p.stdout, re.M)) >> 10


@pytest.mark.parametrize("big, spare, said", [
    (256, 64, "the raw file's chunks reserve 16 MiB of address space, not 256"),
    (96, 40, "no address space reserved for the raw file's chunks")])
def test_program_fitting_its_address_space_limit_fits_it_recorded(tmp_path, big, spare, said):
    # a limit that leaves `spare` MiB beyond the program's own mapping: the old 256 MiB
    # reservation took the room of its buffer (malloc failed); now a 16th of what is left
    # (4 chunks), or below 4 chunks none
    program = build("as_limit", tmp_path)
    limit = _idle_vm_mib(program, tmp_path) + big + spare
    p = record(tmp_path / "lim.h5", 2, [program, str(limit), str(big)], volume="cputime")
    assert sorted(re.findall(r"^big (\d) (\w+)$", p.stdout, re.M)) == [("0", "ok"), ("1", "ok")]
    assert "validation: OK" in p.stdout
    for rank in range(2):
        assert re.search(rf"minitrace: rank {rank}: address-space limit \(ulimit -v {limit << 10} "
                         rf"KiB, \d+ KiB mapped\): {said}", p.stderr), p.stderr
    tr = Ranked(tmp_path / "lim.h5")
    assert all(tr.names(r) == ["init"] + ["allreduce"] * 3 + ["finalize"] for r in range(2))


def test_no_limit_no_word(tmp_path):
    program = build("as_limit", tmp_path)
    p = record(tmp_path / "free.h5", 2, [program, "0", "64"])
    assert "address space" not in p.stderr


def test_forking_while_another_thread_records(tmp_path):
    # the recording thread pauses and resumes (the control's lock) in a loop: before the fork
    # handlers took it, about 1 child in 5 was forked while it was held and hung in its pause
    n = 30
    program = build("fork_threads", tmp_path)
    p = record(tmp_path / "fork.h5", 2, [program, str(n)], timeout=240)
    assert sorted(re.findall(r"^children (\d) (\d+) (\d+)$", p.stdout, re.M)) == \
        [("0", str(n), "0"), ("1", str(n), "0")]
    assert sorted(re.findall(r"^shell (\d) (\w+)$", p.stdout, re.M)) == [("0", "ok"), ("1", "ok")]
    assert "validation: OK" in p.stdout
    tr = Ranked(tmp_path / "fork.h5")
    for r in range(2):
        names = tr.names(r, skip=())
        assert names[0] == "init" and names[-2:] == ["barrier", "finalize"]
        # the children's calls are not in their parent's trace: only the recording thread's
        # (a comm_size before each pause, the one while paused not recorded)
        assert set(names[1:-2]) == {"comm_size", "pause", "resume"}
        assert names.count("comm_size") == names.count("pause") == names.count("resume")


def test_window_not_given_back_is_reused(tmp_path):
    # mmap_fail.so makes every re-reservation of a spent window fail: each one stayed mapped
    # (80 of the file's 84 MiB of chunks at the end); now its slot is reused
    program = build("chunk_maps", tmp_path)
    fail = tmp_path / "mmap_fail.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(fail),
                    str(PROGRAMS / "mmap_fail.c")], check=True, timeout=300)
    calls = 1_000_000       # 80 bytes a record, 52428 a 4 MiB chunk: 20 chunks
    p = record(tmp_path / "maps.h5", 1, [program, str(calls)], env={"LD_PRELOAD": str(fail)})
    assert "validation: OK" in p.stdout
    mapped = int(re.search(r"^mapped 0 (\d+)$", p.stdout, re.M).group(1)) << 10
    # the header, the current chunk, the 2 ready and the spent not yet given back (12 MiB
    # here, more when the helper thread falls behind under load): not half of them
    assert mapped < calls * 80 // 2
    assert len(Ranked(tmp_path / "maps.h5").mpi(0, "comm_size")) == calls


def test_file_size_limit_stops_the_recording_not_the_program(tmp_path):
    # 10 MiB: the header and 2 chunks of 4 MiB; growing the file past it raised SIGXFSZ,
    # which killed every rank (status 25) at its third chunk
    program = build("file_limit", tmp_path)
    calls = 200_000         # a record of 80 bytes each: 4 chunks
    p = record(tmp_path / "fsize.h5", 2, [program, "10", str(calls)], volume="cputime",
               expect_rc=1)
    assert sorted(re.findall(r"^done (\d)$", p.stdout, re.M)) == ["0", "1"]
    assert "exited with status" not in p.stderr
    for rank in range(2):
        assert (f"minitrace: rank {rank}: tracing disabled: cannot grow the raw trace file: "
                f"File too large") in p.stderr
    assert "INCOMPLETE: recording stopped early" in p.stdout
    tr = Ranked(tmp_path / "fsize.h5")
    assert all(0 < len(tr.mpi(r, "comm_size")) < calls for r in range(2))


def _said_once(stderr: str, rank: int, what: str) -> None:
    """Rank ``rank`` said once that ``what`` could not be had, and nothing else of the kind."""
    said = re.findall(rf"^minitrace: rank {rank}: (.*) of \d+ \w+: such calls are recorded "
                      rf"without their vectors, marked \(said once\)$", stderr, re.M)
    assert said == [what], stderr


def test_calls_whose_buffers_cannot_be_had_are_made_and_marked(tmp_path):
    # buffers of at most 4 KiB (MINITRACE_SCRATCH_MAX): the waitall of 2000 requests needs
    # 152 KB of scratch, the Cartesian communicator of 300 dimensions a vector of 600 values;
    # the waitalls of 2 and the alltoallv fit.  Before, a failed scratch aborted the rank and a
    # failed vector was written past a sink of 2 values.
    program = build("vec_drop", tmp_path)
    p = record(tmp_path / "drop.h5", 2, [program, "1000", "300"],
               env={"MINITRACE_SCRATCH_MAX": "4096"}, expect_rc=1)
    assert sorted(re.findall(r"^sum (\d) (\d+)$", p.stdout, re.M)) == \
        [("0", "499500"), ("1", "499500")]
    assert sorted(re.findall(r"^a2a (\d) (\d) (\d)$", p.stdout, re.M)) == \
        [("0", "0", "1"), ("1", "0", "1")]
    assert sorted(re.findall(r"^done (\d)$", p.stdout, re.M)) == ["0", "1"]
    for rank in range(2):
        _said_once(p.stderr, rank, "no memory for a call's scratch")
        assert (f"minitrace: warning: rank-00000{rank}.mtr: 2 record(s) without their vector "
                f"(1 waitall, 1 cart_create)") in p.stderr
    # the large waitall names no request: its receives are unresolved, its sends unmatched
    assert "INCOMPLETE: the recorder had no room for some calls' vectors" in p.stdout
    assert "unresolved-recv" in p.stdout
    tr = Ranked(tmp_path / "drop.h5")
    assert not tr.meta["complete"] and len(tr.meta["raw_warnings"]) == 2
    for rank in range(2):
        assert [len(tr.vector(w)) for w in tr.mpi(rank, "waitall")] == [2, 0, 2]
        assert [tr.vector(a) for a in tr.mpi(rank, "alltoallv")] == [[4, 4, 4, 4]]
        assert [tr.vector(c) for c in tr.mpi(rank, "cart_create")] == [[]]
        assert len(tr.mpi(rank, "irecv")) == len(tr.mpi(rank, "isend")) == 1002


def test_waitall_past_the_address_space_limit(tmp_path):
    # 4 million requests (MPI_REQUEST_NULL but an irecv and an isend) under a limit 96 MiB
    # above the idle job's mapping: 16 MB for the program's array, 304 MB of the recorder's
    # scratch, which the old shim's abort() turned into a SIGABRT of every rank
    program = build("as_limit", tmp_path)
    limit = _idle_vm_mib(program, tmp_path) + 96
    p = record(tmp_path / "wall.h5", 2, [program, str(limit), "0", str(4_000_000)],
               volume="cputime", expect_rc=1)
    assert sorted(re.findall(r"^waitall (\d) (\d)$", p.stdout, re.M)) == [("0", "1"), ("1", "0")]
    for rank in range(2):
        _said_once(p.stderr, rank, "no memory for a call's scratch")
        assert (f"minitrace: warning: rank-00000{rank}.mtr: 1 record(s) without their vector "
                f"(1 waitall)") in p.stderr
    tr = Ranked(tmp_path / "wall.h5")
    for rank in range(2):
        assert tr.names(rank) == ["init", "irecv", "isend", "waitall"] + ["allreduce"] * 3 + \
            ["finalize"]
        assert tr.vector(tr.mpi(rank, "waitall")[0]) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_fortran_twins_without_any_buffer(family, tmp_path, tmp_path_factory):
    # MINITRACE_SCRATCH_MAX=0: no buffer of the recorder can grow, the Fortran twins' own
    # (statuses the caller ignores, Open MPI's request copies) included: the completions are
    # made with the program's own arguments, every rank runs to its end
    why = missing(family)
    if why:
        pytest.skip(why)
    exe = tmp_path / "fifo_waits_f"
    subprocess.run([f"mpif90.{family}", "-O1", "-o", str(exe),
                    str(PROGRAMS / "fifo_waits_f.F90")], check=True, capture_output=True,
                   text=True, timeout=300, cwd=tmp_path)
    p = subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", str(tmp_path / "f.h5"),
                        "--", f"mpiexec.{family}", *FAMILIES[family], "-n", "2", str(exe), "20"],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, **shim_cache_env(tmp_path_factory),
                            "MINITRACE_SCRATCH_MAX": "0"})
    assert p.returncode == 1, p.stderr           # the trace is incomplete, the program not
    assert "exited with status" not in p.stderr and "not every rank" not in p.stdout
    for rank in range(2):
        assert f"minitrace: rank {rank}: no memory for " in p.stderr
        assert f"rank-00000{rank}.mtr: " in p.stderr
    tr = Ranked(tmp_path / "f.h5")
    for rank in range(2):
        assert tr.names(rank)[-1] == "finalize"
        waits = tr.mpi(rank, "waitall")
        assert len(waits) and all(tr.vector(w) == [] for w in waits)
