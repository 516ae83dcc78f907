"""Trace replay on real SimGrid: generated traces must obey flops/speed and bandwidth physics, our
traces replay the same whatever form they are given in, bad input gives one line; and, as
third-party cross-checks, SimGrid's own example traces give SimGrid's own published times."""
from __future__ import annotations

import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from minitrace import cli
from minitrace.errors import MinitraceError
from minitrace.replay.platforms import Cluster, parse_quantity, read_hostfile
from minitrace.replay import replay
from tests.support.fixtures import DATA, OWN_TI, SHARED

FIXTURES = SHARED / "simgrid_ti"
OWN = DATA / "ti"
PLATFORM, HOSTFILE = OWN / "platform.xml", OWN / "hostfile"
pytestmark = pytest.mark.timeout(120)

# -- third-party cross-checks: SimGrid's example traces on SimGrid's small_platform.xml ----------
# Simulated times printed by SimGrid 4.1's examples/smpi/replay/replay.tesh (smpirun -replay on
# small_platform.xml with its hostfile); "split" is actions0.txt + actions1.txt via a list file.
PUBLISHED = {"split": 13.622360, "actions_bcast": 19.692506, "actions_barrier": 2.573164,
             "actions_with_isend": 39.320741, "actions_allreduce": 13.139083,
             "actions_alltoall": 0.007159, "actions_alltoallv": 0.006944,
             "actions_allgatherv": 2.001913, "actions_waitall": 0.006258}
UNPUBLISHED = ["actions_gather", "actions_reducescatter", "actions_bcast_reduce_datatypes"]
#: SimGrid 4.1's defaults for the time injected into each MPI_Test and MPI_Iprobe
SIMGRID_POLLS = {"smpi/test": "1e-4", "smpi/iprobe": "1e-4"}


def _printed_time(out: str) -> float:
    """The time on the first line of ``minitrace replay``'s text output."""
    m = re.match(r"predicted run time: ([0-9.]+) s", out)
    assert m, out
    return float(m[1])


def _fixture_trace(name: str, tmp: Path) -> str:
    if name == "split":
        lst = tmp / "split_traces"
        lst.write_text(f"{FIXTURES / 'actions0.txt'}\n{FIXTURES / 'actions1.txt'}\n")
        return str(lst)
    return str(FIXTURES / f"{name}.txt")


@pytest.fixture(scope="module")
def fixture_runs(tmp_path_factory):
    """Every fixture replayed on small_platform.xml (unpublished ones twice), two at a time."""
    tmp = tmp_path_factory.mktemp("replay")
    jobs = [(n, 0) for n in PUBLISHED] + [(n, i) for n in UNPUBLISHED for i in (0, 1)]

    def one(job):      # (SimGrid's own sleep in each MPI_Test, which smpirun keeps and
        #                   minitrace's replay sets to 0: actions_with_isend's two tests)
        return replay(_fixture_trace(job[0], tmp), FIXTURES / "small_platform.xml",
                      FIXTURES / "hostfile", timeout=300, config=SIMGRID_POLLS)
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(jobs, pool.map(one, jobs)))


@pytest.mark.thirdparty
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_fixture_matches_simgrid_published_time(fixture_runs, name):
    r = fixture_runs[(name, 0)]
    assert math.isfinite(r.simulated_time) and r.simulated_time > 0
    assert r.simulated_time == pytest.approx(PUBLISHED[name], abs=1e-6)
    assert max(r.rank_end_times) == r.simulated_time
    assert r.hosts == read_hostfile(FIXTURES / "hostfile")[:r.nranks]
    assert r.config["network/model"] == "SMPI"


@pytest.mark.thirdparty
@pytest.mark.parametrize("name", UNPUBLISHED)
def test_fixture_replays_deterministically(fixture_runs, name):
    a, b = fixture_runs[(name, 0)], fixture_runs[(name, 1)]
    assert math.isfinite(a.simulated_time) and a.simulated_time > 0
    assert a.simulated_time == b.simulated_time
    assert a.rank_end_times == b.rank_end_times


