"""Synthetic variability runs with a known answer.

The default run: every rank's iteration time is 1 s + Gumbel(0, 10 ms) noise, so the maximum
over m ranks is Gumbel with location 1 + 0.01 ln m, and E[per-iteration max at S ranks] =
1 + 0.01 (gamma + ln S).  ``PARENTS`` adds the per-rank distributions of the coverage study
(tests/test_gev_coverage.py, benchmarks/bench_gev_coverage.py): a normal, a right-skewed
lognormal and a heavy-tailed GEV, all with a mean near 1 s; ``parent_truth`` is the exact
E[max over S ranks] of each (numerical integration, closed form for the GEV).
"""
import numpy as np
from scipy import stats

from minitrace.analysis import emma
from minitrace.analysis.projection import Variability
from minitrace.storage import write_bench

LOC, SCALE = 1.0, 0.01

PARENTS = {
    "normal": stats.norm(1.0, 0.05),
    "lognormal": stats.lognorm(0.25, scale=np.exp(-0.25 ** 2 / 2)),
    "gev": stats.genextreme(-0.1, loc=1.0, scale=0.05),
}


def truth(nranks: int) -> float:
    return LOC + SCALE * (np.euler_gamma + np.log(nranks))


def parent_truth(parent: str, nranks: int) -> float:
    """E[max of ``nranks`` iid draws of the parent]: what a projection to nranks estimates."""
    d = PARENTS[parent]
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


def write_variability(path, nodes: int, per_node: int, iterations: int, seed: int = 0):
    times, node, local = variability(nodes, per_node, iterations, seed)
    write_bench(str(path), "variability",
                {"times": times, "maxima": times.max(axis=1), "node": node, "local_rank": local},
                attrs={"iterations": iterations, "workload": "synthetic-gumbel"},
                meta={"nranks": nodes * per_node})
    return str(path)
