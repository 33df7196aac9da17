"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

A vocabulary is 256 single-byte tokens and a list of merges in rank order: merge m joins
(left id, right id) into token ``merge_ids[m]``. Trained tokenizers number bytes 0..255 and
merge m 256 + m; vocabularies loaded from other tools keep their own ids (tiktoken ranks,
GPT-2's encoder.json, ...). Special tokens come after the learned ids unless given ids.

Encoding follows tiktoken's rule (see _encode.pyx); with a named pattern the whole text is split
and encoded natively, otherwise ``regex.findall`` splits and each chunk is encoded natively.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Collection, Iterable, Literal, Mapping, Sequence

import numpy as np
import regex

from . import formats
from ._encode import MergeEncoder
from ._pretok import PATTERN_IDS
from .errors import EncodingError, VocabularyError, naming_file
from .formats import Vocabulary
from .patterns import compile_pattern, name_of, resolve, whole_matches
from .pretokenize import char_classes, special_splitter, special_token_list


def _as_ids(values, what: str) -> np.ndarray:
    """values as an int64 array; anything but integers (floats, strings, ragged lists) is refused."""
    try:
        ids = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise VocabularyError(f"{what} must be integer ids: {exc}") from None
    if ids.size and ids.dtype.kind not in "iu":
        raise VocabularyError(f"{what} must be integer ids, got values of type {ids.dtype}")
    return np.ascontiguousarray(ids, dtype=np.int64)


# Ids index arrays (int32 in the native encoder), so they must be dense enough: at most this
# many ids may go unused. A file whose ids run to 10**9 is corrupt, not a vocabulary to allocate.
MAX_UNUSED_IDS = 1 << 20


def _check_id_range(largest: int, defined: int, what: str) -> None:
    if largest >= 2**31 - 1 or largest >= defined + MAX_UNUSED_IDS:
        raise VocabularyError(f"{what} {largest} is out of range: {defined:,} tokens need ids below "
                              f"{defined + MAX_UNUSED_IDS:,} (at most {MAX_UNUSED_IDS:,} unused ids)")


def _build_vocab(merges: np.ndarray, merge_ids: np.ndarray, byte_ids: np.ndarray) -> list:
    """id -> token bytes (None where no token has the id), checking that ids are consistent."""
    all_ids = np.concatenate([byte_ids, merge_ids])
    if len(all_ids) and all_ids.min() < 0:
        raise VocabularyError(f"token ids must be >= 0, got {int(all_ids.min())}")
    if len(np.unique(byte_ids)) != 256:
        raise VocabularyError("the 256 single-byte tokens must have 256 distinct ids")
    _check_id_range(int(all_ids.max()), len(all_ids), "token id")
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
        merges = _as_ids(merges, "merges")
        if merges.size % 2 or (merges.ndim != 2 and merges.size):
            raise VocabularyError(f"merges must be pairs of ids, got an array of shape {merges.shape}")
        merges = merges.reshape(-1, 2)
        merge_ids = np.arange(256, 256 + len(merges)) if merge_ids is None else _as_ids(merge_ids, "merge_ids")
        byte_ids = np.arange(256) if byte_ids is None else _as_ids(byte_ids, "byte_ids")
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
    def from_vocabulary(cls, vocab: Vocabulary) -> "Tokenizer":
        """From what a format reader returns; a bad vocabulary read from a file names the file."""
        with naming_file(vocab.source):
            return cls(vocab.merges, vocab.pattern, vocab.special_tokens,
                       merge_ids=vocab.merge_ids, byte_ids=vocab.byte_ids)

    @classmethod
    def from_ranks(cls, ranks: Mapping[bytes, int], pattern: str | None = None,
                   special_tokens: Mapping[str, int] | Iterable[str] | None = None) -> "Tokenizer":
        """From tiktoken-style ``{token bytes: rank}``: the merges are recovered from the ranks."""
        return cls.from_vocabulary(formats.vocabulary_from_ranks(ranks, pattern, special_tokens))

    def _assign_special_ids(self, specials) -> dict[str, int]:
        if specials is None:
            return {}
        if not isinstance(specials, Mapping):
            specials = {s: self.n_base + i for i, s in enumerate(special_token_list(specials))}
        for s, i in specials.items():
            if not isinstance(s, str) or not s:
                raise VocabularyError(f"special token {s!r} must be a non-empty string")
            if not isinstance(i, (int, np.integer)) or isinstance(i, bool) or i < 0:
                raise VocabularyError(f"special token {s!r} has id {i!r}; ids are non-negative integers")
            _check_id_range(int(i), len(self._vocab) + len(specials), f"special token {s!r} has id")
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
        for chunk in whole_matches(self._regex, text):
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
        for name, value in (("allowed_special", allowed_special), ("disallowed_special", disallowed_special)):
            if isinstance(value, str) and value != "all":
                raise EncodingError(f"{name} takes \"all\" or a set of special tokens, not one string: "
                                    f"write {name}={{{value!r}}}")
        allowed = set(self.special_tokens) if allowed_special == "all" else set(allowed_special)
        unknown = allowed - set(self.special_tokens)
        if unknown:
            raise EncodingError(f"allowed_special names tokens this tokenizer does not have: {sorted(unknown)}")
        disallowed = (set(self.special_tokens) - allowed) if disallowed_special == "all" else set(disallowed_special)
        if disallowed:
            found = self._special_regex(disallowed).search(text)
            if found:
                raise EncodingError(
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
            raise EncodingError("decode takes a sequence of integer token ids") from None
        except ValueError as exc:      # an id that is not in the vocabulary
            raise EncodingError(str(exc)) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    # -- files: bpe_fast's JSON and the other formats (formats.py) ----------------------------
    def to_dict(self) -> dict:
        return formats.bpe_fast_dict(self)

    @classmethod
    def from_dict(cls, data: dict, source: str | None = None) -> "Tokenizer":
        return cls.from_vocabulary(formats.bpe_fast_vocabulary(data, source))

    def save(self, path: str | os.PathLike) -> None:
        """Write bpe_fast's JSON, one merge per line."""
        formats.write_bpe_fast(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """A tokenizer saved with ``save``. (``bpe_fast.load`` opens any format, or a named encoding.)"""
        return cls.from_vocabulary(formats.read_bpe_fast(path))

    @classmethod
    def from_tiktoken(cls, path, pattern: str | None = None, special_tokens=None) -> "Tokenizer":
        return cls.from_vocabulary(formats.read_tiktoken(path, pattern, special_tokens))

    @classmethod
    def from_gpt2(cls, encoder_json, vocab_bpe) -> "Tokenizer":
        return cls.from_vocabulary(formats.read_gpt2(encoder_json, vocab_bpe))

    @classmethod
    def from_huggingface(cls, path) -> "Tokenizer":
        return cls.from_vocabulary(formats.read_huggingface(path))

    @classmethod
    def from_minbpe(cls, path) -> "Tokenizer":
        return cls.from_vocabulary(formats.read_minbpe(path))

    def save_tiktoken(self, path) -> None:
        formats.write_tiktoken(self, path)

    def to_tiktoken(self, name: str = "bpe_fast"):
        return formats.to_tiktoken(self, name)

    def save_huggingface(self, path) -> None:
        formats.write_huggingface(self, path)

    def save_minbpe(self, prefix) -> None:
        formats.write_minbpe(self, prefix)

    def save_gpt2(self, encoder_json, vocab_bpe) -> None:
        formats.write_gpt2(self, encoder_json, vocab_bpe)

    def truncated(self, vocab_size: int) -> "Tokenizer":
        """The tokenizer a shorter training would have given: the first merges only (merges are a
        prefix of each other), as many as make ``vocab_size`` tokens with the special tokens,
        which keep their order and follow the learned ids, as a fresh training numbers them."""
        specials = sorted(self.special_tokens, key=self.special_tokens.get)
        n = vocab_size - 256 - len(specials)
        if not isinstance(vocab_size, (int, np.integer)) or n < 0 or n > len(self.merges):
            raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                                  f"{256 + len(specials)}..{256 + len(self.merges) + len(specials)} tokens")
        merge_ids = self.merge_ids[:n]
        top = int(max(self.byte_ids.max(), merge_ids.max() if n else 0))
        return Tokenizer(self.merges[:n], self.pattern, {s: top + 1 + k for k, s in enumerate(specials)},
                         merge_ids=merge_ids, byte_ids=self.byte_ids)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Tokenizer) and np.array_equal(self.merges, other.merges)
                and np.array_equal(self.merge_ids, other.merge_ids) and np.array_equal(self.byte_ids, other.byte_ids)
                and self.pattern == other.pattern and self.special_tokens == other.special_tokens)

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"pattern={self.pattern_name}, special_tokens={len(self.special_tokens)})")
