"""Reduce-scatter: a binomial reduce of everything to member 0, then its linear scatterv of each
member's count."""
from __future__ import annotations

from .gather import scatterv_linear
from .reduce import binomial

NAME = "binomial reduce + linear scatterv"


def _reduce_then_scatterv(counts_of):
    """``counts_of(p, bytes_recv, vector)``: each member's count."""
    def steps(me, p, root, bs, br, vec):
        counts = counts_of(p, br, vec)
        total = sum(counts)
        return binomial(me, p, 0, total, total, []) + scatterv_linear(me, p, 0, 0, counts[me],
                                                                      counts)
    return steps


STEPS = {"reduce_scatter": {NAME: _reduce_then_scatterv(lambda p, br, vec: vec)},
         "reduce_scatter_block": {NAME: _reduce_then_scatterv(lambda p, br, vec: [br] * p)}}
