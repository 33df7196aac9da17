"""Prebuilt tables: what loading a large tokenizer derives, saved once and read back after.

Loading o200k_base recovers its 199,742 merges from the ranks (BPE of every token's bytes), and
its first encode builds the encoder's trie of reachable tokens: together most of the time of
``load`` + a first ``encode``, and the same work in every process. The first process saves both
here; later ones read them back (a few arrays, checked), so a fresh process that loads a
tokenizer and encodes a short text pays milliseconds, not a second.

Where: ``$BPE_FAST_CACHE`` (``~`` expanded), else ``$XDG_CACHE_HOME/bpe_fast``, else
``~/.cache/bpe_fast``; ``BPE_FAST_CACHE=off`` turns it off. An entry is named by a hash of
everything it is derived from (the file's bytes; the merges), the kind of entry and this
layout's version, so a changed file or another release of bpe_fast never reads a stale entry.

An entry describes itself: beside its arrays it holds its own name (``__key__``), so an entry
copied or renamed over another is told apart and ignored. It is a .npz file whose members each
carry a CRC-32; every member is read to its end (so the check runs however its header was
damaged), and its arrays must be the ones its user names (``read``'s ``expect``): an entry that
fails any of this is ignored and rebuilt, never trusted, never an error. What is read back is
checked again by its user (the encoder checks every index of its tables), so no entry can lead
a lookup out of its table. A cache that cannot be written (a read-only home) is not an error:
loading works as before, only slower, and nothing is left half-written (entries appear whole,
by rename, readable by everyone the umask allows, so a shared cache is built once).

Only tokenizers of ``WORTH_CACHING`` merges or more, read from a file, are cached: below that
size building is about as fast as reading, and a tokenizer trained in memory is read by no other
process. The folder is kept under ``LIMIT_BYTES``: writing an entry removes the least recently
used ones past it (reading one marks it used), and the temporary files of writers that died
(an hour old or more). Only files named as entries are ever removed: the folder may be shared
with other files.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
import time
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ._version import __version__

__all__ = ["LIMIT_BYTES", "WORTH_CACHING", "cache_folder", "key_of", "read", "write"]

LAYOUT = 2                      # bump when what an entry holds, or the encoder's tables, change
WORTH_CACHING = 20_000
LIMIT_BYTES = 1 << 30
_OFF = {"off", "0", "no", "none", "false"}
_ENTRY = re.compile(r"[a-z_]+-[0-9a-f]{40}\.npz")               # key_of's names: the only files removed
_TEMPORARY = re.compile(r"\.[a-z_]+-[0-9a-f]{40}\.\w+\.tmp")   # write's, while it writes
_STALE_SECONDS = 3600                                           # a temporary file this old: its writer died
_KEY = "__key__"


def cache_folder() -> Path | None:
    """The folder entries live in, or None when the cache is turned off."""
    where = os.environ.get("BPE_FAST_CACHE")
    if where is not None:
        return None if where.strip().lower() in _OFF or not where.strip() else Path(os.path.expanduser(where))
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


def read(key: str, expect: Mapping[str, tuple[int, ...] | None] | None = None) -> dict[str, np.ndarray] | None:
    """The arrays of entry ``key``, or None if there is none or it is not whole and its own:
    damaged anywhere, made for another key, or without the arrays ``expect`` names (each with
    its shape, or None for any shape)."""
    folder = cache_folder()
    if folder is None:
        return None
    path = folder / f"{key}.npz"
    arrays = _whole_entry(path)
    if arrays is None or _stored_key(arrays.pop(_KEY, None)) != key or not _as_expected(arrays, expect):
        return None
    try:
        os.utime(path)                  # used now: the last to go when the folder is trimmed
    except OSError:                     # a cache others made, read-only to us: read it all the same
        pass
    return arrays


def _whole_entry(path: Path) -> dict[str, np.ndarray] | None:
    """Every array of a .npz file, each member read to its end (which checks its CRC-32, whatever
    its header says), or None if the file is missing or damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        return {name.removesuffix(".npy"): np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
                for name, data in members.items() if name.endswith(".npy")}
    except (OSError, ValueError, KeyError, EOFError, zlib.error, zipfile.BadZipFile):
        return None


def _stored_key(stored: np.ndarray | None) -> str | None:
    try:
        return bytes(stored).decode("ascii") if stored is not None and stored.dtype == np.uint8 else None
    except UnicodeDecodeError:
        return None


def _as_expected(arrays: dict[str, np.ndarray], expect: Mapping[str, tuple[int, ...] | None] | None) -> bool:
    if expect is None:
        return True
    return all(name in arrays and (shape is None or arrays[name].shape == shape) for name, shape in expect.items())


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
            np.savez(fh, **arrays, **{_KEY: np.frombuffer(key.encode("ascii"), np.uint8)})  # type: ignore[arg-type]
        os.chmod(tmp, 0o666 & ~_umask())         # (mkstemp makes it 0600: others could not read the cache)
        os.replace(tmp, folder / f"{key}.npz")
        tmp = None
        _trim(folder)
    except OSError:
        pass                      # a read-only or full disk: the cache is only a shortcut
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _trim(folder: Path) -> None:
    """Remove the least recently used entries until the folder holds LIMIT_BYTES or less, and
    temporary files whose writer died. Only bpe_fast's own files: entries and temporary files
    named as key_of and write name them."""
    entries, now = [], time.time()
    for path in folder.iterdir():
        try:
            st = path.stat()
        except OSError:                 # removed meanwhile by another process
            continue
        if _TEMPORARY.fullmatch(path.name) and now - st.st_mtime > _STALE_SECONDS:
            path.unlink(missing_ok=True)
        elif _ENTRY.fullmatch(path.name):
            entries.append((st.st_mtime_ns, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= LIMIT_BYTES:
            break
        path.unlink(missing_ok=True)
        total -= size
