"""Reading and writing the vocabulary formats people use.

* bpe_fast's own JSON: pattern, special tokens and merges as id pairs (one per line).
* tiktoken ``.tiktoken``: one "base64(token) rank" per line; merges are recovered from the ranks.
  The file holds no pattern and no special tokens, so bpe_fast writes them beside it, in the
  *sidecar* ``x.tiktoken.json`` (see ``write_tiktoken_sidecar``), and reads them back from there.
* GPT-2's ``encoder.json`` (token string -> id) and ``vocab.bpe`` (one merge "a b" per line), both
  spelling bytes with GPT-2's bytes-to-unicode table (bytelevel.py).
* Hugging Face ``tokenizer.json`` with a byte-level BPE model.
* minbpe ``.model`` ("minbpe v1", pattern, special tokens, merges as id pairs) and ``.vocab``.

``write(tok, path, format)`` writes any of them (the format told by the name when it is not
given: ``format_of_path``); ``sniff`` and ``json_kind`` tell a file's format from its content.

Readers return a plain ``Vocabulary`` record, which ``Tokenizer.from_vocabulary`` checks and
turns into a tokenizer; writers take a tokenizer. So this module never imports ``Tokenizer``:
the dependency runs one way, tokenizer -> formats. Every error names the file (and the line,
where there are lines) and what is wrong with it.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import unicodedata
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ._encode import recover_merges
from .bytelevel import str_to_token, token_to_str
from .errors import ArgumentError, PatternRequiredError, TokenizerFileError, VocabularyError, naming_file, require
from .named import ENCODINGS
from .outputs import atomic_open
from .patterns import CL100K, GPT2, O200K, name_of

BPE_FAST_FORMAT = "bpe_fast.tokenizer"
MAX_ID = 2**31 - 1          # token ids are int32 in the native code
BPE_FAST_VERSION = 1

# The same patterns as Hugging Face's Oniguruma engine must be told them: there "{1,3}+" is not
# possessive but a repeated group, and "$" also matches before any newline. Equivalence with
# the tiktoken strings is checked by the tests on every shared corpus.
HF_PATTERNS = {
    GPT2: r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++\z|\s+(?!\S)|\s""",
    CL100K: r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++\z|\s*[\r\n]|\s+(?!\S)|\s""",
    O200K: O200K,
}


@dataclass
class Vocabulary:
    """What a vocabulary file says, before ``Tokenizer.from_vocabulary`` checks it.

    Merge m joins (left id, right id) into ``merge_ids[m]`` (default 256 + m); byte b has id
    ``byte_ids[b]`` (default b). ``source`` is the file it was read from, named in errors."""
    merges: Any                                    # (n, 2) ids, in merge (rank) order
    pattern: str | None = None
    special_tokens: Mapping[str, int] | Sequence[str] | None = None
    merge_ids: Any = None
    byte_ids: Any = None
    source: str | None = None


# -- bpe_fast's own JSON ------------------------------------------------------------------------

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
    if not np.array_equal(tok.byte_ids, np.arange(256)):
        data["byte_ids"] = tok.byte_ids.tolist()
    if not np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges))):
        data["merge_ids"] = tok.merge_ids.tolist()
    data["merges"] = tok.merges.tolist()
    return data


def write_bpe_fast(tok, path: str | os.PathLike) -> None:
    """bpe_fast's JSON, one merge per line (diffs of two vocabularies stay readable)."""
    data = bpe_fast_dict(tok)
    merges = data.pop("merges")
    head = json.dumps(data, ensure_ascii=False, indent=1)[:-2]
    body = ",\n".join(f"  [{left}, {right}]" for left, right in merges)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(f'{head},\n "merges": [\n{body}\n ]\n}}\n')


