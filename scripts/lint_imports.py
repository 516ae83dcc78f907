"""Run ``lint-imports`` (import-linter; the contracts are in pyproject.toml) on this checkout.

``minitrace.converters`` lives in ``converters/`` (setup's package-dir), which import-linter,
walking the folder of ``minitrace``, would not see: the sources are laid out as installed in a
temporary folder (``minitrace/converters/``) and checked there.  Exit status: lint-imports'.

    python scripts/lint_imports.py [lint-imports options]
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="minitrace-lint-") as tmp:
        ignore = shutil.ignore_patterns("*.so", "__pycache__", "bin", "data")
        shutil.copytree(ROOT / "minitrace", Path(tmp, "minitrace"), ignore=ignore)
        shutil.copytree(ROOT / "converters", Path(tmp, "minitrace", "converters"), ignore=ignore)
        exe = shutil.which("lint-imports", path=sysconfig.get_path("scripts")) or "lint-imports"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT / "scripts")])}
        return subprocess.run([exe, str(ROOT / "pyproject.toml"), "--no-cache",
                               "--no-logo", *sys.argv[1:]], cwd=tmp, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
