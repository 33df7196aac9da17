"""Writing files safely: whole or not at all, never over an input.

Every file bpe_fast writes goes to a temporary file in the same folder first and replaces the
target only once it is complete, so a full disk, a crash or Ctrl-C leaves the previous file as
it was and no half-written one. The command line checks where it will write before it reads
anything, so a bad ``-o`` fails at once, not after an hour of training.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO
from collections.abc import Iterable, Iterator

from .errors import ArgumentError, OutputError


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Like ``open(path, mode)`` for writing, but the file appears only when the block ends
    without an error; any earlier file at ``path`` is replaced in one step (``os.replace``)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{path}: cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())        # mkstemp makes 0600; give the usual mode
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
    if path.is_dir():
        raise ArgumentError(f"{option} {path}: is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise ArgumentError(f"{option} {path}: is not a regular file (a device or a pipe); it would be "
                            f"replaced, not written to")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ArgumentError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ArgumentError(f"{option} {path}: the folder {folder} is not writable")
    for source in inputs:
        if os.fspath(source) != "-" and path.exists() and Path(source).exists() \
                and os.path.samefile(path, source):
            raise ArgumentError(f"{option} {path}: is also an input file; writing there would destroy it")
        if os.fspath(source) != "-" and Path(source).is_dir() and Path(source).resolve() in path.resolve().parents:
            raise ArgumentError(f"{option} {path}: is inside the input folder {source}, every file of which is read "
                                f"as input: the next run on {source} would read it as text; write it elsewhere")
    return path
