"""info splits a recorded trace's volume into the compute and the CPU time inside reductions
(mostly waiting, which a replay leaves out): public Nekbone's 4 ranks showed a volume of 18 s a
rank, 14 of them inside its allreduces, in one column called "volume"."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from minitrace import kinds as K
from minitrace.cli import main
from minitrace.model import TraceBuilder
from minitrace.storage import write_trace
from minitrace.trace import open as open_trace
from tests.support.record_util import build, record

pytestmark = pytest.mark.timeout(300)


def _table(path) -> tuple[list[str], list[str]]:
    p = subprocess.run([sys.executable, "-m", "minitrace", "info", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["actions"])
    return lines[head].split(), lines[head:]


def test_recorded_volume_split_into_compute_and_in_calls(tmp_path):
    record(tmp_path / "t.h5", 2, [build("colls", tmp_path)])
    assert main(["compress", str(tmp_path / "t.h5"), "-o", str(tmp_path / "c.h5")]) == 0
    for name in ("t.h5", "c.h5"):
        columns, lines = _table(tmp_path / name)
        assert columns[3:5] == ["compute", "in_calls"] and "volume" not in columns, name
        assert lines[-1].startswith("in_calls: seconds inside the reductions, mostly waiting")
        with open_trace(tmp_path / name) as t:
            s = t.summary()
            red = [t.actions(kind=k) for k in sorted(K.REDUCTIONS)
                   if f"n_{k}" in s and s[f"n_{k}"].sum()]
            assert len(red) >= 2                # (colls: allreduce, reduce, scan, ...)
            inside = pd.concat(red).groupby("rank")["volume"].sum()
            for rank in range(2):
                row = next(ln.split() for ln in lines if ln.split()[:1] == [str(rank)])
                got = float(row[1 + columns.index("in_calls")])
                assert got == pytest.approx(inside[rank], rel=1e-5)
                assert float(row[1 + columns.index("compute")]) == \
                    pytest.approx(s["volume"][rank] - inside[rank], rel=1e-5, abs=1e-9)


def test_flops_traces_and_traces_without_reductions_keep_one_volume(tmp_path):
    for unit, kind in (("flops", "allreduce"), ("seconds", "barrier")):
        b = TraceBuilder(2, {"volume_unit": unit})
        for r in range(2):
            b.add(r, "init")
            b.add(r, "compute", volume=1e6)
            b.add(r, kind, bytes_sent=8 if kind == "allreduce" else 0,
                  bytes_recv=8 if kind == "allreduce" else 0, volume=5e5 * (kind != "barrier"))
            b.add(r, "finalize")
        write_trace(tmp_path / f"{unit}.h5", b.build())
        columns, lines = _table(tmp_path / f"{unit}.h5")
        assert "volume" in columns and "in_calls" not in columns, unit
        assert not lines[-1].startswith("in_calls"), unit
        assert np.isclose(float(lines[2].split()[1 + columns.index("volume")]),
                          1.5e6 if unit == "flops" else 1e6)
