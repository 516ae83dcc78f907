"""StarPU tasks.rec import (tests/data/starpu/tasks.rec: a hand-made 2x2 tiled Cholesky)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minitrace.tasks.starpu_rec import read_rec
from minitrace.errors import MinitraceError
from minitrace.tasks.graph import rebuild_edges

REC = Path(__file__).resolve().parent / "data" / "starpu" / "tasks.rec"


def test_read_rec():
    g = read_rec(str(REC))
    assert g.tasks["task"].tolist() == [1, 2, 3, 4]
    assert g.tasks["kernel"].tolist() == ["dpotrf", "dtrsm", "dsyrk", "dpotrf"]
    assert g.tasks["duration"].tolist() == pytest.approx([2e-3, 3e-3, 4e-3, 2e-3])
    assert g.tasks["thread"].tolist() == [0, 1, 0, 1]
    assert g.edges.values.tolist() == [[1, 2], [2, 3], [3, 4]]
    assert g.handles["size"].tolist() == [8192] * 3
    assert g.deps["mode"].astype(str).tolist() == ["inout", "in", "inout", "in", "inout",
                                                   "inout"]
    # the declared DependsOn is what the data accesses imply
    assert rebuild_edges(g.tasks, g.deps).values.tolist() == g.edges.values.tolist()


def test_import_and_simulate(tmp_path):
    out = tmp_path / "s.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "import-tasks", str(REC), "-o",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "4 tasks (3 kernels), 3 dependences, 3 data handles" in p.stdout
    p = subprocess.run([sys.executable, "-m", "minitrace", "simulate-tasks", str(out),
                        "--threads", "2", "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["predicted_time"] == pytest.approx(11e-3)   # a chain


def test_unknown_dependence_is_one_line(tmp_path):
    bad = tmp_path / "bad.rec"
    bad.write_text(REC.read_text().replace("DependsOn: 13", "DependsOn: 99"))
    with pytest.raises(MinitraceError, match="task 14 depends on unknown task 99"):
        read_rec(str(bad))
