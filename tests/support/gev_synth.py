"""Synthetic variability runs with a known answer.

The default run: every rank's iteration time is 1 s + Gumbel(0, 10 ms) noise, so the maximum
over m ranks is Gumbel with location 1 + 0.01 ln m, and E[per-iteration max at S ranks] =
1 + 0.01 (gamma + ln S).  ``PARENTS`` adds the per-rank distributions of the coverage study
(tests/test_gev_coverage.py, benchmarks/bench_gev_coverage.py): a normal, right-skewed
lognormals, a heavy-tailed GEV and Frechet, and normal ranks with rare stragglers
(``Straggling``), all with a mean near 1 s; ``parent_truth`` is the exact
E[max over S ranks] of each (numerical integration, closed form for the GEV).
"""
import numpy as np
from scipy import integrate, stats

from minitrace.analysis import emma
from minitrace.analysis.projection import Variability
from minitrace.storage import write_bench

LOC, SCALE = 1.0, 0.01



class Straggling:
    """Normal(1, 0.05) per-rank times plus ``size`` seconds on a rank-iteration with
    probability ``p``, chosen so that ``share`` of the iterations at ``at`` ranks hold one
    (issue 28: 1% at 16 ranks is 47% at 1,024)."""

    def __init__(self, share: float, size: float, at: int = 16):
        self.p = -np.expm1(np.log1p(-share) / at)
        self.size = size
        self.body = stats.norm(1.0, 0.05)

    def rvs(self, size, random_state):
        x = self.body.rvs(size=size, random_state=random_state)
        return x + self.size * (random_state.random(size) < self.p)

    def cdf(self, x):
        return (1 - self.p) * self.body.cdf(x) + self.p * self.body.cdf(x - self.size)

    def mean(self) -> float:
        return 1.0 + self.p * self.size

    def expected_max(self, m: int) -> float:
        """E[max of m draws] by integrating 1 - F^m and F^m around 1 s."""
        with np.errstate(under="ignore"):
            up = integrate.quad(lambda x: -np.expm1(m * np.log(max(self.cdf(x), 1e-300))),
                                1.0, 1.0 + self.size + 1.0, limit=400,
                                points=[1.0 + self.size])[0]
            down = integrate.quad(lambda x: self.cdf(x) ** m, 0.0, 1.0, limit=200)[0]
        return 1.0 + up - down


PARENTS = {
    "normal": stats.norm(1.0, 0.05),
    "lognormal": stats.lognorm(0.25, scale=np.exp(-0.25 ** 2 / 2)),
    "gev": stats.genextreme(-0.1, loc=1.0, scale=0.05),
    # issue 28's heavy parents: lognormal(0, 0.1) and a Frechet of tail index 5 (xi 0.2),
    # mean 1, standard deviation 0.05
    "lognormal-0.1": stats.lognorm(0.1),
    "frechet": stats.invweibull(5, loc=1 - 0.05 / 0.3659 * 1.1642, scale=0.05 / 0.3659),
    # normal ranks with rare stragglers: share of the iterations at 16 ranks, size (s)
    "straggle-1%-0.3s": Straggling(0.01, 0.3),
    "straggle-5%-0.3s": Straggling(0.05, 0.3),
    "straggle-1%-1s": Straggling(0.01, 1.0),
    "straggle-1%-0.15s": Straggling(0.01, 0.15),
}


def truth(nranks: int) -> float:
    return LOC + SCALE * (np.euler_gamma + np.log(nranks))


def parent_truth(parent: str, nranks: int) -> float:
    """E[max of ``nranks`` iid draws of the parent]: what a projection to nranks estimates."""
    d = PARENTS[parent]
    if isinstance(d, Straggling):
        return d.expected_max(nranks)
    if parent == "gev":
        c, loc, scale = d.args[0], d.kwds["loc"], d.kwds["scale"]
        return float(emma.expected_max_gev(loc, scale, c, nranks))
    return float(emma.expected_max(d, nranks))


def layout(nodes: int, per_node: int):
    """node and local_rank of each rank, nodes filled one after the other."""
    return (np.repeat(np.arange(nodes), per_node).astype(np.int32),
            np.tile(np.arange(per_node), nodes).astype(np.int32))


def parent_run(parent: str, nodes: int, per_node: int, iterations: int,
               seed: int) -> Variability:
    """A run whose every (iteration, rank) time is an independent draw of the parent."""
    rng = np.random.default_rng(seed)
    times = PARENTS[parent].rvs(size=(iterations, nodes * per_node), random_state=rng)
    return Variability(times, *layout(nodes, per_node))


def variability(nodes: int, per_node: int, iterations: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = nodes * per_node
    times = LOC + SCALE * rng.gumbel(size=(iterations, n))
    return (times, *layout(nodes, per_node))


def write_variability(path, nodes: int, per_node: int, iterations: int, seed: int = 0,
                      parent: str | None = None):
    """Write a synthetic run (Gumbel ranks, or every time drawn from ``parent``)."""
    if parent is None:
        times, node, local = variability(nodes, per_node, iterations, seed)
    else:
        v = parent_run(parent, nodes, per_node, iterations, seed)
        times, node, local = v.times, v.node, v.local_rank
    write_bench(str(path), "variability",
                {"times": times, "maxima": times.max(axis=1), "node": node, "local_rank": local},
                attrs={"iterations": iterations, "workload": f"synthetic-{parent or 'gumbel'}"},
                meta={"nranks": nodes * per_node})
    return str(path)