def bpe_fast_vocabulary(data: Any, source: str | None = None) -> Vocabulary:
    """The vocabulary of a parsed bpe_fast JSON object."""
    where = source or "tokenizer data"
    if not isinstance(data, dict) or data.get("format") != BPE_FAST_FORMAT:
        raise TokenizerFileError(f"{where}: not a bpe_fast tokenizer file (no \"format\": \"{BPE_FAST_FORMAT}\")")
    if data.get("version") != BPE_FAST_VERSION:
        raise TokenizerFileError(f"{where}: format version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads version {BPE_FAST_VERSION})")
    if "merges" not in data:
        raise TokenizerFileError(f"{where}: missing field 'merges'")
    pattern = data.get("pattern")
    if pattern is not None:
        _expect(pattern, str, where, "pattern")
    specials = data.get("special_tokens") or {}
    _expect(specials, (dict, list), where, "special_tokens")
    return Vocabulary(_expect(data["merges"], list, where, "merges"), pattern, specials,
                      _expect_optional(data.get("merge_ids"), list, where, "merge_ids"),
                      _expect_optional(data.get("byte_ids"), list, where, "byte_ids"), source=where)


def read_bpe_fast(path: str | os.PathLike) -> Vocabulary:
    """bpe_fast's JSON; a file in another format is refused with the loader that reads it."""
    kind = sniff(path)
    if kind not in ("json", "unknown"):
        raise _other_format(path, kind, "bpe_fast's JSON")
    data = read_json(path)
    kind = json_kind(data)
    if kind not in ("bpe_fast", "unknown"):
        raise _other_format(path, kind, "bpe_fast's JSON")
    return bpe_fast_vocabulary(data, str(path))


# -- tiktoken --------------------------------------------------------------------------------

def read_tiktoken_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """``{token bytes: rank}`` from a .tiktoken file."""
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    with _open(path, "rb") as fh:
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
                raise TokenizerFileError(f"{path}, line {lineno}: rank {rank} was already given on line {seen_ranks[rank]}")
            if token in ranks:
                raise TokenizerFileError(f"{path}, line {lineno}: token {token!r} was already given rank {ranks[token]}")
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
    merges, merge_ids, bad = recover_merges(tokens, ids, byte_ids)
    if bad >= 0:
        raise VocabularyError(f"{source}: token {tokens[bad]!r} (rank {ids[bad]}) cannot be made by "
                              f"merging two tokens of lower rank: a merge is missing for this rank")
    return Vocabulary(merges, pattern, special_tokens, merge_ids, byte_ids)


SIDECAR_FORMAT = "bpe_fast.tiktoken-sidecar"
SIDECAR_VERSION = 1


def sidecar_path(path: str | os.PathLike) -> Path:
    """The sidecar of a .tiktoken file: the same name with ".json" added (x.tiktoken.json)."""
    return Path(f"{os.fspath(path)}.json")


