"""The import contracts (pyproject.toml, scripts/lint_imports.py) catch what they forbid: a copy
of the sources with an upward import, another package's private name and a cycle fails each
contract; scripts/test.sh runs them on the checkout itself."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_an_upward_import_a_private_name_and_a_cycle_break_the_contracts(tmp_path):
    for d in ("minitrace", "converters", "scripts"):
        shutil.copytree(ROOT / d, tmp_path / d,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__", "bin", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "minitrace" / "storage.py", "a") as f:    # storage -> replay: upward
        f.write("\nfrom .replay import api as _upward  # noqa\n")
    with open(tmp_path / "minitrace" / "compress" / "files.py", "a") as f:
        f.write("\nfrom ..storage import _corrupt  # noqa\n")
    p = subprocess.run([sys.executable, str(tmp_path / "scripts" / "lint_imports.py")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    out = " ".join(p.stdout.split())
    assert "Contracts: 0 kept, 3 broken." in out
    assert "minitrace.storage is not allowed to import minitrace.replay" in out
    assert "minitrace.compress.files:" in out and "uses minitrace.storage._corrupt" in out
    assert ".storage -> .replay" in out          # the cycle storage -> replay -> ... -> storage
