"""bpe_fast's own JSON: pattern, special tokens and merges as id pairs, one merge per line.

Version 1 has no normalization; a tokenizer that normalizes text writes ``"normalize": "nfc"``
(or "nfkc") and version 2, so that a bpe_fast that predates normalization refuses the file
rather than encode unnormalized text with it. No field means none.

A variant's tokenizer (bpe_fast/variants/) writes the version its variant gives
(``json_version``), so that an older bpe_fast refuses the file rather than drop what it does not
know and encode other ids, and the fields its variant adds (``json_fields``), read back by its
``from_json``; a variant whose ``rows`` are not the merges writes those rows in their place, one
per line, and its token ids follow from them. Every version is read."""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..errors import TokenizerFileError
from ..outputs import atomic_open
from ._common import FileKind, Format, Peek, Vocabulary, expect, expect_optional, read_normalize, variant_parts

BPE_FAST_FORMAT = "bpe_fast.tokenizer"
BPE_FAST_VERSION = 1
NORMALIZED_VERSION = 2      # a file with "normalize": older readers must refuse it, not ignore the field

KIND = FileKind("bpe_fast's JSON", "Tokenizer.load(path)")


def versions() -> tuple[int, ...]:
    """Every version this bpe_fast reads: plain ones, and each variant's."""
    return tuple(sorted({BPE_FAST_VERSION, NORMALIZED_VERSION,
                         *(v.json_version for v in variant_parts.values() if v.json_version is not None)}))


def _variant_of(data: dict):
    """The variant whose tokenizer the file holds: the one its version names; or, in a file of
    merges, the one whose fields it has (a hand-made version 1 with supermerges is read as
    bpe_fast has always read it: with them)."""
    version = data["version"]
    named = next((v for v in variant_parts.values() if v.json_version == version), None)
    if named is not None:
        return named
    return next((v for v in variant_parts.values() if v.rows == "merges" and any(k in data for k in v.json_keys)),
                None)


def _rows(variant) -> str:
    """The field of the rows: the merges, or what a variant holds in their place."""
    return "merges" if variant is None else variant.rows


def bpe_fast_dict(tok) -> dict:
    """The JSON object ``write_bpe_fast`` writes (ids left out where they are the defaults)."""
    data = {
        "format": BPE_FAST_FORMAT,
        "version": BPE_FAST_VERSION,
        "pattern": tok.pattern,
        "pattern_name": tok.pattern_name,
        "vocab_size": tok.vocab_size,
        "special_tokens": tok.special_tokens,
    }
    if tok.normalize is not None:
        data.update(version=NORMALIZED_VERSION, normalize=tok.normalize)
    variant = tok.variant
    fields = {} if variant is None else variant.json_fields(tok)
    if _rows(variant) != "merges":          # its rows in place of the merges: its ids follow from them
        data.update(fields)
        return data
    if not np.array_equal(tok.byte_ids, np.arange(256)):
        data["byte_ids"] = tok.byte_ids.tolist()
    if not np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges))):
        data["merge_ids"] = tok.merge_ids.tolist()
    data.update(fields)
    data["merges"] = tok.merges.tolist()
    return data


def write_bpe_fast(tok, path: str | os.PathLike) -> None:
    """bpe_fast's JSON, one merge per line (diffs of two vocabularies stay readable)."""
    data = bpe_fast_dict(tok)
    field = _rows(tok.variant)
    rows = data.pop(field)
    supermerges = data.pop("supermerges", None)
    ids = data.pop("supermerge_ids", None)
    head = json.dumps(data, ensure_ascii=False, indent=1)[:-2]
    if ids is not None:                 # one line, not one id per line
        head += f',\n "supermerge_ids": {json.dumps(ids)}'
    body = ",\n".join(f"  [{left}, {right}]" for left, right in rows)
    supers = "" if supermerges is None else (
        ',\n "supermerges": [\n' + ",\n".join(f"  [{left}, {right}]" for left, right in supermerges) + "\n ]")
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(f'{head},\n "{field}": [\n{body}\n ]{supers}\n}}\n')


def bpe_fast_vocabulary(data: Any, source: str | None = None) -> Vocabulary:
    """The vocabulary of a parsed bpe_fast JSON object."""
    where = source or "tokenizer data"
    if not isinstance(data, dict) or data.get("format") != BPE_FAST_FORMAT:
        raise TokenizerFileError(f"{where}: not a bpe_fast tokenizer file (no \"format\": \"{BPE_FAST_FORMAT}\")")
    if data.get("version") not in versions():
        raise TokenizerFileError(f"{where}: format version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads versions {', '.join(map(str, versions()))})")
    variant = _variant_of(data)
    rows = _rows(variant)
    if rows not in data:
        raise TokenizerFileError(f"{where}: missing field {rows!r}" + (
            f" (version {data['version']} is a {variant.title} tokenizer)" if rows != "merges" else ""))
    pattern = data.get("pattern")
    if pattern is not None:
        expect(pattern, str, where, "pattern")
    specials = data.get("special_tokens") or {}
    expect(specials, (dict, list), where, "special_tokens")
    normalize = read_normalize(data.get("normalize"), where)
    name = None if variant is None else variant.name
    if rows != "merges":
        return Vocabulary([], pattern, specials, source=where, normalize=normalize, variant=name,
                          extra=variant.from_json(data, where))
    merges = expect(data["merges"], list, where, "merges")
    merge_ids = expect_optional(data.get("merge_ids"), list, where, "merge_ids")
    byte_ids = expect_optional(data.get("byte_ids"), list, where, "byte_ids")
    extra = {} if variant is None else variant.from_json(data, where)
    return Vocabulary(merges, pattern, specials, merge_ids, byte_ids, source=where, normalize=normalize,
                      variant=name, extra=extra)


def sniff(peek: Peek) -> FileKind | None:
    data = peek.json
    return KIND if data is not None and data.get("format") == BPE_FAST_FORMAT else None


def read(peek: Peek) -> Vocabulary:
    return bpe_fast_vocabulary(peek.read_json(), str(peek.path))


FORMAT = Format(
    name="bpe_fast", title="bpe_fast's JSON", description="bpe_fast's JSON",
    sniff=sniff, read=read, write=write_bpe_fast, demo_name="demo-tok.json", is_json=True)
