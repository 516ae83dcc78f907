"""pt2pt: ping-pong, ping-ping and windowed bandwidth between rank pairs, over a fixed
power-of-two grid (OSU style) or a randomized design (seed 000, ch. 10): sizes drawn
log-uniformly and every measurement's position shuffled, since ordered sweeps resonate with
periodic system noise.  Send and Recv are timed separately to calibrate the overheads."""
from __future__ import annotations

import math
import time

import numpy as np

from ..options import choice_list
from . import common

NAME = "pt2pt"
HELP = "ping-pong / ping-ping / windowed bandwidth, grid or randomized (shuffled) sizes"
STORES = ("one row per measurement, in executed order: kind, size i8, rep i4, order i4, pair, "
          "peer i4, inner i4, t_roundtrip f8, t_iter f8, t_send f8, t_recv f8, bandwidth f8, "
          "peer_t_send f8, peer_t_recv f8; samples / peer_samples f8 [n, max inner] "
          "(per-iteration times, NaN-padded)")
KINDS = ("pingpong", "pingping", "bandwidth")
TAG_PING, TAG_PP, TAG_BW, TAG_ACK = 11, 12, 13, 14
# Durations only, each on its own rank: the cheapest monotonic clock Python has (measured
# ~1.5x cheaper per call than MPI.Wtime through mpi4py).
TIMER = time.perf_counter


def add_arguments(p) -> None:
    """Options of the suite (shared by ``python -m minitrace.bench`` and ``minitrace bench``)."""
    p.add_argument("--design", choices=("grid", "random"), default="grid",
                   help="grid: powers of two from 1 B to --max-size; random: --nsizes sizes "
                        "floor(10**U(0, log10(max-size))) bytes (log-uniform; 10**U(0, 9) with "
                        "the 1 GB maximum) [%(default)s]")
    p.add_argument("--order", choices=("sequential", "shuffled"), default=None,
                   help="order of the measurements (kind x size x repetition x pair): "
                        "shuffled is a seeded permutation of the whole plan; default: "
                        "sequential for grid, shuffled for random")
    p.add_argument("--kinds", default=",".join(KINDS),
                   help="comma-separated subset of pingpong,pingping,bandwidth [%(default)s]")
    p.add_argument("--max-size", type=int, default=1 << 22, help="largest message, bytes "
                   "[%(default)s]")
    p.add_argument("--nsizes", type=int, default=40, help="sizes drawn by the random design "
                   "[%(default)s]")
    p.add_argument("--reps", type=int, default=3,
                   help="repetitions of every (kind, size, pair) measurement [%(default)s]")
    p.add_argument("--iterations", type=int, default=100,
                   help="timed inner iterations per measurement (messages <= --large-size) "
                        "[%(default)s]")
    p.add_argument("--iterations-large", type=int, default=20,
                   help="timed inner iterations per measurement above --large-size "
                        "[%(default)s]")
    p.add_argument("--large-size", type=int, default=1 << 16, help="[%(default)s]")
    p.add_argument("--skip", type=int, default=5,
                   help="untimed warm-up iterations before each measurement [%(default)s]")
    p.add_argument("--window", type=int, default=64,
                   help="messages in flight per iteration of the bandwidth test [%(default)s]")
    common.common_arguments(p)


