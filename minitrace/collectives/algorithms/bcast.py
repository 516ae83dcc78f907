"""Broadcast algorithms (SimGrid's ``colls/bcast/``)."""
from __future__ import annotations


def binomial_tree(me, p, root, bs, br, vec):
    out, rel = [], (me - root) % p
    n = bs if me == root else br
    mask = 1
    while mask < p:
        if rel & mask:
            out.append(("recv", (me - mask) % p, n))
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            out.append(("send", (me + mask) % p, n))
        mask >>= 1
    return out


STEPS = {"bcast": {"binomial_tree": binomial_tree}}
