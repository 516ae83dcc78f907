"""info --loops on a program whose loops are each under the listed share of its actions (public
Intel MPI Benchmarks: each benchmark's iterations at each message size are one short loop):
it says that they exist and how large the largest is, not "no repetition found"."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.record_util import build, record

pytestmark = pytest.mark.timeout(300)


def _info_loops(path) -> str:
    p = subprocess.run([sys.executable, "-m", "minitrace", "info", str(path), "--loops"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return next(line for line in p.stdout.splitlines() if line.startswith("loops:"))


def test_small_loops_are_said_to_exist(tmp_path):
    record(tmp_path / "t.h5", 2, [build("size_sweep", tmp_path)])
    line = _info_loops(tmp_path / "t.h5")
    assert "no repetition found" not in line
    assert line.startswith("loops: none listed (up to 150 loops per rank, each under 1% of "
                           "its rank's actions")
    assert "the largest: 5 iterations" in line
