"""The vocabulary formats bpe_fast reads and writes: one module per format, and ``FORMATS``, the
table of them. Everything that depends on the format goes through the table:

* ``read(path)`` tells a file's format by its content (each format's ``sniff``), else by its
  name; ``read(path, format)`` refuses a file of another format, naming the loader that fits.
  ``bpe_fast.load`` and ``Tokenizer.load`` read through it.
* ``write(tok, path, format)`` writes one (without ``format``, the one the name says:
  ``format_of_path``); ``output_files`` and ``check_writable`` say beforehand what it will write
  and whether the format can hold the pattern, special tokens, normalization and what a
  variant's tokenizer has (the variants, training/variants/, say which formats hold theirs,
  registered with ``register_variant``: ``variant_parts``). ``Tokenizer.save`` writes through
  it; the CLI's ``--format`` names and help come from the table.

Adding a format is one file and one line: ``formats/myformat.py`` ends with ``FORMAT =
Format(name="myformat", ...)`` (each field is explained in ``Format``, _common.py; the modules
beside this one are examples), and its ``FORMAT`` joins the table below.

Readers return a plain ``Vocabulary`` record, which ``Tokenizer.from_vocabulary`` checks and
turns into a tokenizer; writers take a tokenizer. So this package never imports ``Tokenizer``:
the dependency runs one way, tokenizer -> formats. The tokenizer's methods that reach the
formats (``save``, ``load``, conversions, the old per-format readers and writers) are a mixin
here, ``_methods.FormatMethods``. Every error names the file (and the line, where there are
lines) and what is wrong with it.
"""
from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Sequence

from ..errors import ArgumentError, TokenizerFileError
from . import bpe_fast_json, gpt2, huggingface, minbpe, tiktoken
from ._common import (FileKind, Format, Peek, Vocabulary, file_sha256, refuse_normalization, refuse_variant,
                      variant_parts, register_variant)

__all__ = ["FORMATS", "DEFAULT", "Format", "FileKind", "Peek", "Vocabulary", "names", "by_name", "sniff", "read",
           "read_folder", "format_of_path", "output_files", "check_writable", "write", "file_sha256", "variant_parts",
           "register_variant"]

# The table: --format's choices and help list the formats in this order. Sniffs claim disjoint
# files; were two to claim one, the first here would read it.
FORMATS: tuple[Format, ...] = (bpe_fast_json.FORMAT, huggingface.FORMAT, tiktoken.FORMAT, minbpe.FORMAT, gpt2.FORMAT)

# What a name that says no format means (tok.json; a .json name is ambiguous), and how a file
# that no format's sniff claims is read (its reader then says what is wrong with it).
DEFAULT = bpe_fast_json.FORMAT


def names() -> list[str]:
    return [fmt.name for fmt in FORMATS]


def by_name(name: str) -> Format:
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise ArgumentError(f"format {name!r} is not one of {', '.join(names())}")


# -- reading: the format told by the content ------------------------------------------------------

def _sniff(peek: Peek) -> tuple[Format, FileKind] | None:
    """The format whose sniff claims the file, and what the file is to it."""
    for fmt in FORMATS:
        kind = fmt.sniff(peek)
        if kind is not None:
            return fmt, kind
    return None


def sniff(path: str | os.PathLike) -> str | None:
    """The name of the format a file's content says, or None (also for a missing file)."""
    found = _sniff(Peek(path))
    return found[0].name if found else None


def read(path: str | os.PathLike, format: str | None = None, **options) -> Vocabulary:
    """The vocabulary in the file ``path``, in the format its content says, else the one its
    name says, else bpe_fast's JSON. Given ``format``, in that one: a file another format's
    sniff claims is refused, naming the loader that fits. ``options`` go to the format's reader
    (a .tiktoken file takes ``pattern=`` and ``special_tokens=``)."""
    peek = Peek(path)
    found = _sniff(peek)
    if format is None:
        fmt = found[0] if found else (_named_by(path) or DEFAULT)
        return fmt.read(peek, **options)
    wanted = by_name(format)
    if found is not None and found[0] is not wanted:
        what, loader = found[1]
        raise TokenizerFileError(f"{path}: this is {what}, not {wanted.title}: open it with bpe_fast.load(path) "
                                 f"(any format) or {loader}")
    return wanted.read(peek, **options)


