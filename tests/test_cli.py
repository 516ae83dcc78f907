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
