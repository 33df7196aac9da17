"""What every format module shares: the ``Format`` entry each one declares, the ``Peek`` its
sniff looks at, the ``Vocabulary`` record its reader returns, and the helpers that read files
and check their fields (every error names the file, and the line or field, and what is wrong).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple
from collections.abc import Mapping, Sequence

import numpy as np

from .. import prebuilt
from ..errors import TokenizerFileError, VocabularyError
from ..bytelevel import token_to_str
from ..pretokenize.splitter import NORMALIZATIONS

MAX_ID = 2**31 - 1          # token ids are int32 in the native code


@dataclass
class Vocabulary:
    """What a vocabulary file says, before ``Tokenizer.from_vocabulary`` checks it.

    Merge m joins (left id, right id) into ``merge_ids[m]`` (default 256 + m); byte b has id
    ``byte_ids[b]`` (default b); ``normalize`` is the Unicode normal form text is put in before it
    is split (None, "nfc", "nfkc"). ``source`` is the file it was read from, named in errors."""
    merges: Any                                    # (n, 2) ids, in merge (rank) order
    pattern: str | None = None
    special_tokens: Mapping[str, int] | Sequence[str] | None = None
    merge_ids: Any = None
    byte_ids: Any = None
    source: str | None = None
    normalize: str | None = None
    variant: str | None = None                     # a variant's tokenizer (bpe_fast/variants/): its name
    extra: dict = field(default_factory=dict)      # the variant's own fields (its ``from_json``)


class FileKind(NamedTuple):
    """What a sniffed file is, in the words of an error message, and the call that reads it."""
    what: str           # "a .tiktoken file"
    loader: str         # 'Tokenizer.load(path, format="tiktoken", pattern=...)'


class Peek:
    """A file as sniffing sees it: its first bytes and, when they open a JSON object, the whole
    file parsed. It is parsed once: the reader of the format it turns out to be gets this Peek
    (parsing a 200k-token tokenizer.json takes a sixth of the time of loading it)."""
    HEAD_BYTES = 4096

    def __init__(self, path: str | os.PathLike):
        self.path = path
        try:
            with open(path, "rb") as fh:
                self.head = fh.read(self.HEAD_BYTES)
        except OSError:     # missing, a folder, unreadable: no sniff claims it, and its reader says why
            self.head = b""

    @property
    def first_line(self) -> bytes:
        return self.head.lstrip().split(b"\n", 1)[0]

    @functools.cached_property
    def json(self) -> dict | None:
        """The file's JSON object, if its first bytes open one and the whole file parses; else None."""
        if not self.head.lstrip().startswith(b"{"):
            return None
        try:
            return read_json(self.path)
        except TokenizerFileError:      # left for the reader, which reads it again to say what is wrong
            return None

    def read_json(self) -> Any:
        """The file's JSON, whatever it holds: a TokenizerFileError if it is none."""
        return self.json if self.json is not None else read_json(self.path)


def the_path_itself(path: str | os.PathLike) -> list[Path]:
    return [Path(path)]


def holds_anything(pattern: str | None, special_tokens: Sequence[str]) -> None:
    """The check of a format that can hold any pattern and any special tokens."""


@dataclass(frozen=True)
class Format:
    """One vocabulary format, as it stands in the table ``bpe_fast.formats.FORMATS``.

    ``sniff`` and ``read`` take a ``Peek``; ``write`` takes a tokenizer (this package never
    imports ``Tokenizer``, so it is not typed here) and the path the user gave."""
    name: str                       # as --format and Tokenizer.save(format=) take it: "tiktoken"
    title: str                      # the format in a sentence: "a .tiktoken file"
    description: str                # its files, one line of --help
    sniff: Callable[[Peek], FileKind | None]        # what a file is, if it is one of this format's files
    read: Callable[..., Vocabulary]                 # read(peek, **options): the file's vocabulary
    write: Callable[[Any, str | os.PathLike], Any]  # write(tok, path): all of output_files(path)
    demo_name: str                  # what `bpe-fast train --demo` writes without -o
    suffixes: tuple[str, ...] = ()  # name endings (lower case) that say this format: (".tiktoken",)
    is_json: bool = False           # its file is JSON, so a name ending in .json may hold it
    file_names: tuple[str, ...] = ()    # its files' usual names: a folder holding them all is read as it
    # ends of file names that say this format, as its usual names do (a default: format= wins)
    name_endings: tuple[str, ...] = ()
    output_files: Callable[[str | os.PathLike], list[Path]] = the_path_itself  # every file write makes
    # Refuses, before any training, a pattern or special tokens the format cannot hold.
    check_writable: Callable[[str | None, Sequence[str]], None] = holds_anything
    needs_pattern: bool = False     # its files hold no pattern, so read takes pattern= (a .tiktoken file)
    makes_folder: bool = False      # write makes the folder its files go in (GPT-2's "-o tok/")
    needs_default_ids: bool = False     # holds only bytes 0..255 and merge m as 256 + m (minbpe's .model)
    holds_normalization: bool = True    # can say that text is normalized (NFC, NFKC) before it is split
    # (which variants' tokenizers it holds is the variants' to say: their held_by, refuse_variant)


