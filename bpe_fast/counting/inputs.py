"""Every input people have, turned into tasks that read themselves, never read whole into memory.

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
* a directory means the files in it and below it, sorted by path, but hidden files and folders
  (.git/ and the like).

Each kind of input is a ``Source`` class that plans its own tasks (``tasks``: for one machine;
``cluster_tasks``: for workers that must read the files themselves), and each task reads
itself: ``task.pieces()`` yields its text as ``Piece``s (UTF-8 bytes or str, named for error
messages). Counting, encoding and the Dask path only loop over sources, tasks and pieces.

A text container's bytes are one document (so ``corpus.txt``, ``corpus.txt.gz``, ``corpus.txt.zst``
and ``cat corpus.txt |`` give the same word table); blocks are cut only where the pattern
allows (``cut``), so the cutting never changes a chunk. Progress counts the bytes read from
disk (compressed bytes for compressed files).
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import lzma
import os
import stat
import sys
from dataclasses import dataclass, field as dataclass_field
from itertools import islice
from pathlib import Path
from typing import BinaryIO, Callable, ClassVar, NamedTuple
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from ._pack import document_ends, pack_documents
from ..errors import InputError, require

STDIN = "-"                       # the input name that means standard input
_READ_SIZE = 1 << 16              # bytes read at a time while looking for a cut
COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
JSONL = {".jsonl", ".ndjson"}
PARQUET = {".parquet"}

Cut = Callable[[bytes, int], "int | None"]      # (data, start) -> first safe cut at or after start


class Piece(NamedTuple):
    """Text as a task reads it: ``data`` (UTF-8 bytes, or str) from ``where`` (named in
    errors), starting at byte ``offset`` of it; ``starts_document`` is false only for the later
    blocks of a text container, which continue the document of the block before."""
    where: str
    data: bytes | str
    offset: int = 0
    starts_document: bool = True


def decode_utf8(data: bytes, errors: str, where: str, base_offset: int = 0) -> str:
    """UTF-8 decode; on failure name the file/document and the absolute byte offset."""
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.end]
        raise InputError(
            f"{where}: invalid UTF-8 at byte offset {base_offset + exc.start} (bytes {bad!r}: "
            f"{exc.reason}); pass errors='replace' (CLI: --errors replace) to replace such bytes"
        ) from None


# -- tasks: what a worker does; each reads itself ------------------------------------------------

@dataclass
class FileTask:
    """Bytes start..end of a regular text file, read by the worker itself."""
    path: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    def pieces(self, keep_null: bool = False) -> Iterator[Piece]:
        yield Piece(self.path, read_block(self), self.start, self.start == 0)


@dataclass
class DataTask:
    """A block of a stream, read here: ``data`` starts at byte ``offset`` of ``name`` (after
    decompression); ``size`` is the bytes read from disk for it, for progress."""
    name: str
    offset: int
    data: bytes
    size: int

    def pieces(self, keep_null: bool = False) -> Iterator[Piece]:
        yield Piece(self.name, self.data, self.offset, self.offset == 0)


@dataclass
class JsonlTask:
    """Whole lines of a JSON-lines input; line ``first_line`` is data's first; each record's
    ``field`` is a document."""
    name: str
    first_line: int
    data: bytes
    field: str
    size: int

    def pieces(self, keep_null: bool = False) -> Iterator[Piece]:
        for where, text in jsonl_values(self, keep_null):
            yield Piece(where, text)


@dataclass
class ParquetTask:
    """One row group of a Parquet file; each value of ``column`` (a top-level column, or a
    dotted path to a field of a struct column: "meta.text") is a document."""
    path: str
    row_group: int
    column: str
    size: int

    def pieces(self, keep_null: bool = False) -> Iterator[Piece]:
        for row, value in parquet_values(self, keep_null):
            yield Piece(f"{self.path}, row group {self.row_group}, row {row}", value)


@dataclass
class DocsTask:
    """A batch of documents from an iterator, packed for the trip to a worker: their UTF-8
    bytes one after another in ``data``, document i at ``data[offsets[i]:offsets[i + 1]]``.
    Bytes pickle as one copy and the worker gives the whole buffer to the native scanner in one
    call; a list of str would be encoded to pickle it, decoded into new str objects in the
    worker and encoded again to be scanned, at a Python call or two per document.
    ``utf8_valid``: every document was a str, so its bytes are valid UTF-8 (bytes documents are
    checked by the worker). A batch that cannot be packed (a str holding a lone surrogate, which
    has no UTF-8) travels as ``docs``, the documents as given: the worker reports or replaces
    the surrogate as ``errors`` says, naming the document. A worker may hold ``data`` as a
    memoryview of shared memory (counting._Arena), for the routes that scan it whole."""
    data: bytes | memoryview = b""
    offsets: np.ndarray = dataclass_field(default_factory=lambda: np.zeros(1, np.int64))
    count: int = 0                    # documents
    first_index: int = 0              # index of the first document in the iterator, for messages
    size: int = 0                     # characters (bytes for bytes documents), for progress
    utf8_valid: bool = True
    docs: list | None = None          # the documents as given, when they could not be packed

    def documents(self) -> Iterator[str | bytes]:
        """Each document: its UTF-8 bytes, or as given when the batch is not packed."""
        return iter(self.docs) if self.docs is not None else self.packed_documents()

    def packed_documents(self) -> Iterator[bytes]:
        """Each document's bytes, from a packed batch."""
        data, ends = self.data, self.offsets.tolist()
        for i in range(self.count):
            yield bytes(data[ends[i]:ends[i + 1]])      # a slice of bytes is bytes already: no copy

    def pieces(self, keep_null: bool = False) -> Iterator[tuple[str, str | bytes, int, bool]]:
        for i, doc in enumerate(self.documents(), self.first_index):
            yield (f"document {i}", doc, 0, True)       # a Piece; a plain tuple is quicker to make