def read_tiktoken(path: str | os.PathLike, pattern: str | None = ...,
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
        vocab = vocabulary_from_ranks(read_tiktoken_ranks(path), pattern, special_tokens, str(path))
    vocab.source = str(path)
    return vocab


def _published_encoding(path) -> dict | None:
    """The pattern and special tokens of the named encoding whose published file ``path`` is."""
    enc = ENCODINGS.get(Path(path).name.removesuffix(".tiktoken")) if str(path).endswith(".tiktoken") else None
    if enc is None or len(enc.files) != 1 or not Path(path).is_file():
        return None
    if file_sha256(path) != enc.files[0].sha256:
        return None
    return {"pattern": enc.pattern, "special_tokens": dict(enc.special_tokens)}


def _pattern_required(path) -> PatternRequiredError:
    side = sidecar_path(path)
    why = (f"{path}: a .tiktoken file holds no pattern, and there is no sidecar {side.name} beside it "
           f"(bpe_fast writes one with every .tiktoken file) nor is it a named encoding's published file")
    return PatternRequiredError(
        f"{why}: pass the pattern it was trained with, e.g. Tokenizer.from_tiktoken({os.fspath(path)!r}, "
        f"pattern='cl100k') (a name, a regex, or 'none' for no split; special_tokens= too if it has any); "
        f"a wrong pattern gives other token ids",
        cli_message=f"{why}: name the pattern it was trained with once, e.g. `bpe-fast convert {os.fspath(path)} "
                    f"{os.fspath(path)}.converted.json --pattern cl100k` (a name, a regex, or none), then use the "
                    f"converted file; a wrong pattern gives other token ids")


def read_tiktoken_sidecar(path: str | os.PathLike) -> dict:
    """A sidecar's pattern (None: no split) and special tokens ({token: id}), checked."""
    data = read_json(path)
    where = str(path)
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        raise TokenizerFileError(f"{where}: not a .tiktoken sidecar (no \"format\": \"{SIDECAR_FORMAT}\")")
    if data.get("version") != SIDECAR_VERSION:
        raise TokenizerFileError(f"{where}: sidecar version {data.get('version')!r} is not supported "
                                 f"(this bpe_fast reads version {SIDECAR_VERSION})")
    pattern = _expect_optional(data.get("pattern"), str, where, "pattern")
    specials = _expect(data.get("special_tokens", {}), dict, where, "special_tokens")
    for token, i in specials.items():
        _expect(i, int, where, f"special_tokens[{token!r}]")
    return {"pattern": pattern, "special_tokens": specials}


def write_tiktoken(tok, path: str | os.PathLike) -> list[str]:
    """The .tiktoken file (ranks, as tiktoken's ``load_tiktoken_bpe`` reads them) and its
    sidecar ``path + ".json"`` (pattern and special tokens). Returns both paths."""
    with atomic_open(path, "wb") as fh:
        for token, rank in sorted(tok.mergeable_ranks().items(), key=lambda item: item[1]):
            fh.write(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    side = write_tiktoken_sidecar(tok, path)
    return [os.fspath(path), os.fspath(side)]


def write_tiktoken_sidecar(tok, path: str | os.PathLike) -> Path:
    r"""``path + ".json"``, the sidecar of the .tiktoken file ``path``: a JSON object

        {"format": "bpe_fast.tiktoken-sidecar", "version": 1, "tiktoken_file": "tok.tiktoken",
         "pattern": "<regex>" or null (no split), "pattern_name": "cl100k",
         "special_tokens": {"<|endoftext|>": 100257}, "n_vocab": 100258}

    ``pattern`` and ``special_tokens`` are what ``tiktoken.Encoding`` takes as ``pat_str`` and
    ``special_tokens`` (for null give it r"[\s\S]+": the whole text as one piece)."""
    side = sidecar_path(path)
    data = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, "tiktoken_file": Path(path).name,
            "pattern": tok.pattern, "pattern_name": name_of(tok.pattern),
            "special_tokens": tok.special_tokens, "n_vocab": tok.vocab_size}
    with atomic_open(side, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    return side


def to_tiktoken(tok, name: str = "bpe_fast"):
    """A ``tiktoken.Encoding`` with the same ranks, pattern and special tokens."""
    tiktoken = require("tiktoken", "tiktoken", "to_tiktoken()")
    return tiktoken.Encoding(name, pat_str=tok.pattern if tok.pattern is not None else r"[\s\S]+",
                             mergeable_ranks=tok.mergeable_ranks(), special_tokens=tok.special_tokens)


# -- GPT-2 ------------------------------------------------------------------------------------

def read_gpt2(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> Vocabulary:
    """GPT-2's own files: ids from encoder.json, merge ranks from vocab.bpe's line order."""
    encoder = read_json(encoder_json)
    if not isinstance(encoder, dict) or not all(isinstance(v, int) for v in encoder.values()):
        raise TokenizerFileError(f"{encoder_json}: expected a JSON object of token -> id")
    ids = {str_to_token(s, f"{encoder_json}"): i for s, i in encoder.items() if not _is_special(s)}
    specials = {s: i for s, i in encoder.items() if _is_special(s)}
    merges, merge_ids = [], []
    # splitlines() would also split at U+2028 and other separators inside a token: only "\n"
    for lineno, line in enumerate(read_text(vocab_bpe).split("\n"), 1):
        if lineno == 1 and line.startswith("#version"):
            continue
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(f"{vocab_bpe}, line {lineno}: expected two tokens, got {line.rstrip()!r}")
        where = f"{vocab_bpe}, line {lineno}"
        pair, made = _merge_ids(*(str_to_token(p, where) for p in parts), ids, where, str(encoder_json))
        merges.append(pair)
        merge_ids.append(made)
    byte_ids = [ids.get(bytes([b])) for b in range(256)]
    if None in byte_ids:
        raise TokenizerFileError(f"{encoder_json}: no id for the byte {bytes([byte_ids.index(None)])!r}")
    _check_every_token_made(ids, byte_ids, merge_ids, str(vocab_bpe), f"id {{}} in {encoder_json}")
    return Vocabulary(merges, GPT2, specials, merge_ids, byte_ids, source=str(vocab_bpe))


def _check_every_token_made(ids: dict[bytes, int], byte_ids, merge_ids, merges_file: str, id_where: str) -> None:
    """Every token of the vocabulary is a byte or made by a merge: else merges are missing (a
    truncated file), and loading on would silently give a smaller vocabulary."""
    made = set(byte_ids) | set(merge_ids)
    unmade = [(t, i) for t, i in ids.items() if i not in made]
    if unmade:
        token, token_id = unmade[0]
        raise TokenizerFileError(f"{merges_file}: no merge makes {token_to_str(token)!r} ({id_where.format(token_id)}); "
                                 f"{len(unmade)} tokens lack their merge (truncated file?)")


def _check_gpt2_specials(special_tokens) -> None:
    odd = [s for s in special_tokens if not _is_special(s)]
    if odd:
        raise VocabularyError(f"GPT-2's encoder.json can only hold special tokens spelled <|...|> (its loaders "
                              f"tell them apart by that); {odd[0]!r} is not: save as tokenizer.json or bpe_fast JSON")


def _check_gpt2_pattern(pattern: str | None) -> None:
    if pattern != GPT2:
        raise VocabularyError(f"GPT-2's files hold no pattern (every reader splits with GPT-2's), and this "
                              f"tokenizer splits with {name_of(pattern)}: it would encode differently once read "
                              f"back; train with the gpt2 pattern, or save as tokenizer.json, .tiktoken or bpe_fast JSON")


def write_gpt2(tok, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> None:
    _check_gpt2_pattern(tok.pattern)
    _check_gpt2_specials(tok.special_tokens)
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    vocab.update(tok.special_tokens)
    with atomic_open(encoder_json, "w", encoding="utf-8") as fh:
        json.dump(vocab, fh, ensure_ascii=False)
    with atomic_open(vocab_bpe, "w", encoding="utf-8") as fh:
        fh.write("#version: 0.2\n")
        for left, right in tok.merges.tolist():
            fh.write(f"{token_to_str(tok.token_bytes(left))} {token_to_str(tok.token_bytes(right))}\n")


def _merge_ids(left: bytes, right: bytes, ids: dict[bytes, int], where: str, vocab_name: str):
    """((left id, right id), id of left + right) for a merge read from a file, all looked up in ids."""
    for part in (left, right, left + right):
        if part not in ids:
            raise TokenizerFileError(f"{where}: {token_to_str(part)!r} is not in {vocab_name}")
    return (ids[left], ids[right]), ids[left + right]


def _is_special(s: str) -> bool:
    return len(s) > 4 and s.startswith("<|") and s.endswith("|>")


# -- Hugging Face ----------------------------------------------------------------------------

def huggingface_vocabulary(data: Any, source: str) -> Vocabulary:
    """The vocabulary of a parsed byte-level BPE ``tokenizer.json``."""
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = repr(model.get("type")) if isinstance(model, dict) else f"not an object but {model!r:.40}"
        raise TokenizerFileError(f"{source}: not a BPE tokenizer.json (model.type is {kind})")
    pattern = _hf_pattern(data.get("pre_tokenizer"), source)
    added = _hf_added_tokens(data.get("added_tokens", []), source)
    vocab = {str_to_token(s, f"{source}: model.vocab"): i
             for s, i in _expect(model.get("vocab", {}), dict, source, "model.vocab").items()
             if s not in added and _expect(i, int, source, f"model.vocab[{s!r}]") is not None}
    merges, merge_ids = [], []
    for k, merge in enumerate(_expect(model.get("merges", []), list, source, "model.merges")):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise TokenizerFileError(f"{source}: model.merges[{k}] is {merge!r:.60}, not a pair of tokens")
        where = f"{source}: model.merges[{k}]"
        pair, made = _merge_ids(*(str_to_token(p, where) for p in parts), vocab, where, "model.vocab")
        merges.append(pair)
        merge_ids.append(made)
    missing = [b for b in range(256) if bytes([b]) not in vocab]
    if missing:
        raise TokenizerFileError(f"{source}: model.vocab has no token for the byte {bytes([missing[0]])!r} "
                                 f"(not a byte-level BPE with the full byte alphabet)")
    byte_ids = [vocab[bytes([b])] for b in range(256)]
    _check_every_token_made(vocab, byte_ids, merge_ids, f"{source}: model.merges", "id {} in model.vocab")
    specials = {content: i for content, (i, special) in added.items() if special}
    return Vocabulary(merges, pattern, specials, merge_ids, byte_ids, source=source)


def _hf_added_tokens(entries: Any, source: str) -> dict[str, tuple[int, bool]]:
    """added_tokens as {content: (id, special)}; they are kept in model.vocab too, as text."""
    added = {}
    for k, entry in enumerate(_expect(entries, list, source, "added_tokens")):
        where = f"added_tokens[{k}]"
        entry = _expect(entry, dict, source, where)
        content = _expect(entry.get("content"), str, source, f"{where}.content")
        added[content] = (_expect(entry.get("id"), int, source, f"{where}.id"),
                          _expect(entry.get("special", True), bool, source, f"{where}.special"))
    return added


def read_huggingface(path: str | os.PathLike) -> Vocabulary:
    """A byte-level BPE ``tokenizer.json``."""
    return huggingface_vocabulary(read_json(path), str(path))


def _hf_pattern(pre, source: str) -> str | None:
    """The split pattern of a pre_tokenizer that bpe_fast can reproduce exactly."""
    if pre is None:
        return None
    pre = _expect(pre, dict, source, "pre_tokenizer")
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    pattern = None
    for k, step in enumerate(_expect(steps, list, source, "pre_tokenizer.pretokenizers")):
        step = _expect(step, dict, source, f"pre_tokenizer step {k}")
        kind = step.get("type")
        split = step.get("pattern")
        if kind == "ByteLevel":
            if step.get("add_prefix_space"):
                raise TokenizerFileError(f"{source}: ByteLevel add_prefix_space=true is not supported")
            if step.get("use_regex", True):
                pattern = GPT2
        elif kind == "Split" and isinstance(split, dict) and isinstance(split.get("Regex"), str) \
                and step.get("behavior") == "Isolated" and not step.get("invert"):
            pattern = {hf: ours for ours, hf in HF_PATTERNS.items()}.get(split["Regex"], split["Regex"])
        else:
            raise TokenizerFileError(f"{source}: pre_tokenizer step {kind!r} ({json.dumps(step)[:80]}) is not supported")
    return pattern


def huggingface_json(tok) -> dict:
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    merges = [[token_to_str(tok.token_bytes(a)), token_to_str(tok.token_bytes(b))] for a, b in tok.merges.tolist()]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    steps = [byte_level]
    if tok.pattern is not None:
        split = {"type": "Split", "pattern": {"Regex": HF_PATTERNS.get(tok.pattern, tok.pattern)},
                 "behavior": "Isolated", "invert": False}
        steps = [split, byte_level]
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s, i in sorted(tok.special_tokens.items(), key=lambda x: x[1])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps}, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def write_huggingface(tok, path: str | os.PathLike) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(huggingface_json(tok), fh, ensure_ascii=False)


# -- minbpe -----------------------------------------------------------------------------------

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
            raise TokenizerFileError(f"{path}, line {lineno}: expected 'token id' for special token {k + 1} of {n_special}")
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
    if not (np.array_equal(tok.byte_ids, np.arange(256))
            and np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges)))):
        raise VocabularyError("minbpe numbers bytes 0..255 and merge i as 256 + i; this vocabulary "
                              "uses other ids (save it as tiktoken or tokenizer.json instead)")
    _check_minbpe_specials(tok.special_tokens)
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