def refuse_normalization(fmt_title: str, normalize: str | None) -> None:
    """A format with no place to say that text is normalized: writing a tokenizer that normalizes
    would give one that encodes other text (the unnormalized) once read back."""
    if normalize is not None:
        raise VocabularyError(f"{fmt_title} cannot say that text is normalized ({normalize.upper()}) before it is "
                              f"split, so the tokenizer read back would encode other ids; save it as tokenizer.json, "
                              f".tiktoken or bpe_fast JSON, or train without normalize=")


# The variants (training/variants/), by name: what formats and tokenizers ask of them (held_by,
# refusal, json_version, json_fields, from_json, tokenizer, owns). formats/ and tokenizer.py sit
# below the variants and cannot import them: each is registered here (``register_variant``) by
# training.variants.register(), which bpe_fast/__init__.py calls once.
variant_parts: dict[str, Any] = {}


def register_variant(variant: Any) -> None:
    """Make a variant's tokenizers known to the formats and to tokenizer.py, by its name."""
    variant_parts[variant.name] = variant


def refuse_variant(fmt_title: str, fmt_name: str, variant) -> None:
    """A variant's tokenizer (``variant``, or None for a plain one) in a format whose files cannot
    hold it: the variant says which can (``held_by``) and why the others cannot."""
    if variant is not None and fmt_name not in variant.held_by:
        raise VocabularyError(variant.refusal(fmt_title))


# -- reading files ------------------------------------------------------------------------------

def open_for_reading(path, mode, **kwargs):
    """``open``, with a missing file or a folder as a TokenizerFileError naming it."""
    try:
        return open(path, mode, **kwargs)
    except FileNotFoundError:
        raise TokenizerFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenizerFileError(f"{path}: is a directory") from None


def read_text(path) -> str:
    """A whole UTF-8 text file; a binary or mis-encoded one is a TokenizerFileError."""
    with open_for_reading(path, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start})") from None


def read_json(path):
    """A JSON file's contents; a missing, truncated, binary or absurdly nested file is a
    TokenizerFileError. A big file that is plainly no tokenizer (JSON lines, text, binary, or
    past MAX_JSON_BYTES) is refused from its first bytes, not read whole into memory."""
    _refuse_big_non_json(path)
    with open_for_reading(path, "r", encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise TokenizerFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); truncated?") from None
        except UnicodeDecodeError as exc:
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start}), so not a JSON "
                                     f"tokenizer file") from None
        except RecursionError:
            raise TokenizerFileError(f"{path}, line {_line_past_depth(path)}: JSON nested more than "
                                     f"{_DEEP} levels deep (too deep to read): not a tokenizer file") from None


MAX_JSON_BYTES = 1 << 30    # the biggest tokenizer .json files are tens of MB: past this, it is none
_SNIFF_BYTES = 1 << 16      # a file bigger than this is judged by its head before it is read whole


def _refuse_big_non_json(path) -> None:
    """A TokenizerFileError, before the whole file is read, for a big file that its size or its
    first bytes show is no JSON tokenizer file (a small one is left to the parser's own message)."""
    with open_for_reading(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(_SNIFF_BYTES) if size > _SNIFF_BYTES else b""
    if size > MAX_JSON_BYTES:
        raise TokenizerFileError(f"{path}: {size:,} bytes, far past any tokenizer file (the biggest JSON ones are "
                                 f"tens of MB); not a tokenizer file")
    if not head:
        return
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:             # not a character cut at the head's end
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start}), so not a JSON "
                                     f"tokenizer file") from None
        text = head[:exc.start].decode("utf-8")
    _refuse_json_lines(path, text)


def _refuse_json_lines(path, text: str) -> None:
    """A file's head that is no JSON object, or one followed by more (JSON lines: a corpus)."""
    start = len(text) - len(text.lstrip())
    if not text[start:].startswith("{"):
        raise TokenizerFileError(f"{path}, line {text.count(chr(10), 0, start) + 1}: not valid JSON (a JSON tokenizer "
                                 f"file is one object, starting with {{); not a tokenizer file")
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return                                    # the first value goes on past the head: the parser will tell
    more = len(text) - len(text[end:].lstrip())
    if more < len(text):
        raise TokenizerFileError(f"{path}, line {text.count(chr(10), 0, more) + 1}: more JSON after the first "
                                 f"object (JSON lines, a corpus?): not a tokenizer file")


_DEEP = 100                 # no tokenizer file nests JSON nearly so deep (they go 4 or 5 levels)
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[{\]}\n]')      # strings (skipped), brackets, newlines