@pytest.mark.thirdparty
def test_fixture_as_minitrace_file_gives_the_published_time(tmp_path):
    from minitrace.converters.simgrid_ti import read_ti
    from minitrace.storage import write_trace
    data = read_ti(FIXTURES / "actions_with_isend.txt")
    h5 = tmp_path / "isend.h5"
    write_trace(str(h5), data)
    r = replay(h5, FIXTURES / "small_platform.xml", FIXTURES / "hostfile", config=SIMGRID_POLLS)
    assert r.simulated_time == pytest.approx(PUBLISHED["actions_with_isend"], abs=1e-6)
    assert r.notes == []


@pytest.mark.thirdparty
def test_fixture_in_a_one_line_list_gives_the_published_time(tmp_path):
    lst = tmp_path / "one"
    lst.write_text(f"{FIXTURES / 'actions_barrier.txt'}\n")
    r = replay(lst, FIXTURES / "small_platform.xml", FIXTURES / "hostfile")
    assert r.nranks == 3
    assert r.simulated_time == pytest.approx(PUBLISHED["actions_barrier"], abs=1e-6)


@pytest.mark.thirdparty
def test_cli_prints_the_published_time(capsys):
    assert cli.main(["replay", str(FIXTURES / "actions_bcast.txt"), "--platform",
                     str(FIXTURES / "small_platform.xml"), "--hostfile",
                     str(FIXTURES / "hostfile")]) == 0
    assert _printed_time(capsys.readouterr().out) == pytest.approx(19.692506, abs=1e-6)


# -- our traces (tests/data/ti) on our platform: 5 hosts of 1, 0.5, 2, 0.25 and 1 Gflop/s --------
@pytest.fixture(scope="module")
def own_runs():
    """Each of our traces replayed twice on our platform, two at a time."""
    jobs = [(n, i) for n in OWN_TI for i in (0, 1)]

    def one(job):
        return replay(OWN / job[0], PLATFORM, HOSTFILE, timeout=300)
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(jobs, pool.map(one, jobs)))


@pytest.mark.parametrize("name", OWN_TI)
def test_own_trace_replays_deterministically(own_runs, name):
    a, b = own_runs[(name, 0)], own_runs[(name, 1)]
    assert math.isfinite(a.simulated_time) and a.simulated_time > 0
    assert max(a.rank_end_times) == a.simulated_time
    assert a.simulated_time == b.simulated_time and a.rank_end_times == b.rank_end_times
    assert a.hosts == read_hostfile(HOSTFILE)[:a.nranks]
    assert a.config["network/model"] == "SMPI"


def test_compute_on_platform_hosts_takes_flops_over_their_speed(tmp_path):
    """The hostfile places the ranks: each rank's 1e9 flops take 1e9 / its host's speed, and
    two ranks on south (one core of 2 Gflop/s) share it: 1 s each."""
    trace = _write_trace(tmp_path / "c.txt", [["compute 1e9"]] * 3)
    hf = tmp_path / "hosts"
    hf.write_text("south:2\nwest\n")
    r = replay(trace, PLATFORM, hf)
    assert r.hosts == ["south", "south", "west"]
    assert r.rank_end_times == pytest.approx([1.0, 1.0, 4.0], rel=1e-9)
    r = replay(trace, PLATFORM, HOSTFILE)                # north 1Gf, east 0.5Gf, south 2Gf
    assert r.rank_end_times == pytest.approx([1.0, 2.0, 0.5], rel=1e-9)


