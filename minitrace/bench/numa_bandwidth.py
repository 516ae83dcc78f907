"""numa-bandwidth: the memory bandwidths of a NUMA machine's links, as the task simulator's
platform needs them (the sOMP thesis's BWB benchmark, simplified): for each NUMA node holding
the data and each count k = 1..K of threads reading it at once (pinned on the first k cores,
each its own buffer, first-touched on that node), the bandwidth each thread gets.  One thread
alone gives a core's link; all of them the node's memory link (and, from another node's cores,
the interconnect).  One rank only: the threads are the parallelism."""
from __future__ import annotations

import os
import threading

import numpy as np

from . import common

NAME = "numa-bandwidth"
HELP = "memory bandwidth per thread with 1..K pinned threads per NUMA node (task platforms)"
STORES = ("node i4, threads i4, thread i4, cpu i4, bytes i8, seconds f8, bandwidth f8 "
          "(B/s) [one row per thread and scenario]; attrs: core, memory (fitted B/s)")
KINDS = {"read": 0, "write": 1, "copy": 2}


def add_arguments(p) -> None:
    p.add_argument("--kernel", choices=list(KINDS), default="read",
                   help="what each thread does to its buffer [%(default)s]")
    p.add_argument("--mib", type=int, default=64,
                   help="MiB per thread's buffer (well beyond the caches) [%(default)s]")
    p.add_argument("--reps", type=int, default=5, help="passes over the buffer [%(default)s]")
    p.add_argument("--max-threads", type=int, default=0,
                   help="largest thread count (default: every usable core)")
    p.add_argument("--platform", metavar="XML",
                   help="also write this machine's SimGrid platform with the fitted bandwidths")
    common.common_arguments(p)


def _nodes() -> dict[int, list[int]]:
    """NUMA node -> its usable CPUs (one node holding every CPU without /sys's NUMA view)."""
    usable = sorted(os.sched_getaffinity(0))
    out = {}
    base = "/sys/devices/system/node"
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if d.startswith("node") and d[4:].isdigit():
            with open(f"{base}/{d}/cpulist") as f:
                cpus = _cpulist(f.read())
            if set(cpus) & set(usable):
                out[int(d[4:])] = [c for c in cpus if c in usable]
    return out or {0: usable}


def _cpulist(text: str) -> list[int]:
    cpus = []
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus += range(int(lo), int(hi) + 1)
        elif part:
            cpus.append(int(part))
    return cpus


def measure(cpus: list[int], home_cpu: int, kernel: str, nbytes: int, reps: int) -> list:
    """Threads pinned on ``cpus``, each streaming its own buffer first-touched from
    ``home_cpu`` (its NUMA node): [(cpu, bytes, seconds)]."""
    from . import native
    from cffi import FFI
    lib, ffi = native.load(), FFI()
    n = nbytes // 8
    buffers = []

    def touch():
        os.sched_setaffinity(0, {home_cpu})
        for _ in cpus:
            buffers.append((np.ones(n), np.ones(n) if kernel == "copy" else np.zeros(1)))
    t = threading.Thread(target=touch)
    t.start()
    t.join()
    barrier = threading.Barrier(len(cpus))
    out = [None] * len(cpus)

    def run(i, cpu):
        os.sched_setaffinity(0, {cpu})
        a, b = buffers[i]
        sink = ffi.new("double *")
        pa, pb = ffi.cast("double *", a.ctypes.data), ffi.cast("double *", b.ctypes.data)
        lib.minitrace_stream(KINDS[kernel], pa, pb, n, 1, sink)   # warm the TLB
        barrier.wait()
        secs = lib.minitrace_stream(KINDS[kernel], pa, pb, n, reps, sink)
        moved = nbytes * reps * (2 if kernel == "copy" else 1)
        out[i] = (cpu, moved, secs)
    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(cpus)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


def _rows(cols: dict, node: int, k: int) -> np.ndarray:
    return (cols["threads"] == k) & (cols["node"] == node)


def _total(cols: dict, node: int, k: int) -> float:
    """A scenario's bytes over its slowest thread's time: what the threads moved together
    (a thread descheduled by load lengthens the time, never inflates the total)."""
    rows = _rows(cols, node, k)
    return float(cols["bytes"][rows].sum() / cols["seconds"][rows].max())


def write_platform(path: str, bandwidths: dict) -> None:
    """This machine's platform (lstopo) with the measured bandwidths."""
    from ..outputs import replacing_file
    from ..tasks.numa_platform import lstopo_xml, parse_lstopo, platform_xml
    with replacing_file(path) as f:
        f.write(platform_xml(parse_lstopo(lstopo_xml(), "lstopo"), bandwidths))


def run(args) -> int:
    comm = common.mpi().COMM_WORLD
    common.require(comm.size == 1, "numa-bandwidth: run it as one rank (its threads are the "
                   "parallelism), without mpiexec -n N")
    common.require(args.mib > 0 and args.reps > 0, "numa-bandwidth: --mib and --reps must be "
                   "positive")
    nodes = _nodes()
    cores = [c for cpus in nodes.values() for c in cpus]
    k_max = args.max_threads or len(cores)
    rows = []
    for node, home in nodes.items():
        for k in range(1, min(k_max, len(cores)) + 1):
            for i, (cpu, moved, secs) in enumerate(measure(cores[:k], home[0], args.kernel,
                                                           args.mib << 20, args.reps)):
                rows.append((node, k, i, cpu, moved, secs))
    cols = {name: np.array([r[i] for r in rows]) for i, name in
            enumerate(("node", "threads", "thread", "cpu", "bytes", "seconds"))}
    cols["bandwidth"] = cols["bytes"] / cols["seconds"]
    core = float(np.median(cols["bandwidth"][cols["threads"] == 1]))
    memory = float(max(_total(cols, n, k) for n in nodes for k in np.unique(cols["threads"])))
    attrs = {"kernel": args.kernel, "mib": args.mib, "reps": args.reps, "core": core,
             "memory": memory, "load": os.getloadavg()[0], "nodes": len(nodes)}
    common.save(comm, args.output, NAME, cols, attrs, common.topology(comm))
    if args.platform:
        write_platform(args.platform, {"core": core, "l3": memory, "memory": memory})
    if not args.quiet:
        common.table(f"numa-bandwidth ({args.kernel}, {args.mib} MiB per thread)",
                     ["node", "threads", "per thread GB/s", "total GB/s"],
                     [[n, int(k), f"{cols['bandwidth'][_rows(cols, n, k)].mean() / 1e9:.2f}",
                       f"{_total(cols, n, k) / 1e9:.2f}"]
                      for n in nodes for k in np.unique(cols["threads"])])
        print(f"fitted: core {core / 1e9:.2f} GB/s, memory {memory / 1e9:.2f} GB/s "
              f"(minitrace numa-platform --bandwidth core={core:.4g},l3={memory:.4g},"
              f"memory={memory:.4g}); load average {os.getloadavg()[0]:.2f}")
    return 0
