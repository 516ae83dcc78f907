"""Provenance in every file minitrace writes (real writers, run as separate processes with
their own environment), shown by ``minitrace info`` and compared by ``minitrace diff``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import resources

import h5py
import numpy as np
import pytest

from minitrace import provenance as prov
from minitrace.storage import read_attrs, read_provenance, write_bench

DEMO = str(resources.files("minitrace") / "data" / "demo_ring4.txt")
MPI_ENV = {"MPIR_CVAR_ASYNC_PROGRESS": "1", "OMPI_MCA_btl": "self,vader", "UCX_TLS": "sm",
           "FI_PROVIDER": "tcp"}


def cli(*args, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """``python -m minitrace.cli ARGS`` in a child process (its own environment and argv)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(prov.ENV_PREFIXES)}
    full.update(env or {})
    p = subprocess.run([sys.executable, "-m", "minitrace.cli", *map(str, args)],
                       capture_output=True, text=True, timeout=300, env=full)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def library_version() -> str:
    """What MPI_Get_library_version says, asked independently of minitrace, less the NUL
    Open MPI ends it with (and any other control character but newlines and tabs)."""
    text = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; "
                           "print(MPI.Get_library_version().strip())"], capture_output=True,
                          text=True, timeout=300, check=True).stdout.strip()
    return "".join(c for c in text if c.isprintable() or c in "\n\t").strip()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """A trace file written by `minitrace import` with MPI variables set, and its provenance."""
    out = tmp_path_factory.mktemp("prov") / "ring.h5"
    cli("import", DEMO, "-o", out, env={**MPI_ENV, "UNRELATED_VAR": "x"})
    return out, read_provenance(str(out))


def test_trace_file_has_provenance(imported):
    path, p = imported
    assert p["environment"] == MPI_ENV  # exactly the MPI-relevant ones
    assert "minitrace.cli import" in p["command_line"] and str(path) in p["command_line"]
    import mpi4py  # only its version: importing mpi4py does not start MPI
    v = p["versions"]
    assert v["numpy"] == np.__version__ and v["h5py"] == h5py.__version__
    assert v["mpi4py"] == mpi4py.__version__ and v["minitrace"]
    assert v["python"].endswith(".".join(map(str, sys.version_info[:3])))
    assert "simgrid" in v
    assert p["mpi_library"] == library_version()
    assert p["hostname"] and p["cpu"]["logical_cpus"] == os.cpu_count()
    assert p["memory_bytes"] > 0
    caches = p.get("caches", {})
    assert all(isinstance(s, str) and s for s in caches.values())


def test_lstopo_xml(imported):
    """The topology is hwloc's own XML (installed: lstopo-no-graphics from hwloc-nox)."""
    if not (shutil.which("lstopo-no-graphics") or shutil.which("lstopo")):
        pytest.skip("hwloc's lstopo is not installed")
    _, p = imported
    root = ET.fromstring(p["lstopo_xml"])
    assert root.tag == "topology"
    assert len(root.findall(".//object[@type='PU']")) == os.cpu_count()


def test_collect_does_not_initialize_mpi(tmp_path):
    """Provenance is collected in processes that must not start MPI (the recorder's merge):
    the library version comes from a child, and this process's mpi4py stays unimported."""
    code = ("import sys; from minitrace import provenance as p; r = p.collect(); "
            "print('mpi4py.MPI' in sys.modules); print(r['mpi_library'].splitlines()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.splitlines()
    assert out[0] == "False"
    assert out[1] == library_version().splitlines()[0]


def test_unstorable_strings_are_cleaned(tmp_path):
    """NUL (Open MPI's library version ends in one), other control characters and bytes that
    are not UTF-8 (an environment variable, the command line) are cleaned where provenance
    is gathered: the file is written, and what can be kept is kept."""
    out = tmp_path / "w.h5"
    # the library version as Open MPI's MPI_Get_library_version gives it, through the path
    # provenance takes when the writer already imported mpi4py.MPI
    code = ("import sys, types, numpy as np; from minitrace.storage import write_bench; "
            "sys.modules['mpi4py.MPI'] = types.SimpleNamespace(Get_library_version=lambda: "
            "'Open MPI v5.0.11, package: Open MPI\\x00'); "
            f"write_bench({str(out)!r}, 's', {{'x': np.zeros(2)}}); "
            "from minitrace import provenance as p; print(repr(p.mpi_library()))")
    env = {k.encode(): v.encode() for k, v in os.environ.items()
           if not k.startswith(prov.ENV_PREFIXES)}
    env[b"UCX_TLS"] = b"sm\xff\x01\x1b[0m,tcp"
    child = subprocess.run([sys.executable, "-c", code, b"arg\x07\xfe"], check=True,
                           timeout=300, env=env, capture_output=True, text=True)
    # what the benchmarks' metadata takes from provenance is cleaned too
    assert child.stdout.strip() == repr("Open MPI v5.0.11, package: Open MPI")
    p = read_provenance(str(out))
    assert p["mpi_library"] == "Open MPI v5.0.11, package: Open MPI"
    assert p["environment"] == {"UCX_TLS": "sm\ufffd[0m,tcp"}
    assert p["command_line"].endswith(" 'arg\ufffd'")
    clean = prov.storable({"a\x00": ["x\ty\nz\x7f\x85", 3, "\udcff\ud800"]})
    assert clean["a"][:2] == ["x\ty\nz", 3] and set(clean["a"][2]) == {"\ufffd"}


def test_bench_group_replaces_provenance(tmp_path):
    """A file written twice carries the provenance of its last writer."""
    path = tmp_path / "b.h5"
    for k, env in enumerate(({"FI_PROVIDER": "tcp"}, {"FI_PROVIDER": "shm"})):
        code = ("import numpy as np; from minitrace.storage import write_bench; "
                f"write_bench({str(path)!r}, 'suite{k}', {{'x': np.arange(3.0)}})")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=300,
                       env={**os.environ, **env})
    p = read_provenance(str(path))
    assert p["environment"] == {"FI_PROVIDER": "shm"} and "suite1" in p["command_line"]
    with h5py.File(path) as f:
        assert sorted(f["bench"]) == ["suite0", "suite1"]


