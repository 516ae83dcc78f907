"""Outputs written whole or not at all.

Paths are checked before any work: a command that would fail only when it renames its result
into place (an existing directory named as the output file, a missing or read-only parent
directory) fails first, in one line, having written nothing.  Then every writer (CSV, Perfetto
JSON, TI text, OTF2 archives) fills a temporary beside its target (:func:`replacing_file`,
:func:`replacing_dir`) renamed into place only once complete: a full disk, an exception, Ctrl-C
or SIGTERM removes the temporary and leaves the previous output (or none), never part of the
new one.  (HDF5 files do the same in ``storage._AtomicFile``.)"""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

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


def write_error(e: OSError, path) -> MinitraceError:
    """One line naming the output ``path`` (not the temporary the OS error may name)."""
    return MinitraceError(f"cannot write: {e.strerror or e}", os.fspath(path))


@contextmanager
def replacing_file(path, mode: str = "w"):
    """A file object on a new temporary beside ``path``, renamed to ``path`` when the block
    ends normally; on any exception (a full disk, Ctrl-C, SIGTERM raised as ``Terminated``)
    the temporary is removed and ``path`` left as it was.  OS errors become one line naming
    ``path``."""
    path = os.fspath(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                   prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as e:
        raise write_error(e, path) from None
    try:
        with os.fdopen(fd, mode) as f:
            os.fchmod(fd, 0o666 & ~_umask())   # as open() would make it, not mkstemp's 0600
            yield f
        os.replace(tmp, path)
    except BaseException as e:
        os.unlink(tmp)
        if isinstance(e, OSError):
            raise write_error(e, path) from None
        raise


@contextmanager
def replacing_dir(path):
    """A new temporary directory (a ``Path``) beside ``path``, swapped into place when the block
    ends normally (a previous ``path`` is removed only once the new one is there); on any
    exception the temporary is removed and ``path`` left as it was.  OS errors become one line
    naming ``path``."""
    path = Path(path)
    try:
        tmp = Path(tempfile.mkdtemp(dir=path.absolute().parent, prefix=f".{path.name}.",
                                    suffix=".tmp"))
    except OSError as e:
        raise write_error(e, path) from None
    old = None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if path.exists():
            old = Path(tempfile.mkdtemp(dir=tmp.parent, prefix=f".{path.name}.", suffix=".old"))
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException as e:
        if old is not None and not path.exists():
            os.replace(old, path)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise write_error(e, path) from None
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
