"""The compiled replayer (minitrace/native/replay.cpp) against the Python-bindings path: the same
trace and configuration give the same simulated times, and its failures are the same one-liners."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from minitrace.errors import MinitraceError
from minitrace.replay.platforms import Cluster
from minitrace.replay import replay
from minitrace.replay.replayer_build import binary

pytestmark = pytest.mark.timeout(180)

RING = """{r} init
{r} irecv {left} 0 8192
{r} send {right} 0 8192
{r} wait {left} {r} 0
{r} compute 1000000
{r} isend {right} 1 100000
{r} recv {left} 1 100000
{r} waitall 1
{r} compute 2000000
"""
COLLECTIVES = """{r} bcast 5000 1
{r} allreduce 8192 1000
{r} reduce 4096 500 2
{r} alltoall 1000 1000
{r} allgatherv 64 {counts}
{r} barrier
{r} sleep 0.001
{r} finalize
"""


def _trace(tmp_path, nranks=4):
    lines = []
    for r in range(nranks):
        lines.append(RING.format(r=r, left=(r - 1) % nranks, right=(r + 1) % nranks))
        lines.append(COLLECTIVES.format(r=r, counts=" ".join(str(64 * (i + 1))
                                                             for i in range(nranks))))
    path = tmp_path / "trace.txt"
    path.write_text("".join(lines))
    return path


def test_native_replayer_is_built():
    # set-up builds it; without it every replay silently takes the 6x slower Python path
    assert binary() is not None, "run scripts/setup.sh (python -m minitrace.replay.replayer_build)"


@pytest.mark.parametrize("cfg", [{}, {"smpi/allreduce": "rdb", "smpi/bcast": "binomial_tree"},
                                 {"network/model": "LV08"}])
def test_same_times_on_both_engines(tmp_path, cfg):
    trace = _trace(tmp_path)
    cluster = Cluster(4, speed="1Gf", bandwidth="1GBps", latency="10us")
    native = replay(trace, cluster=cluster, config=cfg, engine="native")
    python = replay(trace, cluster=cluster, config=cfg, engine="python")
    assert (native.engine, python.engine) == ("native", "python")
    assert native.simulated_time > 0.003  # the compute alone is 3 Mflop at 1 Gf per rank
    assert native.simulated_time == pytest.approx(python.simulated_time, rel=1e-12)
    assert native.rank_end_times == pytest.approx(python.rank_end_times, rel=1e-12)
    assert native.hosts == python.hosts


def test_shared_hosts_from_a_hostfile(tmp_path):
    trace = _trace(tmp_path)
    platform, _ = Cluster(2, speed="1Gf").write(tmp_path / "plat")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node-0:2\nnode-1:2\n")
    native = replay(trace, platform, hostfile, engine="native")
    python = replay(trace, platform, hostfile, engine="python")
    assert native.hosts == ["node-0", "node-0", "node-1", "node-1"] == python.hosts
    assert native.simulated_time == pytest.approx(python.simulated_time, rel=1e-12)


def test_errors_are_one_line(tmp_path):
    trace = _trace(tmp_path)
    platform, _ = Cluster(2, speed="1Gf").write(tmp_path / "plat")
    with pytest.raises(MinitraceError, match="only 2 hosts"):
        replay(trace, platform, engine="native")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("nowhere:4\n")
    with pytest.raises(MinitraceError, match="host 'nowhere' of the hostfile is not in the platform"):
        replay(trace, platform, hostfile, engine="native")
    bad = tmp_path / "bad.xml"
    bad.write_text("<platform version='4.1'><zone>")
    with pytest.raises(MinitraceError, match="cannot load platform"):
        replay(trace, bad, engine="native")
    with pytest.raises(MinitraceError, match="refused the options|SimGrid failed"):
        replay(trace, cluster=Cluster(4), config={"no/such-option": "1"}, engine="native")


def test_deadlock_names_the_stuck_ranks(tmp_path):
    path = tmp_path / "dead.txt"
    path.write_text("0 init\n0 recv 1 0 8\n0 finalize\n1 init\n1 recv 0 0 8\n1 finalize\n")
    with pytest.raises(MinitraceError, match=r"unfinished"):
        replay(path, engine="native")


def test_missing_native_replayer_is_refused_or_falls_back(tmp_path, monkeypatch):
    trace = _trace(tmp_path)
    monkeypatch.setenv("MINITRACE_REPLAYER", "")
    with pytest.raises(MinitraceError, match="native replayer is not built"):
        replay(trace, engine="native")
    assert replay(trace).engine == "python"


def test_cli_engine_option(tmp_path):
    trace = _trace(tmp_path)
    out = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(trace), "--engine",
                          "native"], capture_output=True, text=True, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert "(native replayer)" in out.stdout


def test_timeline_accounts_for_every_action_and_all_the_time(tmp_path):
    trace = _trace(tmp_path)
    cluster = Cluster(4, speed="1Gf", bandwidth="1GBps", latency="10us")
    plain = replay(trace, cluster=cluster, engine="native")
    timed = replay(trace, cluster=cluster, engine="native", timeline=True)
    assert timed.simulated_time == plain.simulated_time  # logging changes nothing simulated
    t = timed.timeline
    lines = [ln.split() for ln in trace.read_text().splitlines()]
    assert len(t) == len(lines)
    for r in range(4):
        mine = t[t["rank"] == r]
        assert list(mine["action"]) == [ln[1] for ln in lines if ln[0] == str(r)]
        assert list(mine["seq"]) == list(range(len(mine)))
        assert (mine["start"].diff().dropna() >= 0).all()
    b = timed.breakdown()
    cats = ["compute", "point-to-point", "collectives", "waiting", "other"]
    assert (b[cats].sum(axis=1) + b["idle"]).to_numpy() == pytest.approx(timed.rank_end_times)
    # 3 Mflop at 1 Gf plus the 1 ms sleep, on every rank
    assert b["compute"].to_numpy() == pytest.approx([0.004] * 4)
    assert "breakdown" in timed.to_dict() and "timeline" not in timed.to_dict()
    with pytest.raises(MinitraceError, match="needs the native replayer"):
        replay(trace, cluster=cluster, engine="python", timeline=True)
    alone = replay(trace, cluster=cluster, engine="native", timeline="times")
    times = alone.timeline
    assert "src" in t and "src" not in times         # (sampling's: no message endpoints)
    assert times.equals(t[list(times.columns)])
    with pytest.raises(MinitraceError, match="no timeline with messages"):
        alone.critical_path()


def test_progress_lines_feed_the_bar_not_the_log(tmp_path):
    from minitrace.replay import DEFAULT_CONFIG
    from minitrace.replay.child import count_lines, run_child, write_native_job
    from minitrace.replay.ti_split import split_shared
    trace = _trace(tmp_path)
    platform, _ = Cluster(4).write(tmp_path / "plat")
    ranks = split_shared(str(trace), tmp_path)
    job = tmp_path / "job.txt"
    write_native_job(job, platform, ranks, None, progress=7)
    cfg = [f"--cfg={k}:{v}" for k, v in DEFAULT_CONFIG.items()]
    out = run_child([str(binary()), str(job), *cfg], 60, total=count_lines(ranks))
    assert out["clock"] == pytest.approx(replay(trace, cluster=Cluster(4)).simulated_time)
    assert not any("MINITRACE-PROGRESS" in ln for ln in out["log_tail"])


def test_cli_breakdown_and_plot(tmp_path):
    trace = _trace(tmp_path)
    png = tmp_path / "bd.png"
    out = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(trace), "--plot",
                          str(png)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "where the time goes" in out.stdout and png.stat().st_size > 1000


PIPELINE = """0 init
0 compute 1000000000
0 send 1 0 1000
0 compute 100000000
0 barrier
0 finalize
1 init
1 compute 200000000
1 recv 0 0 1000
1 compute 500000000
1 isend 2 0 1000
1 wait 1 2 0
1 barrier
1 finalize
2 init
2 irecv 1 0 1000
2 compute 100000000
2 wait 1 2 0
2 compute 100000000
2 barrier
2 finalize
"""


def test_critical_path_follows_the_late_messages(tmp_path):
    # rank 0 computes 1 s before sending to rank 1, which computes 0.5 s before sending to
    # rank 2: the end time is 0's 1 s + 1's 0.5 s + 2's last 0.1 s (+ messages), whatever
    # else the ranks did meanwhile
    trace = tmp_path / "pipeline.txt"
    trace.write_text(PIPELINE)
    r = replay(trace, cluster=Cluster(3, speed="1Gf"), timeline=True)
    path = r.critical_path()
    assert (path["end"] - path["start"]).sum() == pytest.approx(r.simulated_time, abs=1e-9)
    computes = path[path["action"] == "compute"]
    assert list(zip(computes["rank"], computes["seq"])) == [(2, 4), (1, 3), (0, 1)]
    assert list((computes["end"] - computes["start"]).round(9)) == [0.1, 0.5, 1.0]
    # rank 1's first compute and rank 2's first compute were not on the path: both waited
    assert not ((path["rank"] == 1) & (path["seq"] == 1)).any()
    assert not ((path["rank"] == 2) & (path["seq"] == 2)).any()


def test_every_action_simgrid_replays_is_timed():
    """A TI action the replayer did not wrap was replayed untimed, and the timeline had fewer
    actions than the text: every prediction of a trace holding an MPI_Scan failed (public
    LAMMPS calls one at set-up: "3194 TI lines for 3192 timed actions", helper QA session 31)."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1e6)
        for kind in ("scan", "exscan", "barrier"):
            b.add(r, kind, bytes_sent=8, bytes_recv=8)
        b.add(r, "finalize")
    res = replay(b.build(), engine="native", timeline=True)
    t = res.timeline
    assert sorted(t.loc[t["rank"] == 0, "action"]) == sorted(
        ["init", "compute", "scan", "exscan", "barrier", "finalize"])
    assert set(t.loc[t["action"].isin(["scan", "exscan"]), "category"]) == {"collectives"}
    assert res.breakdown()["collectives"].gt(0).all()


