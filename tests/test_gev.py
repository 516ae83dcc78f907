"""GEV estimators on deterministic quantile samples of known GEVs (no randomness)."""
import warnings

import numpy as np
import pytest
from scipy import special, stats

from minitrace.analysis import gev

N = 1000


def quantile_sample(c, loc=100.0, scale=2.0, n=N):
    return stats.genextreme.ppf((np.arange(1, n + 1) - 0.35) / n, c, loc=loc, scale=scale)


@pytest.mark.parametrize("c", [0.1, 0.3, -0.2])
def test_pwm_recovers_known_gev(c):
    f = gev.pwm(quantile_sample(c))
    assert f.ok
    assert f.loc == pytest.approx(100, rel=0.01)
    assert f.scale == pytest.approx(2, rel=0.01)
    assert f.shape == pytest.approx(c, abs=0.01)


@pytest.mark.parametrize("c", [0.1, 0.3])
def test_mom_recovers_light_tailed_gev(c):
    f = gev.mom(quantile_sample(c))
    assert f.ok
    assert f.loc == pytest.approx(100, rel=0.01)
    assert f.scale == pytest.approx(2, rel=0.01)
    assert f.shape == pytest.approx(c, abs=0.01)


def test_mom_heavy_tail_is_biased_as_documented():
    # the sample skewness of 1,000 points underestimates the c = -0.2 skewness (3.54 -> 2.98)
    f = gev.mom(quantile_sample(-0.2))
    assert f.shape == pytest.approx(-0.176, abs=0.001)
    assert f.scale == pytest.approx(2.10, abs=0.005)


def test_mom_scale_uses_square_root_not_three_halves():
    x = quantile_sample(0.3)
    f = gev.mom(x)
    k = f.shape
    v = special.gamma(1 + 2 * k) - special.gamma(1 + k) ** 2
    # the fitted GEV has the sample's variance: scale^2 v / k^2 == sigma^2
    assert f.scale ** 2 * v / k ** 2 == pytest.approx(x.var(), rel=1e-9)
    wrong = x.std() * abs(k) / v ** 1.5        # the thesis's misprint
    assert abs(f.scale - wrong) > 0.5


def test_mle_matches_truth_and_flags_nothing():
    f = gev.mle(quantile_sample(0.1))
    assert f.ok
    assert f.shape == pytest.approx(0.1, abs=0.01)
    assert f.scale == pytest.approx(2, rel=0.01)


def test_mle_failure_is_detected():
    x = np.array([[1.0, 1.0, 1.0, 1.0, 1.0], list(quantile_sample(0.1, n=5))])
    f = gev.mle(x)
    assert f.ok.tolist() == [False, True]


def test_vectorized_equals_one_at_a_time():
    rng = np.random.default_rng(1)
    x = stats.genextreme.rvs(0.1, loc=5, scale=1, size=(3, 4, 200), random_state=rng)
    for est in (gev.pwm, gev.mom):
        many = est(x)
        assert many.shape.shape == (3, 4)
        one = est(x[2, 1])
        assert many.shape[2, 1] == pytest.approx(one.shape)
        assert many.loc[2, 1] == pytest.approx(one.loc)
        assert many.scale[2, 1] == pytest.approx(one.scale)


def test_gumbel_limit_is_continuous():
    x = quantile_sample(0.0)
    for est in (gev.pwm, gev.mom):
        f = est(x)
        assert abs(f.shape) < 0.005 and f.type() == "I"
        assert f.scale == pytest.approx(2, rel=0.01)
    k = np.array([-3e-3, -1e-3, 0.0, 1e-3, 3e-3])
    s = gev.gev_skewness(k)
    assert s[2] == pytest.approx(gev.GUMBEL_SKEWNESS, abs=1e-4)
    assert np.all(np.diff(s) < 0)
    assert gev.mom_shape(gev.GUMBEL_SKEWNESS)[0] == pytest.approx(0, abs=1e-4)


def test_mom_domain_flags_out_of_range_skewness():
    k, ok = gev.mom_shape(np.array([100.0, 1.0, -50.0]))
    assert ok.tolist() == [True, True, False]
    assert k[0] > gev.MOM_SHAPE_MIN and k[0] < -0.3