def test_info_shows_provenance(imported):
    path, p = imported
    text = cli("info", path).stdout
    assert "provenance (of the file's last writer" in text
    for line in prov.summary_lines(p):
        assert f"  {line}\n" in text
    assert "environment: " + " ".join(f"{k}={v}" for k, v in sorted(MPI_ENV.items())) in text
    assert f"mpi library: {' '.join(library_version().splitlines()[0].split())}" in text


def test_diff(tmp_path, imported):
    a, _ = imported
    b = tmp_path / "other.h5"
    cli("import", DEMO, "-o", b, env={**MPI_ENV, "UCX_TLS": "tcp", "FI_PROVIDER": ""})
    with h5py.File(b, "a") as f:  # as if written on a machine with another topology
        g = f["provenance"]
        xml = g["lstopo_xml"][...].tobytes().decode() if "lstopo_xml" in g else "<topology/>"
        if "lstopo_xml" in g:
            del g["lstopo_xml"]
        g.create_dataset("lstopo_xml", data=np.frombuffer(
            xml.replace("<topology", "<topology\n  extra='1'", 1).encode() + b"\n<!-- B -->",
            np.uint8))
    p = cli("diff", a, b, check=False)
    assert p.returncode == 3, p.stderr
    out = p.stdout
    assert "  environment.UCX_TLS: sm -> tcp\n" in out
    assert "  environment.FI_PROVIDER: tcp -> \n" in out
    assert "  command_line: " in out  # the output paths differ
    assert "  lstopo_xml: differs (" in out and "    +<!-- B -->" in out
    assert "versions." not in out and "mpi_library" not in out  # same software
    # --ignore leaves out a key and everything under it
    p = cli("diff", a, b, "--ignore", "environment", "--ignore", "lstopo_xml",
            "--ignore", "command_line", "--ignore", "date", check=False)
    assert "environment" not in p.stdout and "lstopo" not in p.stdout
    same = cli("diff", a, a)
    assert same.returncode == 0 and "no difference in provenance" in same.stdout


def test_diff_says_the_recorded_programs_mpi_library(tmp_path, imported):
    """Two recordings of one program under two MPI libraries differ in the file's own
    mpi_library (the program's), which the provenance (the writer's, mpi4py's) does not hold:
    UK-MAC CloverLeaf under MPICH and under Open MPI differed only by command, cwd and date."""
    a, _ = imported
    b = tmp_path / "ompi.h5"
    shutil.copy(a, b)
    with h5py.File(b, "a") as f:
        f.attrs["mpi_library"] = "Open MPI v4.1.4"
    p = cli("diff", a, b, check=False)
    assert p.returncode == 3
    line = next(x for x in p.stdout.splitlines() if x.startswith("  run.mpi_library: "))
    assert line.endswith(" -> Open MPI v4.1.4")
    assert "run." not in cli("diff", a, a).stdout


