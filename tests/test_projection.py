"""EMMA, expected maxima and the bootstrapped projections (synthetic data, known truth)."""
import itertools

import numpy as np
import pytest
from scipy import stats

from minitrace.analysis import emma, gev
from minitrace.analysis import projection as P
from tests.gev_synth import truth, variability


@pytest.mark.parametrize("m", [1, 2, 3.5, 16, 1000])
def test_emma_of_standard_gumbel_is_gamma_plus_log_m(m):
    assert emma.emma(stats.gumbel_r(), m) == pytest.approx(np.euler_gamma + np.log(m), rel=1e-8)
    assert emma.emma_gev(0, 1, 0, m) == pytest.approx(np.euler_gamma + np.log(m), rel=1e-8)
    assert emma.expected_max(stats.gumbel_r(), m) == pytest.approx(np.euler_gamma + np.log(m))


@pytest.mark.parametrize("c", [0.1, -0.2, 0.3])
@pytest.mark.parametrize("m", [1, 4, 64.5])
def test_gev_closed_forms(c, m):
    d = stats.genextreme(c, loc=100, scale=2)
    assert emma.emma_gev(100, 2, c, m) == pytest.approx(emma.emma(d, m), rel=1e-9)
    assert emma.expected_max_gev(100, 2, c, m) == pytest.approx(emma.expected_max(d, m),
                                                                rel=1e-9)


def test_expected_max_gev_infinite_mean():
    assert np.isinf(emma.expected_max_gev(0, 1, -1.2, 4))


def test_sample_expected_max_is_exact_enumeration():
    x = np.array([3.0, 1.0, 4.0, 1.5])
    for k in (1, 2, 3):
        brute = np.mean([max(t) for t in itertools.product(x, repeat=k)])
        assert emma.expected_max_sample(x, k) == pytest.approx(brute)
    # real k interpolates monotonically
    assert emma.expected_max_sample(x, 2) < emma.expected_max_sample(x, 2.5) < \
        emma.expected_max_sample(x, 3)


def test_percentile_ci_positions():
    v = np.arange(1, 1001, dtype=float)[::-1]
    assert P.percentile_ci(v, 0.95) == (500.5, 25.0, 975.0)
    assert P.percentile_ci(np.arange(1.0, 11.0), 0.95)[1:] == (1.0, 10.0)


def _coverage(fn, seeds=120, ci=0.9):
    loc, scale, c = 1.0, 0.05, 0.1
    hits = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        hits += fn(loc, scale, c, rng, ci)
    return hits / seeds


def test_parametric_ci_covers_truth_at_stated_rate():
    def one(loc, scale, c, rng, ci):
        x = gev.rvs(200, loc, scale, c, rng)
        reps, failed = P.parametric_replicas(x, [16], "pwm", 100, rng)
        _, lo, hi = P.percentile_ci(reps[:, 0], ci)
        return lo <= emma.expected_max_gev(loc, scale, c, 16) <= hi
    assert 0.82 <= _coverage(one) <= 0.97


def test_nonparametric_ci_covers_truth_at_stated_rate():
    def one(loc, scale, c, rng, ci):
        x = gev.rvs(300, loc, scale, c, rng)
        _, lo, hi = P.percentile_ci(P.nonparametric_replicas(x, [4], 200, rng)[:, 0], ci)
        return lo <= emma.expected_max_gev(loc, scale, c, 4) <= hi
    assert 0.82 <= _coverage(one) <= 0.97


def test_ci_widens_as_replica_samples_shrink():
    def width(n):
        w = []
        for seed in range(20):
            rng = np.random.default_rng(seed)
            x = gev.rvs(n, 1.0, 0.05, 0.1, rng)
            _, lo, hi = P.percentile_ci(P.parametric_replicas(x, [16], "pwm", 50, rng)[0][:, 0],
                                         0.95)
            w.append(hi - lo)
        return np.mean(w)
    w100, w400, w1600 = width(100), width(400), width(1600)
    assert w100 > w400 > w1600
    assert w100 / w1600 == pytest.approx(4, rel=0.35)   # ~ 1/sqrt(n)


def test_project_synthetic_run_contains_truth():
    times, node, local = variability(nodes=4, per_node=8, iterations=400, seed=3)
    v = P.Variability(times, node, local)
    df = P.project(v, [64, 256], methods=("nonparam", "pwm", "mom"), replicas=60, seed=1)
    assert len(df) == 2 * 5
    assert set(df.model) == {"non-parametric", "inter-node", "intra-node"}
    assert (df.replicas[df.model == "inter-node"] == 4 * 60).all()
    assert (df.replicas[df.model == "intra-node"] == 8 * 60).all()
    for r in df.itertuples():
        assert r.lo <= r.median <= r.hi
        assert r.runtime_median == pytest.approx(400 * r.median)
        if r.model != "non-parametric":
            assert r.lo <= truth(r.scale) <= r.hi, r
    # the non-parametric projection is bounded by the largest measured maximum
    assert (df[df.model == "non-parametric"].hi <= times.max()).all()


def test_flags():
    times, node, local = variability(nodes=1, per_node=2, iterations=20, seed=0)
    df = P.project(P.Variability(times - 1.05, node, local), [8], methods=("nonparam", "pwm"),
                   seed=0)
    assert all("too few samples (20 < 30)" in f for f in df["flags"])
    assert all("negative projected time" in f for f in df["flags"])
    big = P.project(P.Variability(times, node, local), [2 * 64], methods=("nonparam",))
    assert "exceeds the sample size" in big["flags"][0]


def test_base_fits_flag_type_disagreement():
    x = stats.genextreme.ppf((np.arange(1, 1001) - 0.35) / 1000, -0.2, loc=100, scale=2)
    v = P.Variability(x[:, None], np.zeros(1, int), np.zeros(1, int))
    df = P.base_fits(v, methods=("pwm", "mom"), tol=0.19)
    assert list(df.type) == ["II", "I"]
    assert "disagree" in df.attrs["flags"][0]
    assert P.base_fits(v, methods=("pwm", "mom")).attrs["flags"] == []
