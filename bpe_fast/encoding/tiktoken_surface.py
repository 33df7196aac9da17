"""tiktoken's ``Encoding`` surface and Hugging Face's names on a Tokenizer, and character offsets
of tokens.

``TiktokenSurface`` is a mixin that ``Tokenizer`` inherits: ``name``, ``max_token_value``,
``eot_token``, ``special_tokens_set``, ``decode_single_token_bytes``, ``encode_single_token``,
``decode_tokens_bytes``, ``token_byte_values``, ``is_special_token``, ``decode_batch``,
``decode_bytes_batch``, ``decode_with_offsets`` and ``encode_with_offsets`` (tiktoken's),
``len()``, ``get_vocab``, ``get_vocab_size``, ``token_to_id`` and ``id_to_token`` (Hugging
Face's), and ``visualize`` (visualize.py). They are short delegations to the functions here,
which take the tokenizer (this module never imports tokenizer.py: the dependency runs
tokenizer -> here). Each tiktoken name gives what tiktoken's method of the same name gives
for the same vocabulary (tests/encoding/test_tiktoken_surface.py holds them to
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
from typing import TYPE_CHECKING, Any, Callable, Literal
from collections.abc import Collection, Iterable, Mapping, Set as AbstractSet

import numpy as np

from .. import arguments
from ..bytelevel import str_to_token, token_to_str
from ..errors import ArgumentTypeError, EncodingError, TokenizerFileError, UnknownTokenError
from .encoder import utf8
from .visualize import TokenView, token_view


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

    def offsets(self, data: bytes, ids: np.ndarray) -> np.ndarray:
        """Each token's character offset in ``data``, the UTF-8 the ids spell (``char_offsets``)."""
        return char_offsets(data, self.lengths[ids])


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
    return ids.tolist(), table.offsets(data, ids).tolist()


