"""python -m minitrace.bench numa-bandwidth: pinned threads stream their buffers; the rows and
the platform it writes say what was measured (no timing is asserted)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

import minitrace
from minitrace.tasks.numa_platform import read_platform_info


def test_numa_bandwidth_rows_and_platform(tmp_path):
    out, plat = tmp_path / "bw.h5", tmp_path / "numa.xml"
    p = subprocess.run([sys.executable, "-m", "minitrace.bench", "numa-bandwidth", "--mib", "4",
                        "--reps", "1", "--max-threads", "2", "-o", str(out), "--platform",
                        str(plat), "--quiet"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with minitrace.open(str(out)) as t:
        b = t.bench("numa-bandwidth")
        tab = b.table()
        attrs = b.attrs
    k = min(2, len(__import__("os").sched_getaffinity(0)))
    assert len(tab) == sum(range(1, k + 1)) * attrs["nodes"]
    assert (tab["bytes"] == 4 << 20).all() and (tab["bandwidth"] > 0).all()
    assert np.allclose(tab["bandwidth"], tab["bytes"] / tab["seconds"])
    assert attrs["core"] == np.median(tab.loc[tab["threads"] == 1, "bandwidth"])
    xml = plat.read_text()
    assert f'id="core0" bandwidth="{attrs["core"]:.6g}Bps"' in xml
    assert len(read_platform_info(str(plat)).cores) >= 1
