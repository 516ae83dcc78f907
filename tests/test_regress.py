"""Non-regression testing: Chew's test against scipy's distributions, detection rates on
synthetic histories with known shifts measured over many seeds, change points within a stated
tolerance, the vectorized assessment against a run-by-run one, metrics of real benchmark runs,
and the command line (exit status, history appended by several processes)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

import minitrace
from minitrace.analysis import regress as R
from minitrace.analysis import regress_history as H
from minitrace.analysis.regress_metrics import run_metrics
from minitrace.storage import write_bench


SEEDS = 200
CP_TOLERANCE = 2  # runs: docs/REGRESS.md


def z_tolerance(p: float, n: int, z: float = 4.0) -> float:
    """z binomial standard errors of a rate p measured over n trials (and at least 1/n)."""
    return z * np.sqrt(p * (1 - p) / n) + 1 / n


# -- Chew's test ---------------------------------------------------------------------------

@pytest.mark.parametrize("r", [1, 5])
def test_p1_is_the_t_prediction_interval(r):
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(3, 60))
        gamma = float(rng.choice([0.9, 0.99, 0.9999]))
        ref = rng.normal(3.0, 0.5, n)
        m = ref.mean() + rng.normal(0, 2.0)
        x, s = ref.mean(), ref.std(ddof=1)
        half = stats.t.ppf((1 + gamma) / 2, n - 1) * s * np.sqrt(1 / n + 1 / r)
        t = R.chew_statistic(n, r, np.array([m - x]), np.array([[s * s]]))
        thr = R.chew_threshold(n, 1, gamma)
        assert np.isclose(thr, stats.t.ppf((1 + gamma) / 2, n - 1) ** 2)
        assert np.isclose(t, ((m - x) / (s * np.sqrt(1 / n + 1 / r))) ** 2)
        assert (t > thr) == (abs(m - x) > half)
        # the ribbon of the plots is the same interval
        ref_state = R.Reference(np.array([n]), np.array([x]), np.array([s * s]), [], 0,
                                gamma, 2)
        got = ref_state.test(np.array([m]), r, np.array([1.0]))
        assert np.isclose(got["half_width"][0], half)
        assert got["verdict"][0] == (R.REGRESSION if abs(m - x) > half and m > x else
                                     R.IMPROVEMENT if abs(m - x) > half else R.OK)


@pytest.mark.parametrize("p,r", [(1, 1), (2, 1), (3, 5)])
def test_false_alarm_rate_is_one_minus_gamma(p, r):
    """Under no shift, T follows F(p, n - p): the flag rate is 1 - gamma."""
    rng = np.random.default_rng(p * 10 + r)
    trials, n, gamma = 40_000, 15, 0.99
    cov = np.eye(p) + 0.6 * (1 - np.eye(p))
    ref = rng.multivariate_normal(np.zeros(p), cov, size=(trials, n))
    new = rng.multivariate_normal(np.zeros(p), cov, size=(trials, r)).mean(axis=1)
    s = np.einsum("tni,tnj->tij", ref - ref.mean(1, keepdims=True),
                  ref - ref.mean(1, keepdims=True)) / (n - 1)
    t = R.chew_statistic(np.full(trials, n), r, new - ref.mean(axis=1), s)
    rate = (t > R.chew_threshold(n, p, gamma)).mean()
    assert abs(rate - (1 - gamma)) < z_tolerance(1 - gamma, trials)


@pytest.mark.parametrize("p,shift", [(1, 3.0), (1, 4.5), (2, 2.5)])
def test_detection_rate_is_the_noncentral_f_power(p, shift):
    """A shift delta is flagged with probability ncf.sf(threshold, p, n - p, lambda),
    lambda = n r / (n + r) delta' Sigma^-1 delta."""
    rng = np.random.default_rng(7 + p)
    trials, n, r, gamma = 20_000, 20, 1, 0.999
    delta = np.full(p, shift / np.sqrt(p))
    ref = rng.normal(size=(trials, n, p))
    new = rng.normal(size=(trials, p)) + delta
    c = ref - ref.mean(1, keepdims=True)
    t = R.chew_statistic(np.full(trials, n), r, new - ref.mean(axis=1),
                         np.einsum("tni,tnj->tij", c, c) / (n - 1))
    thr = R.chew_threshold(n, p, gamma)
    power = stats.ncf.sf(thr, p, n - p, n * r / (n + r) * delta @ delta)
    assert abs((t > thr).mean() - power) < z_tolerance(power, trials)


