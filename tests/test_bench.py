"""The benchmark suites run for real under mpiexec (2 and 4 ranks, tiny sizes); the tests check
the stored contents exactly: shapes, designs, per-rank raw times and their reductions."""
from __future__ import annotations

import argparse
import itertools
import subprocess
import sys

import numpy as np
import pytest

from minitrace.bench import SUITES, pt2pt, suite_module

from tests.support.mpiutil import bench, run_mpi, tool

def parse(suite: str, *opts: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    suite_module(suite).add_arguments(p)
    return p.parse_args(list(opts))


def test_pt2pt_grid(tmp_path):
    opts = ("--max-size", "64", "--reps", "2", "--iterations", "5", "--iterations-large", "2",
            "--skip", "1", "--window", "4")
    b = bench(2, "pt2pt", tmp_path / "p.h5", *opts)
    n = 3 * 7 * 2
    assert b.attrs["design"] == "grid" and b.attrs["planned_sizes"] == [1 << k for k in range(7)]
    assert len(b["size"]) == n and b["samples"].shape == (n, 5) == b["peer_samples"].shape
    assert list(b["order"]) == list(range(n))
    assert set(b["pair"]) == {"intra"} and set(b["peer"]) == {1}
    for kind in pt2pt.KINDS:
        sizes = b["size"][b["kind"] == kind]
        assert len(sizes) == 14 and np.all(np.diff(sizes) >= 0)
        assert sorted(set(sizes)) == b.attrs["planned_sizes"]
    pp, bw = b["kind"] == "pingpong", b["kind"] == "bandwidth"
    assert np.isfinite(b["t_roundtrip"][pp]).all() and np.isnan(b["t_roundtrip"][~pp]).all()
    assert np.isfinite(b["bandwidth"][bw]).all() and np.isnan(b["bandwidth"][~bw]).all()
    assert np.allclose(b["bandwidth"][bw], b["size"][bw] * 4 / b["t_iter"][bw])
    for col in ("t_send", "t_recv", "peer_t_send", "peer_t_recv"):
        assert np.isfinite(b[col]).all() and (b[col] >= 0).all()
    # the mean round trip is the mean of the stored per-iteration samples
    assert np.allclose(b["t_iter"], b["samples"].mean(axis=1))


def test_pt2pt_random_design_is_a_seeded_permutation(tmp_path):
    opts = ("--design", "random", "--nsizes", "5", "--max-size", "100000", "--reps", "2",
            "--kinds", "pingpong,pingping", "--iterations", "3", "--iterations-large", "2",
            "--skip", "0", "--seed", "7")
    b = bench(2, "pt2pt", tmp_path / "r.h5", *opts)
    planned = b.attrs["planned_sizes"]
    args = parse("pt2pt", *opts)
    assert planned == pt2pt.plan_sizes(args)  # reproducible from the seed
    assert all(1 <= s <= 100000 for s in planned)
    done = list(zip(b["kind"], b["size"].tolist(), b["rep"].tolist()))
    plan = list(itertools.product(["pingpong", "pingping"], planned, range(2)))
    assert sorted(done) == sorted(plan) and done != plan
    assert done == [(k, s, r) for k, s, r, _ in pt2pt.plan(args, planned, args.kinds.split(","),
                                                           [("intra", 1)])]


@pytest.mark.parametrize("workload", ["ftq", "dgemm", "spmv"])
def test_variability_workloads_2(tmp_path, workload):
    b = bench(2, "variability", tmp_path / "v.h5", "--workload", workload, "--iterations",
              "4", "--warmup", "1", "--mu", "3e-4", "--sigma", "5e-5")
    assert b["times"].shape == (4, 2) and b["maxima"].shape == (4,)
    assert np.array_equal(b["maxima"], b["times"].max(axis=1))
    assert "barrier_times" not in b and b.attrs["halo"] is False
    if workload != "ftq":
        assert b.attrs["blas_threads"] in (1, None)
        assert np.array_equal(b["work"], np.rint(b["work"]))


def test_variability_fwq_halo_4(tmp_path):
    b = bench(4, "variability", tmp_path / "v4.h5", "--workload", "fwq", "--iterations", "5",
              "--warmup", "1", "--mu", "2e-4", "--sigma", "5e-5", "--halo", "--halo-bytes",
              "1024", "--time-barrier", "--seed", "3")
    assert b["times"].shape == (5, 4) == b["barrier_times"].shape == b["work"].shape
    assert np.array_equal(b["maxima"], b["times"].max(axis=1))
    assert list(b["node"]) == [0] * 4 and list(b["local_rank"]) == [0, 1, 2, 3]
    assert b.attrs["halo_dims"] == [2, 2] and b.attrs["halo_bytes"] == 1024
    assert b.attrs["nranks"] == 4 and b.attrs["workload"] == "fwq" and b.attrs["seed"] == 3
    w = b["work"]  # independent draws per rank, whole units of integer work
    assert np.array_equal(w, np.rint(w)) and (w >= 0).all() and len(np.unique(w)) > 1


@pytest.mark.parametrize("emulate", [False, True])
def test_partitioned(tmp_path, emulate):
    b = bench(2, "partitioned", tmp_path / "pa.h5", "--max-k", "3", "--warmup", "1", "--runs",
              "2", "--threads", "2", "--mu", "1e-4", *(["--emulate"] if emulate else []))
    assert b.attrs["emulated"] is emulate  # MPICH 5 has MPI-4 partitioned communication
    assert b.attrs["sigma_convention"] == "sigma = mu * v**2 (seed thesis convention)"
    n = 4 * 2 * 2
    assert len(b["mode"]) == n and b["t_ready"].shape == (n, 2) == b["work"].shape
    sizes = [18 << k for k in range(4)]
    for mode in ("partitioned", "baseline"):
        sel = b["mode"] == mode
        assert b["size"][sel].tolist() == [s for s in sizes for _ in range(2)]
        assert b["run"][sel].tolist() == [0, 1] * 4
    assert np.array_equal(b["t_last"], b["t_ready"].max(axis=1))
    assert (b["t_done"] > b["t_last"]).all()
    assert np.allclose(b["bandwidth"], b["size"] / (b["t_done"] - b["t_last"]))
    assert set(b["threads"]) == {2} and set(b["v"]) == {0.5}


def test_collectives_barrier_4(tmp_path):
    b = bench(4, "collectives", tmp_path / "c.h5", "--max-size", "16", "--iterations", "3",
              "--warmup", "1")
    per_op = {"barrier": [0]} | {op: [4, 8, 16] for op in
                                 ("bcast", "reduce", "allreduce", "allgather", "alltoall",
                                  "alltoallv")}
    rows = sum(len(v) for v in per_op.values()) * 3
    assert b["times"].shape == (rows, 4)
    for op, sizes in per_op.items():
        got = b["size"][b["op"] == op]
        assert got.tolist() == [s for s in sizes for _ in range(3)]
    assert np.array_equal(b["t_max"], b["times"].max(axis=1))
    assert np.array_equal(b["t_min"], b["times"].min(axis=1))
    assert np.allclose(b["t_mean"], b["times"].mean(axis=1))


def test_collectives_window_shuffled(tmp_path):
    b = bench(2, "collectives", tmp_path / "w.h5", "--ops", "bcast,allreduce", "--max-size",
              "32", "--iterations", "4", "--sync", "window", "--order", "shuffled",
              "--seed", "5")
    blocks = [tuple(x) for x in b.attrs["blocks"]]
    plan = [(op, s) for op in ("bcast", "allreduce") for s in (4, 8, 16, 32)]
    assert sorted(blocks) == sorted(plan) and blocks != plan
    assert [tuple(x) for x in zip(b["op"][::4], b["size"][::4].tolist())] == blocks
    assert b["late"].shape == (32, 2) and b["offsets"].shape == (2,) and b["offsets"][0] == 0
    assert np.isfinite(b["t_global"]).all()


def test_thresholds_real_mpich(tmp_path):
    lo, hi = 1024, 1 << 16
    b = bench(2, "thresholds", tmp_path / "t.h5", "--min-size", str(lo), "--max-size", str(hi),
              "--refine", "2", "--probe-timeout", "1.5", timeout=120)
    for probe in ("deadlock", "corruption"):
        res = b.attrs[f"{probe}_threshold"]
        sel = b["probe"] == probe
        sizes, switched = b["size"][sel], b["switched"][sel]
        assert sizes[0] == lo and sizes[1] == hi
        if isinstance(res, str):
            assert res.startswith("no switch found") and switched[0] == switched[1]
        else:
            a, z = res
            assert lo <= a < z <= hi
            # the bracket is consistent with every probe made (one monotone switch)
            assert not switched[sizes <= a].any() and switched[sizes >= z].all()
    assert b["times"].shape == (len(b["size"]), 2)


def test_cli_lists_and_documents():
    out = subprocess.run([sys.executable, "-m", "minitrace.cli", "bench"], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    for s in SUITES:
        assert f"\n{s}: " in out and f"stores /bench/{s}:" in out
    h = subprocess.run([sys.executable, "-m", "minitrace.cli", "bench", "variability", "--help"],
                       capture_output=True, text=True, timeout=300, check=True).stdout
    for opt in ("--workload", "--iterations", "--mu", "--sigma", "--halo", "--halo-bytes",
                "--time-barrier", "--seed", "--output", "--quiet"):
        assert opt in h
    bad = subprocess.run([sys.executable, "-m", "minitrace.cli", "bench", "collectives",
                          "--ops", "nope"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "nope" in bad.stderr


def test_unwritable_output_refused_before_measuring(tmp_path):
    out = tmp_path / "missing" / "x.h5"
    p = run_mpi(2, [sys.executable, "-m", "minitrace.bench", "pt2pt", "-o", str(out)],
                timeout=300, check=False)
    assert p.returncode == 1 and p.stderr.strip().count("\n") == 0 and str(out) in p.stderr


@pytest.mark.parametrize("suite,opts,option", [
    ("partitioned", ["--threads", "0"], "--threads must be >= 1"),
    ("partitioned", ["--threads", "5"], "--threads 5 must divide"),
    ("partitioned", ["--modes", "x"], "unknown --modes"),
    ("pt2pt", ["--kinds", "foo"], "unknown --kinds"),
    ("pt2pt", ["--window", "0"], "--window must be >= 1"),
    ("collectives", ["--min-size", "6"], "--min-size must be"),
    ("collectives", ["--max-size", "2"], "--max-size must be >= --min-size"),
    ("variability", ["--warmup", "-1"], "--warmup must be >= 0"),
    ("variability", ["--sigma", "-1"], "--sigma must be >= 0"),
    ("thresholds", ["--refine", "-1"], "--refine must be >= 0"),
    ("thresholds", ["--probes", "x"], "unknown --probes"),
    ("thresholds", ["--mpiexec", "no-such-launcher"], "no no-such-launcher found"),
])
def test_option_errors_one_line_from_rank_0(tmp_path, suite, opts, option):
    p = run_mpi(2, [sys.executable, "-m", "minitrace.bench", suite, *opts, "-o",
                    str(tmp_path / "x.h5")], timeout=300, check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and f"{suite}: {option}" in p.stderr
    assert not (tmp_path / "x.h5").exists()


def test_usage_errors_printed_once(tmp_path):
    p = run_mpi(2, [sys.executable, "-m", "minitrace.bench", "partitioned", "--threads", "x"],
                timeout=300, check=False)
    assert p.returncode == 2 and p.stderr.count("error:") == 1 and "--threads" in p.stderr
    h = run_mpi(2, [sys.executable, "-m", "minitrace.bench", "pt2pt", "--help"], timeout=300,
                check=False)
    assert h.returncode == 0 and h.stdout.count("usage:") == 1


@pytest.mark.parametrize("nodes,pairs", [
    ([0, 0, 1, 1], [("intra", 1), ("inter", 2)]),   # block placement on 2 nodes
    ([0, 1, 0, 1], [("intra", 2), ("inter", 1)]),   # round-robin placement
    ([0, 1, 1, 1], [("inter", 1)]),                 # rank 0 alone on its node
    ([0, 0, 0, 0], [("intra", 1)]),                 # one node
])
def test_pairs_from_two_node_topology(nodes, pairs):
    hosts = [f"node{n}" for n in nodes]
    topo = {"hosts": hosts, "rank_to_node": nodes, "local_rank": [0] * len(nodes)}
    assert pt2pt.pairs_from(topo) == pairs


@pytest.mark.parametrize("prog", [["minitrace.bench", "pt2pt"], ["minitrace.predict.measure"]])
def test_unusable_output_refused_before_measuring(tmp_path, prog):
    """bench and calibrate add a run to their output: one that cannot be written, or an existing
    file that is not minitrace's, is one line from rank 0 before any measurement."""
    (tmp_path / "notes.txt").write_text("mine")
    cases = {tmp_path / "nodir" / "b.h5": "cannot write: no such directory",
             tmp_path: "is a directory: name a file to write",
             tmp_path / "notes.txt": "not an HDF5 file"}
    for out, why in cases.items():
        p = subprocess.run([tool("mpiexec"), "-n", "2", sys.executable, "-m", *prog, "-o",
                            str(out)], capture_output=True, text=True, timeout=300)
        assert p.returncode == 1 and p.stderr.count("\n") == 1 and why in p.stderr, p.stderr
        assert "error" in p.stderr and p.stdout == ""
    assert (tmp_path / "notes.txt").read_text() == "mine"
