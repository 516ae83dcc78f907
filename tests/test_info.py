"""``minitrace info`` on a file holding all five bench suites, each run for real under
``mpiexec -n 2`` with tiny sizes: every number it prints is checked against the same quantity
recomputed here from the stored arrays."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import minitrace


NUM = r"([-+0-9.e]+|nan|inf)"


@pytest.fixture(scope="module")
def info(bench_file):
    """(stdout of `minitrace info`, {suite: BenchResult}) for one file with every suite."""
    out = bench_file
    text = subprocess.run([sys.executable, "-m", "minitrace.cli", "info", str(out)],
                          capture_output=True, text=True, timeout=300, check=True).stdout
    t = minitrace.open(str(out))
    assert t.suites == ["collectives", "partitioned", "pt2pt", "thresholds", "variability"]
    return text, {s: t.bench(s) for s in t.suites}


def section(text: str, suite: str) -> str:
    """The lines printed for one suite (from its header to the next suite's)."""
    m = re.search(rf"^bench/{suite}:.*?(?=^bench/|\Z)", text, re.S | re.M)
    assert m, f"no section for {suite}:\n{text}"
    return m.group(0)


def close(printed: str, value: float) -> bool:
    """Printed with 6 significant digits."""
    return np.isclose(float(printed), value, rtol=1e-5, atol=0)


def test_variability(info):
    text, r = info
    s, b = section(text, "variability"), r["variability"]
    assert "  ftq, 6 iterations x 2 ranks" in s
    m = re.search(rf"per-iteration max \(us\): mean {NUM} median {NUM} max {NUM}", s)
    mx = b["times"].max(axis=1)  # the maxima are the max over ranks of the raw times
    assert np.array_equal(mx, b["maxima"])
    for got, want in zip(m.groups(), (mx.mean(), np.median(mx), mx.max())):
        assert close(got, want * 1e6)
    m = re.search(rf"mean per-rank time \(us\): {NUM} \(rank means {NUM} to {NUM}\)", s)
    per_rank = [b["times"][:, k].mean() for k in range(2)]
    for got, want in zip(m.groups(), (b["times"].mean(), min(per_rank), max(per_rank))):
        assert close(got, want * 1e6)


def test_pt2pt(info):
    text, r = info
    s, b = section(text, "pt2pt"), r["pt2pt"]
    assert "  grid design, sequential order, 63 measurements" in s  # 3 kinds x 7 sizes x 3 reps
    per_message = {"pingpong": lambda j: b["t_roundtrip"][j] / 2,
                   "pingping": lambda j: b["t_iter"][j],
                   "bandwidth": lambda j: b["t_iter"][j] / 4}
    for kind, t in per_message.items():
        m = re.search(rf"intra {kind}: latency {NUM} us at 1 B, bandwidth {NUM} MB/s at 64 B "
                      rf"\(21 measurements\)", s)
        assert m, s
        small = [j for j in range(63) if b["kind"][j] == kind and b["size"][j] == 1]
        large = [j for j in range(63) if b["kind"][j] == kind and b["size"][j] == 64]
        assert len(small) == len(large) == 3
        assert close(m.group(1), np.median([t(j) for j in small]) * 1e6)
        bw = [64 / t(j) for j in large]
        assert close(m.group(2), np.median(bw) / 1e6)
        if kind == "bandwidth":  # the stored column says the same
            assert np.allclose(bw, b["bandwidth"][large])


def test_collectives(info):
    text, r = info
    s, b = section(text, "collectives"), r["collectives"]
    assert "  2 ranks, 5 iterations per (op, size), barrier sync, sequential order" in s
    m = re.search(rf"barrier: median t_max {NUM} us at 0 B\n", s)
    sel = b["op"] == "barrier"
    assert close(m.group(1), np.median(b["times"][sel].max(axis=1)) * 1e6)
    for op in ("bcast", "allreduce"):
        m = re.search(rf"{op}: median t_max {NUM} us at 4 B, {NUM} us at 32 B\n", s)
        assert m, s
        for got, size in zip(m.groups(), (4, 32)):
            rows = (b["op"] == op) & (b["size"] == size)
            assert rows.sum() == 5
            assert close(got, np.median(b["times"][rows].max(axis=1)) * 1e6)


def test_partitioned(info):
    text, r = info
    s, b = section(text, "partitioned"), r["partitioned"]
    # MPICH 5 implements MPI-4 partitioned communication: not emulated
    assert "  2 threads, mu 5e-05 s, v 0.5, native MPI-4 Psend_init/Precv_init" in s
    for mode in ("partitioned", "baseline"):
        m = re.search(rf"{mode}: median bandwidth {NUM} MB/s at 72 B \(3 runs\)", s)
        assert m, s
        rows = (b["mode"] == mode) & (b["size"] == 72)
        bw = 72 / (b["t_done"][rows] - b["t_last"][rows])
        assert close(m.group(1), np.median(bw) / 1e6)


def test_thresholds(info):
    text, r = info
    s, b = section(text, "thresholds"), r["thresholds"]
    for probe in ("deadlock", "corruption"):
        sel = b["probe"] == probe
        sizes, switched = b["size"][sel], b["switched"][sel]
        if switched[0] == switched[1]:
            want = (f"no switch found in [1024, 65536]: "
                    f"{'switched' if switched[0] else 'not switched'} at both ends")
        else:  # the bracket: largest size probed without the switch, smallest with it
            want = (f"switch between {sizes[~switched].max()} and {sizes[switched].min()} B")
        assert f"  {probe}: {want} ({int(sel.sum())} probes)\n" in s, s


def test_persistent_bytes_counting_said(tmp_path):
    """A trace with persistent requests says how its bytes columns count them (once at the
    set-up, not per start: osu_latency_persistent read 2,047 bytes sent for 112,585); one
    without says nothing of it."""
    from minitrace import kinds as K
    from minitrace.model import TraceBuilder
    from minitrace.storage import write_trace
    for persistent in (True, False):
        b = TraceBuilder(2)
        for r in range(2):
            b.add(r, "init")
        if persistent:
            b.add(0, "send_init", peer=1, tag=1, bytes_sent=8, request=0)
            b.add(1, "recv_init", peer=0, tag=1, bytes_recv=8, request=0)
            for _ in range(3):
                b.add(0, "start", request=0, flags=K.FLAG_PERSISTENT)
                b.add(0, "wait", request=0)
                b.add(1, "start", request=0, flags=K.FLAG_PERSISTENT)
                b.add(1, "wait", request=0)
        else:
            b.add(0, "send", peer=1, tag=1, bytes_sent=8)
            b.add(1, "recv", peer=0, tag=1, bytes_recv=8)
        for r in range(2):
            b.add(r, "finalize")
        write_trace(tmp_path / "p.h5", b.build())
        out = subprocess.run([sys.executable, "-m", "minitrace", "info", str(tmp_path / "p.h5")],
                             capture_output=True, text=True, timeout=120).stdout
        assert ("count a persistent request's bytes once" in out) == persistent, out
        (tmp_path / "p.h5").unlink()