def test_constant_metric():
    """A reference without spread: the same value is ok, any other is flagged (inf)."""
    ref = R.assess(np.full((10, 1), 5.0), ["c/v"], [0], ()).final
    same, moved = (ref.test(np.array([v]), 1, np.array([0.0])) for v in (5.0, 6.0))
    assert same["verdict"][0] == R.OK and same["stat"][0] == 0
    assert moved["verdict"][0] == R.CHANGED and moved["stat"][0] == np.inf


# -- the synthetic histories -------------------------------------------------------

SIGMA = 0.002  # relative noise of a run (0.2%)
SHIFTED = {40: +0.01, 45: -0.01, 50: -0.05, 55: -0.10}  # isolated runs
NEW_NORMAL = (65, -0.03)  # from this run on
NRUNS, NMETRICS = 110, 3


def history(seed: int) -> np.ndarray:
    """Bandwidths (higher is better) of NMETRICS independent benchmarks: runs 40-55 carry
    isolated +1%, -1%, -5% (a node drop) and -10% (a cooling problem) shifts; a new normal
    3% lower starts at run 65."""
    rng = np.random.default_rng(seed)
    level = np.ones(NRUNS)
    for i, s in SHIFTED.items():
        level[i] *= 1 + s
    level[NEW_NORMAL[0]:] *= 1 + NEW_NORMAL[1]
    return level[:, None] * (1 + SIGMA * rng.normal(size=(NRUNS, NMETRICS))) * [1e9, 2e9, 5e8]


@pytest.fixture(scope="module")
def assessed():
    names = [f"bw/{k}/mean" for k in "abc"]
    out = []
    for seed in range(SEEDS):
        v = history(seed)
        cps = R.change_points(v)
        out.append((v, cps, R.assess(v, names, [-1, -1, -1], cps)))
    return out


def test_change_point_found_within_tolerance(assessed):
    found = [cps for _, cps, _ in assessed]
    ok = [len(c) == 1 and abs(c[0] - NEW_NORMAL[0]) <= CP_TOLERANCE for c in found]
    assert np.mean(ok) >= 0.98, [c for c, good in zip(found, ok) if not good]


def test_shifted_runs_flagged_at_the_stated_rate(assessed):
    """Each isolated shift is flagged at the rate of its noncentral F power (given the
    reference size the run had); its direction names it: a lower bandwidth is a regression."""
    for i, shift in SHIFTED.items():
        flags, powers, kinds = [], [], set()
        for v, _, a in assessed:
            n = a.n_ref[i]
            lam = (shift / SIGMA) ** 2 / (1 + 1 / n)  # delta / sigma, r = 1
            powers += list(stats.ncf.sf(a.threshold[i], 1, n - 1, lam))
            flags += list(np.isin(a.verdict[i], (R.REGRESSION, R.IMPROVEMENT)))
            kinds |= set(a.verdict[i][np.isin(a.verdict[i], (R.REGRESSION, R.IMPROVEMENT))])
        want = float(np.mean(powers))
        assert abs(np.mean(flags) - want) < z_tolerance(want, len(flags)), (shift, want)
        assert kinds <= {R.REGRESSION if shift < 0 else R.IMPROVEMENT}
    assert want > 0.999  # -10% is always caught; -5% too (checked in the loop)