def _check_minbpe_specials(special_tokens) -> None:
    odd = [s for s in special_tokens if any(c.isspace() for c in s)]
    if odd:
        raise VocabularyError(f"minbpe's .model holds 'token id' per line, split at whitespace, so a special "
                              f"token cannot hold any; {odd[0]!r} does: save as tokenizer.json or bpe_fast JSON")


def _render(token: bytes) -> str:
    """minbpe's rendering: decoded text with control characters escaped."""
    text = token.decode("utf-8", errors="replace")
    return "".join(c if unicodedata.category(c)[0] != "C" else f"\\u{ord(c):04x}" for c in text)


# -- telling formats apart, and writing any of them ------------------------------------------

# Format names, as ``--format`` and ``write(..., format=)`` take them, and what each writes.
FORMATS = {
    "bpe_fast": "bpe_fast's JSON (pattern, special tokens, merges)",
    "huggingface": "a Hugging Face tokenizer.json (byte-level BPE)",
    "tiktoken": "a .tiktoken file (ranks) and its sidecar .tiktoken.json (pattern, special tokens)",
    "minbpe": "minbpe's PREFIX.model and PREFIX.vocab",
    "gpt2": "GPT-2's encoder.json and vocab.bpe",
}
# Names that say the format. ".json" does not: bpe_fast's JSON, a tokenizer.json and GPT-2's
# encoder.json all end in it, so it means bpe_fast's own unless the format is given.
SUFFIX_FORMATS = {".tiktoken": "tiktoken", ".model": "minbpe", ".bpe": "gpt2"}

