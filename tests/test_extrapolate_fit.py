"""The Extra-P hypothesis search recovers known laws from 3-5 scales and flags noise."""
from fractions import Fraction

import numpy as np
import pytest

from minitrace.errors import MinitraceError
from minitrace.extrapolate.fit import fit, hypotheses


@pytest.mark.parametrize("scales", [(2, 4, 8), (2, 4, 8, 16, 32)])
def test_recovers_p_log_p(scales):
    p = np.array(scales)
    model = fit(p, 3 + 2 * p * np.log2(p))
    assert (model.i, model.j) == (1, 1)
    assert model.c0 == pytest.approx(3) and model.c1 == pytest.approx(2)
    assert model.loo_error < 1e-9 and not model.flagged
    assert model(64) == pytest.approx(3 + 2 * 64 * 6)
    assert str(model) == "3 + 2 * p * log2(p)"


def test_recovers_square_root_and_constant():
    p = np.array([4, 8, 16, 32])
    root = fit(p, 5 * p ** 0.5)
    assert (root.i, root.j) == (Fraction(1, 2), 0)
    assert root.c0 == pytest.approx(0, abs=1e-9) and root.c1 == pytest.approx(5)
    constant = fit(p, np.full(4, 7.0))
    assert constant.constant and constant(1024) == pytest.approx(7)


def test_noise_around_a_constant_stays_constant():
    # 3 scales: some fast-growing term fits these "exactly"; the constant is within 1 %
    model = fit([2, 4, 8], [0.9998e-3, 0.9996e-3, 0.9975e-3])
    assert model.constant and model(64) == pytest.approx(0.999e-3, rel=1e-3)


def test_strong_scaling_finds_a_decreasing_term():
    p = np.array([2, 4, 8, 16])
    model = fit(p, 1e6 / p + 10, scaling="strong")
    assert (model.i, model.j) == (-1, 0)
    assert model(64) == pytest.approx(1e6 / 64 + 10)
    assert (Fraction(-1), 0) not in hypotheses("weak")


def test_noise_is_flagged_and_interval_spans_the_loo_fits():
    p = np.array([2, 4, 8, 16, 32])
    rng = np.random.default_rng(1)
    model = fit(p, 100 * rng.uniform(0.2, 1.8, size=5))
    assert model.flagged and model.loo_error > 0.05
    low, high = model.interval(64)
    assert low < high


def test_needs_three_scales():
    with pytest.raises(MinitraceError, match="at least 3"):
        fit([2, 4], [1.0, 2.0])
    with pytest.raises(MinitraceError, match="scaling"):
        fit([2, 4, 8], [1.0, 2.0, 3.0], scaling="sideways")
