"""bpe_fast's own JSON: pattern, special tokens and merges as id pairs, one merge per line.

Version 1 has no normalization; a tokenizer that normalizes text writes ``"normalize": "nfc"``
(or "nfkc") and version 2, so that a bpe_fast that predates normalization refuses the file
rather than encode unnormalized text with it. No field means none.

A Picky BPE tokenizer (``PickyTokenizer``) writes version 3: ``"events"`` instead of
``"merges"``, one event per line in training order, ``[a, b]`` for a merge of the pair (a, b) and
``[x, -1]`` for the removal of x, in event ids (bytes 0..255, then 256 + k for the k-th merge;
bpe_fast/picky.py), and ``"picky"``, the tau it was trained with (null if not known). Its token
ids follow from the events. An older bpe_fast refuses the file rather than read merges that are
not there.

A BoundlessBPE tokenizer writes version 4: the merges as ever, then its supermerges
(``"supermerges"``, one per line, ``"supermerge_ids"``, and the eligibility regex its runs were
made with, ``"boundless_eligible"``, a record), so that an older reader refuses the file rather
than drop them and encode other ids. Every version is read."""
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
PICKY_VERSION = 3           # a file with "events" (Picky BPE): older readers must refuse it
BOUNDLESS_VERSION = 4       # a file with "supermerges" (BoundlessBPE, normalized or not): likewise
VERSIONS = (BPE_FAST_VERSION, NORMALIZED_VERSION, PICKY_VERSION, BOUNDLESS_VERSION)

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
    if tok.events is not None:                  # a PickyTokenizer: its ids follow from its events
        data.update(version=PICKY_VERSION, picky=tok.picky, events=tok.events.tolist())
        return data
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
    field = "events" if "events" in data else "merges"
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
    if data.get("version") not in VERSIONS:
        raise TokenizerFileError(f"{where}: format version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads versions {', '.join(map(str, VERSIONS))})")
    picky = data.get("version") == PICKY_VERSION
    if ("events" if picky else "merges") not in data:
        raise TokenizerFileError(f"{where}: missing field {'events' if picky else 'merges'!r}"
                                 + (" (version 3 is a Picky BPE tokenizer)" if picky else ""))
    pattern = data.get("pattern")
    if pattern is not None:
        expect(pattern, str, where, "pattern")
    specials = data.get("special_tokens") or {}
    expect(specials, (dict, list), where, "special_tokens")
    normalize = read_normalize(data.get("normalize"), where)
    if picky:
        return Vocabulary([], pattern, specials, source=where, normalize=normalize,
                          events=expect(data["events"], list, where, "events"), picky=_read_tau(data, where))
    return Vocabulary(expect(data["merges"], list, where, "merges"), pattern, specials,
                      expect_optional(data.get("merge_ids"), list, where, "merge_ids"),
                      expect_optional(data.get("byte_ids"), list, where, "byte_ids"), source=where,
                      normalize=normalize,
                      supermerges=expect_optional(data.get("supermerges"), list, where, "supermerges"),
                      supermerge_ids=expect_optional(data.get("supermerge_ids"), list, where, "supermerge_ids"),
                      boundless_eligible=expect_optional(data.get("boundless_eligible"), str, where,
                                                         "boundless_eligible"))


def _read_tau(data: dict, where: str) -> float | None:
    tau = data.get("picky")
    if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= 1):
        raise TokenizerFileError(f"{where}: picky must be null or a threshold tau with 0 < tau <= 1, "
                                 f"not {json.dumps(tau)[:40]}")
    return tau


def sniff(peek: Peek) -> FileKind | None:
    data = peek.json
    return KIND if data is not None and data.get("format") == BPE_FAST_FORMAT else None


def read(peek: Peek) -> Vocabulary:
    return bpe_fast_vocabulary(peek.read_json(), str(peek.path))


FORMAT = Format(
    name="bpe_fast", title="bpe_fast's JSON", description="bpe_fast's JSON",
    sniff=sniff, read=read, write=write_bpe_fast, demo_name="demo-tokenizer.json", is_json=True, holds_picky=True,
    holds_supermerges=True)