class TiktokenSurface:
    """The names tiktoken's and Hugging Face's users reach for, as a mixin of ``Tokenizer``
    (which gives it the vocabulary and ``encode_to_numpy``; see the module docstring).

    The examples use a tokenizer of two merges: 256 is b"hi", 257 b" hi"; 258 is <|endoftext|>.
    """
    _name: str | None = None        # a named encoding's name (registry.load_encoding), or one given
    _token_table: TokenTable | None = None      # every id's bytes, made on first use
    _ids_by_bytes: dict[bytes, int] | None = None     # token_to_id's map, made on first use

    if TYPE_CHECKING:               # what the class it is mixed into gives
        _vocab: list[bytes | None]
        special_tokens: dict[str, int]
        _as_text: Callable[[Any, str], str]

        @property
        def vocab_size(self) -> int: ...
        def mergeable_ranks(self) -> dict[bytes, int]: ...
        def decode(self, ids: Iterable[int], errors: str = ...) -> str: ...
        def decode_bytes(self, ids: Iterable[int]) -> bytes: ...
        def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = ...,
                            disallowed_special: Literal["all"] | Collection[str] = ...) -> np.ndarray: ...

    @property
    def name(self) -> str:
        """tiktoken's ``Encoding.name``: a named encoding's ("cl100k_base"), else one given
        (``tok.name = "mine"``), else ``bpe_fast_<pattern>_<vocab size>_<8 hex digits>`` from a
        hash of the vocabulary (``default_name``): equal tokenizers, equal names.

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.name.startswith("bpe_fast_gpt2_259_")
        True
        >>> tok.name = "mine"; tok.name
        'mine'
        """
        return self._name if self._name is not None else default_name(self)

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(f"name must be a non-empty str, got {value!r}")
        self._name = value

    @property
    def max_token_value(self) -> int:
        """The largest id, learned or special (tiktoken's; ``n_vocab`` is one more).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).max_token_value
        258
        """
        return self.vocab_size - 1

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (tiktoken's name).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).eot_token
        258
        """
        if "<|endoftext|>" not in self.special_tokens:
            raise EncodingError(f"this tokenizer has no <|endoftext|> special token (its special tokens: "
                                f"{', '.join(self.special_tokens) or 'none'})")
        return self.special_tokens["<|endoftext|>"]

    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens, as a set.

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).special_tokens_set
        {'<|endoftext|>'}
        """
        return set(self.special_tokens)

    def _tokens(self) -> TokenTable:
        if self._token_table is None:
            self._token_table = TokenTable(self._vocab, self.special_tokens)
        return self._token_table

    def _ids_of_tokens(self) -> dict[bytes, int]:
        if self._ids_by_bytes is None:
            self._ids_by_bytes = self.mergeable_ranks()
        return self._ids_by_bytes

    def is_special_token(self, token: int) -> bool:
        """Is the id a special token's?

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.is_special_token(258), tok.is_special_token(257)
        (True, False)
        """
        return is_special_token(self._tokens(), token)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id, special tokens too; an unknown id is a KeyError (UnknownTokenError).

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.decode_single_token_bytes(257), tok.decode_single_token_bytes(258)
        (b' hi', b'<|endoftext|>')
        """
        return self._tokens().bytes_of(token)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """Each id's bytes: the tokens as they split the text.

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode_tokens_bytes([256, 257, 33])
        [b'hi', b' hi', b'!']
        """
        return decode_tokens_bytes(self._tokens(), tokens)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token whose text or bytes these are (special tokens too), else a KeyError.

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.encode_single_token(" hi"), tok.encode_single_token(b"hi"), tok.encode_single_token("<|endoftext|>")
        (257, 256, 258)
        """
        return encode_single_token(self, self._tokens(), text_or_bytes)

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every learned token, sorted (special tokens aside), as tiktoken lists them.

        >>> from bpe_fast import Tokenizer
        >>> values = Tokenizer([(104, 105), (32, 256)], "gpt2").token_byte_values()
        >>> len(values), values[:2], b" hi" in values
        (258, [b'\\x00', b'\\x01'], True)
        """
        return sorted(self._ids_of_tokens())

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace") -> list[str]:
        """``decode`` of each list of ids (tiktoken's name).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode_batch([[256], [257, 33]])
        ['hi', ' hi!']
        """
        return [self.decode(ids, errors) for ids in batch]

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]]) -> list[bytes]:
        """``decode_bytes`` of each list of ids (tiktoken's name).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode_bytes_batch([[256], [257, 33]])
        [b'hi', b' hi!']
        """
        return [self.decode_bytes(ids) for ids in batch]

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """The text and each token's character offset in it (the module docstring says which
        character a token starting inside one gets); invalid UTF-8 raises UnicodeDecodeError.

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode_with_offsets([256, 257, 33])
        ('hi hi!', [0, 2, 5])
        """
        return decode_with_offsets(self._tokens(), tokens)

    def encode_with_offsets(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                            disallowed_special: Literal["all"] | Collection[str] = "all"
                            ) -> tuple[list[int], list[int]]:
        """``encode``'s ids and each token's character offset in ``text``: the index of the
        character its first byte belongs to (as ``decode_with_offsets`` gives them).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").encode_with_offsets("hé hi")
        ([104, 195, 169, 257], [0, 1, 1, 2])
        """
        return encode_with_offsets(self, self._tokens(), text, allowed_special, disallowed_special)

    def visualize(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = "all",
                  disallowed_special: Literal["all"] | Collection[str] = "all") -> TokenView:
        """The tokens of ``text`` to look at: one coloured span per token in a notebook, colours
        when printed (visualize.py). Special tokens are allowed by default, and shown apart.

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").visualize("hi hi!").plain()
        'hi| hi|!'
        """
        return token_view(self, text, allowed_special, disallowed_special)

    # -- Hugging Face's names ----------------------------------------------------------------
    def __len__(self) -> int:
        """The number of tokens, learned and special (the vocab_size, where no id goes unused).

        >>> from bpe_fast import Tokenizer
        >>> len(Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]))
        259
        """
        return len(self.mergeable_ranks()) + len(self.special_tokens)

    def get_vocab(self) -> dict[str, int]:
        """{token: id} as Hugging Face spells it: learned tokens in GPT-2's byte-level alphabet
        ("Ġhi" for b" hi"), special tokens as they are.

        >>> from bpe_fast import Tokenizer
        >>> vocab = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).get_vocab()
        >>> vocab["Ġhi"], vocab["Ġ"], vocab["<|endoftext|>"]
        (257, 32, 258)
        """
        vocab = {token_to_str(token): i for token, i in self.mergeable_ranks().items()}
        vocab.update(self.special_tokens)
        return vocab

    def get_vocab_size(self) -> int:
        """Hugging Face's ``len``.

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).get_vocab_size()
        259
        """
        return len(self)

    def token_to_id(self, token: str) -> int | None:
        """The id of a token spelled as ``get_vocab`` spells it, or None (Hugging Face's).

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.token_to_id("Ġhi"), tok.token_to_id("<|endoftext|>"), tok.token_to_id("hello")
        (257, 258, None)
        """
        if token in self.special_tokens:
            return self.special_tokens[token]
        try:
            return self._ids_of_tokens().get(str_to_token(token, "token"))
        except TokenizerFileError:            # a character outside the byte-level alphabet
            return None

    def id_to_token(self, token_id: int) -> str | None:
        """The token of an id, spelled as ``get_vocab`` spells it, or None (Hugging Face's).

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.id_to_token(257), tok.id_to_token(258), tok.id_to_token(1000)
        ('Ġhi', '<|endoftext|>', None)
        """
        for token, i in self.special_tokens.items():
            if i == token_id:
                return token
        learned = self._vocab[token_id] if 0 <= token_id < len(self._vocab) else None
        return None if learned is None else token_to_str(learned)