def test_other_runs_not_flagged(assessed):
    """Runs of either normal are flagged at most at the rate 1 - gamma; the runs just after
    the change point (within the tolerance) may be tested against the old normal."""
    cp = NEW_NORMAL[0]
    normal = [i for i in range(NRUNS) if i not in SHIFTED and abs(i - cp) > CP_TOLERANCE]
    flagged = tested = 0
    for _, cps, a in assessed:
        if cps != [cp]:  # the few seeds where it was not found exactly (tested above)
            continue
        verdict = a.verdict[normal]
        tested += int(np.isin(verdict, (R.OK, R.REGRESSION, R.IMPROVEMENT)).sum())
        flagged += int(np.isin(verdict, (R.REGRESSION, R.IMPROVEMENT)).sum())
    assert tested > 0.7 * len(normal) * NMETRICS * SEEDS
    assert flagged <= stats.poisson.ppf(0.9999, 1e-4 * tested) + 1, (flagged, tested)


def test_new_normal_becomes_the_reference(assessed):
    """After the change point the reference is the new normal: its runs are tested and ok."""
    late = slice(NEW_NORMAL[0] + 10, NRUNS)
    for _, cps, a in assessed:
        if cps == [NEW_NORMAL[0]]:
            assert np.isclose(np.nanmean(a.ref_mean[late], axis=0),
                              np.array([1e9, 2e9, 5e8]) * (1 + NEW_NORMAL[1]), rtol=2e-3).all()


@pytest.mark.parametrize("nruns,seeds", [(60, SEEDS), (2500, 100)])
def test_no_change_point_at_the_stated_rate(nruns, seeds):
    """On histories without a change (one isolated outlier each), a change point is declared
    at most at the rate alpha: the permutation test is exact (robust z-scores do not depend on
    the runs' order; a long segment is scored on a grid of splits, shuffles alike)."""
    alpha, found = 0.05, 0
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        v = 1 + SIGMA * rng.normal(size=(nruns, 4))
        v[rng.integers(nruns)] *= 0.9
        found += bool(R.change_points(v, alpha=alpha, seed=seed))
    assert found / seeds < alpha + z_tolerance(alpha, seeds)


def test_change_points_are_deterministic():
    v = history(3)
    assert R.change_points(v, seed=5) == R.change_points(v.copy(), seed=5)


def test_several_change_points():
    rng = np.random.default_rng(2)
    v = 1 + SIGMA * rng.normal(size=(300, 5))
    v[100:] *= 1.02
    v[220:, :2] *= 0.95  # a change in two of five metrics only
    cps = R.change_points(v)
    assert len(cps) == 2 and abs(cps[0] - 100) <= CP_TOLERANCE and \
        abs(cps[1] - 220) <= CP_TOLERANCE


# -- the vectorized assessment is the run-by-run one ----------------------------------------

def sequential(v, names, directions, starts, gamma, nmin):
    """Run after run, metric after metric: the definition that assess() vectorizes."""
    nruns, nm = v.shape
    groups = R.metric_groups(names)
    verdict = np.zeros((nruns, nm), int)
    gverdict = np.zeros((nruns, len(groups)), int)
    ref = [[] for _ in range(nm)]
    gref = [[] for _ in groups]
    for i in range(nruns):
        if i in starts:
            ref = [[] for _ in range(nm)]
            gref = [[] for _ in groups]
        flagged = np.zeros(nm, bool)
        for j in range(nm):
            x = np.array(ref[j])
            n = len(x)
            if np.isnan(v[i, j]):
                verdict[i, j] = R.MISSING
                continue
            if n < nmin:
                verdict[i, j] = R.NO_REFERENCE
            else:
                s = x.std(ddof=1)
                half = stats.t.ppf((1 + gamma) / 2, n - 1) * s * np.sqrt(1 + 1 / n)
                d = v[i, j] - x.mean()
                flagged[j] = abs(d) > half
                sign = np.sign(d) * directions[j]
                verdict[i, j] = (R.OK if not flagged[j] else R.REGRESSION if sign > 0 else
                                 R.IMPROVEMENT if sign < 0 else R.CHANGED)
            if not flagged[j]:
                ref[j].append(v[i, j])
        for g, ix in enumerate(groups):
            x = np.array(gref[g]).reshape(-1, len(ix))
            n, p = len(x), len(ix)
            if np.isnan(v[i, ix]).any():
                gverdict[i, g] = R.MISSING
                continue
            gflag = False
            if n < max(nmin, p + 2):
                gverdict[i, g] = R.NO_REFERENCE
            else:
                s = np.cov(x.T)
                d = v[i, ix] - x.mean(axis=0)
                t = n * (n - p) / ((n + 1) * (n - 1) * p) * d @ np.linalg.solve(s, d)
                gflag = t > stats.f.ppf(gamma, p, n - p)
                bal = np.sum(d / np.sqrt(np.diag(s)) * np.asarray(directions)[ix])
                gverdict[i, g] = (R.OK if not gflag else R.REGRESSION if bal > 0 else
                                  R.IMPROVEMENT if bal < 0 else R.CHANGED)
            if not gflag and not flagged[ix].any():
                gref[g].append(v[i, ix])
    return verdict, gverdict