@dataclass
class StreamTask:
    """A whole input read front to back by one worker (on a cluster: a compressed or JSON-lines
    file, which cannot be split before it is read)."""
    source: Source
    cut: Cut | None
    block_size: int

    @property
    def size(self) -> int:
        return self.source.size or 0

    def pieces(self, keep_null: bool = False) -> Iterator[Piece]:
        for task in self.source.tasks(self.cut, self.block_size):
            yield from task.pieces(keep_null)


# -- sources: what the user named, each planning its own tasks ------------------------------------

@dataclass(frozen=True)
class Source:
    """One input: its path ("-" for standard input), compression ("gzip", "bz2", "xz", "zstd"
    or None) and size on disk (None for a stream: size unknown)."""
    path: str
    compression: str | None
    size: int | None
    is_text: ClassVar[bool] = False    # a text container (its lines may be documents: lines=True)

    @property
    def name(self) -> str:
        return "standard input" if self.path == STDIN else self.path

    def tasks(self, cut: Cut | None, block_size: int) -> Iterator:
        """The tasks that read it on this machine. ``cut`` (None: the pattern allows no cut)
        decides where text may be split into blocks."""
        raise NotImplementedError

    def cluster_tasks(self, cut: Cut | None, block_size: int) -> list:
        """Tasks that workers elsewhere can do alone, opening the file themselves: by default
        the whole input as one task, read as a stream there."""
        if self.size is None:
            raise InputError(f"{self.name}: a stream cannot be counted on a cluster (its workers cannot read it); "
                             f"count it locally, or save it to a shared file first")
        return [StreamTask(self, cut, block_size)]

    def _stream_blocks(self, cut: Cut | None, block_size: int):
        with open_stream(self) as (stream, raw):
            yield from blocks(stream, raw, cut, block_size)


@dataclass(frozen=True)
class TextSource(Source):
    """A text container: its bytes are one document."""
    is_text: ClassVar[bool] = True

    @property
    def splittable_by_workers(self) -> bool:
        """Can workers read blocks of it themselves (a regular, uncompressed text file)?"""
        return self.compression is None and self.size is not None

    def tasks(self, cut: Cut | None, block_size: int) -> Iterator:
        if self.splittable_by_workers:
            yield from file_tasks(self.path, self.size or 0, cut, block_size)
            return
        for _, offset, data, size in self._stream_blocks(cut, block_size):
            yield DataTask(self.name, offset, data, size)

    def cluster_tasks(self, cut: Cut | None, block_size: int) -> list:
        if self.splittable_by_workers:
            return list(file_tasks(self.path, self.size or 0, cut, block_size))
        return super().cluster_tasks(cut, block_size)


