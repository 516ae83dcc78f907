"""The SimGrid platform of a NUMA machine, from hwloc's lstopo XML (the machine's topology,
which every minitrace file stores in ``/provenance``).

A host per core (``cpuN``, N its first PU's OS index) and one per NUMA node (``memN``, the end
of memory flows); a memory flow from node n to a core crosses, in order, the core's own link
(split-duplex: reads and writes do not share it), its L3's link (shared by the cores of that
L3: a CCX), the package's interconnect when n is another node of the package (shared), the
inter-socket link when n is on the other package (split-duplex), and node n's memory link
(shared).  A flat model fails on hierarchies like AMD's CCX / die / socket, which is why each
level has its own link.  Hosts carry their L3 (``l3``, ``l3_size`` bytes) and NUMA node
(``numa_node``) as properties, which the CACHE model reads.

The bandwidths are the ``BANDWIDTHS`` defaults unless given (``python -m minitrace.bench
numa-bandwidth`` is meant to measure them): every platform file says which ones it used.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

from ..errors import MinitraceError

# bytes/s, not measurements: ordinary DDR4-era figures, to be replaced by numa-bandwidth's
BANDWIDTHS = {"core": 12e9, "l3": 25e9, "package": 20e9, "socket": 15e9, "memory": 20e9}
CORE_SPEED = 1e9      # flops/s: task durations are seconds, turned into flops at this speed


@dataclass
class Topology:
    """Per core: its L3, NUMA node and package; per L3 its size; per node its package."""
    cores: list[int] = field(default_factory=list)             # first PU's OS index
    l3_of: dict[int, int] = field(default_factory=dict)
    node_of: dict[int, int] = field(default_factory=dict)
    package_of_node: dict[int, int] = field(default_factory=dict)
    l3_size: dict[int, int] = field(default_factory=dict)
    l3_node: dict[int, int] = field(default_factory=dict)
    description: str = ""


def lstopo_xml(synthetic: str | None = None) -> str:
    """This machine's topology as lstopo XML (or hwloc's synthetic one for ``synthetic``)."""
    import shutil
    import subprocess
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if not exe:
        raise MinitraceError("hwloc's lstopo is not installed (Debian: hwloc-nox)")
    cmd = [exe, "--of", "xml"] + (["--input", synthetic] if synthetic else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise MinitraceError(f"lstopo failed: {(p.stderr.strip().splitlines() or ['?'])[0]}")
    return p.stdout


#: Processing units a platform is made for (a host per core, a route per core and node):
#: hwloc builds a synthetic topology of any size, for minutes, before anything is checked.
MAX_PUS = 1 << 14


def check_synthetic(desc: str) -> None:
    """Refuse an hwloc synthetic description of more than ``MAX_PUS`` processing units (the
    product of its levels' counts, ``type:N``) before hwloc builds it."""
    total = 1
    for level in desc.split():
        count = level.split("(")[0].rpartition(":")[2]
        if count.isdigit():
            total *= int(count)
    if total > MAX_PUS:
        raise MinitraceError(f"--synthetic {desc!r}: {total:,} processing units, more than "
                             f"{MAX_PUS:,}")


def parse_lstopo(xml: str, source: str = "lstopo XML") -> Topology:
    """The cores, L3 caches, NUMA nodes and packages of an lstopo XML export."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise MinitraceError(f"not lstopo XML ({e})", source) from None
    top = Topology()
    l3_ids: dict[int, int] = {}

    def walk(obj, node, l3, package):
        t = obj.get("type")
        # a NUMA node is a memory child of the object whose cores it serves
        for child in obj.findall("object"):
            if child.get("type") == "NUMANode":
                node = int(child.get("os_index", len(top.package_of_node)))
                top.package_of_node[node] = package
        if t == "Package":
            package = int(obj.get("os_index", package + 1))
        if t == "L3Cache":
            l3 = l3_ids.setdefault(id(obj), len(l3_ids))
            top.l3_size[l3] = int(obj.get("cache_size", 0))
            top.l3_node[l3] = node
        if t == "Core":
            pus = [int(p.get("os_index")) for p in obj.iter("object") if p.get("type") == "PU"]
            if pus:
                c = min(pus)
                top.cores.append(c)
                top.node_of[c] = node
                top.l3_of[c] = l3
            return
        for child in obj.findall("object"):
            if child.get("type") != "NUMANode":
                walk(child, node, l3, package)

    machine = root.find("object")
    if root.tag != "topology" or machine is None:
        raise MinitraceError("not lstopo XML (no <topology><object>)", source)
    walk(machine, 0, -1, 0)
    if not top.cores:
        raise MinitraceError("lstopo XML without any core", source)
    if not top.package_of_node:
        top.package_of_node[0] = 0
    for c in top.cores:    # a core under no L3 gets one of its own (no shared cache)
        if top.l3_of[c] < 0:
            top.l3_of[c] = len(l3_ids) + c
            top.l3_size[top.l3_of[c]] = 0
            top.l3_node[top.l3_of[c]] = top.node_of[c]
    top.cores.sort()
    top.description = (f"{len(top.cores)} cores, {len(set(top.l3_of.values()))} L3, "
                       f"{len(top.package_of_node)} NUMA nodes, "
                       f"{len(set(top.package_of_node.values()))} packages")
    return top


def platform_xml(top: Topology, bandwidths: dict | None = None) -> str:
    """The SimGrid platform (version 4.1 XML) of ``top``."""
    bw = dict(BANDWIDTHS)
    for k, v in (bandwidths or {}).items():
        if k not in BANDWIDTHS:
            raise MinitraceError(f"unknown link kind {k!r} (one of {', '.join(BANDWIDTHS)})")
        bw[k] = float(v)
        if not (math.isfinite(bw[k]) and bw[k] > 0):
            raise MinitraceError(f"bandwidth of {k} links {v!r}: not a positive number")
    out = ['<?xml version="1.0"?>',
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           f'<!-- minitrace numa-platform: {top.description}; bandwidths (B/s): '
           + ", ".join(f"{k} {v:.4g}" for k, v in bw.items()) + ' -->',
           '<zone id="numa" routing="Full">']
    for c in top.cores:
        l3 = top.l3_of[c]
        out.append(f'  <host id="cpu{c}" speed="{CORE_SPEED:.0f}f"><prop id="l3" value="{l3}"/>'
                   f'<prop id="l3_size" value="{top.l3_size.get(l3, 0)}"/>'
                   f'<prop id="numa_node" value="{top.node_of[c]}"/></host>')
    nodes = sorted(top.package_of_node)
    for n in nodes:
        out.append(f'  <host id="mem{n}" speed="{CORE_SPEED:.0f}f">'
                   f'<prop id="numa_node" value="{n}"/></host>')
    link = '  <link id={} bandwidth="{:.6g}Bps" latency="0" sharing_policy="{}"/>'
    for c in top.cores:
        out.append(link.format(quoteattr(f"core{c}"), bw["core"], "SPLITDUPLEX"))
    for l3 in sorted(set(top.l3_of.values())):
        out.append(link.format(quoteattr(f"l3_{l3}"), bw["l3"], "SHARED"))
    for p in sorted(set(top.package_of_node.values())):
        out.append(link.format(quoteattr(f"package{p}"), bw["package"], "SHARED"))
    if len(set(top.package_of_node.values())) > 1:
        out.append(link.format(quoteattr("sockets"), bw["socket"], "SPLITDUPLEX"))
    for n in nodes:
        out.append(link.format(quoteattr(f"memory{n}"), bw["memory"], "SHARED"))
    for c in top.cores:
        for n in nodes:
            path = memory_path(top, c, n)
            for src, dst, way in ((f"mem{n}", f"cpu{c}", "DOWN"), (f"cpu{c}", f"mem{n}", "UP")):
                links = path if way == "DOWN" else path[::-1]
                ctn = "".join(f'<link_ctn id="{name}"' +
                              (f' direction="{way}"' if split else "") + "/>"
                              for name, split in links)
                out.append(f'  <route src="{src}" dst="{dst}" symmetrical="NO">{ctn}</route>')
    out += ["</zone>", "</platform>", ""]
    return "\n".join(out)


def memory_path(top: Topology, core: int, node: int) -> list[tuple[str, bool]]:
    """The links (name, split-duplex?) from node ``node``'s memory to ``core``."""
    l3 = top.l3_of[core]
    home = top.l3_node.get(l3, top.node_of[core])
    p_core, p_node = top.package_of_node.get(home, 0), top.package_of_node.get(node, 0)
    path = [(f"memory{node}", False)]
    if node != home:
        path.append((f"package{p_node}", False))
        if p_node != p_core:
            path += [("sockets", True), (f"package{p_core}", False)]
    return path + [(f"l3_{l3}", False), (f"core{core}", True)]


@dataclass
class PlatformInfo:
    """What the simulator needs of a platform file: its cores in order, their caches, and
    its links and routes (to know how long flows take on an idle machine)."""
    cores: list[str]
    l3: dict[str, int]
    l3_size: dict[int, int]
    numa_node: dict[str, int]
    memories: dict[int, str]
    bandwidth: dict[str, float] = field(default_factory=dict)       # link -> B/s
    routes: dict[tuple, list] = field(default_factory=dict)         # (src, dst) -> [(link, dir)]

    def time_alone(self, flows: list[tuple[str, str, float]]) -> float:
        """How long ``flows`` (src host, dst host, bytes), started together on an idle
        platform, take: the most loaded link's bytes over its bandwidth (a split-duplex link's
        two directions counted apart); flows without a route count nothing."""
        load: dict[tuple, float] = {}
        for src, dst, nbytes in flows:
            for link, way in self.routes.get((src, dst), ()):
                load[(link, way)] = load.get((link, way), 0.0) + nbytes
        return max((b / self.bandwidth[k[0]] for k, b in load.items()
                    if self.bandwidth.get(k[0])), default=0.0)


def read_platform_info(path: str) -> PlatformInfo:
    """The cores (hosts with an ``l3`` property, else every host but ``mem*``), L3s and memory
    hosts of a SimGrid platform file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise MinitraceError(f"cannot read the platform ({e})", path) from None
    cores, l3, l3_size, node, mem = [], {}, {}, {}, {}
    for h in root.iter("host"):
        props = {p.get("id"): p.get("value") for p in h.findall("prop")}
        name = h.get("id")
        if name.startswith("mem") and "l3" not in props:
            mem[int(props.get("numa_node", len(mem)))] = name
            continue
        cores.append(name)
        l3[name] = int(props.get("l3", len(l3)))
        l3_size[l3[name]] = int(props.get("l3_size", 0))
        node[name] = int(props.get("numa_node", 0))
    if not cores:
        raise MinitraceError("the platform has no host to run threads on", path)
    bandwidth = {}
    for link in root.iter("link"):
        bandwidth[link.get("id")] = _bytes_per_second(link.get("bandwidth", ""), path)
    routes = {(r.get("src"), r.get("dst")): [(c.get("id"), c.get("direction"))
                                              for c in r.iter("link_ctn")]
              for r in root.iter("route")}
    return PlatformInfo(cores, l3, l3_size, node, mem, bandwidth, routes)


def _bytes_per_second(text: str, path: str) -> float:
    """A SimGrid bandwidth ("12.5GBps", "1e9Bps", "100Mbps") in bytes/s."""
    t = text.strip()
    bits = t.endswith("bps") and not t.endswith("Bps")
    t = t.removesuffix("Bps").removesuffix("bps")
    scale = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(t[-1:], 1.0)
    try:
        value = float(t[:-1] if scale != 1.0 else t) * scale
    except ValueError:
        raise MinitraceError(f"link bandwidth {text!r} is not a number", path) from None
    if not (math.isfinite(value) and value > 0):
        raise MinitraceError(f"link bandwidth {text!r} is not a positive number", path)
    return value / 8 if bits else value