def test_diff_of_file_without_provenance(tmp_path, imported):
    a, _ = imported
    old = tmp_path / "old.h5"
    shutil.copy(a, old)
    with h5py.File(old, "a") as f:
        del f["provenance"]
    p = cli("diff", a, old, check=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip() == (f"minitrace: error: {old}: has no provenance (written before "
                                "minitrace recorded it)")


def test_differences_and_flatten():
    a = {"versions": {"numpy": "1", "x": "2"}, "cpu": {"model": "A"}, "env": {}}
    b = {"versions": {"numpy": "2", "x": "2"}, "cpu": {"model": "A"}, "host": "h"}
    assert prov.differences(a, b) == [("env", {}, None), ("host", None, "h"),
                                      ("versions.numpy", "1", "2")]
    assert prov.describe_difference("host", None, "h") == ["host: (absent) -> h"]
    assert prov.describe_difference("env", {}, None) == ["env: {} -> (absent)"]


def test_store_round_trip(tmp_path):
    """Dicts and lists come back as such; a big XML (over HDF5's 64 KiB attribute limit)
    is stored as a dataset."""
    rec = {"command_line": "x", "environment": {"UCX_TLS": "rc"}, "governor": ["performance"],
           "memory_bytes": 5, "lstopo_xml": "<topology>" + "a" * 100_000 + "</topology>"}
    path = tmp_path / "r.h5"
    with h5py.File(path, "w") as f:
        prov.store(f, rec)
        assert json.loads(f["provenance"].attrs["environment"]) == {"UCX_TLS": "rc"}
    with h5py.File(path) as f:      # not a minitrace file: read_provenance would refuse it
        g = f["provenance"]
        back = {**read_attrs(g), "lstopo_xml": g["lstopo_xml"][...].tobytes().decode()}
    assert back == rec
    write_bench(str(tmp_path / "w.h5"), "s", {"x": np.zeros(2)})
    assert read_provenance(str(tmp_path / "w.h5"))["date"]


def test_written_twice_in_one_process(tmp_path, monkeypatch):
    """What cannot change while a process runs (versions, machine, topology) is collected
    once; what can (the environment, the date, the directory) at each write: two files one
    process writes hold the same machine and each its own environment, and lstopo's XML
    (deflated once) reads back as collected."""
    from minitrace.storage import new_file
    for k in list(os.environ):
        if k.startswith(prov.ENV_PREFIXES):
            monkeypatch.delenv(k)
    got = []
    for k, (tls, fixed) in enumerate((("sm", True), ("rc", True), ("tcp", False))):
        monkeypatch.setenv("UCX_TLS", tls)
        path = tmp_path / f"{k}.h5"
        with new_file(path, fixed=fixed):
            pass
        got.append(read_provenance(str(path)))
    assert [p.pop("environment") for p in got] == [{"UCX_TLS": t} for t in ("sm", "rc", "tcp")]
    now = prov.collect()
    for p in got:
        p.pop("date")
        assert p == {k: v for k, v in now.items() if k not in ("date", "environment")}
    assert ("lstopo_xml" in now) == bool(shutil.which("lstopo-no-graphics") or
                                         shutil.which("lstopo"))


def test_write_from_a_removed_directory(tmp_path):
    """What cannot be read is left out; the write itself never fails because of it."""
    gone, out = tmp_path / "gone", tmp_path / "w.h5"
    gone.mkdir()
    code = ("import os, numpy as np; from minitrace.storage import write_bench; "
            f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
            f"write_bench({str(out)!r}, 's', {{'x': np.zeros(2)}})")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    p = read_provenance(str(out))
    assert "cwd" not in p and p["command_line"] and p["versions"]


def test_installed_versions_are_read_from_the_distributions_directory_names(tmp_path,
                                                                             monkeypatch):
    """The first NAME-VERSION.dist-info on sys.path, as an import finds it (importlib.metadata
    parsed every METADATA: 16 ms of a compressing process's CPU); names compared as pip
    normalizes them; an egg-info's version without its -pyX.Y; None where its name has none;
    a package not installed left out.  And for the packages of this environment, the versions
    importlib.metadata gives."""
    from importlib import metadata

    from minitrace import provenance as P
    first, second = tmp_path / "a", tmp_path / "b"
    for d, dirs in ((first, ["Foo_Bar-1.2.dist-info", "eggy-0.3-py3.11.egg-info"]),
                    (second, ["foo_bar-9.9.dist-info", "bare.egg-info", "other-1.dist-info"])):
        for name in dirs:
            (d / name).mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "none"), str(first), str(second)])
    assert P._installed_versions(["foo-bar", "eggy", "bare", "absent"]) == \
        {"foo-bar": "1.2", "eggy": "0.3", "bare": None}
    monkeypatch.undo()
    got = P._versions()
    for name in P._PACKAGES:
        try:
            want = metadata.version(name)
        except metadata.PackageNotFoundError:
            assert name not in got
        else:
            assert got[name] == want
