"""The CLI frame: every subcommand is found by its module name and documents itself."""
import pkgutil

import pytest

from minitrace import commands
from minitrace.cli import command_name, main

MODULES = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))


@pytest.mark.parametrize("module", MODULES)
def test_each_subcommand_has_help(module, capsys):
    with pytest.raises(SystemExit) as e:
        main([command_name(module), "--help"])
    assert e.value.code == 0
    assert f"usage: minitrace {command_name(module)}" in capsys.readouterr().out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    for module in MODULES:
        assert command_name(module) in out


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["info"])
    assert e.value.code == 2


def test_user_error_is_one_line_without_traceback(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope.h5")]) == 1
    err = capsys.readouterr().err
    assert err == f"minitrace: error: {tmp_path / 'nope.h5'}: no such file\n"


def test_a_reader_that_leaves_early_ends_it_quietly(tmp_path):
    """`minitrace info F | head -1`: standard output's reader gone, the command ends as a tool
    that SIGPIPE ends (status 141), with nothing on stderr (before: "minitrace: error: Broken
    pipe", status 1; helper QA); an error of its own still says so."""
    import os
    import subprocess
    import sys
    from minitrace.model import TraceBuilder
    from minitrace.storage import write_trace
    b = TraceBuilder(2, {"volume_unit": "flops"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1e6)
        b.add(r, "finalize")
    write_trace(tmp_path / "t.h5", b.build())
    for args, rc, said in ((["info", str(tmp_path / "t.h5")], 141, ""),
                           (["info", str(tmp_path / "none.h5")], 1, "none.h5")):
        r, w = os.pipe()
        os.close(r)                          # (no reader at all: the first write fails)
        p = subprocess.run([sys.executable, "-m", "minitrace", *args], stdout=w,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        os.close(w)
        assert p.returncode == rc, p.stderr
        assert (said in p.stderr) if said else p.stderr == ""
