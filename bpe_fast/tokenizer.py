"""Stage 5, the tokenizer: merges + pattern + special tokens; encode, decode, save, load.

A vocabulary is 256 single-byte tokens and a list of merges in rank order: merge m joins
(left id, right id) into token ``merge_ids[m]``. Trained tokenizers number bytes 0..255 and
merge m 256 + m; vocabularies loaded from other tools keep their own ids (tiktoken ranks,
GPT-2's encoder.json, ...). Special tokens come after the learned ids unless given ids.

Encoding follows tiktoken's rule (see _encode.pyx); with a named pattern the whole text is split
and encoded natively, otherwise ``regex.findall`` splits and each chunk is encoded natively. A
tokenizer with a normalization (``normalize="nfc"`` or ``"nfkc"``) puts every text in that normal
form first, as its training did; decoding then gives the normalized text.

A tokenizer may have a second level, supermerges, applied after the merges in runs of chunks that
are one token each (the native encoder's runs). The variants' tokenizers (bpe_fast/variants/)
are this class, with supermerges, or a subclass; ``Tokenizer.variant`` says which.
"""
from __future__ import annotations

import codecs
import functools
import os
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal
from collections.abc import Collection, Iterable, Mapping, Sequence, Set as AbstractSet

import numpy as np
import regex

from . import arguments, formats, prebuilt
from .encoding import tiktoken_surface
from .encoding._encode import OUTPUT_ARRAY as OUT_ARRAY, OUTPUT_COUNT as OUT_COUNT, OUTPUT_LIST as OUT_LIST
from .encoding._encode import MergeEncoder, SpecialSet, spell_tokens
from .bytelevel import str_to_token, token_to_str
from .errors import ArgumentError, ArgumentTypeError, EncodingError, TokenizerFileError, VocabularyError, naming_file
from .formats import Vocabulary, variant_parts
from .formats.huggingface import huggingface_ids, to_transformers
from .pretokenize.patterns import whole_matches
from .encoding.visualize import TokenView, token_view
from .pretokenize.splitter import (NORMALIZATIONS, REGEX, WHOLE, Splitter, char_classes, check_encodable,
                                   check_normal_specials, special_splitter, special_token_list)

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType


def _as_ids(values, what: str) -> np.ndarray:
    """values as an int64 array; anything but integers (floats, strings, ragged lists) is refused."""
    try:
        ids = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise VocabularyError(f"{what} must be integer ids: {exc}") from None
    if ids.size and ids.dtype.kind not in "iu":
        raise VocabularyError(f"{what} must be integer ids, got values of type {ids.dtype}")
    return np.ascontiguousarray(ids, dtype=np.int64)


def _as_pairs(values, what: str) -> np.ndarray:
    """values as an (n, 2) int64 array of id pairs."""
    pairs = _as_ids(values, what)
    if pairs.size % 2 or (pairs.ndim != 2 and pairs.size):
        raise VocabularyError(f"{what} must be pairs of ids, got an array of shape {pairs.shape}")
    return pairs.reshape(-1, 2)


# Ids index arrays (int32 in the native encoder), so they must be dense enough: at most this
# many ids may go unused. A file whose ids run to 10**9 is corrupt, not a vocabulary to allocate.
MAX_UNUSED_IDS = 1 << 20


def _check_id_range(largest: int, defined: int, what: str) -> None:
    if largest >= 2**31 - 1 or largest >= defined + MAX_UNUSED_IDS:
        raise VocabularyError(f"{what} {largest} is out of range: {defined:,} tokens need ids below "
                              f"{defined + MAX_UNUSED_IDS:,} (at most {MAX_UNUSED_IDS:,} unused ids)")


def _check_no_repeated_pair(merges: np.ndarray, what: str) -> None:
    """A pair is merged once: merged again it would make a second id for the same bytes (the
    ranks, a tiktoken file and a tokenizer.json would then each hold another vocabulary)."""
    if len(merges) < 2:
        return
    keys = merges[:, 0].astype(np.int64) << 32 | merges[:, 1].astype(np.int64)
    in_order = np.sort(keys)
    if not (in_order[1:] == in_order[:-1]).any():      # the usual case, at the cost of one sort
        return
    unique, first = np.unique(keys, return_index=True)
    repeated = np.ones(len(keys), dtype=bool)
    repeated[first] = False
    m = int(np.flatnonzero(repeated)[0])
    earlier = int(np.flatnonzero(keys == keys[m])[0])
    left, right = (int(x) for x in merges[m])
    raise VocabularyError(f"{what} {m} is ({left}, {right}), the pair {what} {earlier} already merged: "
                          f"each {what} must join a pair no earlier one joined")


