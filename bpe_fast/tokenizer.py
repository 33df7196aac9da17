"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

A vocabulary is 256 single-byte tokens and a list of merges in rank order: merge m joins
(left id, right id) into token ``merge_ids[m]``. Trained tokenizers number bytes 0..255 and
merge m 256 + m; vocabularies loaded from other tools keep their own ids (tiktoken ranks,
GPT-2's encoder.json, ...). Special tokens come after the learned ids unless given ids.

Encoding follows tiktoken's rule (see _encode.pyx) and every encode and decode is one call of
the tokenizer's encoder (encoding/encoder.py: the native encoder for a named pattern or none,
the regex fallback otherwise), built on first use by ``encoder_for``. A tokenizer with a
normalization (``normalize="nfc"`` or ``"nfkc"``) puts every text in that normal
form first, as its training did; decoding then gives the normalized text.

A tokenizer may have a second level, supermerges, applied after the merges in runs of chunks that
are one token each (the native encoder's runs). The variants' tokenizers (bpe_fast/variants/)
are this class, with supermerges, or a subclass; ``Tokenizer.variant`` says which.
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Literal
from collections.abc import Collection, Iterable, Mapping, Sequence, Set as AbstractSet

import numpy as np

from . import arguments, formats
from .encoding import tiktoken_surface
from .encoding import vocab as vocabulary
from .encoding.encoder import (OUTPUT_ARRAY, OUTPUT_COUNT, OUTPUT_LIST, Encoder, build, check_error_handler,
                                encoder_for, text_list, text_taker)
from .encoding.specials import allowed_and_disallowed, disallowed_error
from .encoding.vocab import checked_parts, special_ids, spell
from .encoding._encode import MergeEncoder
from .bytelevel import str_to_token, token_to_str
from .errors import ArgumentTypeError, EncodingError, TokenizerFileError, VocabularyError, naming_file
from .formats import Vocabulary, variant_parts
from .formats.huggingface import huggingface_ids, to_transformers
from .encoding.visualize import TokenView, token_view
from .pretokenize.splitter import Splitter, check_normal_specials

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType


_AllOr = Literal["all"]       # allowed_special= and disallowed_special= take "all" or a set of special tokens
_NONE: frozenset[str] = frozenset()


class Tokenizer:
    """A byte-level BPE tokenizer: merges in rank order, a pre-tokenization pattern, special tokens.

    Made by training (``bpe_fast.train``), by loading any format (``bpe_fast.load``), or from its
    parts: ``Tokenizer(merges, pattern, special_tokens, merge_ids=, byte_ids=, normalize=)``, where
    merge m joins the pair ``merges[m]`` = (left id, right id) into ``merge_ids[m]`` (default
    256 + m) and byte b is ``byte_ids[b]`` (default b); special tokens are a list (ids after the
    learned ones) or a dict of given ids; ``normalize`` ("nfc", "nfkc"; default None) is the
    Unicode normal form every text is put in before it is encoded (special tokens are then found
    in the normalized text, so each must be in that form already). Everything is checked: a bad
    vocabulary is a VocabularyError.

    * Encoding, as tiktoken's ``Encoding`` does it (the same ids for the same vocabulary):
      ``encode``, ``encode_ordinary``, ``encode_batch``, ``encode_ordinary_batch``; without a
      Python int per token: ``encode_to_numpy``, ``encode_batch_to_numpy`` (flat ids + offsets),
      ``count_tokens``, ``count_tokens_batch``. Batches run on threads without the GIL.
    * Decoding: ``decode``, ``decode_bytes``, ``token_bytes``.
    * The vocabulary: ``vocab_size`` (also ``n_vocab``), ``merges``, ``merge_ids``, ``byte_ids``,
      ``special_tokens`` ({token: id}), ``mergeable_ranks()`` ({token bytes: id}), ``pattern``
      and ``pattern_name``, ``normalize``, ``splitter`` (how text becomes chunks,
      pretokenize.Splitter), ``truncated(size)``.
    * Files: ``save(path, format=None)`` in any format of bpe_fast/formats/ (told by the name
      when not given) and ``Tokenizer.load(path)`` (bpe_fast's JSON; ``bpe_fast.load`` reads any).

    Tokenizers compare equal when their vocabularies, patterns, normalizations and special tokens are equal,
    pickle (the native encoder is rebuilt on first use), and are safe to share between threads.
    A variant's tokenizer (bpe_fast/variants/) may be a subclass (``variant`` says which).
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
        # supermerge k joins two whole-chunk tokens (or superwords) into supermerge_ids[k], applied
        # in runs of whole-token chunks (variants/boundless.py); none for plain BPE. The regex
        # that chose the runs' units in training is a record (None without supermerges).
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
        """From what a format reader returns; a bad vocabulary read from a file names the file."""
        with naming_file(vocab.source):
            if vocab.variant is not None:           # its tokenizer, as the variant makes it
                tok = variant_parts[vocab.variant].tokenizer(vocab)
            else:
                tok = cls(vocab.merges, vocab.pattern, vocab.special_tokens,
                          merge_ids=vocab.merge_ids, byte_ids=vocab.byte_ids, normalize=vocab.normalize)
        tok._keep_tables = vocab.source is not None     # read from a file: other processes will read it too
        return tok

    @classmethod
    def from_ranks(cls, ranks: Mapping[bytes, int], pattern: str | None = None,
                   special_tokens: Mapping[str, int] | Sequence[str] | None = None) -> Tokenizer:
        """From tiktoken-style ``{token bytes: rank}``: the merges are recovered from the ranks."""
        if not isinstance(ranks, Mapping):
            raise ArgumentTypeError(f"ranks must be a mapping {{token bytes: rank}}, got {type(ranks).__name__}")
        return cls.from_vocabulary(formats.tiktoken.vocabulary_from_ranks(ranks, pattern, special_tokens))

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
    def pattern(self) -> str | None:
        """The pre-tokenization regex (None: no split)."""
        return self.splitter.pattern

    @property
    def pattern_name(self) -> str:
        return self.splitter.name

    @property
    def normalize(self) -> str | None:
        """The Unicode normal form text is put in before it is split ("nfc", "nfkc"), or None."""
        return self.splitter.normalize

    def token_bytes(self, token: int) -> bytes:
        return self.decode_bytes([arguments.integer(token, "token")])

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: token bytes -> id, for the bytes and the merges."""
        return {b: i for i, b in enumerate(self._vocab) if b is not None}

    @property
    def runs_cross_line_ends(self) -> bool:
        """Could a run (of supermerges) hold a chunk with a "\n" or "\r"? Text is cut into blocks
        after line ends (pretokenize.find_cut), where the chunk before always holds one; such a
        cut must not split a run, so with this, text must not be cut. False for plain tokenizers."""
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
        """Token ids of text; special tokens' text is encoded as ordinary text."""
        return encoder_for(self).encode(self._as_text(text, "text"), OUTPUT_LIST, _NONE, _NONE)[0]

    def encode(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
               disallowed_special: _AllOr | Collection[str] = "all") -> list[int]:
        """Like tiktoken's ``Encoding.encode``: special tokens in text raise unless allowed."""
        return self._encode_one(text, OUTPUT_LIST, allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                        disallowed_special: _AllOr | Collection[str] = "all") -> np.ndarray:
        """``encode`` as a uint32 array, with no Python int per token."""
        return self._encode_one(text, OUTPUT_ARRAY, allowed_special, disallowed_special)

    def count_tokens(self, text: str, *, allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                     disallowed_special: _AllOr | Collection[str] = "all") -> int:
        """``len(encode(text, ...))`` without making the ids."""
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
        naming the first such text."""
        return self._encode_many(texts, OUTPUT_LIST, workers, allowed_special, disallowed_special)

    def encode_ordinary_batch(self, texts: Sequence[str], *, workers: int | None = None) -> list[list[int]]:
        """encode_ordinary() of each text, on ``workers`` threads."""
        return self._encode_many(texts, OUTPUT_LIST, workers, frozenset(), ())

    def encode_batch_to_numpy(self, texts: Sequence[str], *, workers: int | None = None,
                              allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                              disallowed_special: _AllOr | Collection[str] = "all"
                              ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of every text in one uint32 array, and int64 offsets (len(texts) + 1 of them):
        text i's ids are ``ids[offsets[i]:offsets[i + 1]]``. No Python object per token."""
        return self._encode_many(texts, OUTPUT_ARRAY, workers, allowed_special, disallowed_special)

    def count_tokens_batch(self, texts: Sequence[str], *, workers: int | None = None,
                           allowed_special: _AllOr | AbstractSet[str] = frozenset(),
                           disallowed_special: _AllOr | Collection[str] = "all") -> np.ndarray:
        """The number of tokens of each text, as an int64 array, without making the ids."""
        return self._encode_many(texts, OUTPUT_COUNT, workers, allowed_special, disallowed_special)

    # -- decoding -------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes the ids stand for (of the normalized text, when the tokenizer normalizes)."""
        try:
            return encoder_for(self).decode_bytes(ids)
        except TypeError as exc:
            detail = str(exc) if str(exc).startswith("token ids must") else "ids is not a sequence"
            raise EncodingError(f"decode takes a sequence of integer token ids: {detail}") from None
        except ValueError as exc:      # an id that is not in the vocabulary
            raise EncodingError(str(exc)) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled by ``errors``). A tokenizer that
        normalizes (``normalize``) gives the normalized text: what was encoded, not what was given."""
        check_error_handler(errors)
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace") -> list[str]:
        """``decode`` of each list of ids (tiktoken's name)."""
        return [self.decode(ids, errors) for ids in batch]

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]]) -> list[bytes]:
        return [self.decode_bytes(ids) for ids in batch]

    # -- tiktoken's Encoding surface (tiktoken_surface.py) and a coloured view (visualize.py) ----
    _name: str | None = None        # a named encoding's name (registry.load_encoding), or one given
    _token_table: tiktoken_surface.TokenTable | None = None      # every id's bytes, made on first use
    _ids_by_bytes: dict[bytes, int] | None = None     # token_to_id's map, made on first use

    @property
    def name(self) -> str:
        """tiktoken's ``Encoding.name``: a named encoding's ("cl100k_base"), else one given
        (``tok.name = "mine"``), else ``bpe_fast_<pattern>_<vocab size>_<8 hex digits>`` from a
        hash of the vocabulary (tiktoken_surface.default_name): equal tokenizers, equal names."""
        return self._name if self._name is not None else tiktoken_surface.default_name(self)

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(f"name must be a non-empty str, got {value!r}")
        self._name = value

    @property
    def max_token_value(self) -> int:
        """The largest id, learned or special (tiktoken's; ``n_vocab`` is one more)."""
        return self.vocab_size - 1

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.special_tokens)

    def _tokens(self) -> tiktoken_surface.TokenTable:
        if self._token_table is None:
            self._token_table = tiktoken_surface.TokenTable(self._vocab, self.special_tokens)
        return self._token_table

    def is_special_token(self, token: int) -> bool:
        return tiktoken_surface.is_special_token(self._tokens(), token)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id, special tokens too; an unknown id is a KeyError (UnknownTokenError)."""
        return self._tokens().bytes_of(token)

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """Each id's bytes: the tokens as they split the text."""
        return tiktoken_surface.decode_tokens_bytes(self._tokens(), tokens)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the token whose text or bytes these are (special tokens too), else a KeyError."""
        return tiktoken_surface.encode_single_token(self, self._tokens(), text_or_bytes)

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every learned token, sorted (special tokens aside), as tiktoken lists them."""
        return sorted(self._ids_of_tokens())

    def decode_with_offsets(self, tokens: Iterable[int]) -> tuple[str, list[int]]:
        """The text and each token's character offset in it (tiktoken_surface.py says which
        character a token starting inside one gets); invalid UTF-8 raises UnicodeDecodeError."""
        return tiktoken_surface.decode_with_offsets(self._tokens(), tokens)

    def encode_with_offsets(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                            disallowed_special: Literal["all"] | Collection[str] = "all"
                            ) -> tuple[list[int], list[int]]:
        """``encode``'s ids and each token's character offset in ``text``: the index of the
        character its first byte belongs to (as ``decode_with_offsets`` gives them)."""
        return tiktoken_surface.encode_with_offsets(self, self._tokens(), text, allowed_special, disallowed_special)

    def visualize(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = "all",
                  disallowed_special: Literal["all"] | Collection[str] = "all") -> TokenView:
        """The tokens of ``text`` to look at: one coloured span per token in a notebook, colours
        when printed (visualize.py). Special tokens are allowed by default, and shown apart."""
        return token_view(self, text, allowed_special, disallowed_special)

    # -- the names tiktoken's and Hugging Face's users reach for ----------------------------------
    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (tiktoken's name)."""
        if "<|endoftext|>" not in self.special_tokens:
            raise EncodingError(f"this tokenizer has no <|endoftext|> special token (its special tokens: "
                                f"{', '.join(self.special_tokens) or 'none'})")
        return self.special_tokens["<|endoftext|>"]

    def __len__(self) -> int:
        """The number of tokens, learned and special (the vocab_size, where no id goes unused)."""
        return len(self.mergeable_ranks()) + len(self.special_tokens)

    def get_vocab(self) -> dict[str, int]:
        """{token: id} as Hugging Face spells it: learned tokens in GPT-2's byte-level alphabet
        ("Ġthe" for b" the"), special tokens as they are."""
        vocab = {token_to_str(token): i for token, i in self.mergeable_ranks().items()}
        vocab.update(self.special_tokens)
        return vocab

    def get_vocab_size(self) -> int:
        return len(self)

    def token_to_id(self, token: str) -> int | None:
        """The id of a token spelled as ``get_vocab`` spells it, or None (Hugging Face's)."""
        if token in self.special_tokens:
            return self.special_tokens[token]
        try:
            return self._ids_of_tokens().get(str_to_token(token, "token"))
        except TokenizerFileError:            # a character outside the byte-level alphabet
            return None

    def id_to_token(self, token_id: int) -> str | None:
        """The token of an id, spelled as ``get_vocab`` spells it, or None (Hugging Face's)."""
        for token, i in self.special_tokens.items():
            if i == token_id:
                return token
        learned = self._vocab[token_id] if 0 <= token_id < len(self._vocab) else None
        return None if learned is None else token_to_str(learned)

    def _ids_of_tokens(self) -> dict[bytes, int]:
        if self._ids_by_bytes is None:
            self._ids_by_bytes = self.mergeable_ranks()
        return self._ids_by_bytes

    def with_huggingface_ids(self) -> Tokenizer:
        """The same tokenizer (the same splits and merges, so the same tokens) numbered as Hugging
        Face's BpeTrainer numbers what it learns: special tokens first, then the 256 bytes by
        their GPT-2 characters, then the merges in order. After training with
        ``tie_break="huggingface"`` on the same documents, its tokenizer.json equals BpeTrainer's,
        id for id. Any tokenizer can be renumbered; ids then differ from the original's."""
        if len(self.supermerges):
            raise VocabularyError("a BoundlessBPE tokenizer cannot be numbered as Hugging Face's BpeTrainer numbers "
                                  "tokens: BpeTrainer has no supermerges (merges across whole words, in runs)")
        renumber, specials = huggingface_ids(self.byte_ids, self.merge_ids, self.special_tokens)
        merges = np.vectorize(renumber.__getitem__, otypes=[np.int64])(self.merges) if len(self.merges) else self.merges
        return Tokenizer(merges, self.pattern, specials,
                         merge_ids=[renumber[int(i)] for i in self.merge_ids],
                         byte_ids=[renumber[int(i)] for i in self.byte_ids], normalize=self.normalize)

    def evaluate(self, texts_or_files, *, by: str | None = None, baselines=None, **options):
        """The quality report on texts or files, per group (``by``), beside ``baselines``: bytes
        per token, tokens per word, unused tokens, Rényi efficiency (alias of ``bpe_fast.quality.report.evaluate``)."""
        from .quality.report import evaluate
        return evaluate(self, texts_or_files, by=by, baselines=baselines, **options)

    # -- files: every format through the table of formats (formats/) ---------------------------
    def save(self, path: str | os.PathLike, format: str | None = None) -> list[str]:
        """Write the tokenizer to ``path`` in ``format``, a name from the table of formats
        (``bpe_fast.formats.names()``: bpe_fast, huggingface, tiktoken, minbpe, gpt2). Without
        ``format`` the name says it where it can (.tiktoken, .model, vocab.bpe, tokenizer.json or
        any name ending in it: Hugging Face's, encoder.json: GPT-2's); any other .json name means
        bpe_fast's JSON.
        Returns the files written."""
        return formats.write(self, arguments.path(path, "path"), format)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Tokenizer:
        """A tokenizer in bpe_fast's JSON (what ``save`` writes by default). A file in another
        format is refused with the loader that fits; ``bpe_fast.load`` opens any format."""
        return cls.from_vocabulary(formats.read(arguments.path(path, "path"), formats.DEFAULT.name))

    # Each format's own reader and writer, as methods: aliases of the functions in formats/<format>.py.
    def to_dict(self) -> dict:
        """The JSON object ``save`` writes (alias of ``formats.bpe_fast_json.bpe_fast_dict``)."""
        return formats.bpe_fast_json.bpe_fast_dict(self)

    @classmethod
    def from_dict(cls, data: dict, source: str | None = None) -> Tokenizer:
        """From ``to_dict``'s object (alias of ``formats.bpe_fast_json.bpe_fast_vocabulary``)."""
        return cls.from_vocabulary(formats.bpe_fast_json.bpe_fast_vocabulary(data, source))

    @classmethod
    def from_tiktoken(cls, path, pattern: str | None | EllipsisType = ..., special_tokens=None) -> Tokenizer:
        """A .tiktoken file (alias of ``formats.tiktoken.read_tiktoken``). Its pattern and special
        tokens come from the arguments, else from its sidecar ``path + ".json"`` (written by
        ``save_tiktoken``), else from the named encoding it is the published file of
        (cl100k_base.tiktoken, ...). Otherwise ``pattern`` is required (None or "none": no split):
        a wrong pattern would give other ids."""
        path = arguments.path(path, "path")
        return cls.from_vocabulary(formats.tiktoken.read_tiktoken(path, pattern, special_tokens))

    @classmethod
    def from_gpt2(cls, encoder_json, vocab_bpe) -> Tokenizer:
        """GPT-2's two files (alias of ``formats.gpt2.read_gpt2``)."""
        return cls.from_vocabulary(formats.gpt2.read_gpt2(arguments.path(encoder_json, "encoder_json"),
                                                          arguments.path(vocab_bpe, "vocab_bpe")))

    @classmethod
    def from_huggingface(cls, path) -> Tokenizer:
        """A byte-level BPE tokenizer.json (alias of ``formats.huggingface.read_huggingface``)."""
        return cls.from_vocabulary(formats.huggingface.read_huggingface(arguments.path(path, "path")))

    @classmethod
    def from_minbpe(cls, path) -> Tokenizer:
        """A minbpe .model file (alias of ``formats.minbpe.read_minbpe``)."""
        return cls.from_vocabulary(formats.minbpe.read_minbpe(arguments.path(path, "path")))

    def save_tiktoken(self, path) -> list[str]:
        """The .tiktoken file and its sidecar ``path + ".json"`` (pattern and special tokens); alias
        of ``formats.tiktoken.write_tiktoken``, which takes any name (``save`` checks it)."""
        return formats.tiktoken.write_tiktoken(self, arguments.path(path, "path"))

    def to_transformers(self, *, eos_token: str | None = None, pad_token: str | None = None,
                        bos_token: str | None = None, unk_token: str | None = None, **kwargs):
        """A ``transformers.PreTrainedTokenizerFast`` (needs ``bpe_fast[transformers]``) with this
        vocabulary and these special tokens in the roles given (each must be a special token of
        this tokenizer), ready for padding, ``save_pretrained`` and a model's training loop."""
        return to_transformers(self, eos_token=eos_token, pad_token=pad_token, bos_token=bos_token,
                               unk_token=unk_token, **kwargs)

    def to_tiktoken(self, name: str = "bpe_fast"):
        """A ``tiktoken.Encoding`` (alias of ``formats.tiktoken.to_tiktoken``)."""
        return formats.tiktoken.to_tiktoken(self, name)

    def save_huggingface(self, path) -> None:
        """A tokenizer.json at ``path`` (alias of ``formats.huggingface.write_huggingface``)."""
        formats.huggingface.write_huggingface(self, arguments.path(path, "path"))

    def save_minbpe(self, prefix) -> None:
        """``prefix.model`` and ``prefix.vocab`` (alias of ``formats.minbpe.write_minbpe``)."""
        formats.minbpe.write_minbpe(self, arguments.path(prefix, "prefix"))

    def save_gpt2(self, encoder_json, vocab_bpe) -> None:
        """GPT-2's two files (alias of ``formats.gpt2.write_gpt2``)."""
        formats.gpt2.write_gpt2(self, arguments.path(encoder_json, "encoder_json"),
                                arguments.path(vocab_bpe, "vocab_bpe"))

    def truncated(self, vocab_size: int) -> Tokenizer:
        """The tokenizer a shorter training would have given: the first merges only (merges are a
        prefix of each other), as many as make ``vocab_size`` tokens with the special tokens,
        which keep their order and follow the learned ids, as a fresh training numbers them."""
        return vocabulary.truncated(self, arguments.integer(vocab_size, "vocab_size"), Tokenizer)

    @property
    def variant(self):
        """The variant (bpe_fast/variants/, its ``VARIANT``) whose tokenizer this is; None: plain BPE."""
        return next((v for v in variant_parts.values() if v.owns(self)), None)

    @property
    def is_boundless(self) -> bool:
        """Does it have supermerges (variants/boundless.py)?"""
        return bool(len(self.supermerges))

    def without_supermerges(self) -> Tokenizer:
        """The tokenizer without its supermerges: its first level, what phase 1 trained (the
        special tokens keep their ids)."""
        return Tokenizer(self.merges, self.pattern, self.special_tokens, merge_ids=self.merge_ids,
                         byte_ids=self.byte_ids, normalize=self.normalize)

    def __eq__(self, other) -> bool:
        """Equal vocabularies, patterns, normalizations and special tokens (and supermerges):
        tokenizers that encode alike. The regex that chose the units of supermerges' runs is a
        record of the training only."""
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


def __getattr__(name: str):
    """The variants' tokenizer classes (bpe_fast/variants/), by their names, where they were
    imported from before the variants had a folder (``from bpe_fast.tokenizer import
    PickyTokenizer``). They subclass Tokenizer, so this module cannot import them; bpe_fast
    imports every variant before any of its modules is used."""
    for kind in Tokenizer.__subclasses__():
        if kind.__name__ == name:
            return kind
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
