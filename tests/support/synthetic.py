"""Synthetic, loop-like traces of any size, for tests and benchmarks of storage and validation."""
from __future__ import annotations

import numpy as np

from minitrace import kinds as K
from minitrace.extrapolate.grid import Grid, dims_create
from minitrace.model import TraceColumns, assign_vec_offsets, empty_actions

LOOP = ["compute", "irecv", "isend", "waitall", "compute", "allreduce", "compute", "send",
        "recv", "alltoallv"]


def in_turn(b, rank: int, dur: float | None = None, gap: float = 0.0):
    """``add(kind, dur, **columns)``: ``rank``'s next action on the TraceBuilder ``b``, from
    where its last one ended plus ``gap`` (the first at 0), lasting ``dur`` (default: the
    given one)."""
    t = 0.0

    def add(kind, dur=dur, **kw):
        nonlocal t
        b.add(rank, kind, t_start=t, t_end=t + dur, **kw)
        t += dur + gap
    return add


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


def stencil_trace(nranks: int, iterations: int, timed: bool = True, seed: int = 0) -> TraceColumns:
    """A 2-D periodic halo exchange: per rank init, ``iterations`` x (4 irecv, 4 isend to the
    grid neighbours, waitall of the 8, jittered compute, 8-byte allreduce), finalize."""
    rng = np.random.default_rng(seed)
    px = max(d for d in range(1, int(np.sqrt(nranks)) + 1) if nranks % d == 0)
    body = ["irecv"] * 4 + ["isend"] * 4 + ["waitall", "compute", "allreduce"]
    per = 2 + iterations * len(body)
    kind = np.concatenate([[K.CODE["init"]], np.tile([K.CODE[k] for k in body], iterations),
                           [K.CODE["finalize"]]]).astype(np.uint8)
    a = empty_actions(per * nranks)
    offsets = np.arange(nranks + 1, dtype=np.int64) * per
    it = np.arange(iterations)
    waitall_vec = (it[:, None] * 8 + np.arange(8)).ravel()
    for r in range(nranks):
        s = a[offsets[r]:offsets[r + 1]]
        x, y = r % px, r // px
        py = nranks // px
        nb = [y * px + (x - 1) % px, y * px + (x + 1) % px, ((y - 1) % py) * px + x,
              ((y + 1) % py) * px + x]
        s["kind"] = kind
        loop = s[1:-1].reshape(iterations, len(body))
        loop["peer"][:, :8] = nb + nb
        loop["tag"][:, :8] = [0, 1, 2, 3, 1, 0, 3, 2]
        loop["bytes_recv"][:, :4] = 8 * 1024
        loop["bytes_sent"][:, 4:8] = 8 * 1024
        loop["request"][:, :8] = it[:, None] * 8 + np.arange(8)
        loop["vec_len"][:, 8] = 8
        loop["bytes_sent"][:, 10] = loop["bytes_recv"][:, 10] = 8
        loop["volume"][:, 9] = np.rint(rng.normal(1e-3, 3e-5, iterations) * 1e9) / 1e9
        if timed:
            dur = rng.exponential(2e-6, per)
            dur[1:-1].reshape(iterations, len(body))[:, 9] = loop["volume"][:, 9]
            gap = rng.exponential(1e-7, per)
            start = np.cumsum(dur + gap) - dur
            s["t_start"] = np.rint(start * 1e9) / 1e9
            s["t_end"] = np.rint((start + dur) * 1e9) / 1e9
    assign_vec_offsets(a)
    vectors = np.tile(waitall_vec, nranks).astype(np.int64)
    return TraceColumns(a, offsets, vectors, meta={"volume_unit": "seconds"})


def halo_1d_trace(nranks: int, scaling: str = "weak", periodic: bool = True,
                  seed: int = 0, root_output: bool = False) -> TraceColumns:
    """A 1-D halo exchange with a residual allreduce, at ``nranks`` with known laws in p: per
    rank init, n x (irecv left, irecv right, isend right, isend left, waitall, compute,
    8-byte allreduce), finalize.  ``weak``: n = 4 + 2 log2(p) iterations of 1 ms compute;
    ``strong``: 10 iterations of 8 ms / p.  Halos of 8 KiB; jitter 0.5 %.  Non-periodic: the
    ends skip the calls to or from their missing neighbour (three rank classes).
    ``root_output``: rank 0 also computes 0.2 ms x p before finalize (writing everyone's
    output: a class of its own)."""
    return halo_grid_trace(nranks, (nranks,), scaling, periodic, seed, root_output, cart=False)


