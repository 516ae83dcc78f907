"""Allgather(v) algorithms (SimGrid's ``colls/allgather/``, ``colls/allgatherv/``)."""
from __future__ import annotations


def ring(me, p, root, bs, br, vec):
    return [("sendrecv", (me + i) % p, bs, (me - i) % p, br // p) for i in range(1, p)]


def ring_v(me, p, root, bs, br, vec):
    return [("sendrecv", (me + i) % p, bs, (me - i) % p, vec[(me - i) % p])
            for i in range(1, p)]


def rdb(me, p, root, bs, br, vec):
    """Recursive doubling (p a power of two): all it holds with me ^ mask."""
    out, mask = [], 1
    while mask < p:
        out.append(("sendrecv", me ^ mask, mask * bs, me ^ mask, mask * (br // p)))
        mask <<= 1
    return out


def pair(me, p, root, bs, br, vec):
    """Its own block with me ^ i, for i = 1 .. p - 1 (p a power of two)."""
    return [("sendrecv", me ^ i, bs, me ^ i, br // p) for i in range(1, p)]


STEPS = {"allgather": {"ring": ring, "rdb": rdb, "pair": pair},
         "allgatherv": {"ring": ring_v}}