def _line_past_depth(path, depth: int = _DEEP) -> int:
    """The line of a JSON file where its nesting first goes past ``depth`` levels (for the
    message of a file too deeply nested to parse)."""
    with open_for_reading(path, "rb") as fh:
        data = fh.read()
    level, line = 0, 1
    for m in _JSON_TOKENS.finditer(data):
        token = m.group()
        if token == b"\n":
            line += 1
        elif token in (b"[", b"{"):
            level += 1
            if level > depth:
                return line
        elif token in (b"]", b"}"):
            level -= 1
        else:
            line += token.count(b"\n")       # a string cannot hold one unescaped, but stay exact
    return line


def file_sha256(path: str | os.PathLike) -> str:
    """The file's SHA-256, hashed once per version of the file (a load checks a named
    encoding's file, then keys prebuilt.py's cache by the same hash)."""
    try:
        st = os.stat(path)
        version = (os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        version = None
    if version is not None and version in _hashed:
        return _hashed[version]
    digest = hashlib.sha256()
    with open_for_reading(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    if version is not None:
        _hashed[version] = digest.hexdigest()
    return digest.hexdigest()


_hashed: dict[tuple, str] = {}


def cached_merges(kind: str, path: str | os.PathLike, make: Callable[[], tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
    """(merges, merge_ids, byte_ids) of a large vocabulary file: made by ``make`` (reading and
    checking the file), or read back from prebuilt.py's cache when an earlier process made them
    from the same bytes (keyed by ``kind`` and the file's SHA-256). For o200k_base's files the
    making is most of a load: its merges recovered from the ranks of a .tiktoken file, or 199,742
    merges of a tokenizer.json spelled out in GPT-2's alphabet and looked up (most of 1.5 s)."""
    key = prebuilt.key_of(kind, file_sha256(path)) if _worth_caching(path) else None
    cached = prebuilt.read(key, expect=dict.fromkeys(("merges", "merge_ids", "byte_ids"))) if key is not None else None
    if cached is not None:
        return cached["merges"], cached["merge_ids"], cached["byte_ids"]
    merges, merge_ids, byte_ids = make()
    if key is not None:
        prebuilt.write(key, {"merges": _ids(merges).reshape(-1, 2), "merge_ids": _ids(merge_ids),
                             "byte_ids": _ids(byte_ids)})
    return merges, merge_ids, byte_ids


def _ids(values: Any) -> np.ndarray:
    """Ids as an array, of their own dtype if they are one (int64 for a list)."""
    return np.asarray(values, dtype=getattr(values, "dtype", np.int64))


def _worth_caching(path: str | os.PathLike) -> bool:
    """Whether the file is large enough that reading its merges back beats making them (a
    .tiktoken line is about 10 bytes, a tokenizer.json's merge and token 30)."""
    try:
        return os.path.getsize(path) >= 10 * prebuilt.WORTH_CACHING
    except OSError:
        return False


# -- checking what a file holds ------------------------------------------------------------------

_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "true or false"}


def expect(value, kind, source: str, what: str):
    """value, if it is of the kind a file format says; else an error naming the file and field.
    (bool is not taken for int, though Python would.)"""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise TokenizerFileError(f"{source}: {what} must be {names}, not {json.dumps(value)[:60]}")
    return value


def expect_optional(value, kind, source: str, what: str):
    return None if value is None else expect(value, kind, source, what)


def read_normalize(value: Any, source: str, what: str = "normalize") -> str | None:
    """A file's normalization field: null (or missing) for none, "nfc" or "nfkc"."""
    if value is None:
        return None
    if value not in NORMALIZATIONS:
        raise TokenizerFileError(f"{source}: {what} must be null, \"nfc\" or \"nfkc\", not {json.dumps(value)[:40]}")
    return value


def maps_tokens_to_ids(data: Any) -> bool:
    """Whether parsed JSON is a non-empty object of token -> id, as GPT-2's encoder.json is."""
    return isinstance(data, dict) and bool(data) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in data.values())


# -- byte-level BPE vocabularies (GPT-2's files, Hugging Face's tokenizer.json) -------------------

def lookup_merge(left: bytes, right: bytes, ids: dict[bytes, int], where: str, vocab_name: str):
    """((left id, right id), id of left + right) for a merge read from a file, all looked up in ids."""
    for part in (left, right, left + right):
        if part not in ids:
            raise TokenizerFileError(f"{where}: {token_to_str(part)!r} is not in {vocab_name}")
    return (ids[left], ids[right]), ids[left + right]


def check_every_token_made(ids: dict[bytes, int], byte_ids, merge_ids, merges_file: str, id_where: str) -> None:
    """Every token of the vocabulary is a byte or made by a merge: else merges are missing (a
    truncated file), and loading on would silently give a smaller vocabulary."""
    made = set(byte_ids) | set(merge_ids)
    unmade = [(t, i) for t, i in ids.items() if i not in made]
    if unmade:
        token, token_id = unmade[0]
        raise TokenizerFileError(f"{merges_file}: no merge makes {token_to_str(token)!r} "
                                 f"({id_where.format(token_id)}); {len(unmade)} tokens lack their merge "
                                 f"(truncated file?)")

