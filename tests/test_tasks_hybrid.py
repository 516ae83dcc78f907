"""MPI+OpenMP recorded together (``record --openmp -- mpiexec ...``): the merged MPI trace and
each rank's task graph in one file, the graph the program declares (benchmarks/apps/
omp_mpi_stencil.c), simulated per rank (``--rank``); the /tasks format's versions."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from minitrace.errors import MinitraceError
from minitrace.tasks.graph import from_tasks
from minitrace.tasks.taskfile import read_tasks, task_ranks, write_tasks
from tests.support.mpiutil import tool
from tests.support.record_util import Ranked
from tests.support.tasks_util import mpicc_openmp

APP = Path(__file__).resolve().parents[1] / "benchmarks" / "apps" / "omp_mpi_stencil.c"
NB, STEPS, SUB = 4, 2, 2          # blocks, MPI steps (parallel regions), sweeps per region


def declared_edges() -> set:
    """(region, sweep, block) -> (region, sweep, block): sweep s's task on block i reads the
    blocks i-1, i, i+1 that sweep s-1 wrote (and overwrites what sweep s-1 read)."""
    return {((r, s - 1, j), (r, s, i)) for r in range(STEPS) for s in range(1, SUB)
            for i in range(NB) for j in (i - 1, i, i + 1) if 0 <= j < NB}


def minitrace(*args: str, threads: int = 2) -> subprocess.CompletedProcess:
    import os
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    return subprocess.run([sys.executable, "-m", "minitrace", *args], capture_output=True,
                          text=True, timeout=180, env=env)


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hybrid")
    exe = mpicc_openmp(APP, tmp)
    out = tmp / "h.h5"
    p = minitrace("record", "--openmp", "-o", str(out), "--", tool("mpiexec"), "-n", "2", exe,
                  str(NB), "512", str(STEPS), str(SUB))
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def test_mpi_trace_and_each_ranks_graph_in_one_file(hybrid):
    out, p = hybrid
    for rank in (0, 1):
        assert f"tasks of rank {rank}: {NB * STEPS * SUB} tasks" in p.stdout
    trace = Ranked(out)
    assert trace.meta["nranks"] == 2
    for rank in (0, 1):
        assert len(trace.mpi(rank, "sendrecv")) == 2 * STEPS
    assert task_ranks(str(out)) == [0, 1]
    for rank in (0, 1):
        g = read_tasks(str(out), rank)
        assert g.meta["rank"] == rank and g.meta["edges_ompt_not_rebuilt"] == 0
        ex = g.explicit().sort_values("t_create")
        where = {t: (k // (NB * SUB), k % (NB * SUB) // NB, k % NB)
                 for k, t in enumerate(ex["task"])}
        assert {(where[s], where[d]) for s, d in zip(g.edges["src"], g.edges["dst"])} == \
            declared_edges()
        assert set(g.handles["size"]) == {512 * 8}
        initial = g.tasks.loc[g.tasks["kind"] == "initial", "task"].iloc[0]
        acts = g.actions[g.actions["task"] == initial]["action"].tolist()
        assert acts.count("parallel") == STEPS


def test_simulate_info_validate_pick_ranks(hybrid):
    out, _ = hybrid
    p = minitrace("simulate-tasks", str(out), "--threads", "2")
    assert p.returncode == 1
    assert p.stderr.strip().endswith("holds the task graphs of 2 ranks (0, 1): choose one "
                                     "(--rank)")
    p = minitrace("simulate-tasks", str(out), "--threads", "2", "--rank", "1", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tasks"] == NB * STEPS * SUB
    p = minitrace("simulate-tasks", str(out), "--threads", "2", "--rank", "5")
    assert p.returncode == 1 and "no task graph of rank 5 (ranks 0, 1)" in p.stderr
    p = minitrace("info", str(out))
    assert p.returncode == 0 and "tasks of rank 1: 16 tasks" in p.stdout
    p = minitrace("validate", str(out))
    assert p.returncode == 0, p.stderr
    assert "task graph of rank 0 sound" in p.stdout and "OK: 2 ranks" in p.stdout


def test_single_process_and_version_1_files(tmp_path):
    g = from_tasks({1: 1.0, 2: 2.0}, edges=[(1, 2)])
    path = tmp_path / "t.h5"
    write_tasks(str(path), g)
    assert task_ranks(str(path)) == [0]
    assert read_tasks(str(path)).edges.values.tolist() == [[1, 2]]
    with h5py.File(path, "a") as f:        # what version 1 wrote: no rank column
        f["tasks"].attrs["version"] = 1
        del f["tasks"].attrs["ranks"]
        for table in f["tasks"].values():
            del table["rank"]
    assert read_tasks(str(path)).tasks["duration"].tolist() == [1.0, 2.0]
    with h5py.File(path, "a") as f:
        f["tasks"].attrs["version"] = 9
    with pytest.raises(MinitraceError, match="task graph format version 9 unknown"):
        read_tasks(str(path))
