"""An extrapolated trace for the sampling and replica tests: a stencil of 200 iterations (5%
jitter, tests/support/synthetic_loops.py) written at 2, 4 and 8 ranks and extrapolated to more."""
from __future__ import annotations

from minitrace import storage
from tests.support.synthetic_loops import stencil


def extrapolated_stencil(directory, ranks: int = 32):
    """(the extrapolated trace's file at ``ranks``, the 8-rank run's file) in ``directory``."""
    from minitrace.extrapolate import build as B, check as C
    paths = []
    for p in (2, 4, 8):
        paths.append(str(directory / f"st{p}.h5"))
        storage.write_trace(paths[-1], stencil(p, 200, jitter=0.05, seed=p)[0])
    data, _, forced = B.extrapolate(C.load_runs(paths), ranks, "weak")
    assert forced == []
    out = directory / f"st{ranks}.h5"
    B.write(str(out), data)
    return out, paths[-1]