def _build_vocab(merges: np.ndarray, merge_ids: np.ndarray, byte_ids: np.ndarray,
                 supermerges: np.ndarray | None = None, supermerge_ids: np.ndarray | None = None) -> list:
    """id -> token bytes (None where no token has the id), checking that ids are consistent.
    Supermerges come after the merges and join any two tokens made before."""
    _check_no_repeated_pair(merges, "merge")
    if supermerges is not None and len(supermerges):
        _check_no_repeated_pair(supermerges, "supermerge")
        merges, merge_ids = np.concatenate([merges, supermerges]), np.concatenate([merge_ids, supermerge_ids])
    all_ids = np.concatenate([byte_ids, merge_ids])
    if len(all_ids) and all_ids.min() < 0:
        raise VocabularyError(f"token ids must be >= 0, got {int(all_ids.min())}")
    if len(np.unique(byte_ids)) != 256:
        raise VocabularyError("the 256 single-byte tokens must have 256 distinct ids")
    _check_id_range(int(all_ids.max()), len(all_ids), "token id")
    size = int(all_ids.max()) + 1 if len(all_ids) else 256
    outside = np.flatnonzero(((merges < 0) | (merges >= size)).any(axis=1))
    made = int(outside[0]) if len(outside) else len(merges)   # narrowed to int32 below: no wrapping
    vocab, bad = spell_tokens(np.ascontiguousarray(merges[:made], np.int32),
                              np.ascontiguousarray(merge_ids[:made], np.int32),
                              np.ascontiguousarray(byte_ids, np.int32), size)
    if bad < 0 and made < len(merges):
        bad = made
    if bad >= 0:
        (left, right), new = merges[bad].tolist(), int(merge_ids[bad])
        if not (0 <= left < size and 0 <= right < size) or vocab[left] is None or vocab[right] is None:
            raise VocabularyError(f"merge {bad} is ({left}, {right}): its ids must be single bytes or "
                                  f"tokens made by earlier merges")
        raise VocabularyError(f"merge {bad} makes token id {new}, which is already {vocab[new]!r} (duplicate id)")
    return vocab


def _as_str(text, name: str) -> str:
    """text as an exact str: the native encoder takes no subclass (numpy.str_), which tiktoken takes."""
    if text.__class__ is str:
        return text
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(text).__name__}")
    return str.__str__(text)            # the same characters, whatever the subclass's own __str__ says


def _as_normal_str(form: Literal["NFC", "NFKC"], text, name: str) -> str:
    """text as an exact str (``_as_str``), in the Unicode normal form ``form``."""
    return unicodedata.normalize(form, _as_str(text, name))


def _text_taker(normalize: str | None):
    """What turns the argument of an encode call into the str to encode: ``_as_str``, or with a
    normalization ``_as_normal_str``. Chosen once per tokenizer, so that encoding without a
    normalization makes the very call it made before normalization existed."""
    return _as_str if normalize is None else functools.partial(_as_normal_str, NORMALIZATIONS[normalize])


def _is_all(value) -> bool:
    return isinstance(value, str) and value == "all"


def _token_set(value, name: str) -> set[str]:
    """The special tokens ``allowed_special`` or ``disallowed_special`` names ("all" aside): a collection of str."""
    if isinstance(value, str):
        raise EncodingError(f"{name} takes \"all\" or a set of special tokens, not one string: "
                            f"write {name}={{{value!r}}}")
    try:
        tokens = set(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} takes \"all\" or a set of special tokens, "
                                f"got {type(value).__name__}") from None
    odd = [t for t in tokens if not isinstance(t, str)]
    if odd:
        raise ArgumentTypeError(f"{name} holds {odd[0]!r}, which is no special token (a str)")
    for token in tokens:
        check_encodable(token, ArgumentError)
    return tokens