# Which loader reads each kind ``sniff``/``json_kind`` tell apart (named in errors).
KINDS = {
    "bpe_fast": ("bpe_fast's JSON", "Tokenizer.load(path)"),
    "huggingface": ("a Hugging Face tokenizer.json", "Tokenizer.from_huggingface(path)"),
    "tiktoken": ("a .tiktoken file", "Tokenizer.from_tiktoken(path, pattern=...)"),
    "tiktoken-sidecar": ("the sidecar of a .tiktoken file", "Tokenizer.from_tiktoken(path of the .tiktoken file)"),
    "minbpe": ("a minbpe .model file", "Tokenizer.from_minbpe(path)"),
    "gpt2-encoder": ("GPT-2's encoder.json", "Tokenizer.from_gpt2(encoder_json, vocab_bpe)"),
    "gpt2-merges": ("GPT-2's vocab.bpe (merges)", "Tokenizer.from_gpt2(encoder_json, vocab_bpe)"),
}

_TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")


def sniff(path: str | os.PathLike) -> str:
    """A file's format from its first bytes: "json" (see ``json_kind``), "tiktoken", "minbpe",
    "gpt2-merges" or "unknown" (also for an empty or unreadable file)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return "unknown"
    first = head.lstrip().split(b"\n", 1)[0]
    if head.startswith(b"minbpe v"):
        return "minbpe"
    if head.lstrip().startswith(b"{"):
        return "json"
    if first.startswith(b"#version"):
        return "gpt2-merges"
    if _TIKTOKEN_LINE.fullmatch(first):
        return "tiktoken"
    return "unknown"


def json_kind(data: Any) -> str:
    """What a parsed JSON file is: "bpe_fast", "huggingface", "tiktoken-sidecar",
    "gpt2-encoder" (token -> id) or "unknown"."""
    if not isinstance(data, dict):
        return "unknown"
    if data.get("format") == BPE_FAST_FORMAT:
        return "bpe_fast"
    if data.get("format") == SIDECAR_FORMAT:
        return "tiktoken-sidecar"
    if data and all(isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
        return "gpt2-encoder"          # before "model": GPT-2's vocabulary has the token "model"
    if "model" in data:
        return "huggingface"
    return "unknown"


def _other_format(path, kind: str, wanted: str) -> TokenizerFileError:
    what, loader = KINDS[kind]
    return TokenizerFileError(f"{path}: this is {what}, not {wanted}: open it with bpe_fast.load(path) "
                              f"(any format) or {loader}")


def format_of_path(path: str | os.PathLike, format: str | None = None) -> str:
    """The format to write ``path`` in: ``format`` if given (checked against the name), else the
    one the name says (.tiktoken, .model, vocab.bpe), else bpe_fast's JSON."""
    if format is not None and format not in FORMATS:
        raise ArgumentError(f"format {format!r} is not one of {', '.join(FORMATS)}")
    name = os.fspath(path)
    suffix = Path(name).suffix.lower()
    by_name = SUFFIX_FORMATS.get(suffix)
    if format is None:
        return by_name or "bpe_fast"
    if by_name is not None and by_name != format:
        raise ArgumentError(f"{name}: the name ends in {suffix}, which means the {by_name} format, but the "
                            f"format asked for is {format}; change the name or the format")
    if suffix == ".json" and format in ("tiktoken", "minbpe"):
        raise ArgumentError(f"{name}: the {format} format is not JSON; give a name ending in "
                            f"{'.tiktoken' if format == 'tiktoken' else '.model'}")
    return format