def read_folder(folder: str | os.PathLike) -> Vocabulary:
    """The vocabulary in a folder holding all of one format's usual files (a tokenizer.json, or
    GPT-2's encoder.json and vocab.bpe), read from the first of them, by its content."""
    for fmt in FORMATS:
        if fmt.file_names and all((Path(folder) / name).is_file() for name in fmt.file_names):
            peek = Peek(Path(folder) / fmt.file_names[0])
            found = _sniff(peek)
            return (found[0] if found else fmt).read(peek)
    usual = " nor ".join(f"{' and '.join(fmt.file_names)} ({fmt.name})" for fmt in FORMATS if fmt.file_names)
    raise TokenizerFileError(f"{folder}: is a directory holding neither {usual}; give a tokenizer file")


# -- writing: the format told by the name -----------------------------------------------------------

def _named_by(path: str | os.PathLike) -> Format | None:
    """The format the name says: its suffix (.tiktoken, .model, .bpe), or one of a format's usual
    file names (tokenizer.json is Hugging Face's, encoder.json GPT-2's), or an ending that says
    one (my_tokenizer.json: Hugging Face's, which is what a user who names a file so expects).
    Any other ".json" says none: bpe_fast's JSON, a tokenizer.json and GPT-2's encoder.json all
    end in it."""
    return _suffix_says(path) or _file_name_says(path)


def _suffix_says(path: str | os.PathLike) -> Format | None:
    suffix = Path(os.fspath(path)).suffix.lower()
    return next((fmt for fmt in FORMATS if suffix in fmt.suffixes), None)


def _file_name_says(path: str | os.PathLike) -> Format | None:
    name = Path(os.fspath(path)).name.lower()
    return next((fmt for fmt in FORMATS if name in fmt.file_names or name.endswith(fmt.name_endings)), None)


def format_of_path(path: str | os.PathLike, format: str | None = None) -> str:
    """The format to write ``path`` in: ``format`` if given (checked against the name's suffix),
    else the one the name says (.tiktoken, .model, vocab.bpe, [*]tokenizer.json, encoder.json),
    else bpe_fast's JSON. A usual file name is a default only: ``format`` overrides it."""
    asked = by_name(format) if format is not None else None
    name = os.fspath(path)
    suffix = Path(name).suffix.lower()
    if asked is None:
        return (_named_by(name) or DEFAULT).name
    named = _suffix_says(name)
    if named is not None and named is not asked:
        raise ArgumentError(f"{name}: the name ends in {suffix}, which means the {named.name} format, but the "
                            f"format asked for is {asked.name}; change the name or the format")
    if suffix == ".json" and not asked.is_json:
        hint = f"ending in {' or '.join(asked.suffixes)}" if asked.suffixes else "not ending in .json"
        raise ArgumentError(f"{name}: the {asked.name} format is not JSON; give a name {hint}")
    return asked.name


def output_files(path: str | os.PathLike, format: str) -> list[Path]:
    """Every file ``write(tok, path, format)`` writes."""
    return by_name(format).output_files(path)


def check_writable(format: str, pattern: str | None, special_tokens: Sequence[str],
                   normalize: str | None = None, variant=None, **by_name_: bool) -> None:
    """Refuse, before any training, a pattern, special tokens, normalization or variant's tokenizer
    (``variant``: the one training will make, None for plain BPE; or by its name: ``picky=True``)
    the format cannot hold."""
    for name, makes in by_name_.items():
        if name not in variant_parts:
            raise TypeError(f"check_writable() got an unexpected keyword argument {name!r}")
        if makes and variant is None:
            variant = variant_parts[name]
    fmt = by_name(format)
    refuse_variant(fmt.title, fmt.name, variant)
    fmt.check_writable(pattern, special_tokens)
    if not fmt.holds_normalization:
        refuse_normalization(fmt.title, normalize)


def write(tok, path: str | os.PathLike, format: str | None = None) -> list[str]:
    """Write ``tok`` in ``format`` (default: the one ``path``'s name says, else bpe_fast's JSON);
    returns the files written (a .tiktoken file and its sidecar, minbpe's two, GPT-2's two)."""
    fmt = by_name(format_of_path(path, format))
    files = fmt.output_files(path)
    refuse_variant(fmt.title, fmt.name, tok.variant)
    if not fmt.holds_normalization:
        refuse_normalization(fmt.title, tok.normalize)
    fmt.write(tok, path)
    return [os.fspath(f) for f in files]