@pytest.mark.parametrize("seed", range(6))
def test_assess_equals_run_by_run(seed):
    rng = np.random.default_rng(seed)
    nruns = 90
    v = 10 + rng.normal(size=(nruns, 5)) * [1, 0.1, 1, 2, 0.5]
    v[:, 1] += 0.8 * v[:, 0]  # correlated (mean, sd) pair
    for i in rng.choice(nruns, 12, replace=False):
        v[i, rng.integers(5)] += rng.choice([-6, 6, 12])
    v[rng.choice(nruns, 5, replace=False), rng.integers(5)] = np.nan
    v[50:, 2:] += 4
    names = ["a/x/mean", "a/x/sd", "b/mean", "c/y/mean", "c/y/sd"]
    directions = [1, 1, -1, 1, 0]
    gamma, nmin = 0.99, 6
    a = R.assess(v, names, directions, [50], gamma, nmin)
    want, gwant = sequential(v, names, directions, {50}, gamma, nmin)
    assert np.array_equal(a.verdict, want)
    assert np.array_equal(a.group_verdict, gwant)
    assert (a.verdict == R.REGRESSION).sum() > 3 and (a.group_verdict != R.OK).sum() > 3


def test_joint_test_sees_what_each_metric_misses():
    """Two strongly correlated metrics moving apart by a little each: neither is out of its
    own interval, the pair is."""
    rng = np.random.default_rng(4)
    base = rng.normal(size=40)
    v = np.stack([base, base + 0.1 * rng.normal(size=40)], axis=1)
    a = R.assess(v, ["g/mean", "g/bandwidth"], [1, -1], (), 0.999, 8)
    t = a.final.test(np.array([1.5, -1.5]), 1, np.array([1.0, -1.0]))
    assert (t["verdict"] == R.OK).all()
    assert t["group_verdict"][0] == R.REGRESSION  # slower and less bandwidth: worse
    assert t["group_stat"][0] > 10 * t["group_threshold"][0]


# -- metrics of real benchmark runs --------------------------------------------------------

def test_metrics_of_a_real_run(bench_file):
    """On the suites run for real (conftest's bench_file)."""
    t = minitrace.open(str(bench_file))
    m = run_metrics(t)
    var, pt, col, part = (t.bench(s) for s in ("variability", "pt2pt", "collectives",
                                                "partitioned"))
    assert m["variability/ftq/np2/maxima/mean"] == (pytest.approx(var["maxima"].mean()), 1)
    assert m["variability/ftq/np2/times/sd"] == (pytest.approx(var["times"].std(ddof=1)), 1)
    rows = (pt["kind"] == "pingpong") & (pt["size"] == 8)
    assert m["pt2pt/intra/pingpong/8/mean"][0] == pytest.approx(
        np.mean(pt["t_roundtrip"][rows] / 2))
    rows = (pt["kind"] == "bandwidth") & (pt["size"] == 1)
    assert m["pt2pt/intra/bandwidth/1/sd"][0] == pytest.approx(
        np.std(pt["t_iter"][rows] / 4, ddof=1))
    sel = (col["op"] == "allreduce") & (col["size"] == 16)
    assert m["collectives/barrier/np2/allreduce/16/mean"] == (
        pytest.approx(col["t_max"][sel].mean()), 1)
    sel = (part["mode"] == part["mode"][0]) & (part["size"] == 36)
    assert m[f"partitioned/t2/{part['mode'][0]}/36/mean"] == (
        pytest.approx(part["bandwidth"][sel].mean()), -1)
    pt_names = [k for k in m if k.startswith("pt2pt/")]
    assert len(pt_names) == 3 * 7 * 2  # kinds x sizes (1, 2, 4, ..., 64) x (mean, sd)


