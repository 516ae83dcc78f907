"""Scan and exscan: recursive doubling (SimGrid's replay has no scan)."""
from __future__ import annotations


def recursive_doubling(me, p, root, bs, br, vec):
    out, mask = [], 1
    while mask < p:
        partner = me ^ mask
        if partner < p:
            out.append(("sendrecv", partner, bs, partner, bs))
        mask <<= 1
    return out


STEPS = {"scan": {"recursive doubling": recursive_doubling},
         "exscan": {"recursive doubling": recursive_doubling}}
