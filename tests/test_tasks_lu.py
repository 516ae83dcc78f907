"""The tiled LU of benchmarks/apps/omp_lu.c recorded: its dependence graph is the one its
depend clauses declare, derived here from the algorithm (each task depends on the last task
that wrote a tile it names; no tile is written after being read within a factorization, so
there is no other edge), with the tiles' sizes and the four task constructs."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from minitrace.tasks.taskfile import read_tasks
from tests.support.tasks_util import record_openmp

APP = Path(__file__).resolve().parents[1] / "benchmarks" / "apps" / "omp_lu.c"
NT, B = 4, 16


def declared() -> tuple[list, set]:
    """(the tasks in creation order as (kernel, tiles read, tile written), the edges between
    their positions)."""
    tasks = []
    for k in range(NT):
        tasks.append(("getrf", [], (k, k)))
        tasks += [("trsm_u", [(k, k)], (k, j)) for j in range(k + 1, NT)]
        tasks += [("trsm_l", [(k, k)], (i, k)) for i in range(k + 1, NT)]
        tasks += [("gemm", [(i, k), (k, j)], (i, j))
                  for i in range(k + 1, NT) for j in range(k + 1, NT)]
    last, edges = {}, set()
    for n, (_, reads, write) in enumerate(tasks):
        edges |= {(last[t], n) for t in [*reads, write] if t in last}
        last[write] = n
    return tasks, edges


@pytest.mark.parametrize("threads", [1, 2])
def test_lu_graph_is_the_declared_one(tmp_path, threads):
    exe = tmp_path / "omp_lu"
    subprocess.run(["clang", "-fopenmp", "-O2", str(APP), "-o", str(exe), "-lm"], check=True,
                   capture_output=True)
    out = tmp_path / "lu.h5"
    p = record_openmp(out, [str(exe), str(NT), str(B)], threads)
    assert p.returncode == 0, p.stdout + p.stderr
    g = read_tasks(str(out))
    tasks, edges = declared()
    ex = g.explicit().sort_values("t_create")
    assert len(ex) == len(tasks) == 30
    pos = {t: n for n, t in enumerate(ex["task"])}
    assert {(pos[s], pos[d]) for s, d in zip(g.edges["src"], g.edges["dst"])} == edges
    assert g.meta["edges_ompt_not_rebuilt"] == 0
    # one kernel (task construct) per kind, as the program declares them
    kernel_of = {}
    for (kind, _, _), k in zip(tasks, ex["kernel"]):
        kernel_of.setdefault(kind, set()).add(k)
    assert all(len(v) == 1 for v in kernel_of.values())
    assert len(set().union(*kernel_of.values())) == 4
    assert set(g.handles["size"]) == {B * B * 8} and len(g.handles) == NT * NT
    modes = g.deps.groupby("task")["mode"].apply(lambda m: sorted(m.astype(str)))
    for (kind, reads, _), t in zip(tasks, ex["task"]):
        assert modes[t] == sorted(["in"] * len(reads) + ["inout"])
