"""A merge that cannot fit in the machine's memory is refused before it starts (a polling
program's 13 GB of raw files grew a merge to 23 GB until the kernel killed it), from the
records its raw files' chunk headers count."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np

import pytest

import minitrace
from minitrace.errors import MinitraceError
from minitrace import rawlayout as L
from minitrace.merge import (BYTES_PER_ACTION, CHUNK_DTYPE, RAW_DTYPE, RawRun, available_memory,
                             check_memory)
from tests.support.mpiutil import run_mpi
from tests.support.record_util import record


@pytest.fixture(scope="module")
def raw_run(programs, tmp_path_factory):
    """A real 2-rank recording of the ring program, its raw files kept."""
    d = tmp_path_factory.mktemp("mem")
    p = record(d / "r.h5", 2, [programs("ring")], extra=["--keep-raw"])
    assert "validation: OK" in p.stdout
    raw = [x for x in os.listdir(d) if x.startswith("r.h5.raw-")]
    assert len(raw) == 1
    return d / "r.h5", str(d / raw[0])


def test_records_counted_from_the_chunk_headers_bound_the_actions(raw_run):
    """(A program without long vectors: a vector's continuation records are records too.)"""
    out, raw = raw_run
    records = sum(r.records() for r in RawRun(raw).by_rank.values())
    with minitrace.open(out) as t:
        n = len(t.data().actions)
    assert 0 < records <= n <= 2 * records


def test_a_merge_beyond_the_memory_is_refused_naming_the_directory(raw_run):
    _, raw = raw_run
    run = RawRun(raw)
    records = sum(r.records() for r in run.by_rank.values())
    low = records * BYTES_PER_ACTION[0]
    with pytest.raises(MinitraceError, match="merging needs at least .* GiB of memory") as e:
        check_memory(records, raw, low - 1)
    assert raw in str(e.value)
    warned = check_memory(records, raw, low + 1)
    assert warned.startswith(raw) and "may need up to" in warned
    assert check_memory(records, raw, 2 * records * BYTES_PER_ACTION[1] + 1) is None
    assert check_memory(records, raw, None) is None


def test_available_memory_read_from_the_kernel():
    got = available_memory()
    assert got is None or got > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_merge_of_raw_files_beyond_the_memory_refused_in_one_line(raw_run, tmp_path, workers):
    """``minitrace merge`` of a raw directory whose rank file grew (sparse here: only its
    chunk headers written, each chunk full) past what this machine's memory can merge: one
    line naming the directory, exit 1, no output, the raw files left as they were.  The
    parallel merge (``mpiexec -n 2``) checks what its workers on one node hold together."""
    avail = available_memory()
    if avail is None:
        pytest.skip("no MemAvailable in /proc/meminfo")
    _, raw = raw_run
    d = tmp_path / "raw"
    shutil.copytree(raw, d)
    f = sorted(d.glob("rank-*.mtr"))[0]
    cb, rec = L.CHUNK_BYTES, RAW_DTYPE.itemsize
    full = cb // rec - 1
    chunks = 2 * avail // (BYTES_PER_ACTION[0] * full) + 2     # (twice: memory comes and goes)
    first = -(-(f.stat().st_size - L.HEADER_BYTES) // cb)      # (after the chunks recorded)
    head = np.zeros(1, CHUNK_DTYPE)
    head["count"] = full
    size = L.HEADER_BYTES + (first + chunks) * cb
    with open(f, "r+b") as fh:
        fh.truncate(size)
        for c in range(first, first + chunks):
            fh.seek(L.HEADER_BYTES + c * cb)
            fh.write(head.tobytes())
    argv = [sys.executable, "-m", "minitrace", "merge", str(d), "-o", str(tmp_path / "out.h5")]
    if workers == 1:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    else:
        p = run_mpi(workers, argv, check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    err = [x for x in p.stderr.strip().splitlines() if x.startswith("minitrace")]
    assert len(err) == 1 and str(d) in err[0] and "merging needs at least" in err[0], p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "out.h5").exists()
    assert f.exists() and f.stat().st_size == size