def test_sign_convention_and_type():
    f = gev.pwm(quantile_sample(-0.2))
    assert f.scipy_c == f.shape and f.xi == -f.shape
    assert f.type() == "II"                       # heavy tail: Frechet
    assert gev.pwm(quantile_sample(0.3)).type() == "III"
    assert gev.gev_type([0.04, -0.04, 0.06, -0.06]).tolist() == ["I", "I", "III", "II"]
    assert gev.gev_type(0.04, tol=0.01) == "III"


def test_goodness_of_fit_separates_good_and_bad_fits():
    x = quantile_sample(0.1)
    good = gev.goodness_of_fit(x, 100, 2, 0.1)
    bad = gev.goodness_of_fit(x, 100, 2, -0.3)
    assert good["ks"] < 0.002 and bad["ks"] > 0.05
    assert good["ad"] < 0.01 and bad["ad"] > 1
    # scipy's KS statistic agrees
    d = stats.kstest(x, stats.genextreme(0.1, loc=100, scale=2).cdf).statistic
    assert good["ks"] == pytest.approx(d)
    theo, xs = gev.qq(x, 100, 2, 0.1)
    assert np.allclose(theo, xs, rtol=5e-3)   # plotting positions differ a little


@pytest.mark.parametrize("value", [0.1, 1.0, 0.0, 2.5e-7])
def test_equal_values_are_flagged_not_fitted(value):
    """A sample without spread has no GEV: every estimator says not ok (a batch keeps the
    good rows), and no numpy/scipy warning escapes."""
    batch = np.stack([np.full(50, value), quantile_sample(0.1, n=50), np.full(50, value)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in ("pwm", "mom"):
            f = gev.fit(batch, method)
            assert f.ok.tolist() == [False, True, False], method
        assert not gev.mle(batch[0]).ok
    assert gev.degenerate(batch).tolist() == [True, False, True]


@pytest.mark.parametrize("c", [0.3, 0.0, -0.3])
def test_vectorized_mle_matches_scipy_fit(c):
    """The Newton MLE reaches at least scipy's likelihood (scipy's Nelder-Mead started at the
    same PWM fit) and the same parameters, on every sample of a batch."""
    rng = np.random.default_rng(7)
    x = gev.rvs((6, 300), 1.0, 0.05, c, rng)
    f = gev.mle(x)
    assert f.ok.all()
    for i, row in enumerate(x):
        p = gev.pwm(row)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sc, sl, ss = stats.genextreme.fit(row, float(p.shape), loc=float(p.loc),
                                              scale=float(p.scale))
        assert gev.nll(row, f.loc[i], f.scale[i], f.shape[i]) <= gev.nll(row, sl, ss, sc) + 1e-6
        assert f.shape[i] == pytest.approx(sc, abs=0.03)
        assert f.scale[i] == pytest.approx(ss, rel=0.03)


def test_mle_starts_inside_the_support():
    """A PWM start whose bounded support misses the largest value (common for shape > 0.3)
    is moved until every point is inside, instead of failing."""
    rng = np.random.default_rng(0)
    x = gev.rvs((200, 300), 1.0, 0.05, 0.3, rng)
    start = gev.pwm(x)
    outside = np.any(gev.cdf(x, start.loc[:, None], start.scale[:, None],
                             start.shape[:, None]) >= 1, axis=1)
    assert outside.any()
    assert gev.mle(x).ok.all()


@pytest.mark.parametrize("c", [0.4, 1e-13, 0.0, -0.3, -1.5])
def test_cdf_ppf_and_rvs_match_scipy(c):
    q = np.linspace(1e-6, 1 - 1e-9, 501)
    assert np.allclose(gev.ppf(q, 1.0, 0.7, c), stats.genextreme.ppf(q, c, loc=1, scale=0.7),
                       rtol=1e-10)
    x = np.linspace(-5, 10, 301)
    assert np.allclose(gev.cdf(x, 1.0, 0.7, c), stats.genextreme.cdf(x, c, loc=1, scale=0.7),
                       atol=1e-12)
    rng = np.random.default_rng(3)
    ordered = gev.rvs((4000, 20), 1.0, 0.7, c, rng, ordered=True)
    assert np.all(np.diff(ordered, axis=1) >= 0)
    plain = np.sort(gev.rvs((4000, 20), 1.0, 0.7, c, rng), axis=1)
    for i in (0, 10, 19):       # each order statistic has the same distribution both ways
        assert stats.ks_2samp(ordered[:, i], plain[:, i]).pvalue > 0.001