def test_minitrace_file_replays_like_its_text(tmp_path):
    """The stored trace replays like its text; its probe-sized receive is stored with the size
    the probe found, so SimGrid's probe cost (``smpi/iprobe``) is set to 0 for both."""
    from minitrace.converters.simgrid_ti import _WAITED_TEST, read_ti
    from minitrace.storage import write_trace
    h5 = tmp_path / "p2p.h5"
    write_trace(str(h5), read_ti(OWN / "p2p.txt"))
    r, text = (replay(t, PLATFORM, HOSTFILE, config={"smpi/iprobe": "0"})
               for t in (h5, OWN / "p2p.txt"))
    assert r.simulated_time == pytest.approx(text.simulated_time, rel=1e-12)
    assert r.rank_end_times == pytest.approx(text.rank_end_times, rel=1e-12)
    # (its rank 1 tests a receive, then waits for it: the test left out, at no cost)
    assert r.notes == [f"approximated 1 test ({_WAITED_TEST})"]


def test_one_line_list_is_a_shared_trace(tmp_path, own_runs):
    """smpirun's convention: a list naming one trace means every rank reads that trace."""
    lst = tmp_path / "one"
    lst.write_text(f"{OWN / 'types.txt'}\n")
    r = replay(lst, PLATFORM, HOSTFILE)
    assert r.nranks == 3
    assert r.simulated_time == own_runs[("types.txt", 0)].simulated_time


# -- generated traces -------------------------------------------------------------------------
def _write_trace(path: Path, lines_per_rank: list[list[str]]) -> str:
    path.write_text("".join(f"{r} {ln}\n" for r, lines in enumerate(lines_per_rank)
                            for ln in ["init", *lines, "finalize"]))
    return str(path)


def test_compute_only_takes_flops_over_speed(tmp_path):
    flops = [3.0e9, 7.5e9, 1.25e9]
    trace = _write_trace(tmp_path / "compute.txt",
                         [[f"compute {f / 2:g}", "compute 0", f"compute {f / 2:g}"] for f in flops])
    r = replay(trace, cluster=Cluster(3, speed="2.5Gf"))
    for got, f in zip(r.rank_end_times, flops):
        assert got == pytest.approx(f / 2.5e9, rel=1e-6)
    assert r.simulated_time == pytest.approx(max(flops) / 2.5e9, rel=1e-6)
    assert r.platform.startswith("generated: cluster of 3 hosts")


def test_doubling_bandwidth_halves_a_bulk_transfer(tmp_path):
    """Ten 100 MB messages: bandwidth-bound, so twice the bandwidth is (nearly) twice as fast."""
    n, size = 10, 10**8
    trace = _write_trace(tmp_path / "sends.txt",
                         [[f"send 1 {i} {size}" for i in range(n)],
                          [f"recv 0 {i} {size}" for i in range(n)]])
    slow = replay(trace, cluster=Cluster(2, bandwidth="1GBps", latency="1us"))
    fast = replay(trace, cluster=Cluster(2, bandwidth="2GBps", latency="1us"))
    assert fast.simulated_time < slow.simulated_time
    assert 1.9 < slow.simulated_time / fast.simulated_time <= 2.0 + 1e-9
    # and no faster than the wire allows at the higher bandwidth
    assert fast.simulated_time >= n * size / 2e9