# -- the measured loops (shared with benchmarks/bench_pt2pt_vs_c.py) -------------------------
# Inside the loops only MPI calls and clock stamps (TIMER) stored into a preallocated list (the
# cheapest bookkeeping Python offers); sums and samples are computed after the loop.
def _split(stamps: list, samples: np.ndarray):
    """stamps = [t0, mid_1, end_1, mid_2, end_2, ...] -> (total, sum of first halves,
    sum of second halves); samples[i] = end_i - end_{i-1}."""
    t = np.asarray(stamps)
    d = np.diff(t)
    samples[:len(d) // 2] = t[2::2] - t[:-1:2]
    return t[-1] - t[0], float(d[0::2].sum()), float(d[1::2].sum())


def pingpong(comm, peer: int, first: bool, msg, inner: int, wtime, samples: np.ndarray):
    """``inner`` round trips; returns (total, time in Send, time in Recv) on this rank and
    fills ``samples`` with each round trip.  ``first`` sends first."""
    send, recv = comm.Send, comm.Recv
    st = [0.0] * (2 * inner + 1)
    st[0] = wtime()
    if first:
        for i in range(1, 2 * inner, 2):
            send(msg, peer, TAG_PING)
            st[i] = wtime()
            recv(msg, peer, TAG_PING)
            st[i + 1] = wtime()
        total, ts, tr = _split(st, samples)
    else:
        for i in range(1, 2 * inner, 2):
            recv(msg, peer, TAG_PING)
            st[i] = wtime()
            send(msg, peer, TAG_PING)
            st[i + 1] = wtime()
        total, tr, ts = _split(st, samples)
    return total, ts, tr


def pingping(comm, peer: int, msg, rmsg, inner: int, wtime, samples: np.ndarray):
    """Both ranks send at once (Isend, Recv, Wait); Send time = Isend + Wait."""
    isend, recv = comm.Isend, comm.Recv
    st = [0.0] * (3 * inner + 1)
    st[0] = wtime()
    for i in range(1, 3 * inner, 3):
        req = isend(msg, peer, TAG_PP)
        st[i] = wtime()
        recv(rmsg, peer, TAG_PP)
        st[i + 1] = wtime()
        req.Wait()
        st[i + 2] = wtime()
    t = np.asarray(st)
    d = np.diff(t)
    samples[:inner] = t[3::3] - t[:-1:3]
    return t[-1] - t[0], float(d[0::3].sum() + d[2::3].sum()), float(d[1::3].sum())


def bandwidth(comm, peer: int, first: bool, msg, ack, inner: int, window: int, wtime,
              samples: np.ndarray):
    """OSU-style window: ``window`` sends (receives on the peer) in flight, Waitall, a 1-byte
    ack back.  The window is ``window`` persistent requests made before the timed loop and
    started with one Startall, so that Python's per-call cost does not cap the bandwidth of
    small messages.  Send time = Startall + Waitall; Recv time = the ack (sender) / the
    Startall + Waitall (receiver)."""
    from mpi4py import MPI
    waitall, startall = MPI.Request.Waitall, MPI.Prequest.Startall
    make = comm.Send_init if first else comm.Recv_init
    reqs = [make(msg, peer, TAG_BW) for _ in range(window)]
    reply = comm.Recv if first else comm.Send
    st = [0.0] * (2 * inner + 1)
    st[0] = wtime()
    for i in range(1, 2 * inner, 2):
        startall(reqs)
        waitall(reqs)
        st[i] = wtime()
        reply(ack, peer, TAG_ACK)
        st[i + 1] = wtime()
    for r in reqs:
        r.Free()
    total, a, b = _split(st, samples)
    return (total, a, b) if first else (total, b, a)


# -- design ---------------------------------------------------------------------------------
def plan_sizes(args) -> list[int]:
    """Message sizes of the design (grid: powers of two; random: seeded log-uniform draws)."""
    if args.design == "grid":
        return [1 << k for k in range(int(math.log2(args.max_size)) + 1)]
    hi = math.log10(args.max_size)
    u = common.rng(args.seed, 0).uniform(0.0, hi, args.nsizes)
    return [int(min(args.max_size, math.floor(10 ** x))) for x in u]


def pairs_from(topo: dict) -> list[tuple[str, int]]:
    """Rank 0 with the first other rank on its node (intra) and on another node (inter)."""
    nodes = topo["rank_to_node"]
    out = []
    intra = [r for r in range(1, len(nodes)) if nodes[r] == nodes[0]]
    inter = [r for r in range(1, len(nodes)) if nodes[r] != nodes[0]]
    if intra:
        out.append(("intra", intra[0]))
    if inter:
        out.append(("inter", inter[0]))
    return out


def plan(args, sizes: list[int], kinds: list[str], pairs) -> list[tuple]:
    """(kind, size, rep, pair index) per measurement, in executed order."""
    items = [(k, s, r, p) for k in kinds for s in sizes for r in range(args.reps)
             for p in range(len(pairs))]
    order = args.order or ("sequential" if args.design == "grid" else "shuffled")
    if order == "shuffled":
        perm = common.rng(args.seed, 2).permutation(len(items))
        items = [items[i] for i in perm]
    return items


def _check(args, size: int) -> list[str]:
    kinds = choice_list(args.kinds, KINDS, "pt2pt", "--kinds")
    req = common.require
    req(size >= 2, "pt2pt needs at least 2 ranks")
    for opt, value, low in (("--max-size", args.max_size, 1), ("--nsizes", args.nsizes, 1),
                            ("--reps", args.reps, 1), ("--iterations", args.iterations, 1),
                            ("--iterations-large", args.iterations_large, 1),
                            ("--large-size", args.large_size, 0), ("--skip", args.skip, 0),
                            ("--window", args.window, 1)):
        req(value >= low, f"pt2pt: {opt} must be >= {low}")
    return kinds


def run(args) -> int:
    """Measure every planned item between rank 0 and its partner; rank 0 writes."""
    MPI = common.mpi()
    comm = MPI.COMM_WORLD
    kinds = _check(args, comm.size)
    topo = common.topology(comm)
    pairs = pairs_from(topo)
    sizes = plan_sizes(args)
    items = plan(args, sizes, kinds, pairs)
    n = len(items)
    inner_of = [args.iterations if s <= args.large_size else args.iterations_large
                for _, s, _, _ in items]
    width = max(inner_of)
    buf = np.zeros(args.max_size, np.uint8)
    rbuf = np.zeros(args.max_size, np.uint8)
    ack = np.zeros(1, np.uint8)
    mv, rmv = memoryview(buf), memoryview(rbuf)
    t_iter = np.full(n, np.nan)
    t_send = np.full(n, np.nan)
    t_recv = np.full(n, np.nan)
    samples = np.full((n, width), np.nan)
    wtime = TIMER
    bar = common.Progress(comm, n, "pt2pt", args.quiet)
    for j, (kind, size, _rep, p) in enumerate(items):
        comm.Barrier()
        peer_of_0 = pairs[p][1]
        me = comm.rank
        if me in (0, peer_of_0):
            peer = peer_of_0 if me == 0 else 0
            inner = inner_of[j]
            msg, rmsg = mv[:size], rmv[:size]
            scratch = np.empty(max(args.skip, 1))
            if kind == "pingpong":
                pingpong(comm, peer, me == 0, msg, args.skip, wtime, scratch)
                tot, ts, tr = pingpong(comm, peer, me == 0, msg, inner, wtime, samples[j])
            elif kind == "pingping":
                pingping(comm, peer, msg, rmsg, args.skip, wtime, scratch)
                tot, ts, tr = pingping(comm, peer, msg, rmsg, inner, wtime, samples[j])
            else:
                bandwidth(comm, peer, me == 0, msg, ack, args.skip, args.window, wtime, scratch)
                tot, ts, tr = bandwidth(comm, peer, me == 0, msg, ack, inner, args.window,
                                        wtime, samples[j])
            per = inner * (args.window if kind == "bandwidth" else 1)
            t_iter[j], t_send[j], t_recv[j] = tot / inner, ts / per, tr / per
        bar.update()
    bar.close()
    # Everything below is outside the measurements: collect the partner's side on rank 0.
    partner = np.array([pairs[p][1] for _, _, _, p in items], np.int32)
    peer_send, peer_recv, peer_samples = _from_partner(comm, partner, t_send, t_recv, samples)
    columns = None
    if comm.rank == 0:
        kind_col = np.array([k for k, _, _, _ in items], dtype=object)
        size_col = np.array([s for _, s, _, _ in items], np.int64)
        inner_col = np.array(inner_of, np.int32)
        is_pp = kind_col == "pingpong"
        is_bw = kind_col == "bandwidth"
        bw = np.where(is_bw, size_col * args.window / t_iter, np.nan)
        columns = {
            "kind": kind_col, "size": size_col,
            "rep": np.array([r for _, _, r, _ in items], np.int32),
            "order": np.arange(n, dtype=np.int32),
            "pair": np.array([pairs[p][0] for _, _, _, p in items], dtype=object),
            "peer": partner, "inner": inner_col,
            "t_roundtrip": np.where(is_pp, t_iter, np.nan), "t_iter": t_iter,
            "t_send": t_send, "t_recv": t_recv, "bandwidth": bw,
            "peer_t_send": peer_send, "peer_t_recv": peer_recv,
            "samples": samples, "peer_samples": peer_samples}
    attrs = {"design": args.design,
             "order": args.order or ("sequential" if args.design == "grid" else "shuffled"),
             "seed": args.seed, "nranks": comm.size, "kinds": kinds, "planned_sizes": sizes,
             "reps": args.reps, "pairs": [[name, 0, r] for name, r in pairs],
             "max_size": args.max_size, "iterations": args.iterations,
             "iterations_large": args.iterations_large, "large_size": args.large_size,
             "skip": args.skip, "window": args.window, "timer": "time.perf_counter",
             "t_roundtrip": "seconds per round trip, averaged over the inner iterations",
             "t_send": "seconds in Send per message on rank 0 (pingping: Isend + Wait; "
                       "bandwidth: Startall + Waitall of the persistent window, per message)",
             "t_recv": "seconds in Recv per message on rank 0 (bandwidth: the ack Recv, "
                       "per message)"}
    common.save(comm, args.output, NAME, columns, attrs, topo)
    if comm.rank == 0 and not args.quiet:
        _print_table(args, columns)
    return 0


def _from_partner(comm, partner, t_send, t_recv, samples):
    """Rank 0 receives each non-zero rank's own Send/Recv times and samples."""
    if comm.rank == 0:
        ps, pr, psam = t_send.copy(), t_recv.copy(), samples.copy()
        for r in sorted(set(partner.tolist())):
            rows = np.nonzero(partner == r)[0]
            a = np.empty((len(rows), 2 + samples.shape[1]))
            comm.Recv(a, r, TAG_ACK + 1)
            ps[rows], pr[rows], psam[rows] = a[:, 0], a[:, 1], a[:, 2:]
        return ps, pr, psam
    rows = np.nonzero(partner == comm.rank)[0]
    if len(rows):
        comm.Send(np.column_stack([t_send[rows], t_recv[rows], samples[rows]]), 0, TAG_ACK + 1)
    return None, None, None


def _print_table(args, c) -> None:
    for pair in dict.fromkeys(c["pair"].tolist()):
        rows = {}
        for j in np.nonzero(c["pair"] == pair)[0]:
            s = int(c["size"][j])
            key = s if args.design == "grid" else 1 << int(math.log2(s))
            rows.setdefault(key, {}).setdefault(c["kind"][j], []).append(j)
        out = []
        for key in sorted(rows):
            r = rows[key]
            med = lambda k, col: (float(np.median(c[col][r[k]])) if k in r else float("nan"))
            out.append([key, med("pingpong", "t_roundtrip") * 0.5e6,
                        med("pingpong", "t_send") * 1e6, med("pingpong", "t_recv") * 1e6,
                        med("pingping", "t_iter") * 1e6, med("bandwidth", "bandwidth") / 1e6])
        first = "size(B)" if args.design == "grid" else "size bin(B)"
        common.table(f"minitrace pt2pt ({pair}-node, {args.design} design, medians over reps) "
                     f"-> {args.output}",
                     [first, "latency(us)", "send(us)", "recv(us)", "pingping(us)", "bw(MB/s)"],
                     out)