def gpt2_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """GPT-2's two files for one name: a folder (encoder.json and vocab.bpe in it; any name
    without a suffix, or ending in /), or a name ending in vocab.bpe or encoder.json, the other
    file beside it with the same beginning (gpt2_vocab.bpe and gpt2_encoder.json)."""
    name = os.fspath(path)
    if name.endswith(("/", os.sep)) or Path(name).is_dir() or not Path(name).suffix:
        return Path(name) / "encoder.json", Path(name) / "vocab.bpe"
    if name.endswith("vocab.bpe"):
        return Path(name[:-len("vocab.bpe")] + "encoder.json"), Path(name)
    if name.endswith("encoder.json"):
        return Path(name), Path(name[:-len("encoder.json")] + "vocab.bpe")
    raise ArgumentError(f"{name}: GPT-2's format is two files, encoder.json and vocab.bpe: give a folder "
                        f"(a name without a suffix) or a name ending in vocab.bpe or encoder.json (the other is "
                        f"put beside it)")


def minbpe_prefix(path: str | os.PathLike) -> str:
    """minbpe's files are PREFIX.model and PREFIX.vocab: "tok.model" and "tok" both mean "tok"."""
    name = os.fspath(path)
    return name[:-len(".model")] if name.endswith(".model") else name


