"""tiktoken's ``Encoding`` surface on a Tokenizer, and character offsets of tokens.

``Tokenizer.decode_single_token_bytes``, ``encode_single_token``, ``decode_tokens_bytes``,
``token_byte_values``, ``is_special_token``, ``decode_with_offsets`` and ``encode_with_offsets``
are short delegations to the functions here, which take the tokenizer (this module never
imports tokenizer.py: the dependency runs tokenizer -> here). Each gives what tiktoken's method
of the same name gives for the same vocabulary (tests/test_tiktoken_surface.py holds them to
tiktoken on the named encodings), with the same kind of exception: an id or token the
vocabulary does not have is an ``UnknownTokenError``, which is a ``KeyError`` as tiktoken's is
(and an ``EncodingError``). Two deliberate differences: an id that is not an integer (a bool,
a float) is an ``ArgumentTypeError`` (a TypeError) where tiktoken takes ``True`` as 1 or asserts,
and a negative id or one past 2**32 is unknown (``UnknownTokenError``), where tiktoken raises
OverflowError.

Offsets are tiktoken's (``Encoding.decode_with_offsets``): each token's offset is the index, in
the text, of the character its first byte belongs to. A token that starts inside a character
(its first byte a UTF-8 continuation byte) gets that character's index, as does the token that
started the character, so offsets never decrease and may repeat.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

import numpy as np

from .. import arguments
from ..errors import ArgumentTypeError, UnknownTokenError
from .encoder import utf8


class TokenTable:
    """Every id's bytes, learned and special, and their lengths: the lookups the surface makes,
    without the native encoder. Made once per tokenizer, on first use (``Tokenizer._tokens``)."""

    def __init__(self, vocab: list[bytes | None], special_tokens: Mapping[str, int]):
        size = max(len(vocab), max(special_tokens.values(), default=-1) + 1)
        spelled = list(vocab) + [None] * (size - len(vocab))
        for token, i in special_tokens.items():
            spelled[i] = token.encode("utf-8")
        self.spelled: list[bytes | None] = spelled
        self.lengths = np.fromiter((0 if b is None else len(b) for b in spelled), np.int64, size)
        self.special_ids = frozenset(special_tokens.values())
        self.specials_by_bytes = {token.encode("utf-8"): i for token, i in special_tokens.items()}

    def bytes_of(self, token) -> bytes:
        """The bytes of one id (special tokens too), else UnknownTokenError (a KeyError)."""
        i = arguments.integer(token, "token")
        found = self.spelled[i] if 0 <= i < len(self.spelled) else None
        if found is None:
            raise UnknownTokenError(f"token id {i} is not in the vocabulary (its ids run 0..{len(self.spelled) - 1:,}"
                                    f"{' with gaps' if None in self.spelled else ''})")
        return found


def default_name(tok) -> str:
    """The name of a tokenizer no one named: ``bpe_fast_<pattern>_<vocab size>_<8 hex digits>``,
    the digits the start of a SHA-256 of everything that decides its ids (merges and ids,
    supermerges, a variant's events, pattern, special tokens, normalization). So equal
    tokenizers have equal names, saved and loaded again too, and different ones (other special
    tokens, as tiktoken asks of names) differ."""
    digest = hashlib.sha256()
    parts = [tok.merges, tok.merge_ids, tok.byte_ids, tok.supermerges, tok.supermerge_ids]
    if tok.events is not None:
        parts.append(tok.events)
    for part in parts:
        array = np.ascontiguousarray(part, np.int32)
        digest.update(f"{array.shape}".encode())
        digest.update(array.tobytes())
    digest.update(json.dumps([tok.pattern, sorted(tok.special_tokens.items()), tok.normalize]).encode("utf-8"))
    return f"bpe_fast_{tok.pattern_name}_{tok.vocab_size}_{digest.hexdigest()[:8]}"


def _id_array(tokens) -> np.ndarray | None:
    """The ids as a 1-d integer array, or None when they are anything else (each then checked alone)."""
    try:
        ids = np.asarray(tokens)
    except (ValueError, TypeError):          # ragged, or not a sequence at all
        return None
    return ids if ids.ndim == 1 and ids.dtype.kind in "iu" else None


def decode_tokens_bytes(table: TokenTable, tokens: Iterable[int]) -> list[bytes]:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise ArgumentTypeError(f"tokens must be a sequence of integer ids, got {type(tokens).__name__}")
    if not isinstance(tokens, (list, tuple, np.ndarray)):
        tokens = list(tokens)                                   # read once (a generator)
    ids = _id_array(tokens)
    if ids is None:
        return [table.bytes_of(token) for token in tokens]
    if not len(ids) or (ids.min() >= 0 and ids.max() < len(table.spelled)):
        found = [table.spelled[i] for i in ids.tolist()]        # in range: one list lookup each
        if None not in found:
            return found
    return [table.bytes_of(token) for token in ids.tolist()]   # names the first unknown id


def encode_single_token(tok, table: TokenTable, text_or_bytes: str | bytes) -> int:
    """The id of the one token whose text (str) or bytes are given, special tokens included;
    else UnknownTokenError (a KeyError), as tiktoken. The text is looked up as given: a
    tokenizer that normalizes does not normalize it (the vocabulary holds tokens, not text)."""
    if isinstance(text_or_bytes, str):
        try:
            data = text_or_bytes.encode("utf-8")
        except UnicodeEncodeError:
            raise UnknownTokenError(f"{text_or_bytes!r} is no token: it holds a lone surrogate, which has no "
                                    f"UTF-8") from None
    elif isinstance(text_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(text_or_bytes)
    else:
        raise ArgumentTypeError(f"encode_single_token takes a str or bytes, got {type(text_or_bytes).__name__}")
    found = tok._ids_of_tokens().get(data)           # learned tokens first, as tiktoken looks
    if found is None:
        found = table.specials_by_bytes.get(data)
    if found is None:
        raise UnknownTokenError(f"{text_or_bytes!r} is not a token of this vocabulary (encode() splits text "
                                f"into tokens)")
    return found


def is_special_token(table: TokenTable, token: int) -> bool:
    return arguments.integer(token, "token") in table.special_ids


def char_offsets(data: bytes, lengths: np.ndarray) -> np.ndarray:
    """For tokens of these byte lengths, in order, that spell the UTF-8 ``data``: each one's
    offset (see the module docstring), as tiktoken's loop computes it, in NumPy with nothing per
    token in Python. Counting the bytes that start a character (no continuation byte, 10xxxxxx)
    up to and including a token's first byte gives one more than the index of the character
    that byte belongs to."""
    if not len(lengths):
        return np.zeros(0, np.int64)
    starts = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    starts_char = (np.frombuffer(data, np.uint8) & 0xC0) != 0x80
    counted = np.cumsum(starts_char, dtype=np.int32 if len(data) < 2**31 else np.int64)
    offsets = counted[starts].astype(np.int64)
    offsets -= 1
    return np.maximum(offsets, 0, out=offsets)


def decode_with_offsets(table: TokenTable, tokens: Iterable[int]) -> tuple[str, list[int]]:
    """tiktoken's ``decode_with_offsets``: the text and each token's character offset. Bytes
    that are not UTF-8 raise UnicodeDecodeError, as tiktoken's do (``decode`` replaces them)."""
    pieces = decode_tokens_bytes(table, tokens)
    data = b"".join(pieces)
    offsets = char_offsets(data, np.fromiter(map(len, pieces), np.int64, len(pieces)))
    return data.decode("utf-8"), offsets.tolist()


def encode_with_offsets(tok, table: TokenTable, text: str, allowed_special, disallowed_special
                        ) -> tuple[list[int], list[int]]:
    """``encode``'s ids, and each token's character offset in ``text`` (in its normal form, for a
    tokenizer that normalizes: the text ``decode`` gives back)."""
    ids = tok.encode_to_numpy(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
    data = utf8(tok._as_text(text, "text"))
    return ids.tolist(), char_offsets(data, table.lengths[ids]).tolist()
