"""numa-platform: the SimGrid platform of this machine's and of a 2-socket, 8-NUMA-node
machine's hwloc topology (tests/data/numa, saved from lstopo)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minitrace.errors import MinitraceError
from minitrace.tasks.graph import from_tasks
from minitrace.tasks.numa_platform import (memory_path, parse_lstopo, platform_xml,
                                           read_platform_info)
from minitrace.tasks.simulate import simulate

DATA = Path(__file__).resolve().parent / "data" / "numa"


def test_two_socket_eight_node_topology():
    top = parse_lstopo((DATA / "synthetic-2pack-8numa.xml").read_text())
    assert len(top.cores) == 128 and len(set(top.l3_of.values())) == 16
    assert sorted(top.package_of_node) == list(range(8))
    assert [top.package_of_node[n] for n in range(8)] == [0] * 4 + [1] * 4
    assert top.node_of[0] == 0 and top.node_of[127] == 7 and top.l3_of[8] == 1
    assert top.l3_size[0] == 16 << 20
    names = lambda c, n: [name for name, _ in memory_path(top, c, n)]  # noqa: E731
    assert names(0, 0) == ["memory0", "l3_0", "core0"]
    assert names(0, 1) == ["memory1", "package0", "l3_0", "core0"]
    assert names(0, 7) == ["memory7", "package1", "sockets", "package0", "l3_0", "core0"]


def test_this_machine_topology():
    top = parse_lstopo((DATA / "this-machine-2core.xml").read_text())
    assert top.cores == [0, 1] and set(top.l3_of.values()) == {0}
    assert set(top.node_of.values()) == {0}


def test_platform_file_runs_in_simgrid(tmp_path):
    top = parse_lstopo((DATA / "synthetic-2pack-8numa.xml").read_text())
    plat = tmp_path / "numa.xml"
    plat.write_text(platform_xml(top, {"core": 10e9, "memory": 10e9, "socket": 5e9}))
    info = read_platform_info(str(plat))
    assert len(info.cores) == 128 and len(info.memories) == 8
    # 1 s tasks reading 1 GB on node 7 from core 0: alone 0.2 s behind the 5 GB/s
    # inter-socket link (Tc = 0.8 s fitted, r = 0); two at once (cores 0 and 1) share it
    g = from_tasks({1: 1.0, 2: 1.0}, deps=[(1, 0, "in"), (2, 1, "in")],
                   sizes={0: 1_000_000_000, 1: 1_000_000_000}, nodes={0: 7, 1: 7})
    assert simulate(g, 1, "comm", str(plat)).predicted_time == pytest.approx(2.0, rel=1e-6)
    assert simulate(g, 2, "comm", str(plat)).predicted_time == pytest.approx(1.2, rel=1e-6)


def test_flows_alone_and_bandwidth_units(tmp_path):
    from minitrace.tasks.simulate import simple_platform
    plat = tmp_path / "p.xml"
    plat.write_text(platform_xml(simple_platform(2), {"core": 12e9, "l3": 25e9,
                                                      "memory": 20e9}))
    info = read_platform_info(str(plat))
    assert info.bandwidth["core0"] == 12e9 and info.bandwidth["memory0"] == 20e9
    # a read and a write of 1.2 GB at once: the core's split-duplex link carries each in its
    # own direction (0.1 s), the shared memory link both (2.4e9 / 20e9)
    assert info.time_alone([("mem0", "cpu0", 1.2e9)]) == pytest.approx(0.1)
    assert info.time_alone([("mem0", "cpu0", 1.2e9), ("cpu0", "mem0", 1.2e9)]) == \
        pytest.approx(0.12)
    bad = tmp_path / "bad.xml"
    bad.write_text(plat.read_text().replace('bandwidth="1.2e+10Bps"', 'bandwidth="fast"', 1))
    with pytest.raises(MinitraceError, match="link bandwidth 'fast' is not a number"):
        read_platform_info(str(bad))


def test_cli(tmp_path):
    out = tmp_path / "p.xml"
    p = subprocess.run([sys.executable, "-m", "minitrace", "numa-platform",
                        str(DATA / "synthetic-2pack-8numa.xml"), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "128 cores, 16 L3, 8 NUMA nodes, 2 packages" in p.stdout
    assert len(read_platform_info(str(out)).cores) == 128
    p = subprocess.run([sys.executable, "-m", "minitrace", "numa-platform", str(tmp_path),
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run([sys.executable, "-m", "minitrace", "numa-platform", "--synthetic",
                        "pack:2 numa:2 core:2 pu:1", "-o", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and "8 cores, 8 L3, 4 NUMA nodes, 2 packages" in p.stdout
    # a minitrace file: the topology its /provenance recorded (hwloc is set up's)
    from minitrace.tasks.graph import from_tasks as graph_of
    from minitrace.tasks.taskfile import write_tasks
    trace = tmp_path / "t.h5"
    write_tasks(str(trace), graph_of({1: 1.0}))
    p = subprocess.run([sys.executable, "-m", "minitrace", "numa-platform", str(trace),
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert len(read_platform_info(str(out)).cores) == len(parse_lstopo(
        subprocess.run(["lstopo", "--of", "xml"], capture_output=True, text=True).stdout).cores)


def test_not_lstopo_xml_is_one_line():
    with pytest.raises(MinitraceError, match="not lstopo XML"):
        parse_lstopo("<platform/>")