@dataclass(frozen=True)
class JsonlSource(Source):
    """JSON lines: each record's ``field`` is a document."""
    field: str = "text"

    def tasks(self, cut: Cut | None, block_size: int) -> Iterator:
        for first_line, _, data, size in self._stream_blocks(_line_cut, block_size):
            yield JsonlTask(self.name, first_line, data, self.field, size)


@dataclass(frozen=True)
class ParquetSource(Source):
    """Parquet: each value of ``column`` is a document, read a row group at a time."""
    column: str = "text"

    def tasks(self, cut: Cut | None, block_size: int) -> Iterator:
        return parquet_tasks(self, self.column)

    def cluster_tasks(self, cut: Cut | None, block_size: int) -> list:
        return list(self.tasks(cut, block_size))


def names_files(given) -> bool:
    """Whether what a caller gave names files rather than holding texts: a path (str or
    PathLike), or a non-empty list of items that each look like one (``looks_like_path``).
    The API's corpora and texts take both; one rule everywhere, so that a list of file names is
    never counted as the text of their names."""
    if isinstance(given, (str, os.PathLike)):
        return True
    return isinstance(given, (list, tuple)) and bool(given) and all(looks_like_path(x) for x in given)


def looks_like_path(item) -> bool:
    """A file name rather than a text: a PathLike, or one word that names a file or looks like a
    file name (a "/" or a suffix such as .txt): a missing file is then reported, not read as text."""
    if isinstance(item, os.PathLike):
        return True
    if not isinstance(item, str) or not item or any(c.isspace() for c in item):
        return False
    return item == STDIN or os.path.exists(item) or "/" in item or os.sep in item or \
        os.path.splitext(item)[1][1:].isalnum()


