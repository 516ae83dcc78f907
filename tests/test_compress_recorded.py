"""Compressed traces of recorded programs (issue 23): a stencil, CG, an AMR-like irregular
exchange and a master-worker with wildcards, recorded under real MPI, round-trip bit for bit
through compress and expand; `record --compress` writes the compressed form and says what the
plain one would have cost; the loops found are the programs' own."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minitrace
from tests.support.mpiutil import mpicc
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)
APPS = Path(__file__).resolve().parents[1] / "benchmarks" / "apps"


def mt(*args) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def _program(name: str, tmp: Path, programs) -> str:
    if (APPS / f"{name}.c").exists():
        out = tmp / name
        mpicc(APPS / f"{name}.c", out)
        return str(out)
    return programs(name)


CASES = [("halo", 4, ["40", "2000"]), ("cg3d", 4, ["16", "30"]), ("amr", 4, ["25"]),
         ("master_worker", 4, ["40", "3"])]


@pytest.mark.parametrize("name,n,args", CASES, ids=[c[0] for c in CASES])
def test_recorded_program_round_trips(programs, tmp_path, name, n, args):
    exe = _program(name, tmp_path, programs)
    plain, packed, back = (tmp_path / f for f in ("plain.h5", "packed.h5", "back.h5"))
    record(plain, n, [exe, *args])
    said = mt("compress", plain, "-o", packed).stdout
    assert "bytes/action" in said
    # written in the HDF5 1.10 file format (superblock version 3: compact groups and chunk
    # indexes, 12-20 KB less than the 1.6 default's, a quarter of a small file); smaller than
    # the recorded file (how much smaller depends on the recorded times: a benchmark figure)
    assert packed.read_bytes()[8] == 3
    assert packed.stat().st_size < plain.stat().st_size
    mt("expand", packed, "-o", back)
    with minitrace.open(plain) as u, minitrace.open(packed) as c, minitrace.open(back) as e:
        a, b, x = u.data(), c.data(), e.data()
        for f in a.actions.dtype.names:
            for other in (b, x):
                assert np.array_equal(np.ascontiguousarray(a.actions[f]).view(np.uint8),
                                      np.ascontiguousarray(other.actions[f]).view(np.uint8)), f
        assert np.array_equal(a.vectors, b.vectors)
        assert u.summary().equals(c.summary())
        assert u.validate().summary() == c.validate().summary()
    # the recorder's CPU seconds are its nanoseconds times 1e-9: stored as those integers
    with minitrace.open(packed) as c:
        assert c.compressed_form.attrs.get("volume_scale") == 1e-9
        assert c.compressed_form.side["volume"].dtype.kind == "i"
    mt("validate", packed)


def test_record_compress_writes_the_compressed_form(programs, tmp_path):
    exe = programs("halo")
    out = tmp_path / "halo.h5"
    p = record(out, 4, [exe, "60", "1000"], extra=["--compress"])
    assert "uncompressed it would have been" in p.stdout
    with minitrace.open(out) as t:
        assert t.compressed and t.meta["complete"]
        loops = t.loops()
        main = loops[loops["main"]]
        # 60 iterations of (4 irecv, 4 isend, waitall, compute): the grammar may fold a few
        # iterations into the loop's start, never more than one period per rank program
        assert (main["iterations"] >= 58).all()
        assert main["body"].str.contains("isend").all()
        lines = mt("info", "--loops", out).stdout
        assert "main loop:" in lines and "iterations of" in lines
