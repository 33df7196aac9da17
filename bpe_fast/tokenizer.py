"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

A vocabulary is 256 single-byte tokens and a list of merges in rank order: merge m joins
(left id, right id) into token ``merge_ids[m]``. Trained tokenizers number bytes 0..255 and
merge m 256 + m; vocabularies loaded from other tools keep their own ids (tiktoken ranks,
GPT-2's encoder.json, ...). Special tokens come after the learned ids unless given ids.

Encoding follows tiktoken's rule (see _encode.pyx); with a named pattern the whole text is split
and encoded natively, otherwise ``regex.findall`` splits and each chunk is encoded natively.
"""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Collection, Iterable, Literal, Mapping, Sequence

import numpy as np
import regex

from ._encode import MergeEncoder, recover_merges
from ._pretok import PATTERN_IDS
from .errors import BpeFastError
from .patterns import compile_pattern, name_of, resolve
from .pretokenize import char_classes, special_splitter

FORMAT_NAME = "bpe_fast.tokenizer"
FORMAT_VERSION = 1


class TokenizerFileError(BpeFastError):
    """A vocabulary or tokenizer file that is not valid: names the file (and line) at fault."""


class VocabularyError(BpeFastError):
    """Merges, ids or special tokens that do not make a consistent vocabulary."""


def _as_ids(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64))


def _build_vocab(merges: np.ndarray, merge_ids: np.ndarray, byte_ids: np.ndarray) -> list:
    """id -> token bytes (None where no token has the id), checking that ids are consistent."""
    all_ids = np.concatenate([byte_ids, merge_ids])
    if len(all_ids) and all_ids.min() < 0:
        raise VocabularyError(f"token ids must be >= 0, got {int(all_ids.min())}")
    if len(np.unique(byte_ids)) != 256:
        raise VocabularyError("the 256 single-byte tokens must have 256 distinct ids")
    size = int(all_ids.max()) + 1 if len(all_ids) else 256
    vocab: list = [None] * size
    for b, i in enumerate(byte_ids.tolist()):
        vocab[i] = bytes([b])
    for m, ((left, right), new) in enumerate(zip(merges.tolist(), merge_ids.tolist())):
        if not (0 <= left < size and 0 <= right < size) or vocab[left] is None or vocab[right] is None:
            raise VocabularyError(f"merge {m} is ({left}, {right}): its ids must be single bytes or "
                                  f"tokens made by earlier merges")
        if vocab[new] is not None:
            raise VocabularyError(f"merge {m} makes token id {new}, which is already "
                                  f"{vocab[new]!r} (duplicate id)")
        vocab[new] = vocab[left] + vocab[right]
    return vocab


class Tokenizer:
    def __init__(self, merges, pattern: str | None = None,
                 special_tokens: Mapping[str, int] | Iterable[str] | None = None, *,
                 merge_ids=None, byte_ids=None):
        merges = _as_ids(merges).reshape(-1, 2)
        merge_ids = np.arange(256, 256 + len(merges)) if merge_ids is None else _as_ids(merge_ids)
        byte_ids = np.arange(256) if byte_ids is None else _as_ids(byte_ids)
        if merge_ids.shape != (len(merges),) or byte_ids.shape != (256,):
            raise VocabularyError("merge_ids needs one id per merge and byte_ids 256 ids")
        self._vocab = _build_vocab(merges, merge_ids, byte_ids)
        self.merges = merges.astype(np.int32)
        self.merge_ids = merge_ids.astype(np.int32)
        self.byte_ids = byte_ids.astype(np.int32)
        self.pattern = resolve(pattern)
        self._regex = compile_pattern(self.pattern) if self.pattern is not None else None
        self.special_tokens = self._assign_special_ids(special_tokens)
        self._special_regexes: dict[frozenset, "regex.Pattern[str]"] = {}
        self._native = MergeEncoder(self.merges, self.merge_ids, self.byte_ids, self._vocab,
                                    {s.encode("utf-8"): i for s, i in self.special_tokens.items()})
        self._scanned = self.pattern_name in PATTERN_IDS
        if self._scanned:
            self._native.set_scanner(PATTERN_IDS[self.pattern_name], *char_classes())
        self._cache: dict[str, list[int]] = {}
        self.training_report = None     # set by the trainer

    @classmethod
    def from_ranks(cls, ranks: Mapping[bytes, int], pattern: str | None = None,
                   special_tokens: Mapping[str, int] | Iterable[str] | None = None,
                   source: str = "mergeable_ranks") -> "Tokenizer":
        """From tiktoken-style ``{token bytes: rank}``: the merges are recovered from the ranks."""
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
        return cls(merges, pattern, special_tokens, merge_ids=merge_ids, byte_ids=byte_ids)

    def _assign_special_ids(self, specials) -> dict[str, int]:
        if specials is None:
            return {}
        if not isinstance(specials, Mapping):
            specials = list(specials)
            if len(set(specials)) != len(specials):
                raise VocabularyError(f"special_tokens has duplicates: {specials}")
            specials = {s: self.n_base + i for i, s in enumerate(specials)}
        for s, i in specials.items():
            if not isinstance(s, str) or not s:
                raise VocabularyError(f"special token {s!r} must be a non-empty string")
            if not isinstance(i, (int, np.integer)) or i < 0:
                raise VocabularyError(f"special token {s!r} has id {i!r}; ids are non-negative integers")
            if i < len(self._vocab) and self._vocab[i] is not None:
                raise VocabularyError(f"special token {s!r} has id {i}, which is already the learned "
                                      f"token {self._vocab[i]!r}")
        if len(set(specials.values())) != len(specials):
            raise VocabularyError(f"special tokens share ids: {dict(specials)}")
        return {s: int(i) for s, i in specials.items()}

    # -- sizes and vocabulary -------------------------------------------------------------
    @property
    def n_base(self) -> int:
        """One more than the largest learned (non-special) id."""
        return len(self._vocab)

    @property
    def vocab_size(self) -> int:
        return max([self.n_base - 1, *self.special_tokens.values()]) + 1

    n_vocab = vocab_size

    @property
    def pattern_name(self) -> str:
        return name_of(self.pattern)

    def token_bytes(self, token: int) -> bytes:
        return self._native.decode_bytes([token])

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: token bytes -> id, for the bytes and the merges."""
        return {b: i for i, b in enumerate(self._vocab) if b is not None}

    # -- encoding -------------------------------------------------------------------------
    @staticmethod
    def _utf8(text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:   # lone surrogates become U+FFFD, as tiktoken does
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")

    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is None:
            ids = self._native.encode_chunk(self._utf8(chunk))
            if len(self._cache) < 1_000_000:
                self._cache[chunk] = ids
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of text; special tokens' text is encoded as ordinary text."""
        if self._scanned:
            return self._native.encode_text(self._utf8(text))
        if self._regex is None:
            return self._native.encode_chunk(self._utf8(text))
        out: list[int] = []
        for chunk in self._regex.findall(text):
            out.extend(self._encode_chunk(chunk))
        return out

    def _special_regex(self, tokens: AbstractSet[str]) -> "regex.Pattern[str]":
        key = frozenset(tokens)
        if key not in self._special_regexes:
            self._special_regexes[key] = special_splitter(tokens)
        return self._special_regexes[key]

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        """Like tiktoken's ``Encoding.encode``: special tokens in text raise unless allowed."""
        allowed = set(self.special_tokens) if allowed_special == "all" else set(allowed_special)
        unknown = allowed - set(self.special_tokens)
        if unknown:
            raise ValueError(f"allowed_special names tokens this tokenizer does not have: {sorted(unknown)}")
        disallowed = (set(self.special_tokens) - allowed) if disallowed_special == "all" else set(disallowed_special)
        if disallowed:
            found = self._special_regex(disallowed).search(text)
            if found:
                raise ValueError(
                    f"text contains the special token {found.group()!r} at character {found.start()}; "
                    f"pass allowed_special={{{found.group()!r}}} to encode it as a special token, or "
                    f"disallowed_special=() to encode it as text")
        if not allowed:
            return self.encode_ordinary(text)
        out: list[int] = []
        pos = 0
        for m in self._special_regex(allowed).finditer(text):
            out.extend(self.encode_ordinary(text[pos:m.start()]))
            out.append(self.special_tokens[m.group()])
            pos = m.end()
        out.extend(self.encode_ordinary(text[pos:]))
        return out

    def encode_batch(self, texts: Sequence[str], *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                     disallowed_special: Literal["all"] | Collection[str] = "all",
                     workers: int | None = None) -> list[list[int]]:
        """encode() of each text, on ``workers`` threads (native encoding runs without the GIL)."""
        def one(text: str) -> list[int]:
            return self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)

        workers = workers or os.cpu_count() or 1
        if workers == 1 or len(texts) < 2:
            return [one(t) for t in texts]
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, texts))

    # -- decoding -------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        try:
            return self._native.decode_bytes(ids)
        except TypeError:
            raise ValueError("decode takes a sequence of integer token ids") from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "pattern": self.pattern,
            "pattern_name": self.pattern_name,
            "vocab_size": self.vocab_size,
            "special_tokens": self.special_tokens,
        }
        if not np.array_equal(self.byte_ids, np.arange(256)):
            data["byte_ids"] = self.byte_ids.tolist()
        if not np.array_equal(self.merge_ids, np.arange(256, 256 + len(self.merges))):
            data["merge_ids"] = self.merge_ids.tolist()
        data["merges"] = self.merges.tolist()
        return data

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer as JSON, one merge per line."""
        data = self.to_dict()
        merges = data.pop("merges")
        head = json.dumps(data, ensure_ascii=False, indent=1)[:-2]
        body = ",\n".join(f"  [{left}, {right}]" for left, right in merges)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'{head},\n "merges": [\n{body}\n ]\n}}\n')

    @classmethod
    def from_dict(cls, data: dict, source: str = "tokenizer data") -> "Tokenizer":
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise TokenizerFileError(f"{source}: not a bpe_fast tokenizer file (no \"format\": \"{FORMAT_NAME}\")")
        if data.get("version") != FORMAT_VERSION:
            raise TokenizerFileError(f"{source}: format version {data.get('version')!r} is not supported "
                                     f"(this bpe_fast reads version {FORMAT_VERSION})")
        try:
            return cls(data["merges"], pattern=data.get("pattern"), special_tokens=data.get("special_tokens") or {},
                       merge_ids=data.get("merge_ids"), byte_ids=data.get("byte_ids"))
        except KeyError as exc:
            raise TokenizerFileError(f"{source}: missing field {exc}") from None
        except (ValueError, TypeError) as exc:
            raise TokenizerFileError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            raise TokenizerFileError(f"{path}: no such file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TokenizerFileError(f"{path}: not valid JSON: {exc}") from None
        return cls.from_dict(data, source=str(path))

    # -- other formats (bpe_fast/formats.py) ----------------------------------------------
    @classmethod
    def from_tiktoken(cls, path, pattern: str | None = None, special_tokens=None) -> "Tokenizer":
        from .formats import from_tiktoken
        return from_tiktoken(path, pattern, special_tokens)

    @classmethod
    def from_gpt2(cls, encoder_json, vocab_bpe) -> "Tokenizer":
        from .formats import from_gpt2
        return from_gpt2(encoder_json, vocab_bpe)

    @classmethod
    def from_huggingface(cls, path) -> "Tokenizer":
        from .formats import from_huggingface
        return from_huggingface(path)

    @classmethod
    def from_minbpe(cls, path) -> "Tokenizer":
        from .formats import from_minbpe
        return from_minbpe(path)

    def save_tiktoken(self, path) -> None:
        from .formats import save_tiktoken
        save_tiktoken(self, path)

    def to_tiktoken(self, name: str = "bpe_fast"):
        from .formats import to_tiktoken
        return to_tiktoken(self, name)

    def save_huggingface(self, path) -> None:
        from .formats import save_huggingface
        save_huggingface(self, path)

    def save_minbpe(self, prefix) -> None:
        from .formats import save_minbpe
        save_minbpe(self, prefix)

    def save_gpt2(self, encoder_json, vocab_bpe) -> None:
        from .formats import save_gpt2
        save_gpt2(self, encoder_json, vocab_bpe)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Tokenizer) and np.array_equal(self.merges, other.merges)
                and np.array_equal(self.merge_ids, other.merge_ids) and np.array_equal(self.byte_ids, other.byte_ids)
                and self.pattern == other.pattern and self.special_tokens == other.special_tokens)

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"pattern={self.pattern_name}, special_tokens={len(self.special_tokens)})")
