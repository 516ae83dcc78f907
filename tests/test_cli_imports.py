"""What the command line imports: ``minitrace --help`` lists the subcommands from a table
(``minitrace.commands.COMMANDS``) and loads none of their modules; ``minitrace SUB --help``
loads SUB's module only, and no heavy package (pandas, scipy...) where its parser needs none;
``info`` and ``compress`` on a trace load pandas (their work: the summary table, the call
signatures' factorization) but no scipy, matplotlib or SimGrid."""
import json
import pkgutil
import subprocess
import sys
from importlib import resources

import pytest

from minitrace import commands
from minitrace.cli import command_module, command_name

#: Modules a command line that only parses (``--help``, a usage error) must not import.
HEAVY = ("pandas", "scipy", "matplotlib", "tqdm", "simgrid")

#: Run the command line on argv (JSON) as ``python -m minitrace`` does; print what it imported.
_RUN = """
import json, sys
sys.argv = ["minitrace", *json.loads(sys.argv[1])]
from minitrace.__main__ import entry
try:
    status = entry()
except SystemExit as e:
    status = e.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def imported(*argv: str) -> tuple[int, set[str]]:
    """Exit status and the modules (top-level packages and ``minitrace.*``) of the command line
    run on ``argv`` in a fresh interpreter."""
    p = subprocess.run([sys.executable, "-c", _RUN, json.dumps(argv)], capture_output=True,
                       text=True, timeout=300)
    out = json.loads(p.stderr.splitlines()[-1])
    return out["status"], set(out["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_the_table_names_every_command_module():
    """A module without its line (or a line without its module) fails here, not in use."""
    modules = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    assert sorted(command_module(name) for name in commands.COMMANDS) == modules
    assert all(command_name(command_module(name)) == name for name in commands.COMMANDS)


def test_help_loads_no_subcommand():
    status, modules = imported("--help")
    assert status == 0
    assert [m for m in modules if m.startswith("minitrace.commands.")] == []
    assert heavy(modules) == []


@pytest.mark.parametrize("name", sorted(commands.COMMANDS))
def test_subcommand_help_loads_only_its_module(name):
    status, modules = imported(name, "--help")
    assert status == 0
    others = {f"minitrace.commands.{command_module(n)}" for n in commands.COMMANDS} - \
        {f"minitrace.commands.{command_module(name)}"}
    assert f"minitrace.commands.{command_module(name)}" in modules
    if name not in ("export", "import", "record", "shim"):    # (they reuse a sibling's code)
        assert modules & others == set()
    assert heavy(modules) == []


def test_info_and_compress_load_no_scipy(tmp_path):
    """A trace summarized and compressed: pandas is their work's, nothing else heavy."""
    trace, out = tmp_path / "ring.h5", tmp_path / "ring.c.h5"
    ti = resources.files("minitrace") / "data" / "demo_ring4.txt"
    assert imported("convert", str(ti), "-o", str(trace))[0] == 0
    for argv in (["info", str(trace)], ["compress", str(trace), "-o", str(out)]):
        status, modules = imported(*argv)
        assert status == 0
        assert [m for m in heavy(modules) if not m.startswith("pandas")] == [], argv
