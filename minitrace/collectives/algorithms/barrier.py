"""Barrier algorithms (SimGrid's ``colls/barrier/barrier-ompi.cpp``)."""
from __future__ import annotations

from .common import pof2_below


def ompi_bruck(me, p, root, bs, br, vec):
    """Dissemination: ceil(log2 p) rounds, to me + d and from me - d."""
    out, d = [], 1
    while d < p:
        out.append(("sendrecv", (me + d) % p, 0, (me - d) % p, 0))
        d <<= 1
    return out


def ompi_recursivedoubling(me, p, root, bs, br, vec):
    """Pairwise exchanges with me ^ mask on the largest power of two; the ranks above it enter
    through a partner below and are released by it."""
    adj = pof2_below(p)
    out = []
    if adj != p:
        if me >= adj:
            out.append(("sendrecv", me - adj, 0, me - adj, 0))
        elif me < p - adj:
            out.append(("recv", me + adj, 0))
    if me < adj:
        mask = 1
        while mask < adj:
            out.append(("sendrecv", me ^ mask, 0, me ^ mask, 0))
            mask <<= 1
    if adj != p and me < p - adj:
        out.append(("send", me + adj, 0))
    return out


def ompi_basic_linear(me, p, root, bs, br, vec):
    """Everyone reports to rank 0, which then releases everyone."""
    if me:
        return [("send", 0, 0), ("recv", 0, 0)]
    return [("all", [], [(i, 0) for i in range(1, p)]), ("all", [(i, 0) for i in range(1, p)], [])]


STEPS = {"barrier": {"ompi_bruck": ompi_bruck, "ompi_recursivedoubling": ompi_recursivedoubling,
                     "ompi_basic_linear": ompi_basic_linear}}
