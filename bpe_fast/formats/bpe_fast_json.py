"""bpe_fast's own JSON: pattern, special tokens and merges as id pairs, one merge per line.

Version 1 has no normalization; a tokenizer that normalizes text writes ``"normalize": "nfc"``
(or "nfkc") and version 2, so that a bpe_fast that predates normalization refuses the file
rather than encode unnormalized text with it. A BoundlessBPE tokenizer writes its supermerges
(``"supermerges"``, ``"supermerge_ids"``, and the eligibility regex its runs were made with,
``"boundless_eligible"``, a record) and version 3, for the same reason: an older reader would
drop them and encode other ids. Every version is read; no field means none."""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..errors import TokenizerFileError
from ..outputs import atomic_open
from ._common import FileKind, Format, Peek, Vocabulary, expect, expect_optional, read_normalize

BPE_FAST_FORMAT = "bpe_fast.tokenizer"
BPE_FAST_VERSION = 1
NORMALIZED_VERSION = 2      # a file with "normalize": older readers must refuse it, not ignore the field
BOUNDLESS_VERSION = 3       # a file with "supermerges" (normalized or not): likewise

KIND = FileKind("bpe_fast's JSON", "Tokenizer.load(path)")


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
    if not np.array_equal(tok.byte_ids, np.arange(256)):
        data["byte_ids"] = tok.byte_ids.tolist()
    if not np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges))):
        data["merge_ids"] = tok.merge_ids.tolist()
    if tok.is_boundless:
        data.update(version=BOUNDLESS_VERSION, boundless_eligible=tok.boundless_eligible,
                    supermerge_ids=tok.supermerge_ids.tolist(), supermerges=tok.supermerges.tolist())
    data["merges"] = tok.merges.tolist()
    return data


def write_bpe_fast(tok, path: str | os.PathLike) -> None:
    """bpe_fast's JSON, one merge per line (diffs of two vocabularies stay readable)."""
    data = bpe_fast_dict(tok)
    merges = data.pop("merges")
    supermerges = data.pop("supermerges", None)
    ids = data.pop("supermerge_ids", None)
    head = json.dumps(data, ensure_ascii=False, indent=1)[:-2]
    if ids is not None:                 # one line, not one id per line
        head += f',\n "supermerge_ids": {json.dumps(ids)}'
    body = ",\n".join(f"  [{left}, {right}]" for left, right in merges)
    supers = "" if supermerges is None else (
        ',\n "supermerges": [\n' + ",\n".join(f"  [{left}, {right}]" for left, right in supermerges) + "\n ]")
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(f'{head},\n "merges": [\n{body}\n ]{supers}\n}}\n')


def bpe_fast_vocabulary(data: Any, source: str | None = None) -> Vocabulary:
    """The vocabulary of a parsed bpe_fast JSON object."""
    where = source or "tokenizer data"
    if not isinstance(data, dict) or data.get("format") != BPE_FAST_FORMAT:
        raise TokenizerFileError(f"{where}: not a bpe_fast tokenizer file (no \"format\": \"{BPE_FAST_FORMAT}\")")
    if data.get("version") not in (BPE_FAST_VERSION, NORMALIZED_VERSION, BOUNDLESS_VERSION):
        raise TokenizerFileError(f"{where}: format version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads versions {BPE_FAST_VERSION} to {BOUNDLESS_VERSION})")
    if "merges" not in data:
        raise TokenizerFileError(f"{where}: missing field 'merges'")
    pattern = data.get("pattern")
    if pattern is not None:
        expect(pattern, str, where, "pattern")
    specials = data.get("special_tokens") or {}
    expect(specials, (dict, list), where, "special_tokens")
    return Vocabulary(expect(data["merges"], list, where, "merges"), pattern, specials,
                      expect_optional(data.get("merge_ids"), list, where, "merge_ids"),
                      expect_optional(data.get("byte_ids"), list, where, "byte_ids"), source=where,
                      normalize=read_normalize(data.get("normalize"), where),
                      supermerges=expect_optional(data.get("supermerges"), list, where, "supermerges"),
                      supermerge_ids=expect_optional(data.get("supermerge_ids"), list, where, "supermerge_ids"),
                      boundless_eligible=expect_optional(data.get("boundless_eligible"), str, where,
                                                         "boundless_eligible"))


def sniff(peek: Peek) -> FileKind | None:
    data = peek.json
    return KIND if data is not None and data.get("format") == BPE_FAST_FORMAT else None


def read(peek: Peek) -> Vocabulary:
    return bpe_fast_vocabulary(peek.read_json(), str(peek.path))


FORMAT = Format(
    name="bpe_fast", title="bpe_fast's JSON", description="bpe_fast's JSON",
    sniff=sniff, read=read, write=write_bpe_fast, demo_name="demo-tokenizer.json", is_json=True,
    holds_supermerges=True)
