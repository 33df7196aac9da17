"""Stage 3, the word table: each distinct chunk of a corpus and how often it occurs, as NumPy arrays.

Chunk i is ``symbols[offsets[i]:offsets[i + 1]]`` (its UTF-8 bytes, uint8) and occurs
``counts[i]`` times (int64). Tables that come out of counting are also sorted by (hash, bytes),
with the 64-bit hashes in ``hashes``, so that two tables add up in one linear pass in native
code (``_table.merge_sorted``): ``a + b``, ``WordTable.merge([...])``. A table remembers the
pattern and special tokens its chunks were split with, because only tables split alike can be
added, and the tokenizer trained from a table must split text the same way. It remembers its
Unicode normalization (``normalize``: None, "nfc", "nfkc") for the same reasons.

``save``/``load`` keep a table in one ``.npz`` file (format "bpe_fast.counting.wordtable", version 1):
the arrays ``symbols`` (uint8), ``offsets`` (int64), ``counts`` (int64), ``hashes`` (uint64),
and ``meta``, a JSON string with the format, version, pattern (a regex, or null for no split),
special tokens and the number of input bytes counted. A table of normalized text also has
``"normalize": "nfc"`` (or "nfkc") and is version 2, so that a bpe_fast that predates
normalization refuses it rather than train a tokenizer that would not normalize; a missing
field means none, so version 1 files read as they always did. Count once, train many times.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import tokenize
import zipfile
import zlib
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from ._table import ChunkTable, hashes_of, merge_into, merge_tables, part_hash_index, part_size, read_part
from .. import arguments
from ..arguments import INT64_MAX
from ..errors import ArgumentError, ArgumentTypeError, InputError, PatternError
from ..outputs import atomic_open
from ..pretokenize.patterns import name_of, resolve
from ..pretokenize.splitter import NORMALIZATIONS, normalization

FORMAT = "bpe_fast.counting.wordtable"
VERSION = 1
NORMALIZED_VERSION = 2         # a table with "normalize": older readers must refuse it, not drop it
# The training kernel numbers chunks with int32 (_kernel.check_word_table: fewer than 2**31 - 1);
# its positions, offsets and counts are 64-bit, so only the number of chunks is bounded.
MAX_TRAIN_CHUNKS = 2**31 - 2


@dataclass(frozen=True, eq=False)
class WordTable:
    symbols: np.ndarray                  # uint8, the chunks' bytes one after another
    offsets: np.ndarray                  # int64, shape (n + 1,), offsets[0] == 0
    counts: np.ndarray                   # int64, shape (n,), all positive
    hashes: np.ndarray | None = None     # uint64, shape (n,), ascending: sorted by (hash, bytes)
    pattern: str | None = None           # the regex the chunks were split with; None: no split
    special_tokens: tuple[str, ...] = ()
    input_bytes: int = 0                 # bytes (or characters) of input counted
    meta: dict = field(default_factory=dict, repr=False)
    normalize: str | None = None         # the Unicode normal form the text was put in: None, "nfc", "nfkc"

    def __post_init__(self):
        symbols = np.asarray(self.symbols)
        if symbols.dtype != np.uint8:      # int32 byte ids (older callers) are taken as bytes
            if symbols.size and (symbols.min() < 0 or symbols.max() > 255):
                raise ArgumentError("a word table's symbols are bytes 0..255")
            symbols = symbols.astype(np.uint8)
        object.__setattr__(self, "symbols", np.ascontiguousarray(symbols))
        object.__setattr__(self, "offsets", np.ascontiguousarray(self.offsets, dtype=np.int64))
        object.__setattr__(self, "counts", np.ascontiguousarray(self.counts, dtype=np.int64))
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int], pattern: str | None = None,
                    special_tokens: Sequence[str] = (), normalize: str | None = None) -> WordTable:
        """From ``{chunk bytes: count}``; chunks that are empty or of zero count are left out."""
        if not isinstance(counts, Mapping):
            raise ArgumentTypeError(f"counts must be a mapping {{chunk bytes: count}}, got {type(counts).__name__}")
        table = ChunkTable()
        for chunk, n in counts.items():
            _check_chunk(chunk, "counts")
            n = arguments.integer(n, f"counts[{chunk!r}]", 0, INT64_MAX)
            if n > 0 and chunk:
                table.add(chunk, n)
        return cls.from_native(table, pattern, special_tokens, normalize=normalization(normalize))

    @classmethod
    def from_words(cls, words: Iterable[bytes], pattern: str | None = None) -> WordTable:
        """Count a sequence of chunks (bytes); handy for tests."""
        if isinstance(words, (str, bytes)) or not isinstance(words, Iterable):
            raise ArgumentTypeError(f"words must be an iterable of chunks (bytes), got {type(words).__name__}")
        words = list(words)
        for word in words:
            _check_chunk(word, "words")
        table = ChunkTable()
        table.add_many([w for w in words if w])
        return cls.from_native(table, pattern)

    @classmethod
    def from_native(cls, table: ChunkTable, pattern: str | None = None, special_tokens: Sequence[str] = (),
                    input_bytes: int = 0, normalize: str | None = None) -> WordTable:
        symbols, offsets, counts, hashes = table.sorted_arrays()
        return cls(symbols, offsets, counts, hashes, pattern, tuple(special_tokens), input_bytes, normalize=normalize)

    def check_consistent(self, what: str = "the word table") -> None:
        """Raise ArgumentError, naming ``what`` and the fault, unless the arrays make a table the
        kernel can train on (a table built by hand; one counted or loaded is). The kernel checks
        the same, but its ValueError would not say which argument is at fault. The number of
        chunks is checked first, before any pass over the arrays."""
        n = len(self.counts) if self.counts.ndim == 1 else -1
        if n > MAX_TRAIN_CHUNKS:
            raise ArgumentError(f"{what}: {n:,} chunks, more than training takes ({MAX_TRAIN_CHUNKS:,}: the kernel "
                                f"numbers chunks with int32); join equal chunks (table.sorted()) or train on less text")
        if self.offsets.shape != (n + 1,):
            raise ArgumentError(f"{what}: offsets must have one entry more than counts "
                                f"({self.offsets.shape[0] if self.offsets.ndim == 1 else self.offsets.shape} "
                                f"for {n} counts)")
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.symbols) or np.any(np.diff(self.offsets) < 0):
            raise ArgumentError(f"{what}: offsets must start at 0, never fall, and end at the number of bytes "
                                f"({len(self.symbols)}), got {_sample(self.offsets)}")
        if n and self.counts.min() <= 0:
            at = int(np.argmax(self.counts <= 0))
            raise ArgumentError(f"{what}: every count must be positive, counts[{at}] is {int(self.counts[at])}")

    # -- adding tables ------------------------------------------------------------------------
    def sorted(self) -> WordTable:
        """This table sorted by (hash, bytes), equal chunks joined: as counting leaves a table
        (then this is a no-op)."""
        if self.hashes is not None:
            return self
        return WordTable(*self.sorted_arrays(), self.pattern, self.special_tokens, self.input_bytes,
                         normalize=self.normalize)

    def sorted_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(symbols, offsets, counts, hashes) of the sorted table (``sorted``): what the native
        merges take and a saved table holds."""
        if self.hashes is not None:
            return self.symbols, self.offsets, self.counts, self.hashes
        table = ChunkTable()
        with _counts_in_range():
            table.add_arrays(self.symbols, self.offsets, self.counts)
        return table.sorted_arrays()

    @staticmethod
    def merge(tables: Sequence[WordTable]) -> WordTable:
        """The sum of tables counted with the same pattern, special tokens and normalization
        (64-bit counts); adding is associative and commutative, so any grouping gives the same table."""
        if not isinstance(tables, Iterable):
            raise ArgumentTypeError(f"WordTable.merge takes a list of word tables, got {type(tables).__name__}")
        tables = list(tables)
        if not tables:
            raise ArgumentError("WordTable.merge needs at least one table")
        odd = [t for t in tables if not isinstance(t, WordTable)]
        if odd:
            raise ArgumentTypeError(f"WordTable.merge adds word tables, not {type(odd[0]).__name__}")
        first = tables[0]
        for other in tables[1:]:
            if _split(other) != _split(first):
                raise ArgumentError("only word tables split with the same pattern, special tokens and normalization "
                                    f"can be added: {_describe(first)} and {_describe(other)}")
        with _counts_in_range():
            merged = merge_tables([t.sorted_arrays() for t in tables])     # one k-way pass
        return WordTable(*merged, first.pattern, first.special_tokens, sum(t.input_bytes for t in tables),
                         normalize=first.normalize)

    @staticmethod
    def from_parts(paths: Sequence[str], pattern: str | None, special_tokens: Sequence[str] = (),
                   input_bytes: int = 0, ranges: int = 64, normalize: str | None = None) -> WordTable:
        """The sum of sorted *part files* (what counting workers write, ``_table.read_part``),
        added range of hashes by range: memory holds the result and one range of the parts,
        never the parts whole."""
        sizes = [part_size(p) for p in paths]
        n, total = sum(s[0] for s in sizes), sum(s[1] for s in sizes)
        data, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
        counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
        offsets[0] = 0
        bounds = [np.uint64(r) << np.uint64(64 - 6) for r in range(1, ranges)] if ranges == 64 else \
            [np.uint64(int(r * 2**64 // ranges)) for r in range(1, ranges)]
        cuts = [[0, *part_hash_index(p, bounds), size[0]] for p, size in zip(paths, sizes)]
        k = 0
        for r in range(ranges):
            parts = [read_part(p, cut[r], cut[r + 1]) for p, cut in zip(paths, cuts)]
            k += merge_into(parts, data, offsets, counts, hashes, k)
            del parts                              # unmap this range of the files
        return WordTable(data[:offsets[k]], offsets[:k + 1], counts[:k], hashes[:k], pattern,
                         tuple(special_tokens), input_bytes, normalize=normalize)

    @staticmethod
    def merge_files(paths: Sequence[str | os.PathLike], check: bool = True) -> WordTable:
        """The sum of the tables saved in ``paths``, read one at a time: memory holds the sum
        so far and one more table, never all of them."""
        paths = arguments.paths(paths, "paths")
        if not paths:
            raise ArgumentError("WordTable.merge_files needs at least one file")
        total = WordTable.load(paths[0], check)
        for path in paths[1:]:
            try:
                total = WordTable.merge([total, WordTable.load(path, check)])
            except ArgumentError as exc:
                raise ArgumentError(f"{path}: cannot be added to the tables before it: {exc}") from None
        return total

    def __add__(self, other: WordTable) -> WordTable:
        if not isinstance(other, WordTable):
            return NotImplemented
        return WordTable.merge([self, other])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        return self.symbols, self.offsets, self.counts, self.hashes

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.counts)

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    @property
    def total_chunks(self) -> int:
        if self.counts.sum(dtype=np.float64) < 2.0**62:       # the int64 sum cannot wrap
            return int(self.counts.sum())
        return sum(int(n) for n in self.counts)

    def word(self, i: int) -> bytes:
        """Chunk i's bytes; a negative i counts from the end, as in a list."""
        n = len(self)
        i = arguments.integer(i, "i", -n, n - 1)
        return self._word(i + n if i < 0 else i)

    def _word(self, i: int) -> bytes:
        return self.symbols[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def as_dict(self) -> dict[bytes, int]:
        return {self._word(i): int(self.counts[i]) for i in range(len(self))}

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays() if a is not None)

    def __eq__(self, other) -> bool:
        """Equal chunks with equal counts, split the same way (the order of chunks aside)."""
        if not isinstance(other, WordTable):
            return NotImplemented
        if _split(self) != _split(other) or len(self) != len(other):
            return False
        return all(np.array_equal(x, y) for x, y in zip(self.sorted_arrays(), other.sorted_arrays()))

    def __repr__(self) -> str:
        return (f"WordTable({len(self):,} chunks, {self.n_symbols:,} bytes, {self.total_chunks:,} occurrences, "
                f"{_describe(self)})")

    # -- files --------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the table as one .npz file (see the module docstring); atomically."""
        with atomic_open(arguments.path(path, "path"), "wb") as fh:
            self.dump(fh)

    def dump(self, fh) -> None:
        """Write the .npz to an open binary file (``save`` without the atomic replace)."""
        symbols, offsets, counts, hashes = self.sorted_arrays()
        meta = {"format": FORMAT, "version": VERSION, "pattern": self.pattern,
                "special_tokens": list(self.special_tokens), "input_bytes": int(self.input_bytes)}
        if self.normalize is not None:
            meta.update(version=NORMALIZED_VERSION, normalize=self.normalize)
        np.savez(fh, symbols=symbols, offsets=offsets, counts=counts, hashes=hashes, meta=np.array(json.dumps(meta)))

    @classmethod
    def load(cls, path: str | os.PathLike, check: bool = True) -> WordTable:
        """A table written by ``save``; a file that is not one (or a damaged one) is an InputError
        naming it and what is wrong. ``check=False`` skips re-hashing every chunk (for files this
        process just wrote)."""
        arguments.path(path, "path")          # np.load would take an open file, or any object, as one
        try:
            with zipfile.ZipFile(path) as archive:
                arrays = {key: _read_array(archive, key, str(path), os.path.getsize(path)) for key in ARRAYS}
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory, not a word table file") from None
        except PermissionError:
            raise InputError(f"{path}: cannot be read: permission denied") from None
        except _DAMAGED as exc:
            raise InputError(f"{path}: not a bpe_fast word table (.npz written by WordTable.save), or a damaged "
                             f"one: {exc}") from None
        return cls._checked(arrays, str(path), check)

    @classmethod
    def _checked(cls, arrays: dict, source: str, check: bool = True) -> WordTable:
        meta = _meta(arrays["meta"], source)
        symbols, offsets, counts, hashes = (arrays[k] for k in ("symbols", "offsets", "counts", "hashes"))
        n = len(counts) if counts.ndim == 1 else -1
        problems = [
            (symbols.dtype != np.uint8 or symbols.ndim != 1, "symbols must be a 1-D uint8 array"),
            (counts.dtype != np.int64 or counts.ndim != 1, "counts must be a 1-D int64 array"),
            (offsets.dtype != np.int64 or offsets.shape != (n + 1,), "offsets must be int64, one more than counts"),
            (hashes.dtype != np.uint64 or hashes.shape != (n,), "hashes must be uint64, one per chunk"),
        ]
        for bad, what in problems:
            if bad:
                raise InputError(f"{source}: {what}")
        if offsets[0] != 0 or offsets[-1] != len(symbols) or (check and np.any(np.diff(offsets) <= 0)):
            raise InputError(f"{source}: offsets must start at 0, rise, and end at the number of bytes")
        if check and n and counts.min() <= 0:
            raise InputError(f"{source}: every count must be positive")
        if check and n and (np.any(hashes[1:] < hashes[:-1])
                            or not np.array_equal(hashes_of(symbols, offsets), hashes)):
            raise InputError(f"{source}: the chunks are not sorted by their hashes (a damaged file?)")
        return cls(symbols, offsets, counts, hashes, meta["pattern"], tuple(meta["special_tokens"]),
                   meta["input_bytes"], meta, meta["normalize"])


def _sample(values: np.ndarray, most: int = 8) -> str:
    """The first values of an array, for a message."""
    shown = ", ".join(str(int(v)) for v in values[:most])
    return f"[{shown}{', ...' if len(values) > most else ''}]"


ARRAYS = ("symbols", "offsets", "counts", "hashes", "meta")
# What zipfile and numpy raise on a damaged archive or array header (tokenize's error: numpy
# parses the header as a Python literal).
_DAMAGED = (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            SyntaxError, tokenize.TokenError)
_DEFLATE_MOST = 1032          # deflate's largest ratio of bytes out to bytes in


def _read_array(archive: zipfile.ZipFile, key: str, source: str, disk_size: int) -> np.ndarray:
    """One array of a .npz, its size checked against the file before any memory is taken for
    it: a damaged header that claims 10**12 elements is refused, not allocated."""
    try:
        info = archive.getinfo(f"{key}.npy")
    except KeyError:
        raise InputError(f"{source}: not a bpe_fast word table: it holds no {key!r} array") from None
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise InputError(f"{source}: array {key!r} is compressed in a way numpy never writes (zip method "
                         f"{info.compress_type})")
    ratio = 1 if info.compress_type == zipfile.ZIP_STORED else _DEFLATE_MOST
    if info.compress_size > disk_size or info.file_size > info.compress_size * ratio:
        raise InputError(f"{source}: array {key!r} claims {info.file_size:,} bytes, more than the file can hold "
                         f"({disk_size:,} bytes): a damaged file")
    with archive.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(fh)
        need = math.prod(shape) * dtype.itemsize
        if dtype.hasobject or need != info.file_size - fh.tell():
            raise InputError(f"{source}: array {key!r} claims shape {shape} of {dtype} ({need:,} bytes), but its "
                             f"entry holds {info.file_size - fh.tell():,} bytes: a damaged file")
        fh.seek(0)
        return np.lib.format.read_array(fh, allow_pickle=False)


def _meta(array: np.ndarray, source: str) -> dict:
    """The table's meta (format, version, pattern, special tokens, input bytes), checked."""
    try:
        meta = json.loads(str(array)) if array.ndim == 0 and array.dtype.kind == "U" else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{source}: not a bpe_fast word table (no \"format\": \"{FORMAT}\")")
    if meta.get("version") not in (VERSION, NORMALIZED_VERSION):
        raise InputError(f"{source}: word table version {meta.get('version')!r} is not supported "
                         f"(this bpe_fast reads versions {VERSION} and {NORMALIZED_VERSION})")
    meta.setdefault("special_tokens", [])
    meta.setdefault("pattern", None)
    meta.setdefault("input_bytes", 0)
    meta.setdefault("normalize", None)
    if meta["normalize"] is not None and meta["normalize"] not in NORMALIZATIONS:
        raise InputError(f"{source}: meta's normalize must be null or one of {', '.join(NORMALIZATIONS)}, "
                         f"not {json.dumps(meta['normalize'])[:40]}")
    specials, pattern, input_bytes = meta["special_tokens"], meta["pattern"], meta["input_bytes"]
    if not (pattern is None or isinstance(pattern, str)) or not isinstance(specials, list) \
            or not all(isinstance(s, str) for s in specials):
        raise InputError(f"{source}: meta must give pattern as a string or null and special_tokens as strings")
    if pattern is not None:
        try:
            resolve(pattern)
        except PatternError as exc:       # the table could not be trained from, nor its text split
            raise InputError(f"{source}: meta's pattern is not usable: {exc}") from None
    if not isinstance(input_bytes, int) or isinstance(input_bytes, bool) or input_bytes < 0:
        raise InputError(f"{source}: meta's input_bytes must be a number of bytes, not {json.dumps(input_bytes)[:40]}")
    return meta


@contextlib.contextmanager
def _counts_in_range() -> Iterator[None]:
    """Counts that would add up past int64 are refused: a wrapped count is silent corruption."""
    try:
        yield
    except OverflowError as exc:
        raise ArgumentError(f"word tables cannot be added: {exc}") from None


def _check_chunk(chunk, name: str) -> None:
    if not isinstance(chunk, bytes):
        hint = " (encode text first: chunk.encode())" if isinstance(chunk, str) else ""
        raise ArgumentTypeError(f"{name} holds {chunk!r:.40}, which is no chunk: chunks are bytes{hint}")


def _split(table: WordTable) -> tuple:
    """What says how a table's text became chunks: only tables alike in it add up, or are equal."""
    return table.pattern, table.special_tokens, table.normalize


def _describe(table: WordTable) -> str:
    specials = f", special tokens {list(table.special_tokens)}" if table.special_tokens else ""
    normalized = f", normalized to {table.normalize.upper()}" if table.normalize else ""
    return f"pattern {name_of(table.pattern)}{specials}{normalized}"
