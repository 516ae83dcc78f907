"""``minitrace numa-platform``: the SimGrid platform of a NUMA machine, from hwloc."""
from __future__ import annotations

import os

from ..errors import MinitraceError
from ..options import number
from ..outputs import check_disjoint, check_output_file, replacing_file
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser(
        "numa-platform", help=COMMANDS["numa-platform"],
        description="Write the SimGrid platform of a NUMA machine for simulate-tasks: a host "
                    "per core and per NUMA node, each core's link, its L3's, the packages' "
                    "interconnects and each node's memory link (docs/TASKS.md).  SOURCE is an "
                    "lstopo XML file or a minitrace file (its recorded lstopo XML); default: "
                    "this machine (lstopo), or --synthetic.")
    p.add_argument("source", nargs="?", help="lstopo XML or minitrace file")
    p.add_argument("--synthetic", metavar="DESC",
                   help="an hwloc synthetic topology, e.g. 'pack:2 numa:4 l3:2 core:8 pu:1'")
    p.add_argument("--bandwidth", metavar="K=BW,...",
                   help="bytes/s per link kind (core, l3, package, socket, memory), e.g. "
                        "core=12e9,memory=20e9; default: placeholders, not measurements")
    p.add_argument("-o", "--output", default="numa.xml", help="platform file (default numa.xml)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..tasks.numa_platform import parse_lstopo, platform_xml
    check_output_file(args.output)
    check_disjoint([args.source], [args.output])
    xml, where = _topology(args)
    top = parse_lstopo(xml, where)
    text = platform_xml(top, _bandwidths(args.bandwidth))
    with replacing_file(args.output) as f:
        f.write(text)
    print(f"{args.output}: {top.description} ({where})")
    return 0


def _topology(args) -> tuple[str, str]:
    if args.source and args.synthetic:
        raise MinitraceError("give SOURCE or --synthetic, not both")
    if args.source:
        if not os.path.isfile(args.source):
            raise MinitraceError("no such file", args.source)
        with open(args.source, "rb") as f:
            head = f.read(8)
        if head == b"\x89HDF\r\n\x1a\n":
            from ..storage import read_provenance
            xml = (read_provenance(args.source) or {}).get("lstopo_xml")
            if not xml:
                raise MinitraceError("holds no lstopo XML (hwloc was not installed where it "
                                     "was written)", args.source)
            return xml, args.source
        with open(args.source, errors="replace") as f:
            return f.read(), args.source
    from ..tasks.numa_platform import check_synthetic, lstopo_xml
    if args.synthetic:
        check_synthetic(args.synthetic)
    return lstopo_xml(args.synthetic), \
        f"synthetic {args.synthetic!r}" if args.synthetic else "this machine"


def _bandwidths(text: str | None) -> dict:
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        k, _, v = item.partition("=")
        out[k.strip()] = number(f"--bandwidth {k.strip()}=", 0, above=True)(v)
    return out
