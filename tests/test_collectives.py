"""One table of collective algorithms (minitrace/collectives/selection.py): the MPI library that
ran the program decides, for world and sub-communicator collectives alike, in replay and
predict alike."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from minitrace.collectives import library_of, lowered_as, resolve, select, world_plan
from minitrace.errors import MinitraceError
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.platforms import Cluster

MPICH = "MPICH Version:      4.3.0\nMPICH Release date: Mon Feb  3 09:09:47 AM CST 2025"
OMPI = "Open MPI v5.0.8, package: Open MPI root@host Distribution, ident: 5.0.8, repo rev: v5.0.8"


def test_the_library_is_read_from_the_recorded_version_string():
    assert library_of({"mpi_library": MPICH}) == "mpich"
    assert library_of({"mpi_library": OMPI}) == "ompi"
    assert library_of({"mpi_library": "Intel(R) MPI Library 2021.10"}) == "mpich"
    assert library_of({}) is None
    assert resolve("auto", {"mpi_library": OMPI}) == "ompi"
    assert resolve("auto", {}) == "simgrid"
    assert resolve("mpich", {"mpi_library": OMPI}) == "mpich"
    with pytest.raises(MinitraceError, match="unknown --collectives 'intel'"):
        resolve("intel", {})


# Open MPI 4's fixed decision rules as SimGrid 4.1's smpi_openmpi_selector.cpp has them
# (commutative operations), read off the C++ by hand: (kind, p, bytes sent, bytes received)
OMPI_POINTS = [
    (("allreduce", 2, 4, 4), "lr"),              # comm < 4, total < 8: ring
    (("allreduce", 2, 100, 100), "rdb"),         # total < 4096: recursive doubling
    (("allreduce", 2, 300000, 300000), "rab_rdb"),   # >= 262144: rabenseifner
    (("allreduce", 300, 1000, 1000), "redbcast"),    # 256 <= comm < 512, < 4096: nonoverlapping
    (("barrier", 3, 0, 0), "ompi_recursivedoubling"),
    (("barrier", 5, 0, 0), "ompi_basic_linear"),
    (("barrier", 100, 0, 0), "ompi_bruck"),
    (("alltoallv", 2, 0, 0), "pair"),
    (("alltoallv", 10, 0, 0), "ompi_basic_linear"),
]


@pytest.mark.parametrize("args,algo", OMPI_POINTS, ids=[f"{a[0]}-{a[1]}-{a[2]}" for a, _ in
                                                        OMPI_POINTS])
def test_open_mpi_table_matches_its_source(args, algo):
    assert select("ompi", *args) == algo


def test_mpich_rules_follow_its_thresholds():
    assert select("mpich", "allreduce", 8, 2048, 2048) == "rdb"
    assert select("mpich", "allreduce", 8, 2049, 2049) == "rab_rdb"
    assert select("mpich", "bcast", 16, 12288, 0) == "scatter_rdb_allgather"
    assert select("mpich", "bcast", 8, 1 << 20, 0) == "binomial_tree"     # p <= 8
    assert select("mpich", "allgather", 4, 1000, 4000) == "rdb"
    assert select("mpich", "allgather", 6, 1000, 6000) == "bruck"
    # what the lowering does not write is lowered as the nearest algorithm, and says so
    assert lowered_as("mpich", "allgather", 6, 1000, 6000) == ("bruck", "ring")
    assert lowered_as("mpich", "gather", 6, 1000, 6000) == ("ompi_binomial", "ompi_binomial")


def _rows(kinds_sizes, comm=0):
    b = TraceBuilder(4, meta={"volume_unit": "flops"})
    if comm:
        b.add_comm(comm, [0, 1, 2, 3])
    for r in range(4):
        b.add(r, "init")
        for kind, n in kinds_sizes:
            b.add(r, kind, bytes_sent=n, bytes_recv=n, comm=comm, volume=1e3)
        b.add(r, "finalize")
    return b.build()


def test_world_plan_sets_one_option_per_kind_or_lowers_it():
    one = _rows([("allreduce", 8), ("allreduce", 8), ("barrier", 0)]).actions
    assert world_plan(one, 4, "mpich", {}) == ({"smpi/allreduce": "rdb",
                                                "smpi/barrier": "ompi_bruck"}, set())
    mixed = _rows([("allreduce", 8), ("allreduce", 100000)]).actions
    assert world_plan(mixed, 4, "mpich", {}) == ({}, {"allreduce"})
    assert world_plan(mixed, 4, "mpich", {"smpi/allreduce": "lr"}) == ({}, set())
    assert world_plan(one, 4, "simgrid", {}) == ({}, set())
    # Open MPI's non-overlapping allreduce runs its own reduce and bcast where the lowering
    # writes them; its binomial reduce and k-nomial bcast at 300 ranks, which it does not, are
    # the nearest ones it writes, never SimGrid's linear defaults
    opts, _ = world_plan(_rows([("allreduce", 300000)]).actions, 2, "ompi", {})
    assert opts == {"smpi/allreduce": "rab_rdb"}
    opts, low = world_plan(_rows([("allreduce", 1000)]).actions, 300, "ompi", {})
    assert opts == {"smpi/allreduce": "redbcast", "smpi/reduce": "binomial",
                    "smpi/bcast": "binomial_tree"} and low == set()
    # an algorithm the lowering does not write is lowered as the nearest one, never an option
    # (Open MPI's k-nomial bcast as an option aborts SimGrid 4.1's replay: munmap_chunk())
    assert select("ompi", "bcast", 8, 1000, 1000) == "mvapich2_knomial_intra_node"
    assert world_plan(_rows([("bcast", 1000)]).actions, 8, "ompi", {}) == ({}, {"bcast"})


def test_an_algorithm_simgrid_cannot_replay_is_lowered():
    b = TraceBuilder(8, meta={"volume_unit": "flops", "mpi_library": OMPI})
    for r in range(8):
        b.add(r, "init")
        b.add(r, "compute", volume=1e6 * (1 + r % 3))
        b.add(r, "bcast", peer=0, bytes_sent=1000 if r == 0 else 0,
              bytes_recv=0 if r == 0 else 1000)
        b.add(r, "finalize")
    r = replay(b.build(), cluster=Cluster(8, speed="1Gf", bandwidth="1GBps", latency="10us"),
               engine="native")
    assert "smpi/bcast" not in r.config
    assert any("bcast on MPI_COMM_WORLD (point-to-point, binomial_tree for "
               "mvapich2_knomial_intra_node)" in n for n in r.notes), r.notes


def _solver(comm: int, library: str):
    """4 ranks computing unevenly around allreduces of two sizes on ``comm`` (0, or a
    communicator of the same members)."""
    b = TraceBuilder(4, meta={"volume_unit": "flops", "mpi_library": library})
    if comm:
        b.add_comm(comm, [0, 1, 2, 3])
    for r in range(4):
        b.add(r, "init")
        for it in range(5):
            b.add(r, "compute", volume=1e6 * (1 + (r + it) % 3))
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, comm=comm, volume=1e3)
            b.add(r, "allreduce", bytes_sent=80000, bytes_recv=80000, comm=comm, volume=1e4)
        b.add(r, "finalize")
    return b.build()


CLUSTER = Cluster(4, speed="1Gf", bandwidth="1GBps", latency="10us")


@pytest.mark.parametrize("library", [MPICH, OMPI])
def test_a_collective_costs_the_same_on_world_and_on_a_duplicate(library):
    world = replay(_solver(0, library), cluster=CLUSTER, engine="native", timeline=True)
    dup = replay(_solver(7, library), cluster=CLUSTER, engine="native", timeline=True)
    assert world.simulated_time == pytest.approx(dup.simulated_time, rel=1e-9)
    # and the lowered messages count as collectives in where the time goes
    a, b = world.breakdown(), dup.breakdown()
    assert b["collectives"].to_numpy() == pytest.approx(a["collectives"].to_numpy(), rel=1e-9)
    assert (b["point-to-point"] == 0).all() and (b["collectives"] > 0).all()
    simgrid = replay(_solver(0, library), cluster=CLUSTER, engine="native",
                     collectives="simgrid")
    assert simgrid.simulated_time != pytest.approx(world.simulated_time, rel=1e-6)


def test_auto_follows_the_recorded_library():
    data = _solver(0, OMPI)
    small = _rows([("allreduce", 8)])
    small.meta["mpi_library"] = OMPI
    r = replay(small, cluster=CLUSTER, engine="native")
    assert r.config["smpi/allreduce"] == select("ompi", "allreduce", 4, 8, 8)
    auto = replay(data, cluster=CLUSTER, engine="native").simulated_time
    ompi = replay(data, cluster=CLUSTER, engine="native", collectives="ompi").simulated_time
    mpich = replay(data, cluster=CLUSTER, engine="native", collectives="mpich").simulated_time
    assert auto == ompi and not np.isclose(auto, mpich, rtol=1e-6)


def test_cli_option_and_its_errors(tmp_path):
    from minitrace import storage
    f = tmp_path / "t.h5"
    storage.write_trace(f, _solver(0, MPICH))
    run = [sys.executable, "-m", "minitrace", "replay", str(f), "--cluster", "4"]
    # 8 and 80,000 bytes on 4 ranks: Open MPI runs lr and rab_rdb, MPICH rdb and rab_rdb; the
    # world allreduces are lowered (one SMPI option cannot hold two algorithms)
    p = subprocess.run(run + ["--collectives", "ompi"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "lowered 20 allreduce on MPI_COMM_WORLD (point-to-point, lr)" in p.stdout
    assert "collectives as Open MPI runs them" in p.stdout
    p = subprocess.run(run, capture_output=True, text=True)
    assert "lowered 20 allreduce on MPI_COMM_WORLD (point-to-point, rdb)" in p.stdout
    assert "collectives as MPICH runs them" in p.stdout
    p = subprocess.run(run + ["--collectives", "intel"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice: 'intel'" in p.stderr