def halo_grid_trace(nranks: int, dims: tuple | int = 2, scaling: str = "weak",
                    periodic: bool = True, seed: int = 0, root_output: bool = False,
                    cart: bool = True) -> TraceColumns:
    """:func:`halo_1d_trace` on a Cartesian grid: ``dims`` the extents, or a number of
    dimensions for MPI_Dims_create's grid; per iteration and dimension irecv from the low
    and the high neighbour (tags 2d, 2d + 1), isend to the high and the low one, then one
    waitall, the compute and the allreduce (same laws; under strong scaling the halo along
    dimension k is a face of the block, 8 KiB x 2^(ndims - 1) x d_k / p).  ``cart``: a
    ``cart_create`` after init (its vector the extents and periods) and every call after it
    on that communicator (id 1); else on WORLD, the grid left to be inferred from the
    peers."""
    if isinstance(dims, int):
        dims = dims_create(nranks, dims)
    grid = Grid(tuple(dims), (periodic,) * len(dims))
    rng = np.random.default_rng(seed)
    p = nranks
    iterations = int(4 + 2 * np.log2(p)) if scaling == "weak" else 10
    compute = 1e-3 if scaling == "weak" else 8e-3 / p
    # strong scaling: a face of the block, perpendicular to k, shrinks as d_k / p
    face = [8192 if scaling == "weak" else int(round(8192 * 2 ** (len(dims) - 1) * d / p))
            for d in dims]
    comm = 1 if cart else 0
    head = 2 if cart else 1
    blocks, vectors = [], []
    for r in range(p):
        c = grid.coords(r)
        sides = [(s, k, 2 * k + t) for k in range(len(dims)) for s, t in ((-1, 0), (+1, 1))]

        def there(s, k):                    # a neighbour at offset s along dimension k
            return periodic or 0 <= c[k] + s < dims[k]
        body = [("irecv", s, k, t) for s, k, t in sides if there(s, k)] + \
            [("isend", -s, k, t) for s, k, t in sides if there(-s, k)]
        body += [("waitall", 0, 0, -1), ("compute", 0, 0, -1), ("allreduce", 0, 0, -1)]
        n = len(body)
        extra = int(root_output and r == 0)
        a = empty_actions(head + 1 + iterations * n + extra)
        a["kind"][0], a["kind"][-1] = K.CODE["init"], K.CODE["finalize"]
        if cart:
            a["kind"][1], a["request"][1] = K.CODE["cart_create"], 1
            a["vec_len"][1] = 2 * len(dims)
            vectors.append(np.array(list(dims) + [int(periodic)] * len(dims), np.int64))
        if extra:
            a["kind"][-2], a["volume"][-2] = K.CODE["compute"], 2e-4 * p
        loop = a[head:head + iterations * n].reshape(iterations, n)
        nreq = len(body) - 3
        for j, (kind, s, k, tag) in enumerate(body):
            loop["kind"][:, j] = K.CODE[kind]
            if kind in ("irecv", "isend"):
                step = np.zeros(len(dims), np.int64)
                step[k] = s
                loop["peer"][:, j] = grid.shift(np.array([r]), step[None])[0]
                loop["tag"][:, j] = tag
                loop["bytes_recv" if kind == "irecv" else "bytes_sent"][:, j] = face[k]
                loop["request"][:, j] = np.arange(iterations) * nreq + j
        loop["comm"] = comm
        loop["vec_len"][:, nreq] = nreq
        loop["volume"][:, nreq + 1] = np.rint(
            compute * rng.normal(1, 0.005, iterations) * 1e9) / 1e9
        loop["bytes_sent"][:, nreq + 2] = loop["bytes_recv"][:, nreq + 2] = 8
        blocks.append(a)
        vectors.append(np.arange(iterations * nreq, dtype=np.int64))
    actions = np.concatenate(blocks)
    assign_vec_offsets(actions)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    world = np.arange(p, dtype=np.int32)
    return TraceColumns(actions, offsets, np.concatenate(vectors),
                        comms={0: world, 1: world} if cart else {0: world},
                        meta={"volume_unit": "seconds"})


def calibration_run(seed: int = 0, nranks: int = 2, eager_below: int = 65536) -> dict:
    """A calibration run as ``predict.measure`` stores it (columns and attributes, see
    docs/FORMAT.md) of a made-up machine: 2 us + size / 5 GB/s one way, eager below
    ``eager_below`` bytes; for tests of calibration files that need no MPI job."""
    rng = np.random.default_rng(seed)
    sizes = np.unique(np.geomspace(1, 1 << 20, 24).astype(np.int64))
    kinds = np.repeat(["pingpong", "recv", "isend"], len(sizes) * 3)
    size = np.tile(np.repeat(sizes, 3), 3)
    noise = 1 + 0.01 * rng.standard_normal(len(size))
    eager = size < eager_below
    time = np.where(kinds == "pingpong", 2e-6 + size / 5e9 + np.where(eager, 6e-7, 0),
                    np.where(kinds == "recv", 3e-7 + size / 4e10, 4e-7 + size / 5e10)) * noise
    t_send = np.where(kinds == "pingpong", np.where(eager, 3e-7 + size / 5e10, 1e-7), np.nan)
    n = len(size)
    columns = {"kind": kinds.astype(object), "size": size,
               "pair": np.full(n, "intra", dtype=object), "peer": np.ones(n, np.int32),
               "inner": np.full(n, 10, np.int32), "time": time, "t_send": t_send,
               "compute_flops": np.full(nranks, 4.1e9), "compute_cpu": np.full(nranks, 1.0),
               "compute_wall": np.full(nranks, 1.02), "reduction_rate": np.full(nranks, 3e9),
               "copy_rate_hot": np.full(nranks, 2e10), "copy_rate_cold": np.full(nranks, 8e9)}
    attrs = {"seed": seed, "nranks": nranks, "hosts": ["node"], "rank_to_node": ["node"] * nranks,
             "cores": [nranks] * nranks, "max_size": int(sizes[-1]), "nsizes": len(sizes),
             "reps": 3, "cold_from": 1 << 22, "iterations": 10, "iterations_large": 3,
             "eager_threshold": [eager_below - 1, eager_below], "mpi_library": "synthetic",
             "cpu_model": "synthetic", "date": "2026-11-26T00:00:00+00:00", "seconds": 1.0,
             "timer": "time.perf_counter", "kernel": "synthetic",
             "python_costs": {"pingpong": 1e-7, "send": 5e-8, "recv": 5e-8, "isend": 5e-8}}
    return {"columns": columns, "attrs": attrs}