def test_compute_in_seconds_needs_a_rate(tmp_path):
    """A trace timed in seconds on a 2 Gflop/s machine, replayed on 1 Gflop/s hosts: twice as
    long; a sleep stays in seconds."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, meta={"volume_unit": "seconds"})
    for r, (work, nap) in enumerate([(0.5, 0.0), (0.25, 0.125)]):
        b.add(r, "init")
        b.add(r, "compute", volume=work)
        b.add(r, "sleep", volume=nap)
        b.add(r, "finalize")
    data = b.build()
    with pytest.raises(MinitraceError, match="compute volumes are in seconds: give a compute "
                                             "rate"):
        replay(data)
    r = replay(data, cluster=Cluster(2, speed="1Gf"), compute_rate="2Gf")
    assert r.rank_end_times == pytest.approx([1.0, 0.625], rel=1e-6)
    assert r.notes == []


def test_recorded_ring_is_latency_bound(programs, tmp_path):
    """Record the C token ring (3 ranks x 3 rounds of tiny messages, a real mpiexec job), then
    replay it: 9 sequential hops of 2 links each, so the time is at least 18 latencies and
    grows ~10x when the latency does (its compute, CPU microseconds, hardly counts)."""
    from tests.support.record_util import record
    h5 = tmp_path / "ring.h5"
    record(h5, 3, [programs("ring"), "3"], volume="cputime")
    near, far = (replay(h5, cluster=Cluster(3, latency=lat), compute_rate="1Gf")
                 for lat in ("10ms", "100ms"))
    assert near.simulated_time >= 3 * 3 * 2 * 10e-3
    assert 9 < far.simulated_time / near.simulated_time < 10


def test_missing_last_newline_is_not_dropped(tmp_path):
    """SimGrid's reader skips a last line without its newline; the replay must not."""
    r0 = tmp_path / "r0.txt"
    r1 = tmp_path / "r1.txt"
    r0.write_text("0 init\n0 compute 2e9")
    r1.write_text("1 init\n1 compute 1e9\n")
    lst = tmp_path / "list.txt"
    lst.write_text("r0.txt\nr1.txt\n")          # relative to the list file
    r = replay(lst, cluster=Cluster(2, speed="1Gf"))
    assert r.rank_end_times == pytest.approx([2.0, 1.0], rel=1e-6)


def test_units():
    assert parse_quantity("10GBps", "bandwidth") == 1e10
    assert parse_quantity("8Gbps", "bandwidth") == 1e9
    assert parse_quantity("1.5us", "time") == pytest.approx(1.5e-6)
    assert parse_quantity("2Gf", "speed") == 2e9
    with pytest.raises(MinitraceError, match="unknown speed unit 'GB'"):
        parse_quantity("1GB", "speed")


