"""Hugging Face ``tokenizer.json`` with a byte-level BPE model (tokens spelled in GPT-2's
bytes-to-unicode alphabet, bytelevel.py), and a normalizer that is none, NFC or NFKC."""
from __future__ import annotations

import functools
import json
import os
from typing import Any
from collections.abc import Mapping

from ..bytelevel import huggingface_byte_order, str_to_token, token_to_str
from ..errors import ArgumentError, TokenizerFileError, require
from ..outputs import atomic_open
from ..pretokenize.patterns import PATTERNS
from ._common import (FileKind, Format, Peek, Vocabulary, cached_merges, check_every_token_made, expect,
                      lookup_merge, maps_tokens_to_ids, read_json, refuse_variant)

KIND = FileKind("a Hugging Face tokenizer.json", 'Tokenizer.load(path, format="huggingface")')

# How Hugging Face's Split writes each named pattern (its record's ``huggingface``: Oniguruma must
# be told some otherwise), and back; and the pattern its ByteLevel pre-tokenizer splits with
# when use_regex is on (the record marked ``byte_level``: gpt2).
HF_PATTERNS = {p.regex: p.huggingface for p in PATTERNS}
_FROM_HF_PATTERNS = {hf: ours for ours, hf in HF_PATTERNS.items()}
_BYTE_LEVEL_PATTERN = next(p.regex for p in PATTERNS if p.byte_level)


def huggingface_vocabulary(data: Any, source: str, path: str | os.PathLike | None = None) -> Vocabulary:
    """The vocabulary of a parsed byte-level BPE ``tokenizer.json``; read from ``path``, its
    merges are read back from prebuilt.py's cache when an earlier process spelled them out."""
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = repr(model.get("type")) if isinstance(model, dict) else f"not an object but {model!r:.40}"
        raise TokenizerFileError(f"{source}: not a BPE tokenizer.json (model.type is {kind})")
    normalize = _hf_normalize(data.get("normalizer"), source)
    pattern = _hf_pattern(data.get("pre_tokenizer"), source)
    added = _hf_added_tokens(data.get("added_tokens", []), source)
    _refuse_plain_added_tokens(added, source)
    make = functools.partial(_hf_merges, model, added, source)
    merges, merge_ids, byte_ids = make() if path is None else cached_merges("huggingface", path, make)
    specials = {content: i for content, (i, special) in added.items() if special}
    return Vocabulary(merges, pattern, specials, merge_ids, byte_ids, source=source, normalize=normalize)


def _hf_merges(model: dict, added: dict[str, tuple[int, bool]], source: str) -> tuple[list, list, list]:
    """(merges, merge_ids, byte_ids) of a tokenizer.json's model, every token looked up and
    every merge checked."""
    vocab = {str_to_token(s, f"{source}: model.vocab"): i
             for s, i in expect(model.get("vocab", {}), dict, source, "model.vocab").items()
             if s not in added and expect(i, int, source, f"model.vocab[{s!r}]") is not None}
    merges, merge_ids = [], []
    for k, merge in enumerate(expect(model.get("merges", []), list, source, "model.merges")):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
            raise TokenizerFileError(f"{source}: model.merges[{k}] is {merge!r:.60}, not a pair of tokens")
        where = f"{source}: model.merges[{k}]"
        left, right = (str_to_token(p, where) for p in parts)
        pair, made = lookup_merge(left, right, vocab, where, "model.vocab")
        merges.append(pair)
        merge_ids.append(made)
    missing = [b for b in range(256) if bytes([b]) not in vocab]
    if missing:
        raise TokenizerFileError(f"{source}: model.vocab has no token for the byte {bytes([missing[0]])!r} "
                                 f"(not a byte-level BPE with the full byte alphabet)")
    byte_ids = [vocab[bytes([b])] for b in range(256)]
    check_every_token_made(vocab, byte_ids, merge_ids, f"{source}: model.merges", "id {} in model.vocab")
    return merges, merge_ids, byte_ids


def _hf_added_tokens(entries: Any, source: str) -> dict[str, tuple[int, bool]]:
    """added_tokens as {content: (id, special)}; they are kept in model.vocab too, as text."""
    added = {}
    for k, entry in enumerate(expect(entries, list, source, "added_tokens")):
        where = f"added_tokens[{k}]"
        entry = expect(entry, dict, source, where)
        content = expect(entry.get("content"), str, source, f"{where}.content")
        added[content] = (expect(entry.get("id"), int, source, f"{where}.id"),
                          expect(entry.get("special", True), bool, source, f"{where}.special"))
    return added


# Hugging Face's normalizers that bpe_fast applies, by their "type", as normalize= names them.
HF_NORMALIZERS = {"NFC": "nfc", "NFKC": "nfkc"}


