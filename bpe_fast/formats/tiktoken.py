"""tiktoken's ``.tiktoken`` files: one "base64(token) rank" per line; the merges are recovered
from the ranks.

The file holds no pattern and no special tokens, so bpe_fast writes them beside it, in the
*sidecar* ``x.tiktoken.json`` (see ``write_tiktoken_sidecar``), and reads them back from there;
also the normalization, when the tokenizer normalizes text (tiktoken itself cannot apply it, so
``to_tiktoken`` refuses such a tokenizer).
(This module is ``bpe_fast.formats.tiktoken``; the tiktoken package itself is imported by its
absolute name, in ``to_tiktoken`` only.)
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict
from collections.abc import Mapping, Sequence

import numpy as np

from ..encoding._encode import recover_merges
from ..errors import PatternRequiredError, TokenizerFileError, VocabularyError, naming_file, require
from ._named import ENCODINGS
from ..outputs import atomic_open
from ..pretokenize.patterns import name_of
from ._common import (MAX_ID, FileKind, Format, Peek, Vocabulary, cached_merges, expect, expect_optional,
                      file_sha256, open_for_reading, read_json, read_normalize, refuse_variant)

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType

SIDECAR_FORMAT = "bpe_fast.tiktoken-sidecar"
SIDECAR_VERSION = 1
NORMALIZED_VERSION = 2      # a sidecar with "normalize": older readers must refuse it, not ignore the field

RANKS = FileKind("a .tiktoken file", 'Tokenizer.load(path, format="tiktoken", pattern=...)')
SIDECAR = FileKind("the sidecar of a .tiktoken file", 'Tokenizer.load(path of the .tiktoken file, format="tiktoken")')

_TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")


# -- the ranks ------------------------------------------------------------------------------------

def read_tiktoken_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """``{token bytes: rank}`` from a .tiktoken file."""
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    with open_for_reading(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise TokenizerFileError(f"{path}, line {lineno}: expected 'base64-token rank', got {line[:60]!r}")
            try:
                token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
            except (binascii.Error, ValueError):
                raise TokenizerFileError(f"{path}, line {lineno}: bad base64 token or rank: {line[:60]!r}") from None
            if not 0 <= rank < MAX_ID:
                raise TokenizerFileError(f"{path}, line {lineno}: rank {rank} is out of range (0 to {MAX_ID - 1})")
            if rank in seen_ranks:
                raise TokenizerFileError(f"{path}, line {lineno}: rank {rank} was already given on line "
                                         f"{seen_ranks[rank]}")
            if token in ranks:
                raise TokenizerFileError(f"{path}, line {lineno}: token {token!r} was already given rank "
                                         f"{ranks[token]}")
            ranks[token] = rank
            seen_ranks[rank] = lineno
    if not ranks:
        raise TokenizerFileError(f"{path}: no tokens (empty or truncated file)")
    return ranks


def vocabulary_from_ranks(ranks: Mapping[bytes, int], pattern: str | None = None,
                          special_tokens: Mapping[str, int] | Sequence[str] | None = None,
                          source: str = "mergeable_ranks") -> Vocabulary:
    """tiktoken's ``{token bytes: rank}``: the merges are recovered from the ranks (each token
    of two or more bytes must be made by BPE from tokens of lower rank)."""
    bad = next(((t, r) for t, r in ranks.items() if not isinstance(r, int) or not 0 <= r < MAX_ID), None)
    if bad is not None:
        raise VocabularyError(f"{source}: token {bad[0]!r} has rank {bad[1]!r}; ranks are integers 0 to {MAX_ID - 1}")
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    for (tok_a, rank_a), (tok_b, rank_b) in zip(by_rank, by_rank[1:]):
        if rank_a == rank_b:
            raise VocabularyError(f"{source}: rank {rank_a} is given to both {tok_a!r} and {tok_b!r}")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise VocabularyError(f"{source}: no token for the single byte {bytes([missing[0]])!r} "
                              f"({len(missing)} of the 256 bytes are missing)")
    byte_ids = np.array([ranks[bytes([b])] for b in range(256)], dtype=np.int32)
    tokens = [t for t, _ in by_rank]
    ids = np.array([r for _, r in by_rank], dtype=np.int32)
    merges, merge_ids, unmade = recover_merges(tokens, ids, byte_ids)
    if unmade >= 0:
        raise VocabularyError(f"{source}: token {tokens[unmade]!r} (rank {ids[unmade]}) cannot be made by "
                              f"merging two tokens of lower rank: a merge is missing for this rank")
    return Vocabulary(merges, pattern, special_tokens, merge_ids, byte_ids)


def read_tiktoken(path: str | os.PathLike, pattern: str | None | EllipsisType = ...,
                  special_tokens: Mapping[str, int] | Sequence[str] | None = None) -> Vocabulary:
    """A .tiktoken file. It holds no pattern or special tokens, so they come from, in order:
    the arguments; the sidecar ``x.tiktoken.json`` beside it; the named encoding the file is
    named after, if it is that encoding's published file (cl100k_base.tiktoken with its
    SHA-256). Without any of these the pattern must be given (``pattern=None`` or "none" means
    no split): guessing it would give other ids, silently."""
    side = sidecar_path(path)
    info = read_tiktoken_sidecar(side) if side.is_file() else None
    if info is None and (pattern is ... or special_tokens is None):
        info = _published_encoding(path)
    if pattern is ...:
        if info is None:
            raise _pattern_required(path)
        pattern = info["pattern"]
    if special_tokens is None and info is not None:
        special_tokens = info["special_tokens"]
    with naming_file(path):
        merges, merge_ids, byte_ids = _merges_of_file(path)
        vocab = Vocabulary(merges, pattern, special_tokens, merge_ids, byte_ids)
    vocab.source = str(path)
    vocab.normalize = info["normalize"] if info is not None else None
    return vocab


def _merges_of_file(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A .tiktoken file's merges, merge ids and byte ids: recovered from its ranks, or read back
    from prebuilt.py's cache (for o200k_base the recovery is most of a load)."""
    def recover() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        vocab = vocabulary_from_ranks(read_tiktoken_ranks(path), source=str(path))
        return vocab.merges, vocab.merge_ids, vocab.byte_ids
    return cached_merges("tiktoken", path, recover)


