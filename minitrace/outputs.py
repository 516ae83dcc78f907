"""Outputs written whole or not at all, checked before any work, never onto an input.

Paths are checked before any work (:func:`check_output_file`, :func:`check_output_dir`, one
wording for every command): a command that would fail only when it renames its result into
place (an existing directory named as the output file, a missing or read-only parent
directory) fails first, in one line, having written nothing.  :func:`check_disjoint` refuses an
output that is one of the command's inputs (by real path or same inode) or a directory that
would be filled or replaced around one.  Then every writer (HDF5 through ``storage``, CSV,
Perfetto JSON, TI text, OTF2 archives, plots) fills a temporary beside its target
(:func:`replacing_path`, :func:`replacing_file`, :func:`replacing_dir`) renamed into place only
once complete: a full disk, an exception, Ctrl-C or SIGTERM removes the temporary and leaves
the previous output (or none), never part of the new one.  Temporaries get the mode a plain
``open()``/``mkdir()`` would give (the kernel applies the umask: the process umask is never
changed, which would race with other threads)."""
from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from .errors import MinitraceError

#: Files listed under one input directory before giving up on comparing them one by one.
_MAX_LISTED = 200_000


def check_output_file(path) -> None:
    """Refuse ``path`` as an output file unless it can be created or replaced."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise MinitraceError("is a directory: name a file to write", path)
    _check_parent(path)


def check_output_dir(path) -> None:
    """Refuse ``path`` as a new output directory (e.g. an OTF2 archive) unless it can be made
    or is an empty directory."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise MinitraceError("exists and is not a directory", path)
    if os.path.isdir(path) and os.listdir(path):
        raise MinitraceError("directory exists and is not empty", path)
    _check_parent(path)


def _check_parent(path: str) -> None:
    """The output's directory must exist and be writable: one line naming the output."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise MinitraceError(f"cannot write: {parent} is not a directory" if
                             os.path.exists(parent) else
                             f"cannot write: no such directory {parent}", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MinitraceError(f"cannot write: directory {parent} not writable", path)


# -- outputs against inputs -------------------------------------------------------------------
def _real(path) -> str:
    return os.path.realpath(os.fspath(path))


def _files_of(path: str) -> list[str]:
    """The existing files an input stands for: itself, or everything under a directory."""
    if not os.path.isdir(path):
        return [path] if os.path.exists(path) else []
    out = []
    for root, _, names in os.walk(path):
        out += [os.path.join(root, n) for n in names]
        if len(out) > _MAX_LISTED:
            break
    return out


def _inode(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_disjoint(inputs: Iterable, outputs: Iterable = (), output_dirs: Iterable = ()) -> None:
    """Refuse, in one line and before any work, an output that would land on an input.

    Parameters
    ----------
    inputs : paths the command reads (a directory: every file under it).
    outputs : files the command writes or replaces (plots, side files included).
    output_dirs : directories the command fills or replaces whole (an OTF2 archive, the TI
        export's ``OUT_files/``): no input may lie under one.

    Paths are compared by real path (symbolic links resolved) and by inode (hard links)."""
    ins = []
    for p in inputs:
        if p is None:
            continue
        for f in _files_of(_real(p)):
            ins.append((os.fspath(p), _real(f), _inode(f)))
    for o in outputs:
        if o is None:
            continue
        ro, node = _real(o), _inode(_real(o))
        for given, real, inode in ins:
            if ro == real or (node is not None and node == inode):
                raise MinitraceError(f"is also an input ({given}): writing it would destroy "
                                     "the input; choose another output", os.fspath(o))
    for d in output_dirs:
        if d is None:
            continue
        rd = _real(d)
        for given, real, _ in ins:
            if _inside(real, rd):
                raise MinitraceError(f"is also an input or holds one ({given}): writing it "
                                     "would destroy the input; choose another output",
                                     os.fspath(d))


# -- writing whole or not at all --------------------------------------------------------------
def write_error(e: BaseException, path) -> MinitraceError:
    """One line naming the output ``path`` (not the temporary the OS error may name); HDF5
    errors carry the errno in their text."""
    code = getattr(e, "errno", None) or next(
        (int(m) for m in re.findall(r"errno = (\d+)", str(e))), None)
    lines = str(e).strip().splitlines()
    why = os.strerror(code) if code else (getattr(e, "strerror", None) or
                                          (lines[0] if lines else repr(e)))
    return MinitraceError(f"cannot write: {why}", os.fspath(path))


def _temporary(path: str, suffix: str, directory: bool = False) -> str:
    """A new empty file (or directory) beside ``path`` with the mode open() (mkdir()) gives."""
    target = os.path.abspath(path)
    for _ in range(100):
        tmp = os.path.join(os.path.dirname(target),
                           f".{os.path.basename(target)}.{os.getpid()}.{secrets.token_hex(4)}"
                           f"{suffix}")
        try:
            if directory:
                os.mkdir(tmp, 0o777)
            else:
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise write_error(e, path) from None
    raise MinitraceError("cannot write: no free temporary name beside it", path)


@contextmanager
def replacing_path(path):
    """The name of a new empty temporary file beside ``path``, renamed to ``path`` when the
    block ends normally; on any exception (a full disk, Ctrl-C, SIGTERM raised as
    ``Terminated``) the temporary is removed and ``path`` left as it was.  OS errors become
    one line naming ``path``."""
    path = os.fspath(path)
    tmp = _temporary(path, ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        with _quiet():
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise write_error(e, path) from None
        raise


@contextmanager
def replacing_file(path, mode: str = "w"):
    """A file object on a new temporary beside ``path``, renamed to ``path`` when the block
    ends normally (see :func:`replacing_path`)."""
    with replacing_path(path) as tmp, open(tmp, mode) as f:
        yield f


@contextmanager
def replacing_dir(path):
    """A new temporary directory (a ``Path``) beside ``path``, swapped into place when the block
    ends normally (a previous ``path`` is removed only once the new one is there); on any
    exception the temporary is removed and ``path`` left as it was.  OS errors become one line
    naming ``path``."""
    path = Path(path)
    tmp = Path(_temporary(os.fspath(path), ".tmp", directory=True))
    old = None
    try:
        yield tmp
        if path.exists():
            old = Path(_temporary(os.fspath(path), ".old", directory=True))
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


@contextmanager
def _quiet():
    try:
        yield
    except OSError:
        pass
