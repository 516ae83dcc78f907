"""The breakpoint finder (minitrace.analysis.piecewise) on synthetic network-like data: three
known breakpoints, a latency jump and slope change at each, sizes log-uniform in 1 B .. 16 MiB."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.analysis.piecewise import METHODS, fit
from minitrace.errors import MinitraceError

BREAKS = (1024.0, 65536.0, 1048576.0)
# intercept (s), slope (s/B) of each of the four segments
LINES = ((1e-6, 1e-10), (3e-6, 2e-10), (2e-5, 1.2e-10), (8e-5, 1.0e-10))


def _truth(x):
    seg = np.searchsorted(BREAKS, x, side="right")
    a = np.array([l[0] for l in LINES])[seg]
    b = np.array([l[1] for l in LINES])[seg]
    return a + b * x


def _sizes(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return np.floor(10 ** rng.uniform(0, np.log10(16 << 20), n))


def _found(f):
    """Each true breakpoint lies between the last x of one segment and the first of the next."""
    assert len(f.breakpoints) == 3, f.breakpoints
    for seg, nxt, bp in zip(f.segments[:-1], f.segments[1:], BREAKS):
        assert seg.hi < bp <= nxt.lo or seg.hi <= bp < nxt.lo, (seg, nxt, bp)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("objective", ["ls", "weighted", "log"])
def test_three_breakpoints_without_noise(method, objective):
    x = _sizes()
    f = fit(x, _truth(x), objective=objective, method=method)
    _found(f)
    for seg, (a, b) in zip(f.segments, LINES):
        assert seg.intercept == pytest.approx(a, rel=1e-6, abs=1e-12)
        assert seg.slope == pytest.approx(b, rel=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_three_breakpoints_with_constant_noise(method):
    x = _sizes(seed=1)
    y = _truth(x) + np.random.default_rng(2).normal(0, 2e-7, len(x))
    _found(fit(x, y, objective="ls", method=method))


@pytest.mark.parametrize("method", METHODS)
def test_three_breakpoints_with_noise_proportional_to_size(method):
    x = _sizes(seed=3)
    y = _truth(x) * np.exp(np.random.default_rng(4).normal(0, 0.03, len(x)))
    _found(fit(x, y, objective="log", method=method))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("objective", ["ls", "log"])
def test_no_breakpoint_on_a_straight_line(method, objective):
    x = _sizes(seed=5)
    line = 2e-6 + 1e-10 * x
    rng = np.random.default_rng(6)
    # each objective with the noise it assumes: constant (ls), proportional (log)
    y = (line + rng.normal(0, 2e-7, len(x)) if objective == "ls"
         else line * np.exp(rng.normal(0, 0.03, len(x))))
    f = fit(x, y, objective=objective, method=method)
    assert f.breakpoints == []
    assert f.segments[0].slope == pytest.approx(1e-10, rel=0.05)


def test_predict_follows_the_segments():
    x = _sizes()
    f = fit(x, _truth(x))
    probe = np.array([10.0, 5000.0, 2e5, 4e6])
    assert np.allclose(f.predict(probe), _truth(probe), rtol=1e-6)


def test_errors_are_one_line():
    with pytest.raises(MinitraceError, match="at least 5 points"):
        fit([1, 2, 3], [1, 2, 3])
    with pytest.raises(MinitraceError, match="log objective needs positive y"):
        fit(np.arange(1, 11), np.zeros(10), objective="log")
    with pytest.raises(MinitraceError, match="unknown objective"):
        fit(np.arange(1, 11), np.arange(1, 11), objective="l1")