def _published_encoding(path) -> EncodingInfo | None:
    """The pattern and special tokens of the named encoding whose published file ``path`` is."""
    enc = ENCODINGS.get(Path(path).name.removesuffix(".tiktoken")) if str(path).endswith(".tiktoken") else None
    if enc is None or len(enc.files) != 1 or not Path(path).is_file():
        return None
    if file_sha256(path) != enc.files[0].sha256:
        return None
    return {"pattern": enc.pattern, "special_tokens": dict(enc.special_tokens), "normalize": None}


def _pattern_required(path) -> PatternRequiredError:
    side = sidecar_path(path)
    why = (f"{path}: a .tiktoken file holds no pattern, and there is no sidecar {side.name} beside it "
           f"(bpe_fast writes one with every .tiktoken file) nor is it a named encoding's published file")
    return PatternRequiredError(
        f"{why}: pass the pattern it was trained with, e.g. Tokenizer.load({os.fspath(path)!r}, "
        f"format='tiktoken', pattern='cl100k') (a name, a regex, or 'none' for no split; special_tokens= too if it "
        f"has any); a wrong pattern gives other token ids",
        cli_message=f"{why}: name the pattern it was trained with once, e.g. `bpe-fast convert {os.fspath(path)} "
                    f"{os.fspath(path)}.converted.json --pattern cl100k` (a name, a regex, or none), then use the "
                    f"converted file; a wrong pattern gives other token ids")


