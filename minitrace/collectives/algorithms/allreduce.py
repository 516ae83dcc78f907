"""Allreduce algorithms (SimGrid's ``colls/allreduce/``).  Counts are bytes: the TI replay's
datatype is MPI_BYTE."""
from __future__ import annotations

from .bcast import binomial_tree
from .common import pof2_below


def _on_power_of_two(core):
    """An allreduce on the largest power of two ``pof2`` <= p: of the first 2*(p - pof2)
    members the even ones hand their data to the odd ones before ``core`` (on ``newrank``s,
    ``real`` mapping them back) and get the result back after it."""
    def steps(me, p, root, bs, br, vec):
        out = []
        pof2 = pof2_below(p)
        rem = p - pof2
        if me < 2 * rem:
            if me % 2 == 0:
                out.append(("send", me + 1, bs))
                newrank = -1
            else:
                out.append(("recv", me - 1, bs))
                newrank = me // 2
        else:
            newrank = me - rem

        def real(nd: int) -> int:
            return nd * 2 + 1 if nd < rem else nd + rem

        if newrank != -1:
            out += core(newrank, pof2, real, bs)
        if me < 2 * rem:
            out.append(("send", me - 1, bs) if me % 2 else ("recv", me + 1, bs))
        return out
    return steps


@_on_power_of_two
def rdb(newrank, pof2, real, bs):
    """Recursive doubling: the whole buffer with newrank ^ mask, log2(pof2) times."""
    out, mask = [], 1
    while mask < pof2:
        dst = real(newrank ^ mask)
        out.append(("sendrecv", dst, bs, dst, bs))
        mask <<= 1
    return out


@_on_power_of_two
def rab_rdb(newrank, pof2, real, bs):
    """Rabenseifner's: a reduce-scatter by recursive halving, an allgather by doubling."""
    out = []
    cnts = [bs // pof2] * (pof2 - 1) + [bs - (bs // pof2) * (pof2 - 1)]
    mask, send_idx, recv_idx, last_idx = 1, 0, 0, pof2
    while mask < pof2:
        nd = newrank ^ mask
        if newrank < nd:
            send_idx = recv_idx + pof2 // (mask * 2)
            sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
        else:
            recv_idx = send_idx + pof2 // (mask * 2)
            sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
        out.append(("sendrecv", real(nd), sc, real(nd), rc))
        send_idx = recv_idx
        mask <<= 1
        if mask < pof2:
            last_idx = recv_idx + pof2 // mask
    mask >>= 1
    while mask > 0:
        nd = newrank ^ mask
        if newrank < nd:
            if mask != pof2 // 2:
                last_idx = last_idx + pof2 // (mask * 2)
            recv_idx = send_idx + pof2 // (mask * 2)
            sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
        else:
            recv_idx = send_idx - pof2 // (mask * 2)
            sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
        out.append(("sendrecv", real(nd), sc, real(nd), rc))
        if newrank > nd:
            send_idx = recv_idx
        mask >>= 1
    return out


def redbcast(me, p, root, bs, br, vec):
    """A reduce to 0 then a bcast from 0, as SimGrid's defaults run them (the reduce
    non-blocking and linear, the bcast a binomial tree)."""
    red = [("send", 0, bs)] if me else [("all", [], [(i, bs) for i in range(1, p)])]
    return red + binomial_tree(me, p, 0, bs, bs, vec)


def lr(me, p, root, bs, br, vec):
    """Ring reduce-scatter then ring allgather of p blocks of bs // p bytes; what does not
    divide (and a buffer smaller than p bytes) goes through ``redbcast``."""
    if bs < p:
        return redbcast(me, p, root, bs, br, vec)
    n = bs // p
    ring = [("sendrecv", (me + 1) % p, n, (me - 1) % p, n)] * (2 * (p - 1))
    return ring + (redbcast(me, p, root, bs % p, br, vec) if bs % p else [])


STEPS = {"allreduce": {"rdb": rdb, "rab_rdb": rab_rdb, "redbcast": redbcast, "lr": lr}}
