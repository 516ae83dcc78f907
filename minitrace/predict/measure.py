"""Measure the machine a trace was (or will be) recorded on, under MPI:
``mpiexec -n N python -m minitrace.predict.measure -o mymachine.h5`` (``minitrace calibrate`` runs it).

What is measured (rank 0 with the first other rank on its node, and on another node when the
job spans nodes, as the pt2pt suite pairs them; sizes drawn log-uniformly and the whole plan
shuffled, since ordered sweeps resonate with periodic noise):

* ``pingpong``: the pt2pt suite's ping-pong: one-way time (half the round trip) and the time
  rank 0 spends in ``Send`` (the send overhead of eager messages).  Messages larger than a
  core's cache (``--cold-from``, default the L2 size) are sent as an iterative application
  sends them: from the same buffer every time, written (packed) just before the call, into the
  same buffer, read (unpacked) just after it.  Buffers taken in turn from a pool out of every
  cache (what was measured before 2026-11-28) made 1-4 MiB exchanges 2.6-3.1x as slow as a C
  program's packed buffers (``benchmarks/buffer_states.c``); an application reuses its message
  buffers (the transpose's, 24 MiB a rank, are in between: 3-6% low now, 3-7% high before);
* ``recv``: the time in ``Recv`` of a message that has already arrived (``Iprobe`` first): the
  receive overhead;
* ``isend``: the time in ``Isend`` (the request is completed outside the timed region);
* the eager/rendezvous switch: the thresholds suite's corruption probe, by bisection;
* compute: every rank runs the same matrix-product kernel at once; its flop/s per unit of thread
  CPU time (the host speed, and the rate of a trace timed in seconds), its CPU/wall ratio
  (the share of a core each rank got);
* reductions: bytes/s of ``MPI_SUM`` on doubles (``Reduce_local``);
* the kernel set (:mod:`minitrace.predict.kernels`): compute-bound, streaming memory-bound,
  cache-resident and latency-bound kernels, each one's work, CPU and wall seconds per rank, all
  ranks at once: what translates a trace recorded on another machine by more than one number;
* local copies: bytes/s of a memory copy of a block in cache (64 KiB, the same buffers) and of
  a 4 MiB block from a buffer packed just before into one read just after, every rank at once:
  what an MPI library's copy of a rank's own block in a collective costs (SimGrid's replay does
  not model it);
* fresh pages: bytes/s of a first write to memory just mapped (8 MiB, the pages an MPI library's
  temporary buffer of a large collective gets from ``malloc`` anew at each call), every rank at
  once: its page faults, which a write to pages already mapped does not pay;
* copies by working set: a copy back and forth between two buffers that together take 4 MiB
  .. 256 MiB a rank, every rank at once: where its rate falls, a rank's share of the caches
  ends, and the largest runs at the memory's rate (a collective whose buffers exceed that
  share copies and exchanges its blocks from memory: NPB FT's 32 MiB all-to-all blocks);
* ``exchange``: rank 0 and its node's partner send each other 4-16 MiB at once (Sendrecv,
  packed and unpacked buffers): both copies share the node's memory bandwidth
  (``node_bandwidth``);
* the cost of an MPI call right after a compute (:mod:`minitrace.predict.after_compute`): an
  8-byte exchange after register-only and after memory-streaming kernels of 20 us .. 2 ms, less
  the same exchange in a loop and less what the same calls on MPI_PROC_NULL lose after the same
  compute: the caches the ping-pongs keep warm and an application does not;
* the CPU time of posting a receive and of completing a request
  (:mod:`minitrace.predict.call_costs`), which SMPI's replay gives none;
* what the Python loops add to each timed call (mpi4py, clock stamps): the same loops on
  ``MPI_PROC_NULL``; the fit subtracts it, since compiled applications do not pay it.
* the load it ran under (:mod:`minitrace.predict.under_load`): per node, the cores other
  processes took on average while it measured, which make a calibration measure a slower
  machine.

Each run is appended to ``/calibration/runs`` of the output file; rank 0 then refits from every
run (:mod:`minitrace.predict.calibration`) and writes ``/calibration/fit`` and the plot.
"""
from __future__ import annotations

