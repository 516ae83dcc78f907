"""Output paths checked before any work: a command that would fail only when it renames its
result into place (an existing directory named as the output file, a missing or read-only
parent directory) fails first, in one line, having written nothing."""
from __future__ import annotations

import os

from .errors import MinitraceError


def check_output_file(path: str) -> None:
    """Refuse ``path`` as an output file unless it can be created or replaced."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise MinitraceError("is a directory: name a file to write", path)
    _check_parent(path)


def check_output_dir(path: str) -> None:
    """Refuse ``path`` as a new output directory (e.g. an OTF2 archive) unless it can be made
    or is an empty directory."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise MinitraceError("exists and is not a directory", path)
    if os.path.isdir(path) and os.listdir(path):
        raise MinitraceError("directory exists and is not empty", path)
    _check_parent(path)


def _check_parent(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise MinitraceError("not a directory: cannot write into it" if os.path.exists(parent)
                             else "no such directory to write into", parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MinitraceError("directory not writable", parent)
