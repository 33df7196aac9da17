"""Every input people have, turned into counting tasks, never read whole into memory.

* text files, read in blocks by the workers themselves (``FileTask``);
* standard input ("-"), pipes, FIFOs and ``<(...)``: read here, front to back, and sent on in
  blocks (``DataTask``);
* compressed files, by their suffix: ``.gz``, ``.bz2``, ``.xz`` (standard library), ``.zst``
  (the ``zstandard`` package, ``pip install 'bpe_fast[zstd]'``): decompressed here as a stream;
* JSON lines (``.jsonl``, ``.ndjson``, also compressed: ``.jsonl.gz``, ``.jsonl.zst``...): each
  record is a document, its ``field`` (default "text") the text; blocks of whole lines are
  parsed by the workers (``JsonlTask``);
* Parquet (``.parquet``): each value of ``column`` (default "text") is a document, read a row
  group at a time by the workers with pyarrow (``pip install 'bpe_fast[parquet]'``);
* a directory means the files in it and below it, sorted by path.

A text container's bytes are one document (so ``corpus.txt``, ``corpus.txt.gz``, ``corpus.txt.zst``
and ``cat corpus.txt |`` give the same word table); blocks are cut only where the pattern
allows (``cut``), so the cutting never changes a chunk. Progress counts the bytes read from
disk (compressed bytes for compressed files).
"""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import stat
import sys
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from .errors import InputError, require

STDIN = "-"                       # the input name that means standard input
_READ_SIZE = 1 << 16              # bytes read at a time while looking for a cut
COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
JSONL = {".jsonl", ".ndjson"}
PARQUET = {".parquet"}

Cut = Callable[[bytes, int], "int | None"]      # (data, start) -> first safe cut at or after start


# -- tasks: what a worker does ------------------------------------------------------------------

@dataclass
class FileTask:
    """Bytes start..end of a regular text file, read by the worker itself."""
    path: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class DataTask:
    """A block of a stream, read here: ``data`` starts at byte ``offset`` of ``name`` (after
    decompression); ``size`` is the bytes read from disk for it, for progress."""
    name: str
    offset: int
    data: bytes
    size: int


@dataclass
class JsonlTask:
    """Whole lines of a JSON-lines input; line ``first_line`` is data's first; each record's
    ``field`` is a document."""
    name: str
    first_line: int
    data: bytes
    field: str
    size: int


@dataclass
class ParquetTask:
    """One row group of a Parquet file; each value of ``column`` is a document."""
    path: str
    row_group: int
    column: str
    size: int


@dataclass
class DocsTask:
    """Documents from an iterator."""
    docs: list = dataclass_field(default_factory=list)
    first_index: int = 0              # index of docs[0] in the iterator, for messages
    size: int = 0                     # characters (or bytes), for progress


# -- sources: what the user named -----------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    path: str                     # "-" for standard input
    kind: str                     # "text", "jsonl" or "parquet"
    compression: str | None       # "gzip", "bz2", "xz", "zstd" or None
    size: int | None              # bytes on disk; None for a stream (size unknown)

    @property
    def name(self) -> str:
        return "standard input" if self.path == STDIN else self.path

    @property
    def splittable_by_workers(self) -> bool:
        """Can workers read blocks of it themselves (a regular, uncompressed text file)?"""
        return self.kind == "text" and self.compression is None and self.size is not None


