"""Writing files safely: whole or not at all, never over an input.

Every file bpe_fast writes goes to a temporary file in the same folder first and replaces the
target only once it is complete, so a full disk, a crash or Ctrl-C leaves the previous file as
it was and no half-written one. The command line checks where it will write before it reads
anything, so a bad ``-o`` fails at once, not after an hour of training.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from collections.abc import Iterable, Iterator

from .errors import ArgumentError, OutputError


# Bytes of the target's name kept in its temporary file's name (".NAME.xxxxxxxx.tmp"): enough to
# see whose it is, and short enough that any name the file system takes (NAME_MAX, 255 bytes) fits.
TEMP_NAME_BYTES = 40


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Like ``open(path, mode)`` for writing, but the file appears only when the block ends
    without an error; any earlier file at ``path`` is replaced in one step (``os.replace``) and
    its permission bits are kept. A file ``open`` could not write (read-only) is refused."""
    path = Path(path)
    try:
        _refuse_read_only(path)
        permissions = _permissions_for(path)
        fd, tmp = _make_temporary(path)
    except OutputError:
        raise
    except OSError as exc:            # no such folder, no permission, a name too long...
        raise OutputError(f"{path}: cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, permissions)              # mkstemp makes 0600
        os.replace(tmp, path)
    except OutputError:               # another output's error (a file written alongside): as it is
        _remove(tmp)
        raise
    except OSError as exc:
        _remove(tmp)
        kept = " (the file that was there is unchanged)" if path.exists() else ""
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}{kept}") from None
    except BaseException:
        _remove(tmp)
        raise


def _make_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (its descriptor and name), named after it."""
    head = os.fsdecode(os.fsencode(path.name)[:TEMP_NAME_BYTES])
    return tempfile.mkstemp(dir=path.parent, prefix=f".{head}.", suffix=".tmp")


def _refuse_read_only(path: Path) -> None:
    """As ``open(path, "w")`` would: a file that is there and not writable for this user stays."""
    if path.is_file() and not os.access(path, os.W_OK):
        raise OutputError(f"{path}: cannot write: permission denied (the file is read-only; it is left as it was)")


def _permissions_for(path: Path) -> int:
    """The permission bits of the file that ``path`` replaces, else the usual: 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _remove(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), option: str = "-o") -> Path:
    """Fail now, naming ``option``, if ``path`` cannot be written, is one of the inputs, or is in
    an input folder (whose files are all inputs: it would be read as text next time)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    _check_name_length(path, folder, option)                # before any look at it: stat would fail
    try:
        os.stat(path)
    except PermissionError:             # the folder, or one above it, may not be entered
        raise ArgumentError(f"{option} {path}: the folder {folder} cannot be entered (permission denied)") from None
    except OSError:                     # no such file (yet), or no such folder: said below
        pass
    if path.is_dir():
        raise ArgumentError(f"{option} {path}: is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise ArgumentError(f"{option} {path}: is not a regular file (a device or a pipe); it would be "
                            f"replaced, not written to")
    if not folder.is_dir():
        raise ArgumentError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ArgumentError(f"{option} {path}: the folder {folder} is not writable")
    for source in inputs:       # (os.path's tests: an input that cannot be looked at is the inputs' to report)
        if os.fspath(source) != "-" and path.exists() and os.path.exists(source) \
                and os.path.samefile(path, source):
            raise ArgumentError(f"{option} {path}: is also an input file; writing there would destroy it")
        if os.fspath(source) != "-" and os.path.isdir(source) and Path(source).resolve() in path.resolve().parents:
            raise ArgumentError(f"{option} {path}: is inside the input folder {source}, every file of which is read "
                                f"as input: the next run on {source} would read it as text; write it elsewhere")
    if path.exists() and not os.access(path, os.W_OK):
        raise ArgumentError(f"{option} {path}: the file is read-only: it cannot be replaced")
    _try_temporary(path, option)
    return path


def _check_name_length(path: Path, folder: Path, option: str) -> None:
    """The file system's limit on a name (NAME_MAX), which only the final rename would meet."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):       # no such limit to ask for here
        return
    length = len(os.fsencode(path.name))
    if limit > 0 and length > limit:
        raise ArgumentError(f"{option} {path}: the name is {length} bytes long; this file system takes at most {limit}")


def _try_temporary(path: Path, option: str) -> None:
    """Make and remove the temporary file atomic_open will write: what the writing itself needs."""
    try:
        fd, tmp = _make_temporary(path)
    except OSError as exc:
        raise ArgumentError(f"{option} {path}: cannot write there: {exc.strerror or exc}") from None
    os.close(fd)
    _remove(tmp)


# -- the files a command reads and writes, checked in one place (the command line's) ----------------

@dataclass(frozen=True)
class Files:
    """Which of a command's arguments name files it reads (``reads``: argument names, each a path
    or a list of them) and which name files it writes (``writes``: argument name -> the option,
    as messages say it). The CLI's ``main`` checks every written path against every read one before the
    command starts (``check_files``): no output may be an input, or sit in an input folder, or be
    unwritable; so nothing is read, trained or drawn before a bad output is found, and no input
    is ever replaced. A command sets it with ``set_defaults(file_roles=Files(...))``."""
    reads: tuple[str, ...] = ()
    writes: tuple[tuple[str, str], ...] = ()


def check_files(args) -> None:
    """Every output path the command was given, checked against every input (``Files``). "-" is
    standard input or output; a path with "{vocab_size}" is a template the command checks per size."""
    files: Files | None = getattr(args, "file_roles", None)
    if files is None:
        return
    inputs = [os.fspath(p) for name in files.reads for p in _paths(getattr(args, name, None))]
    for name, option in files.writes:
        for path in _paths(getattr(args, name, None)):
            if os.fspath(path) != "-" and "{vocab_size}" not in os.fspath(path):
                check_output(path, inputs, option)


def _paths(value) -> list:
    if value is None or value is False:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
