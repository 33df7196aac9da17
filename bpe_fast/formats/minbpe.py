"""minbpe's ``PREFIX.model`` ("minbpe v1", pattern, special tokens, merges as id pairs; read back)
and ``PREFIX.vocab`` (each token rendered, for people)."""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import numpy as np

from ..errors import TokenizerFileError, VocabularyError
from ..outputs import atomic_open
from ._common import FileKind, Format, Peek, Vocabulary, read_text, refuse_normalization, refuse_variant

KIND = FileKind("a minbpe .model file", 'Tokenizer.load(path, format="minbpe")')


def read_minbpe(path: str | os.PathLike) -> Vocabulary:
    """A minbpe ``.model`` file (BasicTokenizer: empty pattern line; RegexTokenizer: its pattern)."""
    lines = read_text(path).split("\n")
    if not lines or lines[0].strip() != "minbpe v1":
        raise TokenizerFileError(f"{path}, line 1: expected 'minbpe v1', got {lines[0][:40]!r}")
    if len(lines) < 3:
        raise TokenizerFileError(f"{path}: truncated (no pattern or special-token count)")
    n_special = _int_field(lines[2], path, 3, "the number of special tokens")
    specials = {}
    for k in range(n_special):
        lineno = 4 + k
        parts = lines[lineno - 1].rsplit(" ", 1) if lineno - 1 < len(lines) else []
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}, line {lineno}: expected 'token id' for special token "
                                     f"{k + 1} of {n_special}")
        specials[parts[0]] = _int_field(parts[1], path, lineno, "a special token id")
    merges = []
    for lineno, line in enumerate(lines[3 + n_special:], 4 + n_special):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}, line {lineno}: expected two ids, got {line!r}")
        merges.append([_int_field(p, path, lineno, "a token id") for p in parts])
    pattern = lines[1] or None      # an empty line is minbpe's BasicTokenizer: no split
    return Vocabulary(merges, pattern, specials, source=str(path))


def write_minbpe(tok, prefix: str | os.PathLike) -> None:
    """``prefix.model`` (for loading) and ``prefix.vocab`` (for people), as minbpe writes them."""
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)
    if not (np.array_equal(tok.byte_ids, np.arange(256))
            and np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges)))):
        raise VocabularyError("minbpe numbers bytes 0..255 and merge i as 256 + i; this vocabulary "
                              "uses other ids (save it as tiktoken or tokenizer.json instead)")
    check_writable(tok.pattern, tok.special_tokens)
    refuse_normalization(FORMAT.title, tok.normalize)
    with atomic_open(f"{prefix}.model", "w", encoding="utf-8") as fh:
        fh.write("minbpe v1\n")
        fh.write(f"{tok.pattern or ''}\n")
        fh.write(f"{len(tok.special_tokens)}\n")
        for s, i in tok.special_tokens.items():
            fh.write(f"{s} {i}\n")
        for left, right in tok.merges.tolist():
            fh.write(f"{left} {right}\n")
    with atomic_open(f"{prefix}.vocab", "w", encoding="utf-8") as fh:
        for i in range(256):
            fh.write(f"[{_render(tok.token_bytes(i))}] {i}\n")
        for (left, right), new in zip(tok.merges.tolist(), tok.merge_ids.tolist()):
            fh.write(f"[{_render(tok.token_bytes(left))}][{_render(tok.token_bytes(right))}] -> "
                     f"[{_render(tok.token_bytes(new))}] {new}\n")


def check_writable(pattern: str | None, special_tokens) -> None:
    """minbpe's .model holds any pattern, but only special tokens without whitespace."""
    odd = [s for s in special_tokens if any(c.isspace() for c in s)]
    if odd:
        raise VocabularyError(f"minbpe's .model holds 'token id' per line, split at whitespace, so a special "
                              f"token cannot hold any; {odd[0]!r} does: save as tokenizer.json or bpe_fast JSON")


def minbpe_prefix(path: str | os.PathLike) -> str:
    """minbpe's files are PREFIX.model and PREFIX.vocab: "tok.model" and "tok" both mean "tok"."""
    name = os.fspath(path)
    return name[:-len(".model")] if name.endswith(".model") else name


def _render(token: bytes) -> str:
    """minbpe's rendering: decoded text with control characters escaped."""
    text = token.decode("utf-8", errors="replace")
    return "".join(c if unicodedata.category(c)[0] != "C" else f"\\u{ord(c):04x}" for c in text)


def _int_field(text: str, path, lineno: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TokenizerFileError(f"{path}, line {lineno}: expected {what}, got {text!r}") from None


# -- in the table of formats -----------------------------------------------------------------------

def sniff(peek: Peek) -> FileKind | None:
    return KIND if peek.head.startswith(b"minbpe v") else None


def read(peek: Peek) -> Vocabulary:
    return read_minbpe(peek.path)


def write(tok, path: str | os.PathLike) -> None:
    write_minbpe(tok, minbpe_prefix(path))


def output_files(path: str | os.PathLike) -> list[Path]:
    prefix = minbpe_prefix(path)
    return [Path(f"{prefix}.model"), Path(f"{prefix}.vocab")]


FORMAT = Format(
    name="minbpe", title="a minbpe .model file", description="PREFIX.model and PREFIX.vocab",
    sniff=sniff, read=read, write=write, demo_name="demo-tokenizer.model", suffixes=(".model",),
    output_files=output_files, check_writable=check_writable, needs_default_ids=True, holds_normalization=False)
