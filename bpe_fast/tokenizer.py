"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

A vocabulary is 256 single-byte tokens and merges in rank order: merge m joins (left id, right
id) into token ``merge_ids[m]`` (trained: 256 + m; loaded: the file's ids). Special tokens come
after the learned ids unless given ids. encoding/vocab.py checks the parts and spells the tokens.
A second level, supermerges, joins runs of chunks that are one token each (BoundlessBPE); a
variant's tokenizer (training/variants/) is this class or a subclass (``variant`` says which).

Every encode and decode is one call of the tokenizer's encoder (encoding/encoder.py: native for
a named pattern or none, the regex fallback otherwise), built on first use by ``encoder_for``.
Two mixins add tiktoken's and Hugging Face's names (``TiktokenSurface``, tiktoken_surface.py)
and conversions and the old per-format methods (``FormatMethods``, formats/_methods.py).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Literal
from collections.abc import Collection, Iterable, Mapping, Sequence, Set as AbstractSet

import numpy as np

from . import arguments
from .encoding.encoder import (OUTPUT_ARRAY, OUTPUT_COUNT, OUTPUT_LIST, Encoder, build, check_error_handler,
                                encoder_for, text_list, text_taker)
from .encoding.specials import allowed_and_disallowed, disallowed_error
from .encoding.tiktoken_surface import TiktokenSurface
from .encoding import vocab as vocabulary
from .encoding.vocab import checked_parts, special_ids, spell
from .encoding._encode import MergeEncoder
from .errors import EncodingError, VocabularyError, naming_file
from .formats import Vocabulary, variant_parts
from .formats._methods import FormatMethods
from .pretokenize.splitter import Splitter, check_normal_specials

_AllOr = Literal["all"]       # allowed_special= and disallowed_special= take "all" or a set of special tokens
_NONE: frozenset[str] = frozenset()