def output_files(path: str | os.PathLike, format: str) -> list[Path]:
    """Every file ``write(tok, path, format)`` writes."""
    if format == "tiktoken":
        return [Path(path), sidecar_path(path)]
    if format == "minbpe":
        prefix = minbpe_prefix(path)
        return [Path(f"{prefix}.model"), Path(f"{prefix}.vocab")]
    if format == "gpt2":
        return list(gpt2_files(path))
    return [Path(path)]


def check_writable(format: str, pattern: str | None, special_tokens: Sequence[str]) -> None:
    """Refuse, before any training, a pattern or special tokens the format cannot hold."""
    if format == "gpt2":
        _check_gpt2_pattern(pattern)
        _check_gpt2_specials(special_tokens)
    elif format == "minbpe":
        _check_minbpe_specials(special_tokens)


def write(tok, path: str | os.PathLike, format: str | None = None) -> list[str]:
    """Write ``tok`` in ``format`` (default: the one ``path``'s name says, else bpe_fast's JSON);
    returns the files written (a .tiktoken file and its sidecar, minbpe's two, GPT-2's two)."""
    format = format_of_path(path, format)
    files = output_files(path, format)
    if format == "bpe_fast":
        write_bpe_fast(tok, path)
    elif format == "huggingface":
        write_huggingface(tok, path)
    elif format == "tiktoken":
        write_tiktoken(tok, path)
    elif format == "minbpe":
        write_minbpe(tok, minbpe_prefix(path))
    else:
        files[0].parent.mkdir(exist_ok=True)          # "-o gpt2-tok/": the folder is made
        write_gpt2(tok, *files)
    return [os.fspath(f) for f in files]


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with _open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# -- helpers ----------------------------------------------------------------------------------

_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "true or false"}


def _expect(value, kind, source: str, what: str):
    """value, if it is of the kind a file format says; else an error naming the file and field.
    (bool is not taken for int, though Python would.)"""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise TokenizerFileError(f"{source}: {what} must be {names}, not {json.dumps(value)[:60]}")
    return value


def _expect_optional(value, kind, source: str, what: str):
    return None if value is None else _expect(value, kind, source, what)


def _open(path, mode, **kwargs):
    try:
        return open(path, mode, **kwargs)
    except FileNotFoundError:
        raise TokenizerFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenizerFileError(f"{path}: is a directory") from None


def read_text(path) -> str:
    """A whole UTF-8 text file; a binary or mis-encoded one is a TokenizerFileError."""
    with _open(path, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start})") from None


def read_json(path):
    """A JSON file's contents; a missing, truncated or binary file is a TokenizerFileError."""
    with _open(path, "r", encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise TokenizerFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); truncated?") from None
        except UnicodeDecodeError as exc:
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start}), so not a JSON "
                                     f"tokenizer file") from None


def _int_field(text: str, path, lineno: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TokenizerFileError(f"{path}, line {lineno}: expected {what}, got {text!r}") from None
