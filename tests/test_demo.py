"""The main job (`minitrace demo`, what scripts/main.sh runs) end to end: every step runs and
leaves its output, and it ends with the calibrated prediction's self-check."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(600)


def test_demo_runs_every_step(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "minitrace", "demo", "-o", str(out)],
                       capture_output=True, text=True, timeout=540)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    assert f"All steps done; files in {out}" in p.stdout
    for name in ("demo.h5", "jacobi.h5", "variability.h5", "gev.png", "machine.h5",
                 "jacobi_timeline.png"):
        assert (out / name).stat().st_size > 0, name
    # the closing prediction checked against the recording, with its error
    assert re.search(r"self-check: recorded [\d.e-]+ s, predicted [\d.e-]+ s, error [+-][\d.]+%",
                     p.stdout), p.stdout[-2000:]