def write_tiktoken(tok, path: str | os.PathLike) -> list[str]:
    """The .tiktoken file (ranks, as tiktoken's ``load_tiktoken_bpe`` reads them) and its
    sidecar ``path + ".json"`` (pattern and special tokens). Returns both paths."""
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)
    with atomic_open(path, "wb") as fh:
        for token, rank in sorted(tok.mergeable_ranks().items(), key=lambda item: item[1]):
            fh.write(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    side = write_tiktoken_sidecar(tok, path)
    return [os.fspath(path), os.fspath(side)]


def to_tiktoken(tok, name: str = "bpe_fast"):
    """A ``tiktoken.Encoding`` with the same ranks, pattern and special tokens. tiktoken cannot
    normalize text, so a tokenizer that does is refused (the Encoding would give other ids), and
    it applies merges by rank, so the tokenizers of variants it cannot hold are refused too
    (``refuse_variant``: as its files cannot hold them)."""
    refuse_variant("a tiktoken.Encoding", FORMAT.name, tok.variant)
    if tok.normalize is not None:
        form = tok.normalize.upper()
        raise VocabularyError(f"to_tiktoken(): this tokenizer puts text in {form} form before encoding it, which a "
                              f"tiktoken.Encoding cannot do, so its ids would differ on text not in {form} form; "
                              f"encode with bpe_fast, or build the Encoding yourself (tiktoken.Encoding(name, "
                              f"pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(), special_tokens="
                              f"tok.special_tokens)) and give it unicodedata.normalize({form!r}, text) only")
    tiktoken = require("tiktoken", "tiktoken", "to_tiktoken()")
    return tiktoken.Encoding(name, pat_str=tok.pattern if tok.pattern is not None else r"[\s\S]+",
                             mergeable_ranks=tok.mergeable_ranks(), special_tokens=tok.special_tokens)


# -- the sidecar: pattern and special tokens -------------------------------------------------------

def sidecar_path(path: str | os.PathLike) -> Path:
    """The sidecar of a .tiktoken file: the same name with ".json" added (x.tiktoken.json)."""
    return Path(f"{os.fspath(path)}.json")


class EncodingInfo(TypedDict):
    """What a .tiktoken file cannot hold, from its sidecar or the named encoding it is the file of."""
    pattern: str | None                 # None: no split
    special_tokens: dict[str, int]
    normalize: str | None               # None: the text as it is (the named encodings)


def read_tiktoken_sidecar(path: str | os.PathLike) -> EncodingInfo:
    """A sidecar's pattern (None: no split) and special tokens ({token: id}), checked."""
    data = read_json(path)
    where = str(path)
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        raise TokenizerFileError(f"{where}: not a .tiktoken sidecar (no \"format\": \"{SIDECAR_FORMAT}\")")
    if data.get("version") not in (SIDECAR_VERSION, NORMALIZED_VERSION):
        raise TokenizerFileError(f"{where}: sidecar version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads versions {SIDECAR_VERSION} and {NORMALIZED_VERSION})")
    pattern = expect_optional(data.get("pattern"), str, where, "pattern")
    specials = expect(data.get("special_tokens", {}), dict, where, "special_tokens")
    for token, i in specials.items():
        expect(i, int, where, f"special_tokens[{token!r}]")
    return {"pattern": pattern, "special_tokens": specials, "normalize": read_normalize(data.get("normalize"), where)}


def write_tiktoken_sidecar(tok, path: str | os.PathLike) -> Path:
    r"""``path + ".json"``, the sidecar of the .tiktoken file ``path``: a JSON object

        {"format": "bpe_fast.tiktoken-sidecar", "version": 1, "tiktoken_file": "tok.tiktoken",
         "pattern": "<regex>" or null (no split), "pattern_name": "cl100k",
         "special_tokens": {"<|endoftext|>": 100257}, "n_vocab": 100258}

    ``pattern`` and ``special_tokens`` are what ``tiktoken.Encoding`` takes as ``pat_str`` and
    ``special_tokens`` (for null give it r"[\s\S]+": the whole text as one piece). A tokenizer
    that normalizes text also has ``"normalize": "nfc"`` (or "nfkc"; version 2): tiktoken does not
    apply it, so give tiktoken normalized text only."""
    side = sidecar_path(path)
    data = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, "tiktoken_file": Path(path).name,
            "pattern": tok.pattern, "pattern_name": name_of(tok.pattern),
            "special_tokens": tok.special_tokens, "n_vocab": tok.vocab_size}
    if tok.normalize is not None:
        data.update(version=NORMALIZED_VERSION, normalize=tok.normalize)
    with atomic_open(side, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    return side


# -- in the table of formats -----------------------------------------------------------------------

def sniff(peek: Peek) -> FileKind | None:
    if _TIKTOKEN_LINE.fullmatch(peek.first_line):
        return RANKS
    data = peek.json
    return SIDECAR if data is not None and data.get("format") == SIDECAR_FORMAT else None


def read(peek: Peek, pattern: str | None | EllipsisType = ...,
         special_tokens: Mapping[str, int] | Sequence[str] | None = None) -> Vocabulary:
    """``read_tiktoken``; given the sidecar, says to give the .tiktoken file itself."""
    if sniff(peek) == SIDECAR:
        raise TokenizerFileError(f"{peek.path}: this is {SIDECAR.what}: load "
                                 f"{Path(peek.path).name.removesuffix('.json')} itself")
    return read_tiktoken(peek.path, pattern, special_tokens)


FORMAT = Format(
    name="tiktoken", title="a .tiktoken file",
    description="NAME.tiktoken and its sidecar NAME.tiktoken.json: pattern and special tokens",
    sniff=sniff, read=read, write=write_tiktoken, demo_name="demo-tokenizer.tiktoken", suffixes=(".tiktoken",),
    output_files=lambda path: [Path(path), sidecar_path(path)], needs_pattern=True)