import argparse
import mmap
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

from . import after_compute, app_memory, call_costs, kernels, under_load
from .calibration import PACKED
from ..errors import MinitraceError
from ..provenance import cache_bytes

KINDS = ("pingpong", "recv", "isend")
TAG_DATA, TAG_ACK = 21, 22
TIMER = time.perf_counter


def add_arguments(p) -> None:
    """Measurement options (shared with ``minitrace calibrate``)."""
    p.add_argument("-o", "--output", default="calibration.h5", metavar="FILE",
                   help="calibration file; a new run is appended to an existing one and the "
                        "fit uses every run [%(default)s]")
    p.add_argument("--max-size", type=int, default=1 << 24,
                   help="largest message, bytes (sizes are drawn log-uniformly in 1 .. this) "
                        "[%(default)s]")
    p.add_argument("--nsizes", type=int, default=60, help="message sizes drawn [%(default)s]")
    p.add_argument("--reps", type=int, default=2,
                   help="repetitions of every (kind, size, pair) measurement [%(default)s]")
    p.add_argument("--iterations", type=int, default=30,
                   help="timed iterations per measurement up to 64 KiB (median kept) "
                        "[%(default)s]")
    p.add_argument("--iterations-large", type=int, default=6,
                   help="timed iterations per measurement above 64 KiB [%(default)s]")
    p.add_argument("--cold-from", type=int, default=None, metavar="BYTES",
                   help="ping-pong messages above this size are packed and unpacked as an "
                        "application's, and fitted apart (default: the L2 cache size of CPU "
                        "0; 0: none)")
    p.add_argument("--long", action="store_true",
                   help="a longer, steadier run: 4x the sizes, 3 repetitions, 2x the "
                        "iterations")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the design (default: a new one per run, so that appended "
                        "runs draw other sizes)")
    p.add_argument("--plot", metavar="PNG",
                   help="figure of the data, fitted segments and breakpoints (default: the "
                        "output file's name with .png)")
    p.add_argument("--quiet", action="store_true", help="no summary")


# -- measured loops: only MPI calls and clock stamps inside -------------------------------------
def _recv_side(comm, peer: int, receiver: bool, msg, ack, inner: int) -> np.ndarray:
    """Times in Recv of messages already arrived (the receiver probes first)."""
    out = np.empty(inner)
    recv, send, iprobe = comm.Recv, comm.Send, comm.Iprobe
    if receiver:
        for i in range(inner):
            while not iprobe(peer, TAG_DATA):
                pass
            t0 = TIMER()
            recv(msg, peer, TAG_DATA)
            out[i] = TIMER() - t0
            send(ack, peer, TAG_ACK)
    else:
        for _ in range(inner):
            send(msg, peer, TAG_DATA)
            recv(ack, peer, TAG_ACK)
    return out


def _isend_side(comm, peer: int, sender: bool, msg, ack, inner: int) -> np.ndarray:
    """Times in Isend (completed by Wait outside the timed region; an ack paces the loop)."""
    out = np.empty(inner)
    if sender:
        isend, recv = comm.Isend, comm.Recv
        for i in range(inner):
            t0 = TIMER()
            req = isend(msg, peer, TAG_DATA)
            out[i] = TIMER() - t0
            req.Wait()
            recv(ack, peer, TAG_ACK)
    else:
        recv, send = comm.Recv, comm.Send
        for _ in range(inner):
            recv(msg, peer, TAG_DATA)
            send(ack, peer, TAG_ACK)
    return out


def _pingpong(comm, peer: int, first: bool, msg, inner: int):
    """(median one-way time, mean time in Send per message) from the pt2pt suite's loop."""
    from ..bench.pt2pt import pingpong
    samples = np.empty(inner)
    _, ts, _ = pingpong(comm, peer, first, msg, inner, TIMER, samples)
    return float(np.median(samples)) / 2, ts / inner


