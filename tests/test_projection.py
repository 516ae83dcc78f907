"""EMMA, expected maxima and the bootstrapped projections (synthetic data, known truth)."""
import itertools

import numpy as np
import pytest
from scipy import integrate, special, stats

from minitrace.analysis import emma, gev
from minitrace.analysis import projection as P
from tests.support.gev_synth import parent_run, parent_truth, truth, variability


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


def test_product_of_one_gev_is_the_closed_form():
    for c in (0.6, 0.3, 0.0, 1e-10, -0.3, -0.7):
        for m in (1, 8, 1000, 1e5):
            exact = emma.expected_max_gev(1.0, 0.05, c, m)
            got = emma.expected_max_gev_product([1.0], [0.05], [c], [m])
            assert got == pytest.approx(exact, abs=2e-4 * (exact - 1 + 0.05)), (c, m)


def test_product_of_identical_groups_adds_their_counts():
    got = emma.expected_max_gev_product([1.0] * 3, [0.05] * 3, [-0.2] * 3, [3, 4, 5])
    assert got == pytest.approx(emma.expected_max_gev(1.0, 0.05, -0.2, 12), rel=1e-7)


def test_product_of_different_gevs_matches_numerical_integration():
    locs, scales, shapes, counts = [1.0, 1.02, 0.98], [0.05, 0.03, 0.08], [0.1, -0.2, 0.3], \
        [10, 5, 20]

    def cdf(x):
        return np.prod([stats.genextreme.cdf(x, c, loc=l, scale=s) ** n
                        for l, s, c, n in zip(locs, scales, shapes, counts)])
    exact = 1.0 + integrate.quad(lambda x: 1 - cdf(x), 1.0, np.inf, limit=500)[0] \
        - integrate.quad(cdf, -np.inf, 1.0, limit=500)[0]
    got = emma.expected_max_gev_product(locs, scales, shapes, counts)
    assert got == pytest.approx(exact, abs=2e-4 * (exact - 1))
    # vectorized over leading axes; a group without a mean makes the whole maximum infinite
    many = emma.expected_max_gev_product([[1.0, 1.0], [1.0, 1.0]], 0.05, [[0.1, -0.2],
                                                                          [0.1, -1.2]], 4)
    assert np.isfinite(many[0]) and np.isinf(many[1])


def test_shrinking_shapes_pools_noise_and_keeps_real_differences():
    k = np.array([-0.08, -0.12, -0.10, -0.09, -0.11])
    loc, scale = np.full(5, 1.0), np.full(5, 0.05)
    _, _, same = P.shrink_shapes(loc, scale, k, np.full(5, 0.03 ** 2))
    assert np.allclose(same, k.mean())                   # spread within the noise: pooled
    far = np.array([-0.4, 0.0, 0.0, 0.0, 0.0])
    _, _, kept = P.shrink_shapes(loc, scale, far, np.full(5, 0.01 ** 2))
    assert kept[0] < -0.38                               # one real outlier keeps its tail
    # a PWM fit moved to another shape is the PWM fit at that shape (same b0 and l2)
    x = gev.rvs(500, 1.0, 0.05, -0.1, np.random.default_rng(0))
    f = gev.pwm(x)
    l2, s2, k2 = P.with_shape(f.loc, f.scale, f.shape, 0.05)
    b0, b1, _ = gev.pwm_moments(x)
    refit_scale = (2 * b1 - b0) * 0.05 / (special.gamma(1.05) * (1 - 2 ** -0.05))
    assert s2 == pytest.approx(refit_scale)
    assert l2 == pytest.approx(b0 + refit_scale * (special.gamma(1.05) - 1) / 0.05)


def _single(x):
    """A one-rank run: the inter-node model fits exactly x."""
    return P.Variability(np.asarray(x)[:, None], np.zeros(1, int), np.zeros(1, int))


def test_parametric_ci_covers_truth_at_stated_rate():
    loc, scale, c, hits = 1.0, 0.05, 0.1, 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        p = P.parametric(_single(gev.rvs(200, loc, scale, c, rng)), "inter-node", "pwm", [16],
                         100, rng)
        _, lo, hi = P.percentile_ci(p.replicas[:, 0], 0.9)
        hits += lo <= emma.expected_max_gev(loc, scale, c, 16) <= hi
    assert 0.82 <= hits / 120 <= 0.97


def test_nonparametric_ci_covers_truth_at_stated_rate():
    loc, scale, c, hits = 1.0, 0.05, 0.1, 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        p = P.nonparametric(gev.rvs(300, loc, scale, c, rng), [4], 200, rng)
        _, lo, hi = P.percentile_ci(p.replicas[:, 0], 0.9)
        hits += lo <= emma.expected_max_gev(loc, scale, c, 4) <= hi
    assert 0.82 <= hits / 120 <= 0.97


def test_ci_widens_as_replica_samples_shrink():
    def width(n):
        w = []
        for seed in range(20):
            rng = np.random.default_rng(seed)
            p = P.parametric(_single(gev.rvs(n, 1.0, 0.05, 0.1, rng)), "inter-node", "pwm",
                             [16], 50, rng)
            _, lo, hi = P.percentile_ci(p.replicas[:, 0], 0.95)
            w.append(hi - lo)
        return np.mean(w)
    w100, w400, w1600 = width(100), width(400), width(1600)
    assert w100 > w400 > w1600
    assert w100 / w1600 == pytest.approx(4, rel=0.35)   # ~ 1/sqrt(n)


