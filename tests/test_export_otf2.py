"""``minitrace export --format otf2``: the older spelling of ``convert --to otf2`` refused
otf2 ("invalid choice: 'otf2' (choose from 'ti', 'csv', 'perfetto')") although the docs say
``export --format X`` is ``convert --to X`` for every format (found running the brief's
"export to OTF2 and back" on NPB LU).  It now takes every format convert writes."""
from __future__ import annotations

import subprocess
import sys

from tests.support.fixtures import DATA


def mt(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_export_writes_the_otf2_archive_convert_writes(tmp_path):
    assert mt("convert", "--from", "ti", DATA / "ti" / "p2p.txt", "-o",
              tmp_path / "t.h5").returncode == 0
    old = mt("export", tmp_path / "t.h5", "--format", "otf2", "-o", tmp_path / "a")
    new = mt("convert", tmp_path / "t.h5", "--to", "otf2", "-o", tmp_path / "b")
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout.replace(str(tmp_path / "a"), "OUT") == \
        new.stdout.replace(str(tmp_path / "b"), "OUT")
    assert old.stderr == new.stderr + ("minitrace: note: 'minitrace export' is replaced by "
                                       "'minitrace convert --to' (the same conversion)\n")
    back = mt("convert", tmp_path / "a" / "traces.otf2", "-o", tmp_path / "back.h5")
    assert back.returncode == 0, back.stderr
