"""`minitrace gev` and `minitrace partitioned-model` end to end, as subprocesses."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from minitrace.analysis import projection as P
from minitrace.storage import write_bench
from tests.support.gev_synth import truth, write_variability


def mt(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("gev")
    return (write_variability(d / "r64.h5", 4, 16, 300, seed=0),
            write_variability(d / "r256.h5", 16, 16, 100, seed=1), d)


def test_gev_projects_checks_and_plots(runs):
    base, big, d = runs
    png = d / "gev.png"
    r = mt("gev", base, "--method", "pwm,mom,nonparam", "--scale", "128,4x", "--replicas", "40",
           "--check", big, "--plot", png)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "64 ranks on 4 node(s), 300 iterations" in out
    assert "shape = Hosking k = scipy c = -xi" in out
    for model in ("inter-node", "intra-node", "non-parametric"):
        assert model in out
    assert "Check against measured runs" in out and str(big) in out
    # the back-test projects n/8, n/4, n/2 = 8, 16, 32 ranks to 64, then recommends one
    bt = out.split("Back-test on this run")[1].split("Recommended:")[0].splitlines()[2:]
    assert {int(row.split()[0]) for row in bt if row.strip()} == {8, 16, 32}
    rec = out.split("Recommended: ")[1]
    assert rec.startswith("run time at 256 ranks ") and "smallest back-test error" in rec
    assert png.stat().st_size > 10_000
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_projection_frame_from_python_matches_truth(runs):
    base, big, _ = runs
    v = P.load_variability(base)
    df = P.project(v, [256], methods=("pwm",), replicas=40)
    assert list(df.columns[:8]) == ["method", "model", "unit", "scale", "factor", "estimate",
                                    "lo", "hi"]
    for r in df.itertuples():
        assert abs(r.estimate - truth(256)) <= r.hi - r.lo
    chk = P.check(df, [P.load_variability(big)])
    assert len(chk) == 3 and chk.consistent.all()


def test_gev_errors_are_one_line_with_exit_1(runs, tmp_path):
    other = tmp_path / "pt.h5"
    write_bench(str(other), "pt2pt", {"kind": np.array(["pingpong"]), "size": np.array([8]),
                                      "t_roundtrip": np.array([1e-6])})
    r = mt("gev", other)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"minitrace: error: {other}: no results for bench suite 'variability' (has: pt2pt)"]
    r = mt("gev", tmp_path / "missing.h5")
    assert r.returncode == 1 and "missing.h5: no such file" in r.stderr
    r = mt("gev", runs[0], "--method", "pwm,lmom")
    assert r.returncode == 1 and r.stderr == (
        "minitrace: error: gev: unknown --method entries ['lmom']; choose among "
        "pwm,mom,mle,nonparam, or all\n")
    r = mt("gev", runs[0], "--ci", "1.5")
    assert r.returncode == 1 and "--ci 1.5: expected a number > 0 and < 1" in r.stderr
    r = mt("gev", runs[0], "--replicas", "many")
    assert (r.returncode, r.stderr) == (1, "minitrace: error: --replicas many: expected an "
                                           "integer >= 1 and <= 1,000,000\n")


def test_method_all_fits_every_estimator(tmp_path):
    small = write_variability(tmp_path / "small.h5", 2, 2, 40, seed=3)
    r = mt("gev", small, "--method", "all", "--scale", "8", "--replicas", "2")
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("Projected mean")[1].split("\n\n")[0].splitlines()[2:]
    assert {row.split()[0] for row in rows if not row.startswith("FLAG")} == \
        {"pwm", "mom", "mle", "nonparam"}


def test_check_says_when_a_measured_run_is_far_outside(runs):
    """A measured run 0.5 s slower than any projection (50 standard errors away) is neither
    inside the interval nor consistent with it; the unshifted run is consistent."""
    base, big, _ = runs
    df = P.project(P.load_variability(base), [256], methods=("pwm",), replicas=40)
    far = P.load_variability(big)
    far.times = far.times + 0.5
    chk = P.check(df, [far, P.load_variability(big)])
    assert len(chk) == 6
    shifted, plain = chk[chk.measured > 1.4], chk[chk.measured < 1.4]
    assert len(shifted) == 3 and len(plain) == 3
    assert not shifted.inside.any() and not shifted.consistent.any()
    assert (shifted.measured > shifted.hi + 2 * shifted.se).all()
    assert plain.consistent.all()


def test_gev_refuses_equal_maxima_on_one_line(tmp_path):
    times = np.full((40, 8), 0.1)
    p = tmp_path / "flat.h5"
    write_bench(str(p), "variability", {"times": times, "maxima": times.max(axis=1),
                                        "node": np.repeat(np.arange(2), 4).astype(np.int32),
                                        "local_rank": np.tile(np.arange(4), 2).astype(np.int32)})
    r = mt("gev", p)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"minitrace: error: {p}: all per-iteration maxima are equal: nothing " \
                       "to fit\n"


def test_gev_checks_the_plot_path_before_the_bootstrap(runs, tmp_path):
    """Nothing is printed (no fit, no bootstrap) when the plot could not be written."""
    base = runs[0]
    for png, why in ((tmp_path / "no" / "g.png", "cannot write: no such directory"),
                     (tmp_path, "is a directory: name a file to write"),
                     (tmp_path / "g.xyz", "cannot write the plot: unknown image format 'xyz'")):
        r = mt("gev", base, "--plot", png)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.startswith(f"minitrace: error: {png}: {why}")
        assert r.stderr.count("\n") == 1


def test_gev_flags_too_few_samples(tmp_path):
    p = write_variability(tmp_path / "tiny.h5", 1, 2, 12, seed=0)
    r = mt("gev", p, "--scale", "8")
    assert r.returncode == 0, r.stderr
    assert "FLAG pwm inter-node at 2,8 ranks: too few samples (12 < 30)" in r.stdout


def test_partitioned_model_worked_example_and_bench(tmp_path):
    r = mt("partitioned-model")
    assert r.returncode == 0, r.stderr
    row = r.stdout.strip().splitlines()[-1].split()
    assert row == ["4", "16.0", "100000.00", "1000.00", "101121.87", "1605.00", "405.00",
                   "2243.74", "405.00", "3", "9969", "39506", "3.96"]
    p = tmp_path / "part.h5"
    n = 4
    write_bench(str(p), "partitioned", {
        "mode": np.array(["partitioned", "baseline"] * n), "size": np.full(2 * n, 1 << 20),
        "threads": np.full(2 * n, 2), "run": np.repeat(np.arange(n), 2),
        "mu": np.full(2 * n, 0.01), "v": np.full(2 * n, 0.1), "t_last": np.full(2 * n, 0.0101),
        "t_done": np.full(2 * n, 0.0102), "bandwidth": np.full(2 * n, 3e9)},
        attrs={"emulated": True})
    png = tmp_path / "pm.png"
    r = mt("partitioned-model", "--bench", p, "--table", "quartz", "--plot", png)
    assert r.returncode == 0, r.stderr
    assert "vs model" in r.stdout and "baseline" in r.stdout and png.stat().st_size > 10_000
    r = mt("partitioned-model", "--bench", p)        # no pt2pt suite: constants
    assert r.returncode == 0 and "constant 5 us" in r.stdout
    r = mt("partitioned-model", "--table", tmp_path / "nope.csv")
    assert r.returncode == 1 and "nope.csv: no such table" in r.stderr


def test_projection_panels_split_when_scales_differ_by_orders_of_magnitude(tmp_path):
    from minitrace.analysis.gev_plot import plot_gev, projection_panels
    near = pd.DataFrame({"method": ["pwm", "mle", "nonparam"], "hi": [1.0, 2.0, 1.5]})
    assert projection_panels(near) == [["pwm", "mle", "nonparam"]]
    far = pd.DataFrame({"method": ["pwm", "mle", "mle"], "hi": [1.0, 50.0, np.inf]})
    assert projection_panels(far) == [["pwm"], ["mle"]]
    # a run whose MLE has no finite mean (infinite estimate and bounds) still plots
    x = np.sort(np.random.default_rng(1).pareto(0.8, 300)) + 1
    v = P.Variability(x[:, None], np.zeros(1, int), np.zeros(1, int))
    fits = P.base_fits(v, ("pwm", "mle"))
    proj = P.project(v, [1, 4, 64], ("pwm", "mle", "nonparam"), replicas=20)
    assert np.isinf(proj.hi).any()
    png = tmp_path / "heavy.png"
    plot_gev(str(png), v, fits, proj)
    assert png.stat().st_size > 10_000


@pytest.fixture(scope="module")
def straggling(tmp_path_factory):
    """The issue-28 parent (normal ranks, a +0.3 s straggler in 1% of the iterations at 16
    ranks), a seed with 5 stragglers, and a GEV-parent run of the same size."""
    d = tmp_path_factory.mktemp("straggle")
    return (write_variability(d / "s.h5", 2, 8, 300, seed=3, parent="straggle-1%-0.3s"),
            write_variability(d / "g.h5", 2, 8, 300, seed=3, parent="gev"))


def test_gev_flags_excursions_and_recommends_only_the_straggler_model(straggling):
    r = mt("gev", straggling[0], "--scale", "8x", "--replicas", "40")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for model in ("inter-node", "intra-node"):
        assert f"FLAG pwm {model} at 16,128 ranks: 5 excursion(s) in 5 iteration(s)" in out
    assert "FLAG nonparam non-parametric at 16,128 ranks: 5 excursion(s)" in out
    assert "FLAG pwm stragglers" not in out
    assert "Excursions (stragglers): 5 rank-iteration(s) in 5 iteration(s) above" in out
    touched = out.split("(unseen):")[1].strip().split("\n\n")[0].splitlines()
    assert touched[0].split() == ["scale", "touched", "touched_lo", "touched_hi", "unseen"]
    assert [row.split()[0] for row in touched[1:]] == ["16", "128"]
    rec = out.split("Recommended: ")[1]
    assert rec.startswith("run time at 128 ranks ") and "from pwm stragglers: no flag" in rec


def test_gev_makes_no_recommendation_where_unseen_excursions_could_dominate(straggling):
    r = mt("gev", straggling[0], "--scale", "1024", "--replicas", "40")
    assert r.returncode == 0, r.stderr
    assert "Recommended:" not in r.stdout
    assert ("No recommendation at 1024 ranks: excursions too rare to show up in this run's "
            "4,800 rank-iterations") in r.stdout
    assert "1,527 iterations at 16 ranks" in r.stdout


def test_gev_reports_no_excursions_in_gev_ranks(straggling):
    r = mt("gev", straggling[1], "--scale", "4x", "--replicas", "40", "--no-backtest")
    assert r.returncode == 0, r.stderr
    assert "Excursions (stragglers): none found" in r.stdout
    assert "excursion(s)" not in r.stdout
