"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

Token ids: 0..255 are the bytes, 256 + i is the token made by merge i, and special tokens
come after the merges unless their ids are given.
"""
from __future__ import annotations

import json
import os
from typing import AbstractSet, Collection, Iterable, Literal, Mapping

import numpy as np
import regex

from ._encode import MergeEncoder
from .errors import BpeFastError
from .patterns import compile_pattern, name_of, resolve

FORMAT_NAME = "bpe_fast.tokenizer"
FORMAT_VERSION = 1


class TokenizerFileError(BpeFastError):
    """A tokenizer file that is not ours, of an unknown version, or inconsistent."""


def _check_merges(merges) -> np.ndarray:
    arr = np.ascontiguousarray(np.asarray(merges, dtype=np.int64).reshape(-1, 2))
    limit = 256 + np.arange(len(arr))          # merge i may only use ids below 256 + i
    bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= limit[:, None]).any(axis=1))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"merge {i} is {tuple(arr[i])}: its ids must lie in 0..{255 + i} "
                         f"(bytes, then tokens made by earlier merges)")
    return arr.astype(np.int32)


class Tokenizer:
    def __init__(self, merges, pattern: str | None = None,
                 special_tokens: Mapping[str, int] | Iterable[str] | None = None):
        self.merges = _check_merges(merges)
        self.pattern = resolve(pattern)
        self._regex = compile_pattern(self.pattern) if self.pattern is not None else None
        self._vocab = [bytes([i]) for i in range(256)]
        for left, right in self.merges.tolist():
            self._vocab.append(self._vocab[left] + self._vocab[right])
        self.special_tokens = self._assign_special_ids(special_tokens)
        self._special_by_id = {i: s for s, i in self.special_tokens.items()}
        n = len(self.merges)
        self._encoder = MergeEncoder(self.merges, np.arange(256, 256 + n, dtype=np.int32),
                                     np.arange(256, dtype=np.int32))
        self._cache: dict[str, list[int]] = {}
        self.training_report = None     # set by the trainer

    def _assign_special_ids(self, specials) -> dict[str, int]:
        if specials is None:
            return {}
        if not isinstance(specials, Mapping):
            specials = list(specials)
            if len(set(specials)) != len(specials):
                raise ValueError(f"special_tokens has duplicates: {specials}")
            specials = {s: self.n_base + i for i, s in enumerate(specials)}
        for s, i in specials.items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special token {s!r} must be a non-empty string")
            if i < self.n_base:
                raise ValueError(f"special token {s!r} has id {i}, which is a learned token's id "
                                 f"(ids below {self.n_base} are bytes and merges)")
        if len(set(specials.values())) != len(specials):
            raise ValueError(f"special tokens share ids: {dict(specials)}")
        return dict(specials)

    # -- sizes and vocabulary -------------------------------------------------------------
    @property
    def n_base(self) -> int:
        """Number of learned tokens: 256 bytes plus one per merge."""
        return 256 + len(self.merges)

    @property
    def vocab_size(self) -> int:
        return max([self.n_base - 1, *self.special_tokens.values()]) + 1

    @property
    def pattern_name(self) -> str:
        return name_of(self.pattern)

    def token_bytes(self, token: int) -> bytes:
        if 0 <= token < self.n_base:
            return self._vocab[token]
        if token in self._special_by_id:
            return self._special_by_id[token].encode("utf-8")
        raise ValueError(f"token id {token} is out of range (vocabulary: 0..{self.vocab_size - 1})")

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: token bytes -> id, for the bytes and the merges."""
        return {b: i for i, b in enumerate(self._vocab)}

    # -- encoding -------------------------------------------------------------------------
    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is None:
            ids = self._encoder.encode_chunk(chunk.encode("utf-8"))
            if len(self._cache) < 1_000_000:
                self._cache[chunk] = ids
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of text; special tokens' text is encoded as ordinary text."""
        if self._regex is None:
            return self._encoder.encode_chunk(text.encode("utf-8")) if text else []
        out: list[int] = []
        for chunk in self._regex.findall(text):
            out.extend(self._encode_chunk(chunk))
        return out

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        """Like tiktoken's ``Encoding.encode``: special tokens in text raise unless allowed."""
        allowed = set(self.special_tokens) if allowed_special == "all" else set(allowed_special)
        unknown = allowed - set(self.special_tokens)
        if unknown:
            raise ValueError(f"allowed_special names tokens this tokenizer does not have: {sorted(unknown)}")
        disallowed = (set(self.special_tokens) - allowed) if disallowed_special == "all" else set(disallowed_special)
        if disallowed:
            found = regex.search("|".join(map(regex.escape, sorted(disallowed, key=len, reverse=True))), text)
            if found:
                raise ValueError(
                    f"text contains the special token {found.group()!r} at character {found.start()}; "
                    f"pass allowed_special={{{found.group()!r}}} to encode it as a special token, or "
                    f"disallowed_special=() to encode it as text")
        if not allowed:
            return self.encode_ordinary(text)
        splitter = regex.compile("|".join(map(regex.escape, sorted(allowed, key=len, reverse=True))))
        out: list[int] = []
        pos = 0
        for m in splitter.finditer(text):
            out.extend(self.encode_ordinary(text[pos:m.start()]))
            out.append(self.special_tokens[m.group()])
            pos = m.end()
        out.extend(self.encode_ordinary(text[pos:]))
        return out

    # -- decoding -------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        vocab, n_base = self._vocab, self.n_base
        try:
            return b"".join(vocab[i] if 0 <= i < n_base else self.token_bytes(i) for i in ids)
        except TypeError:
            raise ValueError("decode takes a sequence of integer token ids") from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "pattern": self.pattern,
            "pattern_name": self.pattern_name,
            "vocab_size": self.vocab_size,
            "special_tokens": self.special_tokens,
            "merges": self.merges.tolist(),
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer as JSON, one merge per line (with the token it makes) for humans."""
        head = self.to_dict()
        merges = head.pop("merges")
        lines = [json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ',\n "merges": [']
        for i, (left, right) in enumerate(merges):
            sep = "," if i + 1 < len(merges) else ""
            lines.append(f"\n  [{left}, {right}]{sep}")
        lines.append("\n ]\n}\n")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("".join(lines))

    @classmethod
    def from_dict(cls, data: dict, source: str = "tokenizer data") -> "Tokenizer":
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise TokenizerFileError(f"{source}: not a bpe_fast tokenizer file (no \"format\": \"{FORMAT_NAME}\")")
        if data.get("version") != FORMAT_VERSION:
            raise TokenizerFileError(f"{source}: format version {data.get('version')!r} is not supported "
                                     f"(this bpe_fast reads version {FORMAT_VERSION})")
        try:
            return cls(data["merges"], pattern=data.get("pattern"), special_tokens=data.get("special_tokens") or {})
        except KeyError as exc:
            raise TokenizerFileError(f"{source}: missing field {exc}") from None
        except ValueError as exc:
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

    def __eq__(self, other) -> bool:
        return (isinstance(other, Tokenizer) and np.array_equal(self.merges, other.merges)
                and self.pattern == other.pattern and self.special_tokens == other.special_tokens)

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"pattern={self.pattern_name}, special_tokens={len(self.special_tokens)})")