def test_hostfile_slots(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("# two slots on a\na:2\n\nb\n")
    assert read_hostfile(hf) == ["a", "a", "b"]
    hf.write_text("a:x\n")
    with pytest.raises(MinitraceError, match=r"hosts: line 1: expected 'host' or 'host:N'"):
        read_hostfile(hf)


def test_error_missing_platform(tmp_path):
    with pytest.raises(MinitraceError, match=r"nope\.xml: no such platform file"):
        replay(OWN / "types.txt", tmp_path / "nope.xml")


def test_error_more_ranks_than_hosts(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("north\neast\nsouth\n")
    with pytest.raises(MinitraceError, match="trace has 4 ranks but only 3 hosts are listed"):
        replay(OWN / "collectives.txt", PLATFORM, hf)
    with pytest.raises(MinitraceError, match="4 ranks but the generated cluster has only 2 hosts"):
        replay(OWN / "collectives.txt", cluster=Cluster(2))
    two = tmp_path / "two.xml"    # a platform file with fewer hosts than ranks: found by SimGrid
    two.write_text(Cluster(2).xml())
    with pytest.raises(MinitraceError, match=r"two\.xml: the trace has 4 ranks but the platform "
                                             r"has only 2 hosts"):
        replay(OWN / "collectives.txt", two)


def test_error_simgrid_failure_quotes_its_log(tmp_path):
    trace = _write_trace(tmp_path / "bad.txt", [["frobnicate 3"]])
    with pytest.raises(MinitraceError) as e:
        replay(trace, cluster=Cluster(1))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{trace}: SimGrid failed (exit status")      # (names the trace)
    assert "action frobnicate is unknown" in msg


def test_error_deadlock(tmp_path):
    trace = _write_trace(tmp_path / "dead.txt", [["recv 1 0 8"], ["recv 0 0 8"]])
    with pytest.raises(MinitraceError, match=r"rank\(s\) \[0, 1\] unfinished; SimGrid: .*Deadlock"):
        replay(trace, cluster=Cluster(2))


def test_error_timeout(tmp_path):
    """A zero timeout has expired before the child can even start Python, on any machine:
    the timeout path (child killed, one-line error) is taken whatever the machine's speed."""
    trace = _write_trace(tmp_path / "t.txt", [["compute 1"]])
    with pytest.raises(MinitraceError) as e:
        replay(trace, timeout=0)
    assert str(e.value) == (f"{trace}: the SimGrid replay did not finish within 0 s of wall "
                            "time (raise the timeout for a long trace)")


def test_error_trace_without_init(tmp_path):
    t = tmp_path / "noinit.txt"
    t.write_text("0 compute 1\n1 init\n")
    with pytest.raises(MinitraceError, match=r"noinit\.txt: the trace of rank 0 must start "
                                             r"with '0 init'"):
        replay(t)


def test_cli_text_and_json(capsys, own_runs):
    base = [str(OWN / "types.txt"), "--platform", str(PLATFORM), "--hostfile", str(HOSTFILE)]
    smpi = own_runs[("types.txt", 0)].simulated_time
    assert cli.main(["replay", *base]) == 0
    out = capsys.readouterr().out
    assert _printed_time(out) == pytest.approx(smpi, abs=1e-6)
    assert "network/model:SMPI" in out
    assert cli.main(["replay", *base, "--cfg", "network/model:LV08", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"]["network/model"] == "LV08"
    assert doc["nranks"] == 3 and len(doc["rank_end_times"]) == 3
    assert doc["simulated_time"] > 0 and doc["simulated_time"] != pytest.approx(smpi)


def test_cli_errors_are_one_line(capsys, tmp_path):
    trace = _write_trace(tmp_path / "t.txt", [["compute 1e9"]])
    assert cli.main(["replay", trace, "--platform", str(tmp_path / "x.xml"), "--speed", "1Gf"]) == 1
    assert cli.main(["replay", trace, "--cfg", "novalue"]) == 1
    assert cli.main(["replay", trace, "--speed", "fast"]) == 1
    assert cli.main(["replay", trace, "--np", "2"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "minitrace: error: --speed describes a generated cluster: drop it or --platform",
        "minitrace: error: --cfg wants KEY:VALUE, got 'novalue'",
        "minitrace: error: cannot read speed 'fast': expected a number with a unit "
        "(f, Mf, Gf, Tf)",
        "minitrace: error: the trace has 1 ranks but 2 were asked for (--np)",
    ]


@pytest.mark.parametrize("content, why", [
    (b"hello world\n", "line 1: neither a TI action ('<rank> <action> ...') nor an existing "
                       "trace file: 'hello world'"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "not a text trace (binary data)"),
    (b"\n# comment only\n", "empty file: neither a TI trace nor a list of traces"),
])
def test_cli_non_trace_input_is_one_line(capsys, tmp_path, content, why):
    """The same list/trace reader as ``minitrace import``: the same message naming the file."""
    f = tmp_path / "input"
    f.write_bytes(content)
    assert cli.main(["replay", str(f)]) == 1
    assert capsys.readouterr().err == f"minitrace: error: {f}: {why}\n"


def test_exported_sendrecv_replays(tmp_path):
    """A sendrecv exchange exported from the model replays (SimGrid 4.1 needs sendRecv's two
    datatypes), exactly like the same exchange written by hand in SimGrid's syntax."""
    from minitrace.model import TraceBuilder
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        for _ in range(3):
            b.add(r, "sendrecv", peer=1 - r, tag=0, bytes_sent=10**6, bytes_recv=10**6,
                  vector=[1 - r, 0])
        b.add(r, "finalize")
    cluster = Cluster(2, bandwidth="1GBps", latency="1us")
    got = replay(b.build(), cluster=cluster)
    text = _write_trace(tmp_path / "sr.txt", [[f"sendRecv 1000000 {1 - r} 1000000 {1 - r} 6 6"]
                                              * 3 for r in range(2)])
    want = replay(text, cluster=cluster)
    assert got.notes == []
    assert got.simulated_time == pytest.approx(want.simulated_time, rel=1e-12)
    assert got.simulated_time >= 3 * 10**6 / 1e9          # three 1 MB exchanges on 1 GB/s
