"""A trace whose message is larger than the receive posted for it (a forced extrapolation's
fits can write one: CloverLeaf extrapolated to 16 ranks with --force, 14,362 size mismatches)
makes SimGrid abort with MPI_ERR_TRUNCATE: replay's one line names the trace and says where
the mismatches are listed, not only SimGrid's exit status."""
from __future__ import annotations

import subprocess
import sys

from minitrace.model import TraceBuilder
from minitrace.storage import write_trace


def test_a_truncated_receive_names_the_trace_and_validate(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    b.add(0, "send", peer=1, bytes_sent=4096)
    b.add(1, "recv", peer=0, bytes_recv=1024)
    for r in range(2):
        b.add(r, "finalize")
    h5 = tmp_path / "forced.h5"
    write_trace(h5, b.build())
    p = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(h5),
                        "--compute-rate", "1Gf"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"minitrace: error: {h5}: SimGrid failed"), p.stderr
    assert "MPI_ERR_TRUNCATE" in p.stderr and "`minitrace validate` lists the size " \
        "mismatches" in p.stderr, p.stderr