def test_perfetto_puts_replayed_beside_recorded(tmp_path):
    import json

    from minitrace.model import TraceBuilder
    from minitrace.storage import write_trace
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    t = 100.0   # recorded clocks do not start at 0
    for r in range(2):
        b.add(r, "init", t_start=t, t_end=t + 0.001)
        b.add(r, "compute", volume=0.5, t_start=t + 0.001, t_end=t + 0.501)
        if r == 0:
            b.add(r, "send", peer=1, tag=3, bytes_sent=64, t_start=t + 0.501, t_end=t + 0.502)
        else:
            b.add(r, "recv", peer=0, tag=3, bytes_recv=64, t_start=t + 0.501, t_end=t + 0.503)
        b.add(r, "finalize", t_start=t + 0.6, t_end=t + 0.61)
    h5 = tmp_path / "run.h5"
    write_trace(str(h5), b.build())
    out = tmp_path / "both.json"
    p = subprocess.run([sys.executable, "-m", "minitrace", "replay", str(h5), "--compute-rate",
                        "1Gf", "--speed", "1Gf", "--perfetto", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ev = json.loads(out.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert names == {0: "recorded", 1: "replayed (predicted)"}
    meta = [i for i, e in enumerate(ev) if e["ph"] == "M"]
    assert meta == list(range(len(meta)))                     # metadata first
    ts = [e["ts"] for e in ev if e["ph"] != "M"]
    assert ts == sorted(ts) and min(ts) >= 0                   # by time, recorded shifted to 0
    for e in ev:
        assert {"name", "ph", "pid", "tid"} <= set(e)
        if e["ph"] == "X":
            assert e["dur"] >= 0 and "ts" in e
    replayed = [e for e in ev if e["pid"] == 1 and e["ph"] == "X"]
    compute = [e for e in replayed if e["name"] == "compute"]
    assert [round(e["dur"]) for e in compute] == [500_000, 500_000]   # 0.5 s at 1 Gf, in us
    assert any(e["args"].get("critical") for e in compute)
    recv = [e for e in replayed if e["name"] == "recv"][0]
    assert (recv["args"]["src"], recv["args"]["dst"], recv["args"]["tag"]) == (0, 1, 3)
