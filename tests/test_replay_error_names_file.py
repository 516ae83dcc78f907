"""A replay refused with --sample names the trace, as replay without it does: public Intel MPI
Benchmarks IMB-RMA (one-sided calls, which SimGrid's TI replay cannot express) was refused in a
line naming no file under --sample and by predict (minitrace.errors.naming); so does the
replay of its compressed file, streamed (helper QA, session 29: public PRK transpose-get)."""
from __future__ import annotations

import subprocess
import sys

from minitrace.compress.files import write_compressed
from minitrace.model import TraceBuilder
from minitrace.storage import write_trace


def test_sampled_replay_refusal_names_the_trace(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "win_fence")
        b.add(r, "put", peer=1 - r, bytes_sent=8)
        b.add(r, "win_fence")
        b.add(r, "finalize")
    h5, z = tmp_path / "rma.h5", tmp_path / "rma_z.h5"
    write_trace(h5, b.build())
    write_compressed(str(z), b.build())
    for h5, extra in ((h5, []), (h5, ["--sample", "auto"]), (z, [])):
        p = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(h5),
                            "--compute-rate", "1Gf", *extra],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
        assert p.stderr.startswith(f"minitrace: error: {h5}: cannot replay: SimGrid's TI format "
                                   "cannot express 2 put, 4 win_fence"), (extra, p.stderr)