def _hf_normalize(normalizer: Any, source: str) -> str | None:
    """The normalization of a tokenizer.json's normalizer: null, NFC, NFKC, or a Sequence of
    those (NFKC if any step is NFKC: its output is in NFC form too; else NFC). Any other
    (lowercasing, NFD, Replace...) would make bpe_fast encode other text than Hugging Face does,
    so other ids: refused, named."""
    if normalizer is None:
        return None
    kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
    steps = normalizer.get("normalizers") if kind == "Sequence" else [normalizer]
    kinds = [step.get("type") if isinstance(step, dict) else step for step in steps] \
        if isinstance(steps, list) else [kind]
    odd = [k for k in kinds if not isinstance(k, str) or k not in HF_NORMALIZERS]
    if odd:
        raise TokenizerFileError(f"{source}: normalizer {odd[0]!r} is not supported: bpe_fast applies only NFC or "
                                 f"NFKC, so with it its ids would differ from Hugging Face's; \"normalizer\": null, "
                                 f"{{\"type\": \"NFC\"}} and {{\"type\": \"NFKC\"}} are read")
    forms = {HF_NORMALIZERS[str(k)] for k in kinds}
    return "nfkc" if "nfkc" in forms else "nfc" if forms else None


def _refuse_plain_added_tokens(added: dict[str, tuple[int, bool]], source: str) -> None:
    """A non-special added token is matched in any text before the model, always; bpe_fast's
    special tokens are matched only where allowed (allowed_special=), so it has no equivalent."""
    plain = [content for content, (_, special) in added.items() if not special]
    if plain:
        raise TokenizerFileError(f"{source}: added_tokens holds {len(plain)} token(s) that are not special, such as "
                                 f"{plain[0]!r}: Hugging Face matches those in any text, which bpe_fast does not "
                                 f"reproduce; mark them \"special\": true to read them as special tokens")


def read_huggingface(path: str | os.PathLike) -> Vocabulary:
    """A byte-level BPE ``tokenizer.json``."""
    return huggingface_vocabulary(read_json(path), str(path), path)


def _hf_pattern(pre, source: str) -> str | None:
    """The split pattern of a pre_tokenizer that bpe_fast can reproduce exactly."""
    if pre is None:
        return None
    pre = expect(pre, dict, source, "pre_tokenizer")
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    pattern = None
    for k, step in enumerate(expect(steps, list, source, "pre_tokenizer.pretokenizers")):
        step = expect(step, dict, source, f"pre_tokenizer step {k}")
        kind = step.get("type")
        split = step.get("pattern")
        if kind == "ByteLevel":
            if step.get("add_prefix_space"):
                raise TokenizerFileError(f"{source}: ByteLevel add_prefix_space=true is not supported")
            if step.get("use_regex", True):
                pattern = _BYTE_LEVEL_PATTERN
        elif kind == "Split" and isinstance(split, dict) and isinstance(split.get("Regex"), str) \
                and step.get("behavior") == "Isolated" and not step.get("invert"):
            pattern = _FROM_HF_PATTERNS.get(split["Regex"], split["Regex"])
        else:
            raise TokenizerFileError(f"{source}: pre_tokenizer step {kind!r} ({json.dumps(step)[:80]}) "
                                     f"is not supported")
    return pattern


def huggingface_json(tok) -> dict:
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    # Special tokens are in the model's vocab too, as BpeTrainer writes them: without them there,
    # Hugging Face numbers added tokens after the last vocab id, ignoring theirs when ids have
    # gaps (cl100k's <|endoftext|> became 100256). A learned token spelled the same keeps its id.
    vocab.update({s: i for s, i in tok.special_tokens.items() if s not in vocab})
    merges = [[token_to_str(tok.token_bytes(a)), token_to_str(tok.token_bytes(b))] for a, b in tok.merges.tolist()]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    steps = [byte_level]
    if tok.pattern is not None:
        split = {"type": "Split", "pattern": {"Regex": HF_PATTERNS.get(tok.pattern, tok.pattern)},
                 "behavior": "Isolated", "invert": False}
        steps = [split, byte_level]
    # bpe_fast finds special tokens in the normalized text: "normalized": true makes Hugging Face
    # do the same (false would find them in the text as given, then normalize the rest).
    normalized = tok.normalize is not None
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": normalized, "special": True}
             for s, i in sorted(tok.special_tokens.items(), key=lambda x: x[1])]
    normalizer = {"type": tok.normalize.upper()} if normalized else None
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps}, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def write_huggingface(tok, path: str | os.PathLike) -> None:
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)     # before the file is opened
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(huggingface_json(tok), fh, ensure_ascii=False)


# -- in the table of formats -----------------------------------------------------------------------

