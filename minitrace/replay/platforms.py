"""Simple SimGrid platforms for users who have none: a cluster of N identical hosts.

The cluster is SimGrid's flat ``<cluster>``: every host has its own full-duplex link (given
bandwidth and latency) to a non-blocking crossbar, so two ranks on different hosts are separated
by two links and the network is limited only by each host's link.  Quantities accept SimGrid's
unit syntax ("1Gf", "10GBps", "100Gbps", "1us"; sizes "16MB", "4MiB") and are written to the
XML in base units, so what SimGrid reads is exactly what :func:`parse_quantity` returned.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from ..errors import MinitraceError

DEFAULT_SPEED = "1Gf"
DEFAULT_BANDWIDTH = "10GBps"
DEFAULT_LATENCY = "1us"

_DEC = ("k", "M", "G", "T", "P", "E", "Z", "Y")
_DEC_LONG = ("kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta")
_BIN = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi")


def _scale(unit: str, value: float, prefixes, mult: float) -> dict[str, float]:
    out = {unit: value}
    for i, p in enumerate(prefixes, 1):
        out[p + unit] = value * mult ** i
    return out


# The same unit tables as SimGrid's xbt_parse_units.cpp (speed, bandwidth, time).
_UNITS = {
    "speed": {**_scale("f", 1.0, _DEC, 1e3), **_scale("flops", 1.0, _DEC_LONG, 1e3)},
    "bandwidth": {**_scale("bps", 0.125, _BIN, 1024.0), **_scale("bps", 0.125, _DEC, 1e3),
                  **_scale("Bps", 1.0, _BIN, 1024.0), **_scale("Bps", 1.0, _DEC, 1e3)},
    "size": {**_scale("b", 0.125, _BIN, 1024.0), **_scale("b", 0.125, _DEC, 1e3),
             **_scale("B", 1.0, _BIN, 1024.0), **_scale("B", 1.0, _DEC, 1e3)},
    "time": {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3,
             "us": 1e-6, "ns": 1e-9, "ps": 1e-12},
}
_EXAMPLES = {"speed": "f, Mf, Gf, Tf", "bandwidth": "MBps, GBps, Gbps, GiBps",
             "size": "B, kB, MB, KiB, MiB", "time": "s, ms, us, ns"}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_quantity(text: str | float, kind: str, bare: str = "") -> float:
    """Value in base units (flop/s, bytes/s, bytes, seconds) of a number with an optional
    SimGrid unit (``kind``: speed, bandwidth, size or time); a bare number is in unit ``bare``
    (default: already in base units), so every command reads quantities the same way."""
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        m = _NUMBER.match(str(text))
        if not m:
            raise MinitraceError(f"cannot read {kind} {text!r}: expected a number with a unit "
                                 f"({_EXAMPLES[kind]})")
        value, unit = float(m.group(1)), m.group(2)
    unit = unit or bare
    factor = 1.0 if unit == "" else _UNITS[kind].get(unit)
    if factor is None:
        raise MinitraceError(f"unknown {kind} unit {unit!r} in {text!r} (SimGrid units: "
                             f"{_EXAMPLES[kind]}, ...)")
    value *= factor
    if not value > 0 and not (kind == "time" and value == 0):
        raise MinitraceError(f"{kind} must be positive, got {text!r}")
    return value


#: More ranks on one host than this is a mistake (and a host list of that length is built).
MAX_RANKS_PER_HOST = 1 << 16


@dataclass(frozen=True)
class Cluster:
    """N hosts named ``node-0`` ... ``node-{N-1}``, each of ``speed`` flop/s with one link of
    ``bandwidth`` (each direction) and ``latency`` to a crossbar.  ``hosts=None``: enough for
    every rank (filled in by the replay).  ``ranks_per_host`` > 1 puts that many consecutive
    ranks on each host, with as many cores, talking through the host's loopback link
    (``loopback_bandwidth``, ``loopback_latency``; default: those of the host's link).

    ``node_bandwidth``: what simultaneous transfers between one host's ranks share (its memory;
    SimGrid's loopback link gives each transfer its full bandwidth).  With it, a cluster of one
    host is written as one SimGrid host per rank (one core each), links of the loopback's
    latency / 2 and bandwidth (a route: two links), joined by a shared backbone of
    ``node_bandwidth``: one message alone is as before, two at once share the backbone.  A
    cluster of several hosts keeps the loopback links (SimGrid's flat cluster has one
    backbone for all hosts)."""

    hosts: int | None = None
    speed: str | float = DEFAULT_SPEED
    bandwidth: str | float = DEFAULT_BANDWIDTH
    latency: str | float = DEFAULT_LATENCY
    ranks_per_host: int = 1
    loopback_bandwidth: str | float | None = None
    loopback_latency: str | float | None = None
    node_bandwidth: str | float | None = None

    def hosts_for(self, nranks: int) -> int:
        """Hosts needed for ``nranks`` ranks at ``ranks_per_host`` each."""
        return -(-int(nranks) // self._per_host())

    def host_names(self) -> list[str]:
        """Host names as written in the generated XML."""
        n = self._per_host() if self.shares_memory() else self.hosts
        return [f"node-{i}" for i in range(n)]

    def rank_hosts(self) -> list[str]:
        """Host of each rank slot (the replay places rank i on the i-th): ``ranks_per_host``
        consecutive slots per host (one host per slot when the node's memory is shared)."""
        if self.shares_memory():
            return self.host_names()
        return [h for h in self.host_names() for _ in range(self._per_host())]

    def shares_memory(self) -> bool:
        """One host of several ranks whose transfers share ``node_bandwidth``."""
        return self.node_bandwidth is not None and self.hosts == 1 and self._per_host() > 1

    def _per_host(self) -> int:
        if not 1 <= int(self.ranks_per_host) <= MAX_RANKS_PER_HOST:   # (a host list is built)
            raise MinitraceError(f"ranks per host must be in 1..{MAX_RANKS_PER_HOST}, got "
                                 f"{self.ranks_per_host}")
        return int(self.ranks_per_host)

    def xml(self) -> str:
        """The platform in SimGrid 4 XML (DTD version 4.1), quantities in base units."""
        if self.hosts is None or int(self.hosts) < 1:
            raise MinitraceError(f"a cluster needs at least one host, got {self.hosts}")
        speed = parse_quantity(self.speed, "speed")
        bw = parse_quantity(self.bandwidth, "bandwidth")
        lat = parse_quantity(self.latency, "time")
        attrs = {"id": "cluster", "prefix": "node-", "suffix": "",
                 "radical": f"0-{int(self.hosts) - 1}", "speed": f"{speed!r}f",
                 "bw": f"{bw!r}Bps", "lat": f"{lat!r}s", "sharing_policy": "SPLITDUPLEX"}
        shared = ""
        per = self._per_host()
        lbw = parse_quantity(self.loopback_bandwidth if self.loopback_bandwidth is not None
                             else self.bandwidth, "bandwidth")
        llat = parse_quantity(self.loopback_latency if self.loopback_latency is not None
                              else self.latency, "time")
        if self.shares_memory():
            # (never below one message's: a lone message is replayed as before)
            nbw = max(parse_quantity(self.node_bandwidth, "bandwidth"), lbw)
            attrs.update({"radical": f"0-{per - 1}", "bw": f"{lbw!r}Bps",
                          "lat": f"{llat / 2!r}s", "bb_bw": f"{nbw!r}Bps", "bb_lat": "0.0s",
                          "bb_sharing_policy": "SHARED"})
            shared = (f", {per} ranks on it, one SimGrid host each, routes of {lbw!r} B/s and "
                      f"{llat!r} s through a shared backbone of {nbw!r} B/s (its memory)")
        elif per > 1 or self.loopback_bandwidth is not None or self.loopback_latency is not None:
            attrs.update({"core": str(per), "loopback_bw": f"{lbw!r}Bps",
                          "loopback_lat": f"{llat!r}s"})
            shared = (f", {per} ranks (cores) per host, loopback links of {lbw!r} B/s and "
                      f"{llat!r} s")
        body = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
        return ("<?xml version='1.0'?>\n"
                '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                '<platform version="4.1">\n'
                f"  <!-- minitrace: {self.hosts} hosts of {self.speed}, links of "
                f"{self.bandwidth} and {self.latency}{shared} -->\n"
                f"  <cluster {body}/>\n"
                "</platform>\n")

    def write(self, directory: str | os.PathLike) -> tuple[str, str]:
        """Write ``platform.xml`` and ``hostfile`` (host of each rank slot, one per line) into
        ``directory``; returns their paths."""
        os.makedirs(directory, exist_ok=True)
        xml_path = os.path.join(directory, "platform.xml")
        host_path = os.path.join(directory, "hostfile")
        with open(xml_path, "w") as fh:
            fh.write(self.xml())
        write_hostfile(host_path, self.rank_hosts())
        return xml_path, host_path


def write_hostfile(path: str | os.PathLike, hosts: list[str]) -> str:
    """A SimGrid/smpirun hostfile: one host name per line, rank i runs on line i."""
    with open(path, "w") as fh:
        fh.write("".join(f"{h}\n" for h in hosts))
    return os.fspath(path)


def read_hostfile(path: str | os.PathLike) -> list[str]:
    """Host of each rank slot, as smpirun reads it: one name per line, ``name:N`` for N slots,
    blank lines and ``#`` comments skipped."""
    path = os.fspath(path)
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise MinitraceError(f"cannot read hostfile: {e.strerror}", path) from None
    except UnicodeDecodeError:
        raise MinitraceError("hostfile is not text (UTF-8)", path) from None
    hosts: list[str] = []
    for lineno, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, count = line.partition(":")
        if sep:
            if not count.strip().isdigit() or int(count) < 1:
                raise MinitraceError(f"line {lineno}: expected 'host' or 'host:N', got {line!r}",
                                     path)
            hosts.extend([name.strip()] * int(count))
        else:
            hosts.append(name)
    if not hosts:
        raise MinitraceError("hostfile lists no host", path)
    return hosts