def classify(path: str) -> tuple[str, str | None]:
    """(kind, compression) from a file name: "corpus.jsonl.zst" -> ("jsonl", "zstd")."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSED.get(suffixes[-1]) if suffixes else None
    inner = suffixes[-2] if compression and len(suffixes) > 1 else (suffixes[-1] if suffixes and not compression else "")
    if inner in PARQUET and compression:
        raise InputError(f"{path}: a compressed Parquet file; Parquet compresses its own pages: give the .parquet file")
    return ("jsonl" if inner in JSONL else "parquet" if inner in PARQUET else "text"), compression


def sources(paths: Iterable[str | os.PathLike]) -> list[Source]:
    """Every input file, checked and classified, directories expanded: a missing, unreadable
    or empty-named input is an InputError before anything is read."""
    found = []
    for given in paths:
        path = os.fspath(given)
        if path == STDIN:
            found.append(Source(STDIN, "text", None, None))
        elif os.path.isdir(path):
            files = sorted(str(p) for p in Path(path).rglob("*") if p.is_file() and not p.name.startswith("."))
            if not files:
                raise InputError(f"{path}: the directory holds no files")
            found.extend(_source(f) for f in files)
        else:
            found.append(_source(path))
    return found


def _source(path: str) -> Source:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    kind, compression = classify(path)
    if not stat.S_ISREG(mode):                        # a pipe or device: a stream, size unknown
        if not os.access(path, os.R_OK):
            raise InputError(f"{path}: cannot be read: permission denied")
        return Source(path, kind, compression, None)
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return Source(path, kind, compression, os.path.getsize(path))


# -- planning: sources -> tasks --------------------------------------------------------------------

def tasks_of(source: Source, cut: Cut | None, block_size: int, field: str = "text",
             column: str = "text") -> Iterator:
    """The tasks that read one source. ``cut`` (None: the pattern allows no cut) decides where
    text may be split into blocks."""
    if source.kind == "parquet":
        yield from parquet_tasks(source, column)
    elif source.kind == "jsonl":
        with open_stream(source) as (stream, raw):
            for first_line, offset, data, size in blocks(stream, raw, _line_cut, block_size):
                yield JsonlTask(source.name, first_line, data, field, size)
    elif source.splittable_by_workers:
        yield from file_tasks(source.path, source.size, cut, block_size)
    else:
        with open_stream(source) as (stream, raw):
            for _, offset, data, size in blocks(stream, raw, cut, block_size):
                yield DataTask(source.name, offset, data, size)


def file_tasks(path: str, size: int, cut: Cut | None, block_size: int) -> Iterator[FileTask]:
    """Blocks of about ``block_size`` bytes of a regular file, cut only where ``cut`` allows."""
    if cut is None or size <= block_size:
        if size:
            yield FileTask(path, 0, size)
        return
    with open(path, "rb") as fh:
        start = 0
        while start < size:
            end = _next_cut(fh, start + block_size, size, cut) if start + block_size < size else size
            yield FileTask(path, start, end)
            start = end


def _next_cut(fh, pos: int, size: int, cut: Cut) -> int:
    """The first safe cut at or after byte ``pos`` of an open file, or ``size`` if none."""
    while pos < size:
        fh.seek(max(pos - 2, 0))
        data = fh.read(_READ_SIZE + 2)
        lead = pos - max(pos - 2, 0)
        at = cut(data, lead)
        if at is not None and at < len(data):
            return pos - lead + at
        pos += _READ_SIZE
    return size


def _line_cut(data: bytes, start: int) -> int | None:
    i = data.find(b"\n", max(start - 1, 0))
    return None if i < 0 else i + 1


def blocks(stream: BinaryIO, raw: Callable[[], int], cut: Cut | None, block_size: int):
    """A stream read front to back, in blocks of about ``block_size`` bytes cut where ``cut``
    allows (the whole stream as one block where it allows none): (first line number, offset,
    data, bytes read from disk for it)."""
    pending, offset, line, counted = b"", 0, 1, 0
    while True:
        data = stream.read(max(block_size, _READ_SIZE))
        pending += data
        at = cut(pending, block_size) if cut is not None and len(pending) > block_size else None
        if at is not None and at < len(pending):
            done = raw()
            yield line, offset, pending[:at], done - counted
            line += pending.count(b"\n", 0, at)
            pending, offset, counted = pending[at:], offset + at, done
        if not data:
            break
    if pending:
        yield line, offset, pending, raw() - counted


class open_stream:
    """``with open_stream(source) as (stream, raw)``: a binary stream of the source's bytes,
    decompressed, and a function giving the bytes read from disk so far (for progress).
    Damaged compressed data is an InputError naming the file."""

    def __init__(self, source: Source):
        self.source = source

    def __enter__(self):
        s = self.source
        self.file = sys.stdin.buffer if s.path == STDIN else open(s.path, "rb")
        self.read_so_far = 0
        stream = _decompressing(self.file, s) if s.compression else self.file
        if s.compression:
            return _Checked(stream, s), lambda: _position(self.file)
        return _Counting(stream, self), lambda: self.read_so_far

    def __exit__(self, *exc):
        if self.file is not sys.stdin.buffer:
            self.file.close()


def _position(fh) -> int:
    try:
        return fh.tell()
    except OSError:                   # a pipe: no position
        return 0


class _Counting:
    """A stream that counts the bytes read through it (pipes have no tell())."""

    def __init__(self, stream, owner):
        self.stream, self.owner = stream, owner

    def read(self, n: int) -> bytes:
        try:
            data = self.stream.read(n)
        except OSError as exc:        # an input's error, not the output's (atomic_open's) to report
            raise InputError(f"{self.owner.source.name}: read failed: {exc.strerror or exc}") from None
        self.owner.read_so_far += len(data)
        return data


class _Checked:
    """A decompressing stream whose errors name the file."""

    def __init__(self, stream, source: Source):
        self.stream, self.source = stream, source

    def read(self, n: int) -> bytes:
        try:
            return self.stream.read(n)
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise InputError(f"{self.source.name}: cannot be decompressed as {self.source.compression} "
                             f"({exc}); damaged or not {self.source.compression} data?") from None


def _decompressing(fh, source: Source):
    if source.compression == "gzip":
        return gzip.GzipFile(fileobj=fh, mode="rb")
    if source.compression == "bz2":
        return bz2.BZ2File(fh, mode="rb")
    if source.compression == "xz":
        return lzma.LZMAFile(fh, mode="rb")
    zstandard = require("zstandard", "zstd", f"reading {source.name}")
    return zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)


def read_block(task: FileTask) -> bytes:
    """The task's bytes; a file that shrank since it was planned is an error, not a short count."""
    with open(task.path, "rb") as fh:
        fh.seek(task.start)
        data = fh.read(task.size)
    if len(data) != task.size:
        raise InputError(f"{task.path}: the file changed while it was read: {task.size:,} bytes were due at "
                         f"byte offset {task.start:,}, {len(data):,} were there")
    return data


