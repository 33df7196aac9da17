"""Encoding whole corpora: files in, token ids out, streamed (``bpe-fast encode``).

Inputs are read as training reads them (inputs.py): text files, standard input and pipes,
compressed files, JSON lines and Parquet, directories. What a *document* is:

* a text container (``corpus.txt``, ``.txt.gz``, standard input...) is one document, read in
  blocks cut only where the pattern allows (the cut never changes a chunk, so the ids are those
  of encoding the whole text at once); with ``lines=True`` every line, its "\\n" included, is a
  document (so the documents' ids decode back to the file exactly);
* each JSON-lines record's ``field``, each Parquet value of ``column``, is a document (a null
  one an empty document, so that document i is always record i).

Output formats:

* ``"text"``: one line per document, its ids separated by spaces;
* ``"json"``: one line per document, a JSON list of its ids (JSON lines);
* ``"bin"``: ``OUT`` holds every document's ids one after another, little-endian ``uint16`` when
  every id fits (the tokenizer's ``vocab_size`` is at most 65536), else ``uint32``, with no
  header; ``OUT.idx`` (``.idx`` in place of a ``.bin`` suffix) holds ``documents + 1``
  little-endian ``int64`` token offsets: document i is ``ids[idx[i]:idx[i + 1]]``. Both load
  with ``np.memmap`` (``load_bin`` does it); the id width is ``os.path.getsize(OUT) //
  idx[-1]`` bytes (2 or 4) when there is any token.

Text is gathered into batches of about ``BATCH_CHARS`` characters, encoded on ``workers`` threads
(``Tokenizer.encode_batch_to_numpy``, without the GIL) while the next batch is read, and
written as it comes: memory stays bounded whatever the input's size, including endless streams,
wherever the text may be cut into blocks: the named patterns, or ``lines=True``. A custom regex,
no pattern, or a special token holding "\n" allow no cut, so each text document is read whole
(use ``lines=True`` for big files then).

The ids file and the index are each written atomically, one after the other: if the second
fails to land, the pair on disk may not match; ``load_bin`` then refuses it (the sizes disagree).
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO
from collections.abc import Iterable, Iterator

import numpy as np

from . import arguments
from . import inputs as inp
from .errors import ArgumentError, ArgumentTypeError, InputError
from .outputs import atomic_open, check_output
from .pretokenize import Splitter, lines_of
from .progress import Bar, ProgressOption
from .progress import check as check_progress
from .tokenizer import Tokenizer

FORMATS = ("text", "json", "bin")
BATCH_CHARS = 1 << 22                  # characters encoded per batch (about 4 MB)
BLOCK_SIZE = 1 << 22                   # bytes of a text stream read per block


def index_path(output: str | os.PathLike) -> Path:
    """Where the document offsets of a binary corpus go: x.bin -> x.idx, other -> other.idx."""
    path = Path(output)
    return path.with_suffix(".idx") if path.suffix == ".bin" else path.with_name(path.name + ".idx")


def id_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits, else uint32."""
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def load_bin(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """(ids, offsets) of a binary corpus written by ``encode_files``, memory-mapped."""
    path = arguments.path(path, "path")
    for file in (path, index_path(path)):
        if not os.path.isfile(file):
            what = "is not a file" if os.path.exists(file) else "no such file"
            raise InputError(f"{file}: {what}" + (" (the document index encode_files writes beside the ids)"
                                                  if file != path else ""))
    offsets = np.fromfile(index_path(path), dtype="<i8")
    if offsets.size == 0 or offsets[0] != 0:
        raise ArgumentError(f"{index_path(path)}: not a bpe_fast document index (it must start with 0)")
    total, size = int(offsets[-1]), os.path.getsize(path)
    if total == 0:
        return np.zeros(0, np.uint32), offsets
    if size not in (2 * total, 4 * total):
        raise ArgumentError(f"{path}: {size:,} bytes for {total:,} tokens: neither uint16 nor uint32; "
                            f"is {index_path(path)} its index?")
    return np.memmap(path, dtype="<u2" if size == 2 * total else "<u4", mode="r"), offsets


# -- documents -------------------------------------------------------------------------------------

def pieces(paths: Iterable[str | os.PathLike], splitter: Splitter, errors: str = "strict", field: str = "text",
           column: str = "text", cut=...) -> Iterator[tuple[str, bool, int]]:
    """(text, starts a document, bytes read from disk for it) for every input, in order. A
    document may come in several pieces; each piece ends where the splitter allows a cut.
    With ``splitter.lines`` every line of a text container is a document of its own. ``cut``
    overrides the splitter's cuts (None: no cut; a BoundlessBPE tokenizer whose runs may cross a
    line end)."""
    cut = splitter.cut if cut is ... else cut
    for source in inp.sources(paths, field, column):
        by_line = splitter.lines and source.is_text
        for task in source.tasks(cut, BLOCK_SIZE):
            read = task.size                 # counted once, with the task's first piece
            for where, data, offset, starts in task.pieces(keep_null=True):
                text = data if isinstance(data, str) else inp.decode_utf8(data, errors, where, offset)
                for piece in (lines_of(text) if by_line else (text,)):
                    yield piece, by_line or starts, read
                    read = 0


def batches(items: Iterator[tuple[str, bool, int]], chars: int | None = None):
    """Lists of pieces of about ``chars`` (default BATCH_CHARS) characters: (texts, starts, bytes read)."""
    chars = chars or BATCH_CHARS
    texts, starts, read, size = [], [], 0, 0
    for text, start, nbytes in items:
        texts.append(text)
        starts.append(start)
        read += nbytes
        size += len(text)
        if size >= chars:
            yield texts, starts, read
            texts, starts, read, size = [], [], 0, 0
    if texts:
        yield texts, starts, read


# -- writers ----------------------------------------------------------------------------------------

class _BinWriter:
    """ids to one file as they come; each document's first token offset to the index, and the
    total at the end (documents + 1 offsets, the first 0)."""

    def __init__(self, ids_file: IO[bytes], index_file: IO[bytes], dtype: np.dtype):
        self.ids_file, self.index_file, self.dtype = ids_file, index_file, dtype
        self.tokens = self.documents = 0

    def write(self, ids: np.ndarray, offsets: np.ndarray, starts: list[bool]) -> None:
        ids.astype(self.dtype, copy=False).tofile(self.ids_file)
        firsts = offsets[:-1][np.asarray(starts, bool)] + self.tokens
        firsts.astype("<i8").tofile(self.index_file)
        self.documents += len(firsts)
        self.tokens += int(offsets[-1])

    def close(self) -> None:
        np.asarray([self.tokens], "<i8").tofile(self.index_file)


class _TextWriter:
    """One line per document: ids separated by spaces, or a JSON list."""

    def __init__(self, out: IO[str], as_json: bool):
        self.out, self.as_json = out, as_json
        self.separator = ", " if as_json else " "
        self.in_line = False                  # a document's line is open
        self.line_empty = True                # ... and holds no id yet
        self.tokens = self.documents = 0

    def write(self, ids: np.ndarray, offsets: np.ndarray, starts: list[bool]) -> None:
        for k, start in enumerate(starts):
            if start:
                self._end_line()
                self.out.write("[" if self.as_json else "")
                self.in_line, self.line_empty = True, True
                self.documents += 1
            part = ids[offsets[k]:offsets[k + 1]].tolist()
            if part:
                self.out.write(("" if self.line_empty else self.separator) + self.separator.join(map(str, part)))
                self.line_empty = False
                self.tokens += len(part)

    def _end_line(self) -> None:
        if self.in_line:
            self.out.write("]\n" if self.as_json else "\n")
        self.in_line = False

    def close(self) -> None:
        self._end_line()


# -- the driver -------------------------------------------------------------------------------------

def encode_files(tokenizer, paths: Iterable[str | os.PathLike], output: str | os.PathLike | IO[str] | None = None,
                 *, format: str = "text", lines: bool = False, field: str = "text", column: str = "text",
                 workers: int | None = None, allowed_special="none", errors: str = "strict",
                 progress: ProgressOption = "auto") -> dict:
    """Encode the documents of ``paths`` into ``output`` (a path; for text formats also an open
    text stream, None: standard output) in ``format`` (module docstring). ``allowed_special``:
    "none" (special tokens' text is encoded as ordinary text) or "all". Returns a summary:
    documents, tokens, bytes read, the id dtype and the files written."""
    _check_encode_arguments(tokenizer, output, format, allowed_special, errors, field, column, progress)
    workers = None if workers is None else arguments.workers(workers)
    paths = [os.fspath(p) for p in arguments.paths(paths, "paths")]
    written = _output_files(output, format)
    for file in written:
        check_output(file, paths, "-o")
    splitter = replace(tokenizer.splitter, special_tokens=tuple(tokenizer.special_tokens),
                       lines=arguments.flag(lines, "lines"))
    options = (dict(allowed_special="all") if allowed_special == "all" else dict(disallowed_special=()))
    total = inp.total_size(inp.sources(paths, field, column))
    with _opened(output, format, tokenizer.vocab_size) as writer, \
            Bar(progress, "encoding", total, unit="B", unit_scale=True) as bar, ThreadPoolExecutor(1) as pool:
        pending = None                        # the batch being encoded while the next is read
        cut = None if tokenizer.runs_cross_line_ends and not splitter.lines else splitter.cut
        for texts, starts, read in batches(pieces(paths, splitter, errors, field, column, cut)):
            job = pool.submit(tokenizer.encode_batch_to_numpy, texts, workers=workers, **options)
            if pending is not None:
                writer.write(*pending[0].result(), pending[1])
            pending = (job, starts)
            bar.advance(read)
        if pending is not None:
            writer.write(*pending[0].result(), pending[1])
    summary = dict(documents=writer.documents, tokens=writer.tokens, format=format)
    if format == "bin":
        summary.update(dtype=str(writer.dtype), files=written)
    return summary


def _output_files(output: str | os.PathLike | IO[str] | None, format: str) -> list[str]:
    """The files that encoding into ``output`` writes: none for a stream, two for the bin format."""
    if not isinstance(output, (str, os.PathLike)):
        if format == "bin":
            raise ArgumentError("the bin format needs an output file (CLI: -o corpus.bin): it writes two files")
        return []
    return [os.fspath(output), os.fspath(index_path(output))] if format == "bin" else [os.fspath(output)]


def _check_encode_arguments(tokenizer, output, format, allowed_special, errors, field, column, progress) -> None:
    """encode_files' arguments, each checked before anything is read."""
    if not isinstance(tokenizer, Tokenizer):
        raise ArgumentTypeError(f"tokenizer must be a Tokenizer (bpe_fast.load opens any), "
                                f"got {type(tokenizer).__name__}")
    if not (output is None or isinstance(output, (str, os.PathLike)) or hasattr(output, "write")):
        raise ArgumentTypeError(f"output must be a file name, an open text stream or None, got {type(output).__name__}")
    for name, value, allowed in (("format", format, FORMATS), ("allowed_special", allowed_special, ("none", "all")),
                                 ("errors", errors, ("strict", "replace"))):
        if not isinstance(value, str) or value not in allowed:
            raise ArgumentError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    for name, value in (("field", field), ("column", column)):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{name} must be a str (the name holding the text), got {value!r}")
    check_progress(progress)


@contextlib.contextmanager
def _opened(output, format: str, vocab_size: int):
    """The writer, its files written atomically: nothing is left at the output paths (and a
    file that was there is kept) if encoding fails."""
    with contextlib.ExitStack() as stack:
        writer: _BinWriter | _TextWriter
        if format == "bin":
            ids = stack.enter_context(atomic_open(output, "wb"))
            index = stack.enter_context(atomic_open(index_path(output), "wb"))
            writer = _BinWriter(ids, index, id_dtype(vocab_size))
        elif isinstance(output, (str, os.PathLike)):
            writer = _TextWriter(stack.enter_context(atomic_open(output, "w", encoding="utf-8")), format == "json")
        else:
            writer = _TextWriter(output if output is not None else sys.stdout, format == "json")
        yield writer
        writer.close()