def _check_error_handler(errors) -> None:
    """decode's ``errors``: a name codecs knows ("replace", "strict", "ignore"...), checked now, not
    only when an invalid byte comes."""
    if not isinstance(errors, str):
        raise ArgumentTypeError(f"errors must be the name of an error handler, such as 'replace', got {errors!r}")
    try:
        codecs.lookup_error(errors)
    except (LookupError, ValueError):         # ValueError: a name that is no text (a lone surrogate)
        raise ArgumentError(f"errors={errors!r} is no error handler (try 'replace', 'strict' or 'ignore')") from None


def _check_workers(workers) -> int:
    if workers is None:
        return os.cpu_count() or 1
    return arguments.workers(workers)


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
    _units: frozenset[int] | None = None

    def __init__(self, merges, pattern: str | None = None,
                 special_tokens: Mapping[str, int] | Iterable[str] | None = None, *,
                 merge_ids=None, byte_ids=None, normalize: str | None = None, supermerges=None,
                 supermerge_ids=None, boundless_eligible: str | None = None):
        merges = _as_pairs(merges, "merges")
        merge_ids = np.arange(256, 256 + len(merges)) if merge_ids is None else _as_ids(merge_ids, "merge_ids")
        byte_ids = np.arange(256) if byte_ids is None else _as_ids(byte_ids, "byte_ids")
        if merge_ids.shape != (len(merges),) or byte_ids.shape != (256,):
            raise VocabularyError("merge_ids needs one id per merge and byte_ids 256 ids")
        supermerges = _as_pairs([] if supermerges is None else supermerges, "supermerges")
        supermerge_ids = (np.arange(256 + len(merges), 256 + len(merges) + len(supermerges)) if supermerge_ids is None
                          else _as_ids(supermerge_ids, "supermerge_ids"))
        if supermerge_ids.shape != (len(supermerges),):
            raise VocabularyError("supermerge_ids needs one id per supermerge")
        if boundless_eligible is not None and not isinstance(boundless_eligible, str):
            raise VocabularyError(f"boundless_eligible must be a regex (str), got {boundless_eligible!r}")
        self._vocab = _build_vocab(merges, merge_ids, byte_ids, supermerges, supermerge_ids)
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
        self._as_text = _text_taker(self.splitter.normalize)
        self.special_tokens = self._assign_special_ids(special_tokens)
        check_normal_specials(self.special_tokens, self.normalize, VocabularyError)
        self._special_regexes: dict[frozenset, regex.Pattern[str]] = {}
        self._encoder: MergeEncoder | None = None        # built on first use (see _native)
        self._encoder_lock = threading.Lock()
        self._special_sets: dict[frozenset, SpecialSet] = {}
        self._cache: dict[str, list[int]] = {}
        self._ids_by_bytes: dict[bytes, int] | None = None     # token_to_id's map, made on first use
        self._units = None                             # the ids that make runs (supermerges), on first use
        self._keep_tables = False                      # save the encoder's tables for other processes (prebuilt.py)
        # The trainer's TrainReport (trainer.py, which imports this module: Any), else None.
        self.training_report: Any = None

    @property
    def _native(self) -> MergeEncoder:
        """The native encoder, built the first time it is needed: training, loading and saving
        never need it, and for a large vocabulary it takes a good fraction of a second."""
        if self._encoder is None:
            with self._encoder_lock:
                if self._encoder is None:
                    vocab = self._vocab
                    if len(self.supermerges):           # superwords are never a chunk's tokens
                        vocab = list(vocab)
                        for i in self.supermerge_ids.tolist():
                            vocab[i] = None
                    encoder = self._merge_encoder(vocab)
                    if len(self.supermerges):
                        encoder.set_supermerges(self.supermerges, self.supermerge_ids,
                                                [self._vocab[i] for i in self.supermerge_ids.tolist()])
                    native_id = self.splitter.native_id         # None unless the engine is NATIVE
                    if native_id is not None:
                        encoder.set_scanner(native_id, *char_classes())
                    elif self.splitter.engine == WHOLE:
                        encoder.set_no_split()
                    self._encoder = encoder
        return self._encoder

    def _merge_encoder(self, vocab: list) -> MergeEncoder:
        """The encoder of these merges; a large vocabulary read from a file has its reachable
        tokens and their trie read back from prebuilt.py's cache when an earlier process saved them
        (they are most of the time of building it), else built and saved. A tokenizer made in
        memory (trained, extended) is not saved: no other process would read it."""
        specials = {s.encode("utf-8"): i for s, i in self.special_tokens.items()}
        if len(self.merges) < prebuilt.WORTH_CACHING or not getattr(self, "_keep_tables", False):
            return MergeEncoder(self.merges, self.merge_ids, self.byte_ids, vocab, specials)
        key = prebuilt.key_of("reachable", self.merges, self.merge_ids, self.byte_ids)
        saved = prebuilt.read(key)
        if saved is not None:
            try:
                return MergeEncoder(self.merges, self.merge_ids, self.byte_ids, vocab, specials,
                                    tuple(saved[f"t{i}"] for i in range(5)) + (int(saved["bits"][0]),))
            except (ValueError, KeyError):      # not what these merges make: build it afresh
                pass
        encoder = MergeEncoder(self.merges, self.merge_ids, self.byte_ids, vocab, specials)
        *tables, bits = encoder.reachable_tables()
        prebuilt.write(key, {f"t{i}": table for i, table in enumerate(tables)} | {"bits": np.array([bits])})
        return encoder

    def _extended(self, merges: np.ndarray, merge_ids: np.ndarray, special_tokens: Mapping[str, int]) -> Tokenizer:
        """This tokenizer's merges and ids, then ``merges`` making ``merge_ids`` (continued
        training): the same as building it whole, without rebuilding the base's vocabulary."""
        merges = np.asarray(merges, np.int32).reshape(-1, 2)
        merge_ids = np.asarray(merge_ids, np.int32)
        tok = object.__new__(Tokenizer)
        tok.__setstate__(dict(self.__getstate__(), _special_regexes={}, _cache={}, training_report=None,
                              _name=None, _keep_tables=False))  # another vocabulary, made in memory
        vocab = list(self._vocab) + [None] * max(0, int(merge_ids.max(initial=-1)) + 1 - len(self._vocab))
        for (left, right), new in zip(merges.tolist(), merge_ids.tolist()):
            if vocab[new] is not None or vocab[left] is None or vocab[right] is None:
                raise VocabularyError(f"cannot extend with merge ({left}, {right}) -> {new}")
            vocab[new] = vocab[left] + vocab[right]
        tok._vocab = vocab
        tok.merges = np.concatenate([self.merges, merges])
        tok.merge_ids = np.concatenate([self.merge_ids, merge_ids])
        tok.special_tokens = tok._assign_special_ids(dict(special_tokens))
        return tok

    def __getstate__(self) -> dict:
        """Pickling (multiprocessing, ``datasets.map(num_proc=...)``) sends the vocabulary; the
        receiving process builds its own native encoder when it first encodes."""
        state = dict(self.__dict__, _encoder=None, _special_sets={}, _ids_by_bytes=None, _units=None,
                     _token_table=None)
        del state["_encoder_lock"], state["_as_text"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._encoder_lock = threading.Lock()
        self._as_text = _text_taker(self.splitter.normalize)

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

    def _assign_special_ids(self, specials) -> dict[str, int]:
        if specials is None:
            return {}
        if not isinstance(specials, Mapping):
            specials = {s: self.n_base + i for i, s in enumerate(special_token_list(specials))}
        for s, i in specials.items():
            if not isinstance(s, str) or not s:
                raise VocabularyError(f"special token {s!r} must be a non-empty string")
            check_encodable(s, VocabularyError)
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

    @property
    def _native_text(self) -> bool:
        """Is text split natively (a named pattern, or none), rather than by the regex module?"""
        return self.splitter.engine != REGEX

    def token_bytes(self, token: int) -> bytes:
        token = arguments.integer(token, "token")
        try:
            return self._native.decode_bytes([token])
        except ValueError as exc:      # an id that is not in the vocabulary
            raise EncodingError(str(exc)) from None

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's mergeable_ranks: token bytes -> id, for the bytes and the merges."""
        return {b: i for i, b in enumerate(self._vocab) if b is not None}

    # -- encoding -------------------------------------------------------------------------
    # With a named pattern, or none, the native encoder takes the str itself (_encode.pyx):
    # UTF-8, special tokens, splitting and merging happen there without the GIL, and ids come
    # back as a list, a NumPy array or a count. A custom regex splits here, chunk by chunk.
    @staticmethod
    def _utf8(text: str) -> bytes:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:   # lone surrogates become U+FFFD, as tiktoken does
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")

    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is None:
            ids = self._native.encode_chunk_bytes(self._utf8(chunk))
            if len(self._cache) < 1_000_000:
                self._cache[chunk] = ids
        return ids

    def _regex_encode_ordinary(self, text: str) -> list[int]:
        if len(self.supermerges):
            return self._regex_encode_runs(text)
        out: list[int] = []
        for chunk in whole_matches(self.splitter.regex, text):
            out.extend(self._encode_chunk(chunk))
        return out

    def _run_units(self) -> frozenset[int]:
        """The ids that make runs: the tokens of the first level some supermerge joins."""
        if self._units is None:
            self._units = frozenset(self._native.unit_ids())
        return self._units

    @property
    def runs_cross_line_ends(self) -> bool:
        """Could a run (of supermerges) hold a chunk with a "\n" or "\r"? Text is cut into blocks
        after line ends (pretokenize.find_cut), where the chunk before always holds one; such a
        cut must not split a run, so with this, text must not be cut. False for plain tokenizers."""
        return any(b"\n" in self._vocab[i] or b"\r" in self._vocab[i] for i in self._run_units()) \
            if len(self.supermerges) else False

    def _regex_encode_runs(self, text: str) -> list[int]:
        """Supermerges with a custom regex: the chunks as always, then each maximal run of
        chunks that are one unit each merged by the supermerges (as the native encoder does)."""
        native, units = self._native, self._run_units()
        out: list[int] = []
        run: list[int] = []
        for chunk in whole_matches(self.splitter.regex, text):
            ids = self._encode_chunk(chunk)
            if len(ids) == 1 and ids[0] in units:
                run.append(ids[0])
                continue
            if run:
                out.extend(native.merge_run_list(run))
                run = []
            out.extend(ids)
        out.extend(native.merge_run_list(run))
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of text; special tokens' text is encoded as ordinary text."""
        text = self._as_text(text, "text")
        if self._native_text:
            return self._native.encode_str(text, OUT_LIST, None, None)[0]
        return self._regex_encode_ordinary(text)

    def _special_set(self, tokens: AbstractSet[str]) -> SpecialSet | None:
        """The native finder of these special tokens (None for none), made once per set."""
        key = frozenset(tokens)
        if not key:
            return None
        if key not in self._special_sets:
            self._special_sets[key] = SpecialSet({t.encode("utf-8"): self.special_tokens.get(t, -1) for t in key})
        return self._special_sets[key]

    def _special_regex(self, tokens: AbstractSet[str]) -> regex.Pattern[str]:
        key = frozenset(tokens)
        if key not in self._special_regexes:
            self._special_regexes[key] = special_splitter(tokens)
        return self._special_regexes[key]

    def _specials(self, allowed_special, disallowed_special) -> tuple[set[str], set[str]]:
        """tiktoken's arguments as (allowed, disallowed) sets of special tokens, checked."""
        everything = set(self.special_tokens)
        allowed = everything if _is_all(allowed_special) else _token_set(allowed_special, "allowed_special")
        unknown = allowed - everything
        if unknown:
            raise EncodingError(f"allowed_special names tokens this tokenizer does not have: {sorted(unknown)}")
        if disallowed_special is None:            # tiktoken takes it (any false value) as none disallowed
            return allowed, set()
        if _is_all(disallowed_special):
            return allowed, everything - allowed
        return allowed, _token_set(disallowed_special, "disallowed_special")

    def _disallowed_error(self, text: str, disallowed: set[str], where: str = "text") -> EncodingError:
        found = self._special_regex(disallowed).search(text)
        normalized = f" (of its {self.normalize.upper()} form)" if self.normalize else ""
        return EncodingError(
            f"{where} contains the special token {found.group()!r} at character {found.start()}{normalized}; "
            f"pass allowed_special={{{found.group()!r}}} to encode it as a special token, or "
            f"disallowed_special=() to encode it as text")

    def _encode_regex(self, text: str, allowed: set[str], disallowed: set[str]) -> list[int]:
        """encode() with a custom regex: special tokens found and split here."""
        if disallowed and self._special_regex(disallowed).search(text):
            raise self._disallowed_error(text, disallowed)
        if not allowed:
            return self._regex_encode_ordinary(text)
        out: list[int] = []
        pos = 0
        for m in self._special_regex(allowed).finditer(text):
            out.extend(self._regex_encode_ordinary(text[pos:m.start()]))
            out.append(self.special_tokens[m.group()])
            pos = m.end()
        out.extend(self._regex_encode_ordinary(text[pos:]))
        return out

    def _encode_one(self, text: str, output: int, allowed_special, disallowed_special):
        text = self._as_text(text, "text")
        allowed, disallowed = self._specials(allowed_special, disallowed_special)
        if not self._native_text:
            ids = self._encode_regex(text, allowed, disallowed)
            return ids if output == OUT_LIST else len(ids) if output == OUT_COUNT else np.array(ids, np.uint32)
        result, bad = self._native.encode_str(text, output, self._special_set(allowed), self._special_set(disallowed))
        if bad:
            raise self._disallowed_error(text, disallowed)
        return result

    def encode(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
               disallowed_special: Literal["all"] | Collection[str] = "all") -> list[int]:
        """Like tiktoken's ``Encoding.encode``: special tokens in text raise unless allowed."""
        return self._encode_one(text, OUT_LIST, allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                        disallowed_special: Literal["all"] | Collection[str] = "all") -> np.ndarray:
        """``encode`` as a uint32 array, with no Python int per token."""
        return self._encode_one(text, OUT_ARRAY, allowed_special, disallowed_special)

    def count_tokens(self, text: str, *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                     disallowed_special: Literal["all"] | Collection[str] = "all") -> int:
        """``len(encode(text, ...))`` without making the ids."""
        return self._encode_one(text, OUT_COUNT, allowed_special, disallowed_special)

    def _encode_many(self, texts: Iterable[str], output: int, workers: int | None, allowed_special,
                     disallowed_special):
        if isinstance(texts, str):
            raise ArgumentTypeError("texts must be a list of str, not one str: write [text] or use encode()")
        if not isinstance(texts, Iterable):
            raise ArgumentTypeError(f"texts must be a list of str, got {type(texts).__name__}")
        texts = texts if isinstance(texts, list) else list(texts)
        workers = _check_workers(workers)
        allowed, disallowed = self._specials(allowed_special, disallowed_special)
        if not self._native_text or self.splitter.normalize is not None:
            texts = [self._as_text(text, f"texts[{i}]") for i, text in enumerate(texts)]
        if not self._native_text:
            return self._encode_many_regex(texts, output, workers, allowed, disallowed)
        try:
            result, bad = self._native.encode_strs(texts, workers, output, self._special_set(allowed),
                                                   self._special_set(disallowed))
        except TypeError as exc:       # the native encoder names the first text that is no str
            raise ArgumentTypeError(str(exc)) from None
        if bad >= 0:
            raise self._disallowed_error(texts[bad], disallowed, f"texts[{bad}]")
        return result

    def _encode_many_regex(self, texts: list[str], output: int, workers: int, allowed, disallowed):
        """The batch APIs with a custom regex: encode() of each text on threads, then packed."""
        def one(text: str) -> list[int]:
            return self._encode_regex(text, allowed, disallowed)

        for i, text in enumerate(texts):   # the first text at fault, in order, as the native path
            if disallowed and self._special_regex(disallowed).search(text):
                raise self._disallowed_error(text, disallowed, f"texts[{i}]")
        if workers == 1 or len(texts) < 2:
            lists = [one(t) for t in texts]
        else:
            with ThreadPoolExecutor(workers) as pool:
                lists = list(pool.map(one, texts))
        if output == OUT_LIST:
            return lists
        counts = np.array([len(ids) for ids in lists], np.int64)
        if output == OUT_COUNT:
            return counts
        offsets = np.zeros(len(lists) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.fromiter((i for ids in lists for i in ids), np.uint32, count=int(offsets[-1]))
        return flat, offsets

    def encode_batch(self, texts: Sequence[str], *, allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                     disallowed_special: Literal["all"] | Collection[str] = "all",
                     workers: int | None = None) -> list[list[int]]:
        """encode() of each text, on ``workers`` threads (default: one per CPU; the native
        encoder runs without the GIL). A text holding a disallowed special token raises,
        naming the first such text."""
        return self._encode_many(texts, OUT_LIST, workers, allowed_special, disallowed_special)

    def encode_ordinary_batch(self, texts: Sequence[str], *, workers: int | None = None) -> list[list[int]]:
        """encode_ordinary() of each text, on ``workers`` threads."""
        return self._encode_many(texts, OUT_LIST, workers, frozenset(), ())

    def encode_batch_to_numpy(self, texts: Sequence[str], *, workers: int | None = None,
                              allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                              disallowed_special: Literal["all"] | Collection[str] = "all"
                              ) -> tuple[np.ndarray, np.ndarray]:
        """The ids of every text in one uint32 array, and int64 offsets (len(texts) + 1 of them):
        text i's ids are ``ids[offsets[i]:offsets[i + 1]]``. No Python object per token."""
        return self._encode_many(texts, OUT_ARRAY, workers, allowed_special, disallowed_special)

    def count_tokens_batch(self, texts: Sequence[str], *, workers: int | None = None,
                           allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
                           disallowed_special: Literal["all"] | Collection[str] = "all") -> np.ndarray:
        """The number of tokens of each text, as an int64 array, without making the ids."""
        return self._encode_many(texts, OUT_COUNT, workers, allowed_special, disallowed_special)

    # -- decoding -------------------------------------------------------------------------
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes the ids stand for (of the normalized text, when the tokenizer normalizes)."""
        try:
            return self._native.decode_bytes(ids)
        except TypeError as exc:
            detail = str(exc) if str(exc).startswith("token ids must") else "ids is not a sequence"
            raise EncodingError(f"decode takes a sequence of integer token ids: {detail}") from None
        except ValueError as exc:      # an id that is not in the vocabulary
            raise EncodingError(str(exc)) from None

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled by ``errors``). A tokenizer that
        normalizes (``normalize``) gives the normalized text: what was encoded, not what was given."""
        _check_error_handler(errors)
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_batch(self, batch: Iterable[Iterable[int]], *, errors: str = "replace") -> list[str]:
        """``decode`` of each list of ids (tiktoken's name)."""
        return [self.decode(ids, errors) for ids in batch]

    def decode_bytes_batch(self, batch: Iterable[Iterable[int]]) -> list[bytes]:
        return [self.decode_bytes(ids) for ids in batch]

    # -- tiktoken's Encoding surface (tiktoken_surface.py) and a coloured view (visualize.py) ----
    _name: str | None = None        # a named encoding's name (registry.load_encoding), or one given
    _token_table: tiktoken_surface.TokenTable | None = None      # every id's bytes, made on first use

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
        vocab_size = arguments.integer(vocab_size, "vocab_size")
        if len(self.supermerges):
            return self._truncated_supermerged(vocab_size)
        specials = sorted(self.special_tokens, key=self.special_tokens.__getitem__)
        n = vocab_size - 256 - len(specials)
        if n < 0 or n > len(self.merges):
            raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                                  f"{256 + len(specials)}..{256 + len(self.merges) + len(specials)} tokens")
        merge_ids = self.merge_ids[:n]
        top = int(max(self.byte_ids.max(), merge_ids.max() if n else 0))
        return Tokenizer(self.merges[:n], self.pattern, {s: top + 1 + k for k, s in enumerate(specials)},
                         merge_ids=merge_ids, byte_ids=self.byte_ids, normalize=self.normalize)

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

    def _truncated_supermerged(self, vocab_size: int) -> Tokenizer:
        """``truncated`` of a tokenizer with supermerges: its first supermerges, as many as the size
        allows after phase 1 whole; at phase 1's size or below, phase 1 truncated."""
        phase_one = self.without_supermerges()
        keep = vocab_size - phase_one.vocab_size
        if keep <= 0:
            return phase_one.truncated(vocab_size)
        if keep > len(self.supermerges):
            raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                                  f"{256 + len(self.special_tokens)}..{self.vocab_size} tokens")
        tok = Tokenizer(self.merges, self.pattern, self.special_tokens, merge_ids=self.merge_ids,
                        byte_ids=self.byte_ids, normalize=self.normalize, supermerges=self.supermerges[:keep],
                        supermerge_ids=self.supermerge_ids[:keep], boundless_eligible=self.boundless_eligible)
        if tok.vocab_size != vocab_size:
            raise VocabularyError(f"vocab_size={vocab_size!r}: this tokenizer's supermerge ids do not follow its "
                                  f"phase-1 ids, so it cannot be cut to that size")
        return tok

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
