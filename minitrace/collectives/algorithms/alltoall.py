"""Alltoall(v, w) algorithms (SimGrid's ``colls/alltoall/``, ``colls/alltoallv/``)."""
from __future__ import annotations


def _exchanges(pairwise: bool, counted: bool):
    """An alltoall's exchanges: with ``me ^ i`` (``pair``, p a power of two) or with ``me + i``
    and ``me - i`` (``ring``), of ``bytes_sent/p`` and ``bytes_recv/p`` or (``counted``: the
    v and w forms) the vector's per-peer counts."""
    def steps(me, p, root, bs, br, vec):
        out = []
        for i in range(p):
            dst, src = (me ^ i, me ^ i) if pairwise else ((me + i) % p, (me - i) % p)
            if dst == me and src == me:
                continue
            out.append(("sendrecv", dst, vec[dst], src, vec[p + src]) if counted
                       else ("sendrecv", dst, bs // p, src, br // p))
        return out
    return steps


STEPS = {kind: {"pair": _exchanges(True, kind != "alltoall"),
                "ring": _exchanges(False, kind != "alltoall")}
         for kind in ("alltoall", "alltoallv", "alltoallw")}