def test_thresholds_and_unknown_groups(tmp_path):
    path = str(tmp_path / "t.h5")
    write_bench(path, "thresholds", {"probe": np.array(["deadlock"], dtype=object)},
                {"probes": ["deadlock"], "deadlock_threshold": [7936, 8192]})
    write_bench(path, "calibration", {"coefficients": np.array([[1e-6, 2e-10], [3e-6, 1e-10]]),
                                      "residuals": np.arange(100.0),
                                      "label": np.array(["x"], dtype=object)})
    m = run_metrics(minitrace.open(path))
    assert m == {"thresholds/deadlock/switch": (8192.0, 0),
                 "calibration/coefficients/0": (1e-6, 0), "calibration/coefficients/1": (2e-10, 0),
                 "calibration/coefficients/2": (3e-6, 0), "calibration/coefficients/3": (1e-10, 0),
                 "calibration/residuals/mean": (49.5, 0),
                 "calibration/residuals/sd": (pytest.approx(np.arange(100.0).std(ddof=1)), 0)}


# -- command line ---------------------------------------------------------------------------

def regress(*args, check=None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "minitrace.cli", "regress", *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    if check is not None:
        assert p.returncode == check, p.stdout + p.stderr
    return p


def variability_file(path, seed: int, scale: float = 1.0, date: str | None = None) -> str:
    """A variability group as the suite stores it (synthetic times, real writer)."""
    rng = np.random.default_rng(seed)
    times = rng.normal(1e-3, 1e-5, size=(50, 2)) * scale
    write_bench(str(path), "variability", {"maxima": times.max(axis=1), "times": times},
                {"workload": "ftq", "nranks": 2},
                meta={"date": date or f"2026-10-{1 + seed % 28:02d}T00:00:00+00:00",
                      "hosts": ["n1", "n1"]})
    return str(path)


def test_cli_exit_status_and_report(tmp_path):
    hist = tmp_path / "h.h5"
    runs = [variability_file(tmp_path / f"r{i}.h5", i) for i in range(12)]
    regress(hist, *runs[:10], check=0)
    p = regress(hist, runs[10], check=0)
    assert re.search(r"^  variability/ftq/np2/maxima/mean +ok ", p.stdout, re.M), p.stdout
    slow = variability_file(tmp_path / "slow.h5", 99, scale=1.05)
    p = regress(hist, slow, "--dry-run", check=3)
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"{hist}: 11 runs, 4 metrics; no change point; reference: runs "
                               "0..10")
    assert lines[1].startswith(f"{slow} (2026-10-"), lines[1]
    row = next(x for x in lines if x.split()[:2] == ["variability/ftq/np2/maxima/mean",
                                                     "REGRESSION"])
    value, mean, stat, thr, n = (float(x) for x in row.split()[2:])
    assert stat > thr and n == 11 and value > mean * 1.04
    assert H.read(str(hist)).nruns == 11  # --dry-run appended nothing
    fast = variability_file(tmp_path / "fast.h5", 98, scale=0.95)
    p = regress(hist, fast, "--only-flagged", check=0)
    assert "IMPROVEMENT" not in p.stdout and "improvement" in p.stdout
    assert not [x for x in p.stdout.splitlines() if x.split()[1:2] == ["ok"]]  # flagged only
    p = regress(hist, runs[11], slow, "--average", check=3)  # their mean is 2.5% slower
    assert "mean of the 2 new runs: " in p.stdout and "REGRESSION" in p.stdout
    h = H.read(str(hist))
    assert h.nruns == 14 and list(h.runs["source"][-2:]) == [runs[11], slow]
    assert set(h.runs["host"]) == {"n1"}
    p = regress(hist, "--plot", tmp_path / "evo.png", check=0)
    assert f"{hist}: 14 runs, 4 metrics" in p.stdout and (tmp_path / "evo.png").stat().st_size