class Tokenizer(TiktokenSurface, FormatMethods):
    """A byte-level BPE tokenizer: merges in rank order, a pre-tokenization pattern, special tokens.

    Made by training (``bpe_fast.train``), by loading (``bpe_fast.load``, ``Tokenizer.load``), or
    from its parts: ``Tokenizer(merges, pattern, special_tokens, merge_ids=, byte_ids=, normalize=)``:
    merge m joins the pair ``merges[m]`` into ``merge_ids[m]`` (default 256 + m), byte b is
    ``byte_ids[b]`` (default b); special tokens are a list (ids after the learned ones) or a dict
    of ids; ``normalize`` ("nfc", "nfkc") is the normal form every text is put in before it is
    encoded (special tokens must be in it already). A bad vocabulary is a VocabularyError.
    Encoding follows tiktoken's ``Encoding`` (the same ids for the same vocabulary); batches run
    on threads without the GIL. Tokenizers compare equal when their vocabularies, patterns,
    normalizations and special tokens are, pickle, and are safe to share between threads.
    The examples use two merges, 256 = b"hi" and 257 = b" hi", and <|endoftext|> = 258:

    >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
    >>> tok.encode("hi hi"), tok.decode([256, 257, 33])
    ([256, 257], 'hi hi!')
    """
    events: np.ndarray | None = None        # a variant's list of events (variants/picky.py); plain BPE has none
    # the second level (set in __init__); none for plain BPE, nor for a subclass without them
    supermerges: np.ndarray = np.empty((0, 2), np.int32)
    supermerge_ids: np.ndarray = np.empty(0, np.int32)
    boundless_eligible: str | None = None
    _keep_tables = False        # read from a file: keep the encoder's tables for other processes (prebuilt.py)

    def __init__(self, merges, pattern: str | None = None,
                 special_tokens: Mapping[str, int] | Iterable[str] | None = None, *,
                 merge_ids=None, byte_ids=None, normalize: str | None = None, supermerges=None,
                 supermerge_ids=None, boundless_eligible: str | None = None):
        merges, merge_ids, byte_ids, supermerges, supermerge_ids = checked_parts(
            merges, merge_ids, byte_ids, supermerges, supermerge_ids, boundless_eligible)
        self._vocab = spell(merges, merge_ids, byte_ids, supermerges, supermerge_ids)
        self.merges = merges.astype(np.int32)
        self.merge_ids = merge_ids.astype(np.int32)
        self.byte_ids = byte_ids.astype(np.int32)
        # supermerge k joins two tokens into supermerge_ids[k], in runs of one-token chunks (boundless.py)
        self.supermerges = supermerges.astype(np.int32)
        self.supermerge_ids = supermerge_ids.astype(np.int32)
        self.boundless_eligible = boundless_eligible if len(supermerges) else None
        self._set_up(pattern, special_tokens, normalize)

    def _set_up(self, pattern: str | None, special_tokens, normalize: str | None) -> None:
        """Everything but the vocabulary (``_vocab``, which the special tokens' ids follow)."""
        # Special tokens are matched per call (allowed_special=), so the splitter holds none.
        self.splitter = Splitter.of(pattern, normalize=normalize)
        self._as_text = text_taker(self.splitter.normalize)
        self.special_tokens = special_ids(special_tokens, self._vocab)
        check_normal_specials(self.special_tokens, self.normalize, VocabularyError)
        self._encoder: Encoder | None = None      # built on first use, by encoder_for
        self._encoder_lock = threading.Lock()
        # The trainer's TrainReport (trainer.py, which imports this module: Any), else None.
        self.training_report: Any = None

    def _make_encoder(self) -> Encoder:
        """A new encoder of this vocabulary (``encoder_for`` keeps it); a variant's subclass makes its own."""
        return build(self)

    @property
    def _native(self) -> MergeEncoder:
        """The native merge table (continued training lays chunks out with it)."""
        return encoder_for(self).native

    def _extended(self, merges: np.ndarray, merge_ids: np.ndarray, special_tokens: Mapping[str, int]) -> Tokenizer:
        """This tokenizer's merges and ids, then ``merges`` making ``merge_ids`` (continued training)."""
        tok = object.__new__(Tokenizer)
        tok.__setstate__(dict(self.__getstate__(), training_report=None, _name=None,
                              _keep_tables=False))     # another vocabulary, made in memory
        vocabulary.extend(tok, merges, merge_ids, special_tokens)
        return tok

    def __getstate__(self) -> dict:
        """Pickling (multiprocessing, ``datasets.map(num_proc=...)``) sends the vocabulary; the
        receiving process builds its own encoder when it first encodes."""
        state = dict(self.__dict__, _encoder=None, _ids_by_bytes=None, _token_table=None)
        del state["_encoder_lock"], state["_as_text"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._encoder_lock = threading.Lock()
        self._as_text = text_taker(self.splitter.normalize)

    @classmethod
    def from_vocabulary(cls, vocab: Vocabulary) -> Tokenizer:
        """From what a format reader returns; a bad vocabulary read from a file names the file.

        >>> from bpe_fast.formats import Vocabulary
        >>> Tokenizer.from_vocabulary(Vocabulary([(104, 105)], "gpt2")).encode("hi")
        [256]
        """
        with naming_file(vocab.source):
            if vocab.variant is not None:           # its tokenizer, as the variant makes it
                tok = variant_parts[vocab.variant].tokenizer(vocab)
            else:
                tok = cls(vocab.merges, vocab.pattern, vocab.special_tokens,
                          merge_ids=vocab.merge_ids, byte_ids=vocab.byte_ids, normalize=vocab.normalize)
        tok._keep_tables = vocab.source is not None     # read from a file: other processes will read it too
        return tok

    # -- sizes and vocabulary -------------------------------------------------------------
    @property
    def n_base(self) -> int:
        """One more than the largest learned (non-special) id.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).n_base
        258
        """
        return len(self._vocab)

    @property
    def vocab_size(self) -> int:
        """One more than the largest id, learned or special (also ``n_vocab``).

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).vocab_size
        259
        """
        return max([self.n_base - 1, *self.special_tokens.values()]) + 1

    n_vocab = vocab_size

    @property
    def pattern(self) -> str | None:
        """The pre-tokenization regex (None: no split).

        >>> Tokenizer([], "[a-z]+|[0-9]+").pattern, Tokenizer([], None).pattern
        ('[a-z]+|[0-9]+', None)
        """
        return self.splitter.pattern

    @property
    def pattern_name(self) -> str:
        """The pattern's name: gpt2, cl100k, o200k, superword, none or custom.

        >>> Tokenizer([], "o200k").pattern_name, Tokenizer([], "[a-z]+|[0-9]+").pattern_name
        ('o200k', 'custom')
        """
        return self.splitter.name

    @property
    def normalize(self) -> str | None:
        """The Unicode normal form text is put in before it is split ("nfc", "nfkc"), or None.

        >>> Tokenizer([], "gpt2", normalize="nfkc").encode("ﬁ")       # the ligature becomes "fi"
        [102, 105]
        """
        return self.splitter.normalize

    def token_bytes(self, token: int) -> bytes:
        """The bytes of a learned token's id.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").token_bytes(257)
        b' hi'
        """
        return self.decode_bytes([arguments.integer(token, "token")])

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: token bytes -> id, for the bytes and the merges.

        >>> ranks = Tokenizer([(104, 105), (32, 256)], "gpt2").mergeable_ranks()
        >>> len(ranks), ranks[b"a"], ranks[b" hi"]
        (258, 97, 257)
        """
        return {b: i for i, b in enumerate(self._vocab) if b is not None}

    @property
    def runs_cross_line_ends(self) -> bool:
        """Could a run (of supermerges) hold a chunk with a "\\n" or "\\r"? Text is cut into blocks
        after line ends (pretokenize.find_cut), where the chunk before always holds one; such a
        cut must not split a run, so with this, text must not be cut. False for plain tokenizers.

        >>> Tokenizer([(104, 105)], "gpt2").runs_cross_line_ends
        False
        """
        if not len(self.supermerges):
            return False
        return any(b"\n" in unit or b"\r" in unit for unit in map(self.token_bytes, self._native.unit_ids()))

    # -- encoding: one call of the encoder (encoding/encoder.py) ---------------------------
    def _encode_one(self, text: str, output: int, allowed_special, disallowed_special):
        text = self._as_text(text, "text")
        allowed, disallowed = allowed_and_disallowed(self.special_tokens, allowed_special, disallowed_special)
        result, bad = encoder_for(self).encode(text, output, allowed, disallowed)
        if bad:
            raise disallowed_error(text, disallowed, self.splitter.normalize)
        return result

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of text; special tokens' text is encoded as ordinary text.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).encode_ordinary("hi<|endoftext|>")[:3]
        [256, 60, 124]
        """
        return encoder_for(self).encode(self._as_text(text, "text"), OUTPUT_LIST, _NONE, _NONE)[0]

    def encode(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
               disallowed_special: _AllOr | Collection[str] = "all") -> list[int]:
        """Like tiktoken's ``Encoding.encode``: special tokens in text raise unless allowed.

        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> tok.encode("hi hi"), tok.encode("hi<|endoftext|>", allowed_special="all")
        ([256, 257], [256, 258])
        """
        return self._encode_one(text, OUTPUT_LIST, allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                        disallowed_special: _AllOr | Collection[str] = "all") -> np.ndarray:
        """``encode`` as a uint32 array, with no Python int per token.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").encode_to_numpy("hi hi!")
        array([256, 257,  33], dtype=uint32)
        """
        return self._encode_one(text, OUTPUT_ARRAY, allowed_special, disallowed_special)

    def count_tokens(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                     disallowed_special: _AllOr | Collection[str] = "all") -> int:
        """``len(encode(text, ...))`` without making the ids.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").count_tokens("hi hi!")
        3
        """
        return self._encode_one(text, OUTPUT_COUNT, allowed_special, disallowed_special)

    def _encode_many(self, texts: Iterable[str], output: int, workers: int | None, allowed_special,
                     disallowed_special):
        texts = text_list(texts)
        workers = (os.cpu_count() or 1) if workers is None else arguments.workers(workers)
        allowed, disallowed = allowed_and_disallowed(self.special_tokens, allowed_special, disallowed_special)
        if self.splitter.normalize is not None:
            texts = [self._as_text(text, f"texts[{i}]") for i, text in enumerate(texts)]
        result, bad = encoder_for(self).encode_batch(texts, workers, output, allowed, disallowed)
        if bad >= 0:
            raise disallowed_error(texts[bad], disallowed, self.splitter.normalize, f"texts[{bad}]")
        return result

    def encode_batch(self, texts: Sequence[str], *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                     disallowed_special: _AllOr | Collection[str] = "all",
                     workers: int | None = None) -> list[list[int]]:
        """encode() of each text, on ``workers`` threads (default: one per CPU; the native
        encoder runs without the GIL). A text holding a disallowed special token raises,
        naming the first such text.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").encode_batch(["hi", " hi hi"])
        [[256], [257, 257]]
        """
        return self._encode_many(texts, OUTPUT_LIST, workers, allowed_special, disallowed_special)

    def encode_ordinary_batch(self, texts: Sequence[str], *, workers: int | None = None) -> list[list[int]]:
        """encode_ordinary() of each text, on ``workers`` threads.

        >>> Tokenizer([(104, 105)], "gpt2", ["<|endoftext|>"]).encode_ordinary_batch(["hi", "<|"])
        [[256], [60, 124]]
        """
        return self._encode_many(texts, OUTPUT_LIST, workers, frozenset(), ())

    def encode_batch_to_numpy(self, texts: Sequence[str], *, workers: int | None = None,
                              allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                              disallowed_special: _AllOr | Collection[str] = "all"
                              ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of every text in one uint32 array, and int64 offsets (len(texts) + 1 of them):
        text i's ids are ``ids[offsets[i]:offsets[i + 1]]``. No Python object per token.

        >>> ids, offsets = Tokenizer([(104, 105), (32, 256)], "gpt2").encode_batch_to_numpy(["hi", " hi hi"])
        >>> ids.tolist(), offsets.tolist()
        ([256, 257, 257], [0, 1, 3])
        """
        return self._encode_many(texts, OUTPUT_ARRAY, workers, allowed_special, disallowed_special)

    def count_tokens_batch(self, texts: Sequence[str], *, workers: int | None = None,
                           allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                           disallowed_special: _AllOr | Collection[str] = "all") -> np.ndarray:
        """The number of tokens of each text, as an int64 array, without making the ids.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").count_tokens_batch(["hi", " hi hi"]).tolist()
        [1, 2]
        """
        return self._encode_many(texts, OUTPUT_COUNT, workers, allowed_special, disallowed_special)

    # -- decoding -------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes the ids stand for (of the normalized text, when the tokenizer normalizes).

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode_bytes([257, 195])
        b' hi\\xc3'
        """
        try:
            return encoder_for(self).decode_bytes(ids)
        except TypeError as exc:
            detail = str(exc) if str(exc).startswith("token ids must") else "ids is not a sequence"
            raise EncodingError(f"decode takes a sequence of integer token ids: {detail}") from None
        except ValueError as exc:      # an id that is not in the vocabulary
            raise EncodingError(str(exc)) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled by ``errors``). A tokenizer that
        normalizes (``normalize``) gives the normalized text: what was encoded, not what was given.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2").decode([256, 257, 195])
        'hi hi�'
        """
        check_error_handler(errors)
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def evaluate(self, texts_or_files, *, by: str | None = None, baselines=None, **options):
        """The quality report on texts or files, per group (``by``), beside ``baselines``: bytes
        per token, tokens per word, unused tokens, Rényi efficiency (``bpe_fast.quality.report.evaluate``).

        >>> row = Tokenizer([(104, 105), (32, 256)], "gpt2").evaluate(["hi hi hi", "hi there"]).rows[0]
        >>> row.bytes, row.words, row.tokens
        (16, 5, 10)
        """
        from .quality.report import evaluate          # the report imports this module
        return evaluate(self, texts_or_files, by=by, baselines=baselines, **options)

    # -- other vocabularies from this one --------------------------------------------------
    def truncated(self, vocab_size: int) -> Tokenizer:
        """The tokenizer a shorter training would have given: the first merges only (merges are a
        prefix of each other), as many as make ``vocab_size`` tokens with the special tokens,
        which keep their order and follow the learned ids, as a fresh training numbers them.

        >>> Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).truncated(258).encode("hi hi")
        [256, 32, 256]
        """
        return vocabulary.truncated(self, arguments.integer(vocab_size, "vocab_size"), Tokenizer)

    @property
    def is_boundless(self) -> bool:
        """Does it have supermerges (training/variants/boundless.py)?

        >>> Tokenizer([(104, 105)], "gpt2").is_boundless
        False
        """
        return bool(len(self.supermerges))

    def without_supermerges(self) -> Tokenizer:
        """The tokenizer without its supermerges: its first level, what phase 1 trained (the
        special tokens keep their ids).

        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", supermerges=[(256, 257)])
        >>> tok.encode("hi hi"), tok.without_supermerges().encode("hi hi")
        ([258], [256, 257])
        """
        return Tokenizer(self.merges, self.pattern, self.special_tokens, merge_ids=self.merge_ids,
                         byte_ids=self.byte_ids, normalize=self.normalize)

    def __eq__(self, other) -> bool:
        """Equal vocabularies, patterns, normalizations, special tokens and supermerges: tokenizers
        that encode alike (``boundless_eligible`` is a record of the training only)."""
        return (isinstance(other, Tokenizer) and np.array_equal(self.merges, other.merges)
                and np.array_equal(self.merge_ids, other.merge_ids) and np.array_equal(self.byte_ids, other.byte_ids)
                and self.pattern == other.pattern and self.special_tokens == other.special_tokens
                and self.normalize == other.normalize and np.array_equal(self.supermerges, other.supermerges)
                and np.array_equal(self.supermerge_ids, other.supermerge_ids))

    def __repr__(self) -> str:
        if self._name is not None:      # a named encoding: its name first
            return (f"<Tokenizer {self._name}: {self.vocab_size:,} ids, pattern {self.pattern_name}, "
                    f"{len(self.special_tokens)} special tokens>")
        normalize = f", normalize={self.normalize}" if self.normalize else ""
        supermerges = f", supermerges={len(self.supermerges)}" if len(self.supermerges) else ""
        return (f"Tokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}{supermerges}, "
                f"pattern={self.pattern_name}, special_tokens={len(self.special_tokens)}{normalize})")