def _pack(buf: np.ndarray, i: int) -> None:
    """Write every byte of ``buf``, as an application packs a message before sending it."""
    buf.fill(i & 0xFF)


def _unpack(buf: np.ndarray) -> int:
    """Read every cache line of ``buf``, as an application unpacks a message it received."""
    return int(buf[:len(buf) // 8 * 8].view(np.uint64).sum(dtype=np.uint64))


def _pingpong_packed(comm, peer: int, first: bool, out_buf: np.ndarray, in_buf: np.ndarray,
                     inner: int):
    """``_pingpong`` with every message packed into ``out_buf`` just before it is sent and
    unpacked from ``in_buf`` just after it arrived, the same buffers every time; the
    partner's unpack and pack between the two messages of a round trip are timed by the
    partner and taken out."""
    send, recv = comm.Send, comm.Recv
    out, held, in_send = np.empty(inner), np.zeros(inner), 0.0
    for i in range(inner):
        if first:
            _pack(out_buf, i)
            t0 = TIMER()
            send(out_buf, peer, TAG_DATA)
            t1 = TIMER()
            recv(in_buf, peer, TAG_DATA)
            out[i] = TIMER() - t0
            in_send += t1 - t0
            _unpack(in_buf)
        else:
            recv(in_buf, peer, TAG_DATA)
            t0 = TIMER()
            _unpack(in_buf)
            _pack(out_buf, i)
            held[i] = TIMER() - t0
            send(out_buf, peer, TAG_DATA)
    if not first:
        comm.Send(held, peer, TAG_ACK)
        return None
    comm.Recv(held, peer, TAG_ACK)
    return float(np.median(out - held)) / 2, in_send / inner


def _cold_from(args) -> int:
    """Message size above which the ping-pong's messages are packed and unpacked
    (``--cold-from``, else L2)."""
    if args.cold_from is not None:
        return args.cold_from
    return cache_bytes("L2") or 1 << 20


def _exchange(comm, topo: dict, max_size: int, inner: int = 5) -> dict | None:
    """Rank 0 and the first other rank on its node send each other a message at once
    (``Sendrecv``, packed just before and unpacked just after), sizes 4 MiB .. ``max_size``:
    rank 0 gets the median time per size.  Both copies go through the node's memory: two 4 MiB
    messages took 1.5x as long as one here, which a loopback link that does not share its
    bandwidth misses."""
    from ..bench import pt2pt
    sizes = [s for s in (4 << 20, 8 << 20, 16 << 20) if s <= max_size]
    intra = [p for kind, p in pt2pt.pairs_from(topo) if kind == "intra"]
    if not sizes or not intra or comm.rank not in (0, intra[0]):
        comm.Barrier()
        return None
    peer = intra[0] if comm.rank == 0 else 0
    out_buf, in_buf = app_memory.array(sizes[-1]), app_memory.array(sizes[-1])
    ack = np.zeros(1, np.uint8)
    times = []
    for size in sizes:
        t = np.empty(inner + 1)
        a, b = out_buf[:size], in_buf[:size]
        for i in range(inner + 1):       # (the first one warms the path)
            _pack(a, i)
            comm.Sendrecv(ack, peer, TAG_ACK, ack, peer, TAG_ACK)   # (aligns the two ranks)
            t0 = TIMER()
            comm.Sendrecv(a, peer, TAG_DATA, b, peer, TAG_DATA)
            t[i] = TIMER() - t0
            _unpack(b)
        times.append(float(np.median(t[1:])))
    comm.Barrier()
    return {"exchange_size": np.array(sizes, np.int64), "exchange_time": np.array(times)} \
        if comm.rank == 0 else None


def _python_costs(comm, inner: int = 2000) -> dict:
    """Median seconds the loops above add to each measured call besides MPI (mpi4py's call,
    the clock stamps): the same loops on MPI_PROC_NULL, which returns at once.  A compiled
    application does not pay them, so the fit subtracts them."""
    from mpi4py import MPI
    from ..bench.pt2pt import pingpong
    null, msg = MPI.PROC_NULL, memoryview(np.zeros(8, np.uint8))
    samples = np.empty(inner)
    _, ts, _ = pingpong(comm, null, True, msg, inner, TIMER, samples)
    out = {"pingpong": float(np.median(samples)) / 2, "send": ts / inner}
    for kind, call in (("recv", lambda: comm.Recv(msg, null, TAG_DATA)),
                       ("isend", lambda: comm.Isend(msg, null, TAG_DATA))):
        t = np.empty(inner)
        for i in range(inner):
            t0 = TIMER()
            call()
            t[i] = TIMER() - t0
        out[kind] = float(np.median(t))
    return out


# -- the run --------------------------------------------------------------------------------
def _design(args, seed: int, pairs):
    from ..bench import pt2pt
    design = SimpleNamespace(design="random", max_size=args.max_size, nsizes=args.nsizes,
                             seed=seed, reps=args.reps, order="shuffled")
    sizes = sorted(set(pt2pt.plan_sizes(design)) | {1, args.max_size})
    return sizes, pt2pt.plan(design, sizes, list(KINDS), pairs)


#: background windows spread over the network measurements (calibration.background)
PROBES = 8
PROBE_SECONDS = 0.1


def _network(comm, args, seed: int, topo: dict, cold_from: int, spent: dict) -> dict:
    """Every planned measurement between rank 0 and its partners; rank 0 gets the columns.
    Before every ``len(plan) / PROBES``-th measurement all ranks compute for PROBE_SECONDS, a
    window of the machine's background (``spent["probe_<i>"]``) at that moment of the run."""
    from ..bench import pt2pt
    pairs = pt2pt.pairs_from(topo)
    sizes, items = _design(args, seed, pairs)
    buf = app_memory.array(args.max_size, fill=0)
    ack = np.zeros(1, np.uint8)
    mv = memoryview(buf)
    measures = comm.rank == 0 or comm.rank in {p[1] for p in pairs}
    large = (app_memory.array(args.max_size), app_memory.array(args.max_size)) \
        if measures and 0 < cold_from < args.max_size else None
    n = len(items)
    t = np.full(n, np.nan)
    t_send = np.full(n, np.nan)
    inner_of = np.array([args.iterations if s <= 65536 else args.iterations_large
                         for _, s, _, _ in items], np.int32)
    probe_at = set(np.linspace(0, n, PROBES, endpoint=False).astype(int).tolist())
    for j, (kind, size, _rep, p) in enumerate(items):
        if j in probe_at:
            comm.Barrier()
            _window(spent, f"probe_{len(probe_at & set(range(j)))}", _probe, PROBE_SECONDS)
        comm.Barrier()
        partner = pairs[p][1]
        if comm.rank not in (0, partner):
            continue
        peer = partner if comm.rank == 0 else 0
        msg, inner = mv[:size], int(inner_of[j])
        if kind == "pingpong" and large is not None and size > cold_from:
            bufs = [b[:size] for b in large]
            _pingpong_packed(comm, peer, comm.rank == 0, *bufs, 2)
            got = _pingpong_packed(comm, peer, comm.rank == 0, *bufs, inner)
            if got is not None:
                t[j], t_send[j] = got
        elif kind == "pingpong":
            _pingpong(comm, peer, comm.rank == 0, msg, 2)
            t[j], t_send[j] = _pingpong(comm, peer, comm.rank == 0, msg, inner)
        elif kind == "recv":
            _recv_side(comm, peer, comm.rank == 0, msg, ack, 2)
            t[j] = float(np.median(_recv_side(comm, peer, comm.rank == 0, msg, ack, inner)))
        else:
            _isend_side(comm, peer, comm.rank == 0, msg, ack, 2)
            t[j] = float(np.median(_isend_side(comm, peer, comm.rank == 0, msg, ack, inner)))
    return {"kind": np.array([k for k, _, _, _ in items], dtype=object),
            "size": np.array([s for _, s, _, _ in items], np.int64),
            "pair": np.array([pairs[p][0] for _, _, _, p in items], dtype=object),
            "peer": np.array([pairs[p][1] for _, _, _, p in items], np.int32),
            "inner": inner_of, "time": t, "t_send": t_send}


def _threshold(comm, max_size: int) -> list[int] | None:
    """[last size copied at Isend, first size not copied] (the corruption probe), or None."""
    from ..bench.thresholds import bisect, corruption_probe
    buf = np.zeros(max_size, np.uint8)
    rbuf = np.zeros(max_size, np.uint8)
    found, _ = bisect(lambda s: corruption_probe(comm, s, buf, rbuf, 0.02, TIMER)[0],
                      1, max_size, 4)
    return list(found) if found else None


def _probe(seconds: float) -> None:
    """Compute for ``seconds`` (160x160 matrix products: _compute's kernel)."""
    a = np.random.default_rng(0).random((160, 160))
    b = a.copy()
    t0 = TIMER()
    while TIMER() - t0 < seconds:
        b = a @ b
        b *= 1.0 / 160


def _compute(comm, seconds: float = 0.3) -> dict:
    """Each rank's flop/s per CPU second on a matrix-product kernel, and its CPU/wall ratio, all
    ranks at once (as an application runs)."""
    n = 160
    a = np.random.default_rng(comm.rank).random((n, n))
    b = a.copy()
    a @ b
    comm.Barrier()
    reps, w0, c0 = 0, TIMER(), time.thread_time()
    while TIMER() - w0 < seconds:
        for _ in range(8):
            b = a @ b
            b *= 1.0 / n
        reps += 8
    wall, cpu = TIMER() - w0, time.thread_time() - c0
    flops = 2.0 * n ** 3 * reps
    got = comm.gather((flops, cpu, wall), root=0)
    return None if got is None else {k: np.array([g[i] for g in got])
                                     for i, k in enumerate(("flops", "cpu", "wall"))}


def _copies(comm, seconds: float = 0.05, size: int = 4 << 20) -> np.ndarray | None:
    """Each rank's bytes/s of memory copies [in cache (64 KiB, the same buffers), of ``size``
    bytes from a buffer packed just before into one unpacked just after (a collective's copy
    of a rank's own block)], all ranks at once (rows: ranks)."""
    comm.Barrier()
    a, b = np.ones(64 << 10, np.uint8), np.zeros(64 << 10, np.uint8)
    n, t0 = 0, TIMER()
    while TIMER() - t0 < seconds:
        np.copyto(b, a)
        n += 1
    hot = n * a.nbytes / (TIMER() - t0)
    comm.Barrier()
    src, dst = app_memory.array(size), app_memory.array(size)
    took, t0 = [], TIMER()
    while TIMER() - t0 < seconds or len(took) < 5:
        _pack(src, len(took))
        t1 = TIMER()
        np.copyto(dst, src)
        took.append(TIMER() - t1)
        _unpack(dst)
    got = comm.gather((hot, size / float(np.median(took))), root=0)
    return None if got is None else np.array(got)


def _fresh_pages(comm, size: int = 8 << 20, reps: int = 5) -> np.ndarray | None:
    """Each rank's bytes/s of a first write to ``size`` bytes just mapped (anonymous ``mmap``,
    as ``malloc`` maps a large block), all ranks at once: the median of ``reps``.  MPICH's
    reduce of 4 MiB at 2 ranks took 3.3-3.7 ms, its non-root rank faulting in 1.5 pages a
    page of the message at every call (two temporary buffers, given back at their free); with
    glibc told to keep its memory 0.9-1.1 ms (session 35, loaded)."""
    took = []
    comm.Barrier()
    for _ in range(reps):
        pages = mmap.mmap(-1, size)
        a = np.frombuffer(pages, dtype=np.uint8)
        t0 = TIMER()
        a.fill(1)
        took.append(TIMER() - t0)
        del a
        pages.close()
    got = comm.gather(size / float(np.median(took)), root=0)
    return None if got is None else np.array(got)


#: Working sets of the copies by working set (bytes a rank, both buffers together)
CACHE_SIZES = tuple(w << 20 for w in (4, 8, 16, 32, 64, 128, 256))


def _cache_copies(comm, local: int, reps: int = 5) -> dict | None:
    """Bytes/s of a memory copy between two buffers of half a working set each (there and back,
    the same two buffers), every rank at once, per working set of CACHE_SIZES that the node's
    ``local`` ranks can hold in a quarter of its memory: the median over ranks, on rank 0.
    On the 2-core VM 13.5 GB/s up to 32 MiB a rank, 10-13 at 64, 6.5 from 128 MiB (the
    memory's rate): a copy of an application's 32 MiB block in an all-to-all ran at 6.0
    (issue 35)."""
    from mpi4py import MPI
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    sizes = [w for w in CACHE_SIZES if w * local <= memory // 4]
    # the sizes every node can hold: each size is a Barrier, and nodes of other memory sizes
    # or rank counts would otherwise wait in different ones
    sizes = sizes[:comm.allreduce(len(sizes), op=MPI.MIN)]
    rates = []
    for size in sizes:
        src, dst = app_memory.array(size // 2), app_memory.array(size // 2, fill=2)
        took = []
        comm.Barrier()
        for _ in range(reps + 1):         # (the first one is not kept)
            t0 = TIMER()
            np.copyto(dst, src)
            np.copyto(src, dst)
            took.append((TIMER() - t0) / 2)
        rates.append(size / 2 / float(np.median(took[1:])))
        del src, dst
    got = comm.gather(rates, root=0)
    if got is None or not sizes:
        return None
    return {"cache_size": np.array(sizes, np.int64),
            "cache_copy_rate": np.median(np.array(got), axis=0)}


def _reduction(comm, nbytes: int = 1 << 20, seconds: float = 0.1) -> np.ndarray | None:
    """Each rank's bytes/s of MPI_SUM on doubles (Reduce_local)."""
    from mpi4py import MPI
    a = np.ones(nbytes // 8)
    b = np.ones(nbytes // 8)
    MPI.SUM.Reduce_local(a, b)
    comm.Barrier()
    reps, c0, w0 = 0, time.thread_time(), TIMER()
    while TIMER() - w0 < seconds:
        MPI.SUM.Reduce_local(a, b)
        reps += 1
    rate = nbytes * reps / max(time.thread_time() - c0, 1e-9)
    got = comm.gather(rate, root=0)
    return None if got is None else np.array(got)


def run(comm, args) -> dict | None:
    """Measure everything; rank 0 returns the run (columns and attributes), others None."""
    from ..bench.common import metadata, pin_blas_threads, topology
    from ..bench.pt2pt import pairs_from
    pin_blas_threads(1)           # (the matrix products of _compute and the probes)
    if comm.size < 2:
        raise MinitraceError("calibrate needs at least 2 ranks (a pair to measure)")
    if args.max_size < 2 or args.nsizes < 1 or args.reps < 1 or args.iterations < 1 \
            or args.iterations_large < 1:
        raise MinitraceError("calibrate: --max-size must be >= 2 and --nsizes, --reps, "
                             "--iterations, --iterations-large >= 1")
    if args.long:
        args.nsizes, args.reps = args.nsizes * 4, max(args.reps, 3)
        args.iterations, args.iterations_large = args.iterations * 2, args.iterations_large * 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    seed = comm.bcast(seed, root=0)
    topo = topology(comm)
    cores = comm.gather(os.cpu_count() or 1, root=0)
    t0 = time.time()
    window = under_load.start(comm, topo["local_rank"][comm.rank] == 0)
    cold_from = comm.bcast(_cold_from(args) if comm.rank == 0 else None, root=0)
    spent = {}
    columns = _network(comm, args, seed, topo, cold_from, spent)
    threshold = _threshold(comm, args.max_size)
    compute = _compute(comm)
    reduction = _window(spent, "reduction", _reduction, comm)
    copies = _window(spent, "copies", _copies, comm)
    fresh = _fresh_pages(comm)
    mine = topo["rank_to_node"][comm.rank]
    kernel_set = kernels.measure(comm, topo["rank_to_node"].count(mine))
    by_working_set = _cache_copies(comm, topo["rank_to_node"].count(mine)) or {}
    after = after_compute.measure(comm, spent)
    exchange = _exchange(comm, topo, args.max_size) or {}
    python_costs = _python_costs(comm)
    intra = [p for kind, p in pairs_from(topo) if kind == "intra"]
    posting = call_costs.measure(comm, intra[0] if intra else None)
    other_load = under_load.stop(comm, window, topo["rank_to_node"])
    windows = comm.gather(spent, root=0)
    if comm.rank != 0:
        return None
    meta = metadata(comm, topo)
    attrs = {"seed": seed, "nranks": comm.size, "hosts": topo["hosts"],
             "rank_to_node": topo["rank_to_node"], "cores": cores,
             "max_size": args.max_size, "nsizes": args.nsizes, "reps": args.reps,
             "cold_from": cold_from, "buffers": PACKED,
             "iterations": args.iterations, "iterations_large": args.iterations_large,
             "eager_threshold": threshold if threshold else "no switch found",
             "mpi_library": meta["mpi_library"], "cpu_model": meta["cpu_model"],
             "date": meta["date"], "seconds": time.time() - t0, "timer": "time.perf_counter",
             "kernel": "160x160 float64 matrix products, one BLAS thread per rank",
             "python_costs": python_costs, "kernels_version": kernels.VERSION,
             "call_costs": posting or {},
             "windows": list(spent), under_load.ATTR: other_load,
             "kernels": {k: f"{what} ({unit})" for k, (unit, what) in kernels.KERNELS.items()}}
    columns.update({"compute_flops": compute["flops"], "compute_cpu": compute["cpu"],
                    "compute_wall": compute["wall"], "reduction_rate": reduction,
                    "copy_rate_hot": copies[:, 0], "copy_rate_cold": copies[:, 1],
                    "fresh_page_rate": fresh,
                    **kernel_set, **after, **exchange, **by_working_set,
                    **{f"window_{q}": np.array([[w[k][i] for k in spent] for w in windows])
                       for i, q in enumerate(("cpu", "wall"))}})
    return {"columns": columns, "attrs": attrs}


def _window(spent: dict, name: str, phase, *args):
    """``phase(*args)``, its thread CPU and wall seconds on this rank kept in
    ``spent[name]``: a window of the machine's background (calibration.background)."""
    c0, w0 = time.thread_time(), TIMER()
    out = phase(*args)
    spent[name] = (time.thread_time() - c0, TIMER() - w0)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m minitrace.predict.measure`` under mpiexec: measure, append the run, refit."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    p = argparse.ArgumentParser(prog="python -m minitrace.predict.measure",
                                description="Calibrate this machine for minitrace predict "
                                            "(run under mpiexec with at least 2 ranks).")
    add_arguments(p)
    from ..bench.__main__ import on_root, parse_quietly_off_root, run_mpi_job
    args = parse_quietly_off_root(p, argv)

    def job() -> int:
        from .calibration import append_run, check_library, refit, summary
        from ..provenance import mpi_library
        from ..storage import check_appendable
        on_root(comm, lambda: (check_appendable(args.output),
                               check_library(args.output, mpi_library())))
        got = run(comm, args)

        def save() -> None:
            append_run(args.output, got)
            cal = refit(args.output, args.plot or os.path.splitext(args.output)[0] + ".png")
            if not args.quiet:
                print(summary(cal, args.output))
        on_root(comm, save)
        return 0
    return run_mpi_job(comm, "minitrace calibrate", job)


if __name__ == "__main__":
    sys.exit(main())