def test_cli_errors(tmp_path):
    p = regress(tmp_path / "h.h5", check=1)
    assert p.stderr.strip() == (f"minitrace: error: {tmp_path / 'h.h5'}: no such history, and "
                                "no NEW file to start it with")
    empty = tmp_path / "e.h5"
    write_bench(str(empty), "history_of_nothing", {"label": np.array(["x"], dtype=object)})
    p = regress(tmp_path / "h.h5", empty, check=1)
    assert "no metric" in p.stderr and p.stderr.count("\n") == 1
    p = regress(empty, variability_file(tmp_path / "a.h5", 1), check=1)
    assert p.stderr.strip() == (f"minitrace: error: {empty}: not a regression history (no "
                                "/bench/history group)")
    p = regress(tmp_path / "h.h5", tmp_path / "a.h5", "--permutations", "10", check=1)
    assert p.stderr.strip() == ("minitrace: error: 10 permutations cannot give p <= 0.01: use "
                                "at least 99")


def test_plot_pages(tmp_path):
    rng = np.random.default_rng(0)
    v = 1 + 0.01 * rng.normal(size=(40, 14))
    v[30:] *= 1.1
    names = [f"s/m{j}/mean" for j in range(14)]
    cps = R.change_points(v)
    a = R.assess(v, names, np.ones(14), cps)
    from minitrace.analysis.regress_plots import plot_evolution
    dates = [f"2026-01-{d:02d}" for d in range(1, 29)] + [f"2026-02-{d:02d}" for d in range(1, 13)]
    files = plot_evolution(str(tmp_path / "e.png"), names, dates, v, a, cps, list(range(14)),
                           0.9999)
    assert files == [str(tmp_path / "e.png"), str(tmp_path / "e-2.png")]
    assert all(os.path.getsize(f) > 10_000 for f in files)
    pdf = plot_evolution(str(tmp_path / "e.pdf"), names, dates, v, a, cps, list(range(14)),
                         0.9999)
    assert pdf == [str(tmp_path / "e.pdf")]
    with open(pdf[0], "rb") as f:
        assert len(re.findall(rb"/Type /Page\b", f.read())) == 2


# -- several processes append to one history -----------------------------------------------

def test_appends_one_after_the_other(tmp_path):
    hist = tmp_path / "h.h5"
    files = [variability_file(tmp_path / f"r{i}.h5", i) for i in range(5)]
    for f in files:  # each append is its own process
        regress(hist, f, check=0)
    h = H.read(str(hist))
    assert list(h.runs["source"]) == files
    assert np.allclose(h.values[:, h.metrics.index("variability/ftq/np2/maxima/mean")],
                       [minitrace.open(f).bench("variability")["maxima"].mean() for f in files])


def test_concurrent_appends_lose_nothing(tmp_path):
    """Six processes started together, two runs each: the lock makes them take turns."""
    hist = tmp_path / "h.h5"
    files = [[variability_file(tmp_path / f"p{k}r{i}.h5", 10 * k + i) for i in range(2)]
             for k in range(6)]
    procs = [subprocess.Popen([sys.executable, "-m", "minitrace.cli", "regress", str(hist),
                               *fs], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for fs in files]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode in (0, 3), err
    h = H.read(str(hist))
    assert h.nruns == 12
    assert sorted(h.runs["source"]) == sorted(f for fs in files for f in fs)
    for fs in files:  # each process's runs are adjacent: nothing interleaves inside an append
        i = list(h.runs["source"]).index(fs[0])
        assert h.runs["source"][i + 1] == fs[1]
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".new", ".tmp"))]