def test_joint_model_is_narrower_than_one_group():
    """Eight slots fitted jointly: the interval has the width of the whole run's error, not
    one slot's (the pooled per-slot replicas were ~sqrt(8) too wide)."""
    times, node, local = variability(nodes=1, per_node=8, iterations=300, seed=2)
    v = P.Variability(times, node, local)
    joint = P.project(v, [256], ("pwm",), models=("intra-node",), seed=0).iloc[0]
    one = P.project(v.ranks(local == 0), [256], ("pwm",), models=("intra-node",), seed=0)
    assert (one.hi - one.lo).iloc[0] / (joint.hi - joint.lo) > 2


def test_project_synthetic_run_contains_truth():
    times, node, local = variability(nodes=4, per_node=8, iterations=400, seed=3)
    v = P.Variability(times, node, local)
    df = P.project(v, [64, 256], methods=("nonparam", "pwm", "mom"), replicas=100, seed=1)
    assert len(df) == 2 * 7
    assert set(df.model) == {"non-parametric", "inter-node", "intra-node", "stragglers"}
    assert (df.replicas[df.model != "non-parametric"] == 100).all()
    # factor: what each model extrapolates to, in its own unit
    f = df[df.method != "mom"].set_index(["model", "scale"]).factor
    assert f["non-parametric", 256] == 8 and f["inter-node", 256] == 32 and \
        f["intra-node", 256] == 256 and f["stragglers", 256] == 256
    for r in df.itertuples():
        assert r.lo <= r.estimate <= r.hi
        assert r.runtime == pytest.approx(400 * r.estimate)
        # one run: each 95% interval may miss (tests/test_gev_coverage.py counts how often),
        # but never by more than its own width
        assert abs(r.estimate - truth(r.scale)) <= r.hi - r.lo, r
    assert sum(r.lo <= truth(r.scale) <= r.hi for r in df.itertuples()) >= 8


def test_flags():
    times, node, local = variability(nodes=1, per_node=2, iterations=20, seed=0)
    df = P.project(P.Variability(times - 1.05, node, local), [8], methods=("nonparam", "pwm"),
                   seed=0)
    assert all("too few samples (20 < 30)" in f for f in df["flags"])
    assert all("negative projected time" in f for f in df["flags"])
    big = P.project(P.Variability(times, node, local), [2 * 8], methods=("nonparam",))
    assert "scale factor above 0.02 x 20 iterations = 0.4" in big["flags"][0]


def test_infinite_mean_is_carried_through_not_dropped():
    """Maxima with shape -1.3: the MLE base fit has no mean, the estimate and upper bound are
    infinite, every replica counts and the flag says why."""
    x = stats.genextreme.ppf((np.arange(1, 301) - 0.35) / 300, -1.3, loc=1.0, scale=0.05)
    df = P.project(_single(x), [16], ("mle",), replicas=40, models=("inter-node",))
    r = df.iloc[0]
    assert np.isinf(r.estimate) and np.isinf(r.hi) and np.isinf(r.runtime)
    assert r.replicas == 40
    assert "infinite mean: fitted shape -1." in r["flags"]
    assert "replicas have an infinite mean" in r["flags"]
    fits = P.base_fits(_single(x), ("mle",))
    assert "no finite mean" in fits.attrs["flags"][0]
    x = stats.genextreme.ppf((np.arange(1, 301) - 0.35) / 300, -0.7, loc=1.0, scale=0.05)
    assert "infinite variance: fitted shape -0." in P.project(
        _single(x), [16], ("pwm",), replicas=40, models=("inter-node",))["flags"][0]


def test_bad_fit_is_flagged_by_a_bootstrap_p_value():
    """Two clusters of times (a bimodal run) are no GEV: KS D ~ 0.2 at n = 300 is flagged;
    a GEV sample of the same size is not."""
    rng = np.random.default_rng(4)
    bimodal = np.where(rng.random(300) < 0.5, rng.normal(1.0, 0.01, 300),
                       rng.normal(1.1, 0.01, 300))
    fits = P.base_fits(_single(bimodal), ("pwm",))
    assert fits.ks[0] > 0.1 and fits.p_ad[0] < 0.01
    assert "pwm: poor GEV fit" in fits.attrs["flags"][0]
    assert "poor GEV fit of node 0" in P.project(_single(bimodal), [16], ("pwm",),
                                                  models=("inter-node",))["flags"][0]
    good = P.base_fits(_single(gev.rvs(300, 1.0, 0.05, 0.0, rng)), ("pwm",))
    assert good.p_ad[0] > 0.01 and good.attrs["flags"] == []


def test_bounded_tail_of_normal_ranks_is_flagged():
    """Normal per-rank times fit a bounded GEV (shape ~ +0.3) and the intra-node model then
    projects far too low: the flag says so, naming the Gumbel-tail projection."""
    v = parent_run("normal", 2, 8, 300, seed=0)
    df = P.project(v, [256], ("pwm",), models=("intra-node",))
    r = df.iloc[0]
    assert r.hi < parent_truth("normal", 256)
    assert "bounded tail: with Gumbel tails of the same mean and spread" in r["flags"]


def test_base_fits_flag_type_disagreement():
    x = stats.genextreme.ppf((np.arange(1, 1001) - 0.35) / 1000, -0.2, loc=100, scale=2)
    v = P.Variability(x[:, None], np.zeros(1, int), np.zeros(1, int))
    df = P.base_fits(v, methods=("pwm", "mom"), tol=0.19)
    assert list(df.type) == ["II", "I"]
    assert "disagree" in df.attrs["flags"][0]
    assert P.base_fits(v, methods=("pwm", "mom")).attrs["flags"] == []