def sniff(peek: Peek) -> FileKind | None:
    data = peek.json
    # GPT-2's encoder.json is a JSON object with "model" too (a token, mapped to its id).
    return KIND if data is not None and "model" in data and not maps_tokens_to_ids(data) else None


def read(peek: Peek) -> Vocabulary:
    return huggingface_vocabulary(peek.read_json(), str(peek.path), peek.path)


FORMAT = Format(
    name="huggingface", title="a Hugging Face tokenizer.json", description="a tokenizer.json",
    sniff=sniff, read=read, write=write_huggingface, demo_name="demo-tokenizer.hf.json", is_json=True,
    file_names=("tokenizer.json",), name_endings=("tokenizer.json",))    # my_tokenizer.json too


# -- transformers, and Hugging Face's numbering -----------------------------------------------------

def to_transformers(tok, **special_roles):
    """A ``transformers.PreTrainedTokenizerFast`` with this vocabulary, pattern and special tokens.
    ``special_roles`` (eos_token=, pad_token=, bos_token=, unk_token=, ...) name special tokens
    the tokenizer already has: a role given a token it lacks would make transformers add a new
    id, silently growing the vocabulary, so it is refused. Other keywords go to transformers."""
    refuse_variant("a transformers tokenizer (Hugging Face's BPE model)", FORMAT.name, tok.variant)
    transformers = require("transformers", "transformers", "to_transformers()")
    tokenizers = require("tokenizers", "transformers", "to_transformers()")
    for role, token in special_roles.items():
        if role.endswith("_token") and token is not None and token not in tok.special_tokens:
            have = ", ".join(map(repr, tok.special_tokens)) or "none"
            raise ArgumentError(f"{role}={token!r} is not a special token of this tokenizer (it has {have}); "
                                f"train with special_tokens=[..., {token!r}] so that it has an id of its own")
    backend = tokenizers.Tokenizer.from_str(json.dumps(huggingface_json(tok)))
    given = {role: token for role, token in special_roles.items() if token is not None}
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, **given)


def huggingface_ids(byte_ids, merge_ids, special_tokens: dict[str, int]) -> tuple[dict[int, int], dict[str, int]]:
    """How Hugging Face's BpeTrainer numbers a vocabulary: the special tokens first (0..k-1, in
    the order of their ids here), then the 256 bytes in the code-point order of their GPT-2
    characters, then the merges in rank order. Returns (old id -> new id for bytes and merges,
    {special token: new id})."""
    specials = sorted(special_tokens, key=lambda s: special_tokens[s])
    first = len(specials)
    renumber = {int(byte_ids[b]): first + rank for rank, b in enumerate(huggingface_byte_order())}
    renumber.update({int(old): first + 256 + m for m, old in enumerate(merge_ids)})
    return renumber, {s: k for k, s in enumerate(specials)}


# -- transformers' tokenizer_config.json: the special tokens' roles, beside tokenizer.json ----------

TRANSFORMERS_CONFIG = "tokenizer_config.json"
ROLES = ("bos_token", "eos_token", "pad_token", "unk_token")     # the roles a folder for transformers names


def check_special_roles(tok, roles: Mapping[str, str | None]) -> dict[str, str]:
    """The roles given a token (``{"eos_token": "<|endoftext|>"}``), each checked to be a special
    token of ``tok`` (else transformers would add a new id behind the user's back)."""
    given = {role: token for role, token in roles.items() if token is not None}
    for role, token in given.items():
        if role not in ROLES:
            raise ArgumentError(f"{role}: not a role of a special token (the roles: {', '.join(ROLES)})")
        if not isinstance(token, str) or token not in tok.special_tokens:
            have = ", ".join(map(repr, tok.special_tokens)) or "none"
            option = "--" + role.replace("_", "-")
            raise ArgumentError(f"{role}={token!r} is not a special token of this tokenizer (it has {have}); "
                                f"train with special_tokens=[..., {token!r}] so that it has an id of its own",
                                cli_message=f"{option} {token}: not a special token of this tokenizer (it has "
                                            f"{have}); train with --special {token!r} so that it has an id of its own")
    return given


def transformers_config(tok, roles: Mapping[str, str | None]) -> dict:
    """transformers' ``tokenizer_config.json`` for the ``tokenizer.json`` beside it: a fast
    tokenizer (``PreTrainedTokenizerFast``) with these special tokens in these roles."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False,
            **check_special_roles(tok, roles)}


def write_transformers_config(tok, folder: str | os.PathLike, roles: Mapping[str, str | None]) -> str:
    """``folder/tokenizer_config.json`` (the roles checked first); returns its path."""
    config = transformers_config(tok, roles)
    path = os.path.join(folder, TRANSFORMERS_CONFIG)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(config, fh, ensure_ascii=False, indent=2)
    return path
