"""Prebuilt tables: what loading a large tokenizer derives, saved once and read back after.

Loading o200k_base recovers its 199,742 merges from the ranks (BPE of every token's bytes), and
its first encode builds the encoder's trie of reachable tokens: together most of the time of
``load`` + a first ``encode``, and the same work in every process. The first process saves both
here; later ones read them back (a few arrays, checked), so a fresh process that loads a
tokenizer and encodes a short text pays milliseconds, not a second.

Where: ``$BPE_FAST_CACHE``, else ``$XDG_CACHE_HOME/bpe_fast``, else ``~/.cache/bpe_fast``;
``BPE_FAST_CACHE=off`` turns it off. An entry is named by a hash of everything it is derived
from (the file's bytes; the merges), the kind of entry and this layout's version, so a changed
file or another release of bpe_fast never reads a stale entry. An entry is a .npz file, whose
arrays each carry a CRC-32 checked as they are read: an entry that fails it (a damaged disk, a
partial copy) is ignored and rebuilt. What is read back is checked again by its user (the
encoder checks every index of its tables), so no entry can lead a lookup out of its table.
A cache that cannot be written (a read-only home) is not an error: loading works as before,
only slower, and nothing is left half-written (entries appear whole, by rename).

Only tokenizers of ``WORTH_CACHING`` merges or more, read from a file, are cached: below that
size building is about as fast as reading, and a tokenizer trained in memory is read by no other
process. The folder is kept under ``LIMIT_BYTES``: writing an entry removes the least recently
used ones past it (reading one marks it used).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ._version import __version__

__all__ = ["LIMIT_BYTES", "WORTH_CACHING", "cache_folder", "key_of", "read", "write"]

LAYOUT = 1                      # bump when what an entry holds, or the encoder's tables, change
WORTH_CACHING = 20_000
LIMIT_BYTES = 1 << 30
_OFF = {"off", "0", "no", "none", "false"}


def cache_folder() -> Path | None:
    """The folder entries live in, or None when the cache is turned off."""
    where = os.environ.get("BPE_FAST_CACHE")
    if where is not None:
        return None if where.strip().lower() in _OFF or not where.strip() else Path(where)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "bpe_fast"


def key_of(kind: str, *parts: bytes | str | np.ndarray) -> str:
    """The name of the entry of ``kind`` derived from ``parts`` (with this release's layout)."""
    digest = hashlib.blake2b(f"{kind}\0{__version__}\0{LAYOUT}".encode(), digest_size=20)
    for part in parts:
        data = part.encode() if isinstance(part, str) else np.ascontiguousarray(part).tobytes() \
            if isinstance(part, np.ndarray) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return f"{kind}-{digest.hexdigest()}"


def read(key: str) -> dict[str, np.ndarray] | None:
    """The arrays of entry ``key``, or None if there is none, or it is damaged."""
    folder = cache_folder()
    if folder is None:
        return None
    path = folder / f"{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as entry:
            arrays = {name: entry[name] for name in entry.files}
    except (OSError, ValueError, KeyError, EOFError, zlib.error, zipfile.BadZipFile):  # none, or damaged
        return None
    try:
        os.utime(path)                  # used now: the last to go when the folder is trimmed
    except OSError:                     # a cache others made, read-only to us: read it all the same
        pass
    return arrays


def write(key: str, arrays: dict[str, np.ndarray]) -> None:
    """Save entry ``key``; quietly nothing if the folder cannot be made or written."""
    folder = cache_folder()
    if folder is None:
        return
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # (numpy types allow_pickle as a keyword too)
        os.replace(tmp, folder / f"{key}.npz")
        tmp = None
        _trim(folder)
    except OSError:
        pass                      # a read-only or full disk: the cache is only a shortcut
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _trim(folder: Path) -> None:
    """Remove the least recently used entries until the folder holds LIMIT_BYTES or less."""
    entries = []
    for path in folder.glob("*.npz"):
        try:
            st = path.stat()
        except OSError:                 # removed meanwhile by another process
            continue
        entries.append((st.st_mtime_ns, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= LIMIT_BYTES:
            break
        path.unlink(missing_ok=True)
        total -= size
