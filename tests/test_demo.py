"""The main job (`minitrace demo`, what scripts/main.sh runs) end to end: every step runs and
leaves its output, and it ends with the calibrated prediction's self-check (conftest's
``demo`` runs it once; test_predict and test_calibrate use its recording and calibration)."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.timeout(600)


def test_demo_runs_every_step(demo):
    assert f"All steps done; files in {demo.out}" in demo.stdout
    for name in ("demo.h5", "jacobi.h5", "variability.h5", "gev.png", "machine.h5",
                 "jacobi_timeline.png"):
        assert (demo.out / name).stat().st_size > 0, name
    # the closing prediction checked against the recording, with its error
    assert re.search(r"self-check: recorded [\d.e-]+ s less the recorder's own [\d.e-]+ s "
                     r"\(.*\), predicted [\d.e-]+ s, error [+-][\d.]+%", demo.stdout), \
        demo.stdout[-2000:]