# -- Parquet ----------------------------------------------------------------------------------------

def parquet_tasks(source: Source, column: str) -> Iterator[ParquetTask]:
    pq = require("pyarrow.parquet", "parquet", f"reading {source.name}")
    try:
        meta = pq.ParquetFile(source.path).metadata
    except Exception as exc:      # pyarrow raises its own ArrowInvalid, OSError...
        raise InputError(f"{source.name}: not a readable Parquet file ({exc})") from None
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if column not in names:
        raise InputError(f"{source.name}: no column {column!r} (columns: {', '.join(names)}); choose one "
                         f"with column= (CLI: --column)")
    total = max(sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)), 1)
    for g in range(meta.num_row_groups):      # progress: the file's bytes, shared by group size
        yield ParquetTask(source.path, g, column, (source.size or 0) * meta.row_group(g).total_byte_size // total)


def parquet_values(task: ParquetTask, keep_null: bool = False) -> Iterator[tuple[int, str]]:
    """(row, text) of one row group's column; a value that is not text is an InputError. A null
    is no text: skipped, or an empty document with ``keep_null`` (encoding keeps row i document i)."""
    pq = require("pyarrow.parquet", "parquet", f"reading {task.path}")
    table = pq.ParquetFile(task.path).read_row_group(task.row_group, columns=[task.column])
    values = table.column(0)
    for i, value in enumerate(values.to_pylist()):
        if value is None:
            if keep_null:
                yield i, ""
            continue                  # a null is no text (and no document)
        if not isinstance(value, (str, bytes)):
            raise InputError(f"{task.path}: row group {task.row_group}, row {i}: column {task.column!r} holds "
                             f"{type(value).__name__}, not text")
        yield i, value


# -- JSON lines --------------------------------------------------------------------------------------

def jsonl_values(task: JsonlTask, keep_null: bool = False) -> Iterator[tuple[str, str]]:
    """(where, text) of each record's field; a bad line is an InputError naming file and line.
    A null field is skipped, or an empty document with ``keep_null``."""
    for k, line in enumerate(task.data.split(b"\n")):
        if not line.strip():
            continue
        where = f"{task.name}, line {task.first_line + k}"
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise InputError(f"{where}: a JSON record must be an object with a {task.field!r} field")
        if task.field not in record:
            raise InputError(f"{where}: no field {task.field!r} (fields: {', '.join(map(str, record)) or 'none'}); "
                             f"choose one with field= (CLI: --field)")
        value = record[task.field]
        if value is None:
            if keep_null:
                yield where, ""
            continue
        if not isinstance(value, str):
            raise InputError(f"{where}: field {task.field!r} holds {type(value).__name__}, not text")
        yield where, value


# -- documents from an iterator -------------------------------------------------------------------

def docs_tasks(docs: Iterable, batch_chars: int) -> Iterator[DocsTask]:
    """Documents grouped into batches of about ``batch_chars`` characters."""
    task = DocsTask()
    for index, doc in enumerate(docs):
        if not isinstance(doc, (str, bytes)):
            raise InputError(f"document {index}: expected str or bytes, got {type(doc).__name__}")
        if not task.docs:
            task.first_index = index
        task.docs.append(doc)
        task.size += len(doc)
        if task.size >= batch_chars:
            yield task
            task = DocsTask()
    if task.docs:
        yield task
