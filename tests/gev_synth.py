"""Synthetic variability runs with a known answer: every rank's iteration time is
1 s + Gumbel(0, 10 ms) noise, so the maximum over m ranks is Gumbel with location
1 + 0.01 ln m, and E[per-iteration max at S ranks] = 1 + 0.01 (gamma + ln S)."""
import numpy as np

from minitrace.storage import write_bench

LOC, SCALE = 1.0, 0.01


def truth(nranks: int) -> float:
    return LOC + SCALE * (np.euler_gamma + np.log(nranks))


def variability(nodes: int, per_node: int, iterations: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = nodes * per_node
    times = LOC + SCALE * rng.gumbel(size=(iterations, n))
    node = np.repeat(np.arange(nodes), per_node).astype(np.int32)
    local = np.tile(np.arange(per_node), nodes).astype(np.int32)
    return times, node, local


def write_variability(path, nodes: int, per_node: int, iterations: int, seed: int = 0):
    times, node, local = variability(nodes, per_node, iterations, seed)
    write_bench(str(path), "variability",
                {"times": times, "maxima": times.max(axis=1), "node": node, "local_rank": local},
                attrs={"iterations": iterations, "workload": "synthetic-gumbel"},
                meta={"nranks": nodes * per_node})
    return str(path)
