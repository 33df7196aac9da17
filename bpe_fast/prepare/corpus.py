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
  idx[-1]`` bytes (2 or 4) when there is any token. A plain file of ids with no index beside
  it (numpy's ``tofile``, nanoGPT's ``prepare.py``) loads with ``load_bin(OUT, dtype=...)``;
* ``"npy"``: every document's ids one after another as a NumPy ``.npy`` array (``np.load``
  reads it), of the same dtype; no document index (``append_eot`` marks the documents' ends).

``append_eot`` puts the ``<|endoftext|>`` special token's id after every document, as nanoGPT's
``prepare.py`` does (the token is part of its document in the index).

Special tokens' text follows tiktoken's rule, as ``Tokenizer.encode``: ``allowed_special``
tokens become their ids, text holding any other (``disallowed_special``) is refused, naming the
file (and line or row) and the token. The default here is ``disallowed_special=()``, so the
text of a special token is encoded as ordinary text (as before; ``bpe-fast encode`` refuses it).

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
import io
import os
import shlex
import sys
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO
from collections.abc import Iterable, Iterator

import numpy as np

from .. import arguments
from ..counting import inputs as inp
from ..errors import ArgumentError, ArgumentTypeError, EncodingError, InputError, OutputError
from ..outputs import atomic_open, check_output
from ..pretokenize.splitter import Splitter, lines_of
from ..progress import Bar, ProgressOption
from ..progress import check as check_progress
from ..tokenizer import Tokenizer
from ..encoding.specials import allowed_and_disallowed

FORMATS = ("text", "json", "bin", "npy")
BINARY = ("bin", "npy")                # formats of raw ids, written to a file
ID_DTYPES = ("uint16", "uint32")      # the id widths of a binary corpus
EOT = "<|endoftext|>"                 # the token append_eot appends, as nanoGPT does
NPY_HEADER_BYTES = 128                 # a 1-D array's .npy header (version 1.0), whatever its length
BATCH_CHARS = 1 << 22                  # characters encoded per batch (about 4 MB)
BLOCK_SIZE = 1 << 22                   # bytes of a text stream read per block


def index_path(output: str | os.PathLike) -> Path:
    """Where the document offsets of a binary corpus go: x.bin -> x.idx, other -> other.idx."""
    path = Path(output)
    return path.with_suffix(".idx") if path.suffix == ".bin" else path.with_name(path.name + ".idx")


def id_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits, else uint32."""
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


def load_bin(path: str | os.PathLike, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """(ids, offsets) of a binary corpus written by ``encode_files``, memory-mapped. ``dtype``
    ("uint16" or "uint32") reads a plain file of ids with no ``.idx`` beside it (numpy's
    ``tofile``, nanoGPT's ``prepare.py``) as one document; with an index it must agree with it."""
    path = Path(arguments.path(path, "path"))
    dtype = None if dtype is None else _id_dtype_arg(dtype)
    _check_is_file(path, "")
    index = index_path(path)
    if not os.path.exists(index) and dtype is not None:
        return _plain_ids(path, dtype)
    if not os.path.exists(index):
        raise InputError(f"{path}: no {index.name} beside it (the document index encode_files writes); a plain "
                         f"file of ids (numpy's tofile, nanoGPT's prepare.py) needs its dtype: "
                         f"load_bin(path, dtype='uint16') or dtype='uint32'",
                         cli_message=f"{path}: no {index.name} beside it (the document index `bpe-fast encode` "
                                     f"writes); for a plain file of ids (numpy's tofile, nanoGPT's prepare.py) "
                                     f"give its dtype: --dtype uint16 or --dtype uint32")
    _check_is_file(index, " (the document index encode_files writes beside the ids)")
    _refuse_npy(path, "its index " + index.name)
    offsets = _offsets(index)
    total, size = int(offsets[-1]), os.path.getsize(path)
    if total == 0:
        if size:
            raise InputError(f"{index}: says its corpus holds no token, but {path} holds {size:,} bytes: is "
                             f"{index.name} the index of this file?")
        return np.zeros(0, dtype or np.uint32), offsets
    if size not in (2 * total, 4 * total) or (dtype is not None and size != dtype.itemsize * total):
        given = f" as {dtype.name}" if dtype is not None and size in (2 * total, 4 * total) else ""
        raise ArgumentError(f"{path}: {size:,} bytes for {total:,} tokens{given}: "
                            + (f"its index says {'uint16' if size == 2 * total else 'uint32'}" if given else
                               f"neither uint16 nor uint32; is {index} its index?"))
    return np.memmap(path, dtype="<u2" if size == 2 * total else "<u4", mode="r"), offsets


def _offsets(index: Path) -> np.ndarray:
    """A document index: little-endian int64 offsets from 0, never falling; anything else is
    refused (a damaged or foreign file would give documents that are not there)."""
    size = os.path.getsize(index)
    offsets = np.fromfile(index, dtype="<i8") if size % 8 == 0 else np.zeros(0, np.int64)
    if offsets.size == 0 or offsets[0] != 0:
        raise InputError(f"{index}: not a bpe_fast document index ({size:,} bytes; it holds int64 offsets from 0)")
    falls = np.flatnonzero(np.diff(offsets) < 0)
    if len(falls):
        at = int(falls[0])
        raise InputError(f"{index}: not a document index: offset {at + 1} ({int(offsets[at + 1]):,}) is below "
                         f"offset {at} ({int(offsets[at]):,}); documents cannot end before they start")
    return offsets


NPY_MAGIC = b"\x93NUMPY"


def is_npy(path: str | os.PathLike) -> bool:
    """Does the file start as a NumPy .npy file does (its magic string), whatever its name?"""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(NPY_MAGIC)) == NPY_MAGIC
    except OSError:
        return False


def _refuse_npy(path: Path, reading: str) -> None:
    """A .npy file is not a file of raw ids: its header would be read as ids."""
    if is_npy(path):
        raise InputError(f"{path}: is a NumPy .npy file (its header says so), not raw ids to read with {reading}: "
                         f"read it with numpy.load (or decode it as it is, without --dtype)",
                         cli_message=f"{path}: is a NumPy .npy file (its header says so), not raw ids to read with "
                                     f"{reading}: decode it without --dtype")


def _check_is_file(file: Path, what: str) -> None:
    if not os.path.isfile(file):
        raise InputError(f"{file}: {'is not a file' if os.path.exists(file) else 'no such file'}{what}")


def _id_dtype_arg(dtype) -> np.dtype:
    """load_bin's ``dtype``: uint16 or uint32 (a name or a NumPy dtype), little-endian."""
    try:
        parsed = np.dtype(dtype)
    except TypeError:
        parsed = None
    if parsed is None or parsed.name not in ID_DTYPES or parsed.byteorder == ">":
        raise ArgumentError(f"dtype must be 'uint16' or 'uint32' (the width of the ids), not {dtype!r}",
                            cli_message=f"--dtype must be uint16 or uint32, not {dtype!r}")
    return parsed.newbyteorder("<")


def _plain_ids(path: Path, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """A file of ids and nothing else, as one document."""
    _refuse_npy(path, f"dtype={dtype.name}")
    size = os.path.getsize(path)
    if size % dtype.itemsize:
        raise InputError(f"{path}: {size:,} bytes is not a whole number of {dtype.name} ids "
                         f"({dtype.itemsize} bytes each): is it a file of {dtype.name} token ids?")
    ids = np.memmap(path, dtype=dtype, mode="r") if size else np.zeros(0, dtype)
    return ids, np.array([0, size // dtype.itemsize], np.int64)


# -- documents -------------------------------------------------------------------------------------

def pieces(paths: Iterable[str | os.PathLike], splitter: Splitter, errors: str = "strict", field: str = "text",
           column: str = "text", cut=...) -> Iterator[tuple[str, bool, int]]:
    """(text, starts a document, bytes read from disk for it) for every input, in order. A
    document may come in several pieces; each piece ends where the splitter allows a cut.
    With ``splitter.lines`` every line of a text container is a document of its own. ``cut``
    overrides the splitter's cuts (None: no cut; a BoundlessBPE tokenizer whose runs may cross a
    line end)."""
    for text, starts, read, _ in named_pieces(paths, splitter, errors, field, column, cut):
        yield text, starts, read


def named_pieces(paths: Iterable[str | os.PathLike], splitter: Splitter, errors: str = "strict",
                 field: str = "text", column: str = "text", cut=...) -> Iterator[tuple[str, bool, int, str]]:
    """``pieces``, each with where it comes from (a file; its line or row), for error messages."""
    cut = splitter.cut if cut is ... else cut
    for source in inp.sources(paths, field, column):
        by_line = splitter.lines and source.is_text
        for task in source.tasks(cut, BLOCK_SIZE):
            read = task.size                 # counted once, with the task's first piece
            for where, data, offset, starts in task.pieces(keep_null=True):
                text = data if isinstance(data, str) else inp.decode_utf8(data, errors, where, offset)
                for piece in (lines_of(text) if by_line else (text,)):
                    yield piece, by_line or starts, read, where
                    read = 0


def batches(items: Iterator[tuple[str, bool, int]], chars: int | None = None):
    """Lists of pieces of about ``chars`` (default BATCH_CHARS) characters: (texts, starts, bytes read)."""
    for texts, starts, read, _ in named_batches(((*item, "") for item in items), chars):
        yield texts, starts, read


def named_batches(items: Iterator[tuple[str, bool, int, str]], chars: int | None = None):
    """``batches`` of ``named_pieces``: (texts, starts, bytes read, where each text is from)."""
    chars = chars or BATCH_CHARS
    texts, starts, wheres, read, size = [], [], [], 0, 0
    for text, start, nbytes, where in items:
        texts.append(text)
        starts.append(start)
        wheres.append(where)
        read += nbytes
        size += len(text)
        if size >= chars:
            yield texts, starts, read, wheres
            texts, starts, wheres, read, size = [], [], [], 0, 0
    if texts:
        yield texts, starts, read, wheres


# -- special tokens ---------------------------------------------------------------------------------

def special_options(tokenizer, allowed_special, disallowed_special) -> tuple[dict, set[str]]:
    """``Tokenizer.encode``'s keywords for these arguments ("none" is allowed_special's old
    spelling of no token), checked now, and the special tokens whose text they refuse."""
    if isinstance(allowed_special, str) and allowed_special == "none":
        allowed_special = frozenset()
    _, refused = allowed_and_disallowed(tokenizer.special_tokens, allowed_special, disallowed_special)  # as encode()
    return dict(allowed_special=allowed_special, disallowed_special=disallowed_special), refused


def first_special(text: str, tokens: Iterable[str]) -> tuple[int, str] | None:
    """(character, token) of the first of ``tokens`` in ``text`` (the longest where several start there)."""
    found = [(text.find(t), -len(t), t) for t in tokens if t and t in text]
    return (min(found)[0], min(found)[2]) if found else None


def special_token_error(texts: list[str], wheres: list[str], refused: set[str],
                        error: EncodingError) -> EncodingError:
    """``error`` (a text of a batch holds a ``refused`` special token) said again, naming where
    that text is from and what to do, in Python's words and the command line's."""
    for text, where in zip(texts, wheres):
        found = first_special(text, refused)
        if found is not None:
            return special_error(f"{where}: holds", found[1])
    return error           # found only once normalized: the tokenizer's own message says where


def special_error(what: str, token: str) -> EncodingError:
    """The one error for text that holds a disallowed special token, Python's and the CLI's."""
    return EncodingError(f"{what} the special token {token!r}: pass allowed_special={{{token!r}}} (or \"all\") to "
                         f"encode it as that token, or disallowed_special=() to encode it as ordinary text",
                         cli_message=f"{what} the special token {token!r}: give --allowed-special {shell_word(token)} "
                                     f"(or --allowed-special all) to encode it as that token, or "
                                     f"--disallowed-special none to encode it as ordinary text")


def shell_word(text: str) -> str:
    """``text`` quoted for a shell where it needs it (<|endoftext|> does)."""
    return shlex.quote(text)


# -- writers ----------------------------------------------------------------------------------------

class _BinWriter:
    """ids to one file as they come; each document's first token offset to the index (if any),
    and the total at the end (documents + 1 offsets, the first 0). With ``eot`` that id ends
    every document: it is written where the next document starts, and at the end."""

    def __init__(self, ids_file: IO[bytes], index_file: IO[bytes] | None, dtype: np.dtype, eot: int | None = None,
                 paths: tuple[str | os.PathLike, str | os.PathLike] | None = None):
        self.ids_file, self.index_file, self.dtype, self.eot = ids_file, index_file, dtype, eot
        # the files' own names, for their errors: each write says which file failed (two are open)
        self.paths = paths
        self.tokens = self.documents = 0

    def _put(self, array: np.ndarray, index: bool = False) -> None:
        file = self.index_file if index else self.ids_file
        assert file is not None
        try:
            array.tofile(file)
        except OSError as exc:
            if self.paths is None:
                raise
            path = Path(self.paths[index])
            kept = " (the file that was there is unchanged)" if path.exists() else ""
            raise OutputError(f"{path}: cannot write: {exc.strerror or exc}{kept}") from None

    def write(self, ids: np.ndarray, offsets: np.ndarray, starts: list[bool]) -> None:
        firsts = offsets[:-1][np.asarray(starts, bool)]
        if self.eot is not None and len(firsts):
            ends = firsts if self.documents else firsts[1:]     # each new document ends the one before
            ids = np.insert(ids, ends, self.eot)
            firsts = firsts + np.arange(len(firsts)) + (1 if self.documents else 0)
        self._put(ids.astype(self.dtype, copy=False))
        if self.index_file is not None:
            self._put((firsts + self.tokens).astype("<i8"), index=True)
        self.documents += len(firsts)
        self.tokens += len(ids)

    def close(self) -> None:
        if self.eot is not None and self.documents:
            self._put(np.asarray([self.eot], self.dtype))
            self.tokens += 1
        if self.index_file is not None:
            self._put(np.asarray([self.tokens], "<i8"), index=True)


class _NpyWriter(_BinWriter):
    """The ids as a .npy array: a header sized for any length first, rewritten with the length
    once it is known (NumPy's version 1.0 header of a 1-D array is 128 bytes for any length)."""

    def __init__(self, ids_file: IO[bytes], dtype: np.dtype, eot: int | None = None):
        super().__init__(ids_file, None, dtype, eot)
        self._header(0)

    def _header(self, length: int) -> None:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                      "fortran_order": False, "shape": (length,)})
        assert len(header.getvalue()) == NPY_HEADER_BYTES, "the .npy header's size depends on the length"
        self.ids_file.write(header.getvalue())

    def close(self) -> None:
        super().close()
        self.ids_file.seek(0)
        self._header(self.tokens)


class _TextWriter:
    """One line per document: ids separated by spaces, or a JSON list."""

    def __init__(self, out: IO[str], as_json: bool, eot: int | None = None):
        self.out, self.as_json, self.eot = out, as_json, eot
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
        if self.in_line and self.eot is not None:
            self.out.write(("" if self.line_empty else self.separator) + str(self.eot))
            self.tokens += 1
        if self.in_line:
            self.out.write("]\n" if self.as_json else "\n")
        self.in_line = False

    def close(self) -> None:
        self._end_line()


# -- the driver -------------------------------------------------------------------------------------

def encode_files(tokenizer, paths: Iterable[str | os.PathLike], output: str | os.PathLike | IO[str] | None = None,
                 *, format: str = "text", lines: bool = False, field: str = "text", column: str = "text",
                 workers: int | None = None, allowed_special="none", errors: str = "strict",
                 progress: ProgressOption = "auto", disallowed_special=(), append_eot: bool = False) -> dict:
    """Encode the documents of ``paths`` into ``output`` (a path; for text formats also an open
    text stream, None: standard output) in ``format`` (module docstring). ``allowed_special``
    and ``disallowed_special`` as ``Tokenizer.encode`` takes them ("all", or a set of special
    tokens; "none" for no allowed token): by default special tokens' text is encoded as ordinary
    text; ``disallowed_special="all"`` refuses it as tiktoken does, naming the file it is in.
    ``append_eot``: <|endoftext|>'s id after every document. Returns a summary: documents,
    tokens, bytes read, the id dtype and the files written."""
    _check_encode_arguments(tokenizer, output, format, errors, field, column, progress)
    options, refused = special_options(tokenizer, allowed_special, disallowed_special)
    eot = _eot_id(tokenizer) if arguments.flag(append_eot, "append_eot") else None
    workers = None if workers is None else arguments.workers(workers)
    paths = [os.fspath(p) for p in arguments.paths(paths, "paths")]
    written = _output_files(output, format)
    for file in written:
        check_output(file, paths, "-o")
    splitter = replace(tokenizer.splitter, special_tokens=tuple(tokenizer.special_tokens),
                       lines=arguments.flag(lines, "lines"))
    total = inp.total_size(inp.sources(paths, field, column))
    with _opened(output, format, tokenizer.vocab_size, eot) as writer, \
            Bar(progress, "encoding", total, unit="B", unit_scale=True) as bar, ThreadPoolExecutor(1) as pool:
        pending = None                        # the batch being encoded while the next is read
        cut = None if tokenizer.runs_cross_line_ends and not splitter.lines else splitter.cut
        for texts, starts, read, wheres in named_batches(named_pieces(paths, splitter, errors, field, column, cut)):
            job = pool.submit(tokenizer.encode_batch_to_numpy, texts, workers=workers, **options)
            if pending is not None:
                _write(writer, *pending, refused)
            pending = (job, texts, starts, wheres)
            bar.advance(read)
        if pending is not None:
            _write(writer, *pending, refused)
    summary = dict(documents=writer.documents, tokens=writer.tokens, format=format)
    if format in BINARY:
        summary.update(dtype=str(writer.dtype), files=written)
    return summary


def _write(writer, job, texts: list[str], starts: list[bool], wheres: list[str], refused: set[str]) -> None:
    """A batch's ids, once encoded, to the writer; a disallowed special token named where it is."""
    try:
        ids, offsets = job.result()
    except EncodingError as exc:
        raise special_token_error(texts, wheres, refused, exc) from None
    writer.write(ids, offsets, starts)


def _eot_id(tokenizer) -> int:
    """The id append_eot appends: the tokenizer's <|endoftext|>, which it must have."""
    if EOT not in tokenizer.special_tokens:
        have = ", ".join(map(repr, tokenizer.special_tokens)) or "none"
        raise ArgumentError(f"append_eot needs the special token {EOT!r}, which this tokenizer does not have (its "
                            f"special tokens: {have}); train it with special_tokens=[{EOT!r}]",
                            cli_message=f"--append-eot needs the special token {EOT!r}, which this tokenizer does "
                                        f"not have (its special tokens: {have}); train it with --special '{EOT}'")
    return tokenizer.special_tokens[EOT]


def _output_files(output: str | os.PathLike | IO[str] | None, format: str) -> list[str]:
    """The files that encoding into ``output`` writes: none for a stream, two for the bin format."""
    if not isinstance(output, (str, os.PathLike)):
        if format in BINARY:
            raise ArgumentError(f"the {format} format needs an output file (CLI: -o corpus.{format})"
                                + (": it writes two files" if format == "bin" else
                                   ": its header, written last, holds the length"))
        return []
    _check_suffix(output, format)
    return [os.fspath(output), os.fspath(index_path(output))] if format == "bin" else [os.fspath(output)]


# The suffixes that say a format of raw ids: a file of one format under another's name would be read
# as the other (a .npy's header as ids, text as bytes of ids).
SUFFIX_FORMATS = {".bin": "bin", ".npy": "npy"}


def _check_suffix(output: str | os.PathLike, format: str) -> None:
    suffix = Path(output).suffix.lower()
    named = SUFFIX_FORMATS.get(suffix)
    if named is not None and named != format:
        raise ArgumentError(f"-o {os.fspath(output)}: a {suffix} name is for the {named} format, but the format is "
                            f"{format}: name it {Path(output).with_suffix(_SUFFIX_OF.get(format, '.txt')).name} "
                            f"(or give --format {named})")


_SUFFIX_OF = {"bin": ".bin", "npy": ".npy", "json": ".jsonl", "text": ".txt"}


def _check_encode_arguments(tokenizer, output, format, errors, field, column, progress) -> None:
    """encode_files' arguments, each checked before anything is read."""
    if not isinstance(tokenizer, Tokenizer):
        raise ArgumentTypeError(f"tokenizer must be a Tokenizer (bpe_fast.load opens any), "
                                f"got {type(tokenizer).__name__}")
    if not (output is None or isinstance(output, (str, os.PathLike)) or hasattr(output, "write")):
        raise ArgumentTypeError(f"output must be a file name, an open text stream or None, got {type(output).__name__}")
    for name, value, allowed in (("format", format, FORMATS), ("errors", errors, ("strict", "replace"))):
        if not isinstance(value, str) or value not in allowed:
            raise ArgumentError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    for name, value in (("field", field), ("column", column)):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{name} must be a str (the name holding the text), got {value!r}")
    check_progress(progress)


@contextlib.contextmanager
def _opened(output, format: str, vocab_size: int, eot: int | None = None):
    """The writer, its files written atomically: nothing is left at the output paths (and a
    file that was there is kept) if encoding fails."""
    with contextlib.ExitStack() as stack:
        writer: _BinWriter | _TextWriter
        if format == "bin":         # the index entered first, so it is replaced last: after the ids it counts
            index = stack.enter_context(atomic_open(index_path(output), "wb"))
            ids = stack.enter_context(atomic_open(output, "wb"))
            writer = _BinWriter(ids, index, id_dtype(vocab_size), eot, paths=(output, index_path(output)))
        elif format == "npy":
            writer = _NpyWriter(stack.enter_context(atomic_open(output, "wb")), id_dtype(vocab_size), eot)
        elif isinstance(output, (str, os.PathLike)):
            writer = _TextWriter(stack.enter_context(atomic_open(output, "w", encoding="utf-8")), format == "json",
                                 eot)
        else:
            writer = _TextWriter(output if output is not None else sys.stdout, format == "json", eot)
        yield writer
        writer.close()
