"""Reduce algorithms (SimGrid's ``colls/reduce/``)."""
from __future__ import annotations


def binomial(me, p, root, bs, br, vec):
    out, rel = [], (me - root) % p
    if bs == 0:
        return out
    mask = 1
    while mask < p:
        if mask & rel == 0:
            src = rel | mask
            if src < p:
                out.append(("recv", (src + root) % p, bs))
        else:
            out.append(("send", ((rel & ~mask) + root) % p, bs))
            break
        mask <<= 1
    return out


def ompi_basic_linear(me, p, root, bs, br, vec):
    """Every member sends to the root, which receives from p - 1 down to 0."""
    if me != root:
        return [("send", root, bs)]
    return [("recv", i, bs) for i in range(p - 1, -1, -1) if i != root]


STEPS = {"reduce": {"binomial": binomial, "ompi_basic_linear": ompi_basic_linear}}
