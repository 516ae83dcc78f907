"""Synthetic, loop-like traces of any size, for tests and benchmarks of storage and validation."""
from __future__ import annotations

import numpy as np

from . import kinds as K
from .model import TraceColumns, assign_vec_offsets, empty_actions

LOOP = ["compute", "irecv", "isend", "waitall", "compute", "allreduce", "compute", "send",
        "recv", "alltoallv"]


def loop_trace(nranks: int, total: int, timed: bool, seed: int = 0) -> TraceColumns:
    """A regular trace: each rank repeats LOOP with ring peers, jittered compute and times."""
    rng = np.random.default_rng(seed)
    per = total // nranks
    a = empty_actions(per * nranks)
    pattern = np.array([K.CODE[k] for k in LOOP], dtype=np.uint8)
    kind = np.tile(pattern, per // len(LOOP) + 1)[:per]
    offsets = np.arange(nranks + 1, dtype=np.int64) * per
    vectors = []
    for r in range(nranks):
        s = slice(offsets[r], offsets[r + 1])
        a["kind"][s] = kind
        send, recv = K.mask(K.SENDS)[kind], K.mask(K.RECVS)[kind]
        a["peer"][s] = np.where(send | recv, (r + 1) % nranks, -1)
        a["tag"][s] = np.where(send | recv, 7, -1)
        a["bytes_sent"][s] = np.where(send, 8192, 0)
        a["bytes_recv"][s] = np.where(recv, 8192, 0)
        comp = kind == K.CODE["compute"]
        a["volume"][s] = np.where(comp, np.rint(rng.normal(2e-4, 1e-5, per) * 1e9) / 1e9, 0)
        a["vec_len"][s] = np.where(kind == K.CODE["alltoallv"], 2 * nranks, 0)
        n_vec = int((kind == K.CODE["alltoallv"]).sum())
        vectors.append(np.tile(np.full(2 * nranks, 1024, np.int64), n_vec))
        if timed:
            dur = np.where(comp, a["volume"][s], rng.exponential(2e-6, per))
            gap = rng.exponential(1e-7, per)
            start = np.cumsum(dur + gap) - dur
            a["t_start"][s] = np.rint(start * 1e9) / 1e9
            a["t_end"][s] = np.rint((start + dur) * 1e9) / 1e9
    assign_vec_offsets(a)
    return TraceColumns(a, offsets, np.concatenate(vectors), meta={"volume_unit": "seconds"})


def ring_trace(P: int, total: int) -> TraceColumns:
    """A loop-like ring: per rank init, (isend, irecv, waitall, allreduce) x N, compute, finalize."""
    per = total // P
    steps = (per - 2) // 4
    kinds = np.array([K.CODE[k] for k in ("isend", "irecv", "waitall", "allreduce")], np.uint8)
    blocks = []
    for r in range(P):
        a = empty_actions(per)
        a["kind"][0], a["kind"][-1] = K.CODE["init"], K.CODE["finalize"]
        body = a[1:1 + 4 * steps]
        body["kind"] = np.tile(kinds, steps)
        body["peer"][0::4] = (r + 1) % P
        body["peer"][1::4] = (r - 1) % P
        body["tag"][0::4] = body["tag"][1::4] = 0
        body["bytes_sent"][0::4] = body["bytes_recv"][1::4] = 1024
        body["request"][0::4] = np.arange(steps) * 2
        body["request"][1::4] = np.arange(steps) * 2 + 1
        body["vec_len"][2::4] = 2
        body["bytes_sent"][3::4] = body["bytes_recv"][3::4] = 8
        a[1 + 4 * steps:-1]["kind"] = K.CODE["compute"]
        blocks.append(a)
    actions = np.concatenate(blocks)
    assign_vec_offsets(actions)
    vec = np.tile(np.stack([np.arange(steps) * 2, np.arange(steps) * 2 + 1], 1).ravel(), P)
    return TraceColumns(actions, np.arange(P + 1) * per, vec.astype(np.int64))
