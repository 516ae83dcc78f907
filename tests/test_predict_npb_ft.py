"""A collective whose blocks exceed the calibrated message sizes is flagged (issue 35): NPB FT
class A on 2 ranks exchanges 32 MiB blocks in its all-to-all (64 MiB sent per call), where
calibrate measures messages up to 16 MiB; its time is extrapolated and the prediction must say
so, as it does for a point-to-point message (test_predict)."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace.model import TraceBuilder
from minitrace.predict import predict
from minitrace.predict.calibration import load

pytestmark = pytest.mark.timeout(600)


def _alltoall_trace(path, block: int) -> str:
    """2 ranks, one MPI_Alltoall of ``block`` bytes to each rank (the rank's own included)."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "alltoall", bytes_sent=2 * block, bytes_recv=2 * block)
        b.add(r, "finalize")
    minitrace.storage.write_trace(str(path), b.build())
    return str(path)


def test_alltoall_blocks_beyond_the_calibrated_range_are_flagged(demo, tmp_path):
    cal = demo.out / "machine.h5"
    hi = load(str(cal)).size_range[1]
    big = predict(_alltoall_trace(tmp_path / "big.h5", 2 * hi), str(cal), ranges=False)
    said = [w for w in big.warnings if "collective call(s) exchange blocks" in w]
    assert len(said) == 1, big.warnings
    assert f"up to {2 * hi} B" in said[0] and "2 collective call(s)" in said[0]
    assert np.isfinite(big.predicted_time)
    # blocks within the range: no such warning (nor a point-to-point one)
    small = predict(_alltoall_trace(tmp_path / "small.h5", hi // 4), str(cal), ranges=False)
    assert not any("calibrated range" in w for w in small.warnings), small.warnings