def classify(path: str) -> tuple[str, str | None]:
    """(kind, compression) from a file name: "corpus.jsonl.zst" -> ("jsonl", "zstd")."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSED.get(suffixes[-1]) if suffixes else None
    inner = (suffixes[-2] if compression and len(suffixes) > 1
             else suffixes[-1] if suffixes and not compression else "")
    if inner in PARQUET and compression:
        raise InputError(f"{path}: a compressed Parquet file; Parquet compresses its own pages: give the .parquet file")
    return ("jsonl" if inner in JSONL else "parquet" if inner in PARQUET else "text"), compression


def sources(paths: Iterable[str | os.PathLike], field: str = "text", column: str = "text") -> list[Source]:
    """Every input file, checked and classified, directories expanded: a missing, unreadable
    or empty-named input is an InputError before anything is read. ``field`` and ``column``
    name the text of JSON-lines records and Parquet rows."""
    found: list[Source] = []
    for given in paths:
        path = os.fspath(given)
        if path == STDIN:
            found.append(TextSource(STDIN, None, None))
        elif os.path.isdir(path):
            files = _files_in(Path(path))
            if not files:
                raise InputError(f"{path}: the directory holds no files")
            found.extend(_source(f, field, column) for f in files)
        else:
            found.append(_source(path, field, column))
    return found


def total_size(found: list[Source]) -> int | None:
    """The bytes of all the sources, for progress; None if any is a stream (its size is unknown)."""
    total = 0
    for source in found:
        if source.size is None:
            return None
        total += source.size
    return total


def _files_in(folder: Path) -> list[str]:
    """The files in a folder and below it, sorted, leaving out hidden ones and hidden folders
    (.git/, .cache/...: a repository's objects are no corpus). A folder that cannot be listed
    is an InputError naming it: its files would otherwise be left out without a word."""
    def unreadable(exc: OSError):
        raise InputError(f"{exc.filename}: cannot be read: {exc.strerror or exc}") from None

    found = []
    for where, folders, names in os.walk(folder, onerror=unreadable):
        folders[:] = [f for f in folders if not f.startswith(".")]
        found += [os.path.join(where, n) for n in names
                  if not n.startswith(".") and os.path.isfile(os.path.join(where, n))]
    return sorted(found)


def _source(path: str, field: str, column: str) -> Source:
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
        size = None
    else:
        try:
            with open(path, "rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        size = os.path.getsize(path)
    if kind == "jsonl":
        return JsonlSource(path, compression, size, field)
    if kind == "parquet":
        return ParquetSource(path, compression, size, column)
    return TextSource(path, compression, size)


# -- planning: blocks of files and streams ----------------------------------------------------------

def file_tasks(path: str, size: int, cut: Cut | None, block_size: int, start: int = 0) -> Iterator[FileTask]:
    """Blocks of about ``block_size`` bytes of a regular file, cut only where ``cut`` allows;
    from byte ``start`` (a safe cut) to byte ``size``."""
    if cut is None or size - start <= block_size:
        yield FileTask(path, start, size)       # an empty file too: it is an (empty) document
        return
    with open(path, "rb") as fh, _reading(path):
        while start < size:
            end = _next_cut(fh, start + block_size, size, cut) if start + block_size < size else size
            yield FileTask(path, start, end)
            start = end


@contextlib.contextmanager
def _reading(name: str) -> Iterator[None]:
    """An OSError while reading an input (a failing disk, a vanished mount) is the input's
    error, named, not a bare OSError that could be taken for the output's."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"{name}: read failed: {exc.strerror or exc}") from None


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
    if pending or offset == 0:               # an empty stream is one empty block: an empty document
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
    return _ZstdFrames(fh, require("zstandard", "zstd", f"reading {source.name}"))


class _ZstdFrames:
    """A zstd stream decompressed frame by frame, so that its end is checked: zstandard's
    stream_reader reads a stream cut off inside a frame (an interrupted download) as if the text
    ended there. Frames follow one another (``zstd`` writes several for big or piped input);
    skippable frames are skipped. Damaged data raises ValueError, a cut-off stream EOFError."""
    FEED = 1 << 12      # compressed bytes decompressed at a time: a 4-byte block can make 128 KiB

    def __init__(self, fh, zstandard):
        self.fh, self.zstandard = fh, zstandard
        self.decompressor = zstandard.ZstdDecompressor()
        self.frame = None               # the frame being decompressed (None before the first)
        self.buffer = bytearray()
        self.ended = False

    def read(self, n: int) -> bytes:
        while len(self.buffer) < n and not self.ended:
            self._feed(self.fh.read(self.FEED))
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def _feed(self, data: bytes) -> None:
        if not data:
            if self.frame is not None and not self.frame.eof:
                raise EOFError("the data ends inside a zstd frame: the file is truncated")
            self.ended = True
        while data:
            if self.frame is None or self.frame.eof:
                self.frame = self.decompressor.decompressobj()
            try:
                self.buffer += self.frame.decompress(data)
            except self.zstandard.ZstdError as exc:
                raise ValueError(str(exc)) from None
            data = self.frame.unused_data if self.frame.eof else b""


def read_block(task: FileTask) -> bytes:
    """The task's bytes; a file that shrank since it was planned is an error, not a short count."""
    with _reading(task.path), open(task.path, "rb") as fh:
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
        parquet = pq.ParquetFile(source.path)
        meta, schema = parquet.metadata, parquet.schema_arrow
    except Exception as exc:      # pyarrow raises its own ArrowInvalid, OSError...
        raise InputError(f"{source.name}: not a readable Parquet file ({exc})") from None
    _check_text_column(schema, column, source.name)
    total = max(sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)), 1)
    for g in range(meta.num_row_groups):      # progress: the file's bytes, shared by group size
        yield ParquetTask(source.path, g, column, (source.size or 0) * meta.row_group(g).total_byte_size // total)


def _column_path(schema, column: str) -> list[str]:
    """[top-level column, struct field, ...] that ``column`` names: a column of the file by its
    whole name, or a dotted path into struct columns ("meta.text"); [] if it names none."""
    if column in schema.names:
        return [column]
    parts = column.split(".")
    if parts[0] not in schema.names:
        return []
    kind = schema.field(parts[0]).type
    for part in parts[1:]:
        if not _is_struct(kind) or kind.get_field_index(part) < 0:
            return []
        kind = kind.field(part).type
    return parts


def _column_type(schema, path: list[str]):
    kind = schema.field(path[0]).type
    for part in path[1:]:
        kind = kind.field(part).type
    return kind


def _check_text_column(schema, column: str, name: str) -> None:
    """InputError, saying what the file holds and how to name it, unless ``column`` is text."""
    path = _column_path(schema, column)
    if not path:
        raise InputError(f"{name}: no column {column!r}; {_columns_said(schema)}")
    kind = _column_type(schema, path)
    if not _is_text(kind):
        raise InputError(f"{name}: column {column!r} holds {kind}, not text (each value must be one document); "
                         f"{_columns_said(schema)}")


def _is_struct(kind) -> bool:
    return kind.id == _pyarrow().struct([]).id


def _is_text(kind) -> bool:
    pa = _pyarrow()
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
        or pa.types.is_large_binary(kind) or str(kind) in ("string_view", "binary_view")


def _pyarrow():
    return require("pyarrow", "parquet", "reading Parquet files")


def _columns_said(schema, most: int = 12) -> str:
    """The file's columns with their types, and the text in them by the names column= takes."""
    columns = [f"{field.name} ({field.type})" for field in schema]
    texts = [".".join(path) for field in schema for path in _text_paths(field, [field.name])]
    listed = ", ".join(columns[:most]) + (f" and {len(columns) - most} more" if len(columns) > most else "")
    text = (f"text columns: {', '.join(texts[:most])}" if texts else "no text column")
    return (f"its columns: {listed}; {text}. Choose one with column= (CLI: --column), a field of a struct "
            f"column by a dotted path (meta.text)")


def _text_paths(field, path: list[str]) -> Iterator[list[str]]:
    if _is_text(field.type):
        yield path
    elif _is_struct(field.type):
        for child in field.type:
            yield from _text_paths(child, [*path, child.name])


def parquet_values(task: ParquetTask, keep_null: bool = False) -> Iterator[tuple[int, str | bytes]]:
    """(row, text) of one row group's column (text: a str, or UTF-8 bytes from a binary
    column); a value that is not text is an InputError. A null is no text: skipped, or an empty
    document with ``keep_null`` (encoding keeps row i document i)."""
    pq = require("pyarrow.parquet", "parquet", f"reading {task.path}")
    parquet = pq.ParquetFile(task.path)
    path = _column_path(parquet.schema_arrow, task.column)
    values = parquet.read_row_group(task.row_group, columns=[path[0]]).column(0)
    for part in path[1:]:                   # into the struct; flatten() keeps the struct's own nulls
        values = values.flatten()[values.type.get_field_index(part)]
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
    for where, record in jsonl_records(task):
        value = record[task.field]
        if value is None:
            if keep_null:
                yield where, ""
            continue
        if not isinstance(value, str):
            raise InputError(f"{where}: field {task.field!r} holds {type(value).__name__}, not text")
        yield where, value


def jsonl_records(task: JsonlTask, also: tuple[tuple[str, str], ...] = ()) -> Iterator[tuple[str, dict]]:
    """(where, record) of each line of a block of JSON lines: an object holding the text's field
    and every field of ``also`` ((field, how it was chosen), for the error), else an InputError
    naming file and line."""
    for k, line in enumerate(task.data.split(b"\n")):
        if not line.strip():
            continue
        where = f"{task.name}, line {task.first_line + k}"
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{where}: not valid JSON ({exc})") from None
        except RecursionError:
            raise InputError(f"{where}: JSON nested too deeply to read (lists or objects inside one another "
                             f"hundreds of levels deep); a record is an object with a text field") from None
        if not isinstance(record, dict):
            raise InputError(f"{where}: a JSON record must be an object with a {task.field!r} field")
        for key, chosen in ((task.field, "choose one with field= (CLI: --field)"), *also):
            if key not in record:
                raise InputError(f"{where}: no field {key!r} (fields: {', '.join(map(str, record)) or 'none'}); "
                                 f"{chosen}")
        yield where, record


# -- documents from an iterator -------------------------------------------------------------------

_MOST_PULLED = 4096        # items taken from the iterator at once (fewer when they are big)


def docs_tasks(docs: Iterable, batch_chars: int, field: str = "text") -> Iterator[DocsTask]:
    """Documents grouped into packed batches (``DocsTask``) of about ``batch_chars`` characters:
    a batch ends with the document that takes it to ``batch_chars`` or past. An item of
    ``docs`` is a document (str or bytes), a batch of them (a list or tuple, as Hugging Face
    ``datasets`` gives ``dataset[i:j]["text"]``), or a record (a dict) whose ``field`` holds one
    or a batch (``dataset.iter(batch_size=...)`` gives those); a None document is no text,
    skipped. Items are taken a slice at a time, and each slice is checked, measured, split into
    batches and packed by C loops (``document_ends``, ``searchsorted``, ``pack_documents``), not
    a Python step per document: the parent feeds every worker, so its time per document bounds
    the whole count."""
    items = iter(docs)
    batch: list = []
    size = index = 0                  # the batch's characters; documents before the batch
    items_seen = chars_seen = 0
    while True:
        pulled = list(islice(items, _pull_size(batch_chars - size, items_seen, chars_seen)))
        if not pulled:
            break
        new, ends = _documents_in(pulled, items_seen, field)
        items_seen += len(pulled)
        chars_seen += int(ends[-1]) if len(ends) else 0
        start = 0
        while start < len(new):
            before = int(ends[start - 1]) if start else 0
            # the document that fills the batch: the first to end at batch_chars - size or past
            last = start + int(np.searchsorted(ends[start:], batch_chars - size + before))
            if last == len(new):
                batch += new[start:]
                size += int(ends[-1]) - before
                break
            batch += new[start:last + 1]
            yield packed_batch(batch, index, size + int(ends[last]) - before)
            index += len(batch)
            batch, size = [], 0
            start = last + 1
    if batch:
        yield packed_batch(batch, index, size)


def _pull_size(room: int, items_seen: int, chars_seen: int) -> int:
    """How many items to take next: about enough to fill the batch's ``room``, judged by the
    items so far (one at first: an item may be a huge document)."""
    if not items_seen:
        return 1
    average = max(chars_seen / items_seen, 1.0)
    return max(1, min(_MOST_PULLED, int(room / average) + 1))


def _documents_in(items: list, first_item: int, field: str) -> tuple[list, np.ndarray]:
    """The documents of some items, None left out, and where each ends (``document_ends``).
    Plain documents are measured and checked in one C loop; batches, records and anything
    unusual item by item (which raises the InputError naming the item at fault)."""
    ends = document_ends(items)
    if ends is not None:
        return items, ends
    docs: list[str | bytes] = []
    for k, item in enumerate(items, first_item):
        docs.extend(doc for doc in _documents_of(item, k, field) if doc is not None)
    ends = document_ends(docs)
    assert ends is not None                 # _documents_of gives only str and bytes
    return docs, ends


def packed_batch(docs: list, first_index: int, size: int) -> DocsTask:
    """The documents as one ``DocsTask``: their UTF-8 bytes joined, with the offsets of each. A
    str holding a surrogate leaves the batch unpacked, for the worker to report or replace."""
    packed = pack_documents(docs)
    if packed is None:
        return DocsTask(count=len(docs), first_index=first_index, size=size, docs=docs)
    data, offsets, all_str = packed
    return DocsTask(data, offsets, len(docs), first_index, size, utf8_valid=all_str)


def _documents_of(item, index: int, field: str) -> Iterable:
    if isinstance(item, (str, bytes)):
        return (item,)
    if isinstance(item, Mapping):
        if field not in item:
            raise InputError(f"item {index}: a record without the field {field!r} (fields: "
                             f"{', '.join(map(str, item)) or 'none'}); choose the text's field with field=")
        item = item[field]
        if item is None or isinstance(item, (str, bytes)):
            return (item,)
    if isinstance(item, (list, tuple)):
        bad = next((d for d in item if d is not None and not isinstance(d, (str, bytes))), None)
        if bad is None:
            return item
        raise InputError(f"item {index}: a batch holding {type(bad).__name__}; a batch is a list of str or bytes")
    raise InputError(f"item {index}: expected a document (str or bytes), a batch of them (a list) or a record "
                     f"(a dict with field {field!r}), got {type(item).__name__}")
