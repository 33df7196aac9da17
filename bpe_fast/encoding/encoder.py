"""Stage 4, encoding: one interface over the two ways a tokenizer encodes text, and the function
that builds and keeps a tokenizer's encoder.

An ``Encoder`` encodes one text (``encode``) or a list of them (``encode_batch``), the special
tokens allowed and disallowed given as sets of str (specials.py checks them), into a list of
ids, a uint32 array or a count (``OUTPUT_LIST``, ``OUTPUT_ARRAY``, ``OUTPUT_COUNT``), and
decodes ids to bytes (``decode_bytes``). Two kinds meet it:

* ``NativeEncoder``, for a named pattern or none: the native ``MergeEncoder`` (_encode.pyx)
  takes the str itself, and UTF-8, special tokens, splitting and merging happen there without
  the GIL; batches run on threads.
* ``ChunkEncoder``, the fallback for a pattern the native scanner cannot run: the ``regex``
  module splits the text here, and each distinct chunk's ids come from the native merges
  (cached); with supermerges (BoundlessBPE), each maximal run of chunks that are one unit each
  is merged again, as the native encoder does. A variant's tokenizer may give its own chunks and
  chunk encoder (Picky BPE replays its events).

``encoder_for(tok)`` is the one way to a tokenizer's encoder: built on first use by
``tok._make_encoder()`` (``build`` for a plain tokenizer), once even when threads race, and kept
on the tokenizer (a pickled tokenizer leaves it behind). ``merge_encoder`` builds the native
merge table; for a large vocabulary read from a file it reads the tables that take most of the
building back from prebuilt.py's disk cache, or saves them there for the next process.
"""
from __future__ import annotations

import codecs
import functools
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Literal, Protocol
from collections.abc import Iterable, Mapping, Set as AbstractSet

import numpy as np

from .. import prebuilt
from ..errors import ArgumentError, ArgumentTypeError
from ..pretokenize.patterns import whole_matches
from ..pretokenize.splitter import NORMALIZATIONS, REGEX, WHOLE, Splitter, char_classes
from ._encode import OUTPUT_ARRAY, OUTPUT_COUNT, OUTPUT_LIST, MergeEncoder, SpecialSet
from .specials import special_regex

__all__ = ["Encoder", "NativeEncoder", "ChunkEncoder", "encoder_for", "build", "merge_encoder", "chunker", "as_str",
           "text_taker", "text_list", "check_error_handler", "utf8", "OUTPUT_LIST", "OUTPUT_ARRAY", "OUTPUT_COUNT"]

CACHED_CHUNKS = 1_000_000       # a ChunkEncoder remembers the ids of this many distinct chunks


class Encoder(Protocol):
    """What a tokenizer's encode and decode methods call (see the module docstring)."""
    native: MergeEncoder        # the native merge table (it decodes; continued training lays chunks out with it)

    def encode(self, text: str, output: int, allowed: AbstractSet[str], disallowed: AbstractSet[str]
               ) -> tuple[Any, int]:
        """(the ids of ``text`` as ``output`` says, 0), or (None, nonzero) when ``text`` holds a
        disallowed special token (the caller says which, in its error)."""

    def encode_batch(self, texts: list[str], workers: int, output: int, allowed: AbstractSet[str],
                     disallowed: AbstractSet[str]) -> tuple[Any, int]:
        """(the ids of every text: lists, or flat ids and offsets, or counts; -1), or (None, the
        index of the first text holding a disallowed special token)."""

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes the ids stand for; ValueError for an id the vocabulary lacks."""


# -- the text an encoder takes --------------------------------------------------------------

def as_str(text, name: str) -> str:
    """text as an exact str: the native encoder takes no subclass (numpy.str_), which tiktoken takes."""
    if text.__class__ is str:
        return text
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(text).__name__}")
    return str.__str__(text)            # the same characters, whatever the subclass's own __str__ says


def _as_normal_str(form: Literal["NFC", "NFKC"], text, name: str) -> str:
    """text as an exact str (``as_str``), in the Unicode normal form ``form``."""
    return unicodedata.normalize(form, as_str(text, name))


def text_taker(normalize: str | None) -> Callable[[Any, str], str]:
    """What turns the argument of an encode call into the str to encode: ``as_str``, or with a
    normalization ``_as_normal_str``. Chosen once per tokenizer, so that encoding without a
    normalization makes the very call it made before normalization existed."""
    return as_str if normalize is None else functools.partial(_as_normal_str, NORMALIZATIONS[normalize])


def text_list(texts) -> list:
    """A batch's ``texts`` as a list (a generator is read once); one str is refused (a common slip)."""
    if isinstance(texts, str):
        raise ArgumentTypeError("texts must be a list of str, not one str: write [text] or use encode()")
    if not isinstance(texts, Iterable):
        raise ArgumentTypeError(f"texts must be a list of str, got {type(texts).__name__}")
    return texts if isinstance(texts, list) else list(texts)


def check_error_handler(errors) -> None:
    """decode's ``errors``: a name codecs knows ("replace", "strict", "ignore"...), checked now, not
    only when an invalid byte comes."""
    if not isinstance(errors, str):
        raise ArgumentTypeError(f"errors must be the name of an error handler, such as 'replace', got {errors!r}")
    try:
        codecs.lookup_error(errors)
    except (LookupError, ValueError):         # ValueError: a name that is no text (a lone surrogate)
        raise ArgumentError(f"errors={errors!r} is no error handler (try 'replace', 'strict' or 'ignore')") from None


def utf8(text: str) -> bytes:
    """text's UTF-8; lone surrogates become U+FFFD, as tiktoken (and the native encoder) does."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


# -- the two encoders -------------------------------------------------------------------------

class NativeEncoder:
    """A named pattern, or none: the native encoder does it all (see the module docstring)."""

    def __init__(self, native: MergeEncoder, special_tokens: Mapping[str, int]):
        self.native = native
        self.decode_bytes: Callable[[Iterable[int]], bytes] = native.decode_bytes
        self._special_ids = dict(special_tokens)
        self._special_sets: dict[frozenset[str], SpecialSet] = {}

    def _special_set(self, tokens: AbstractSet[str]) -> SpecialSet | None:
        """The native finder of these special tokens (None for none), made once per set."""
        if not tokens:
            return None
        key = frozenset(tokens)
        found = self._special_sets.get(key)
        if found is None:
            found = self._special_sets[key] = SpecialSet({t.encode("utf-8"): self._special_ids.get(t, -1)
                                                          for t in key})
        return found

    def encode(self, text: str, output: int, allowed: AbstractSet[str], disallowed: AbstractSet[str]
               ) -> tuple[Any, int]:
        return self.native.encode_str(text, output, self._special_set(allowed), self._special_set(disallowed))

    def encode_batch(self, texts: list[str], workers: int, output: int, allowed: AbstractSet[str],
                     disallowed: AbstractSet[str]) -> tuple[Any, int]:
        try:
            return self.native.encode_strs(texts, workers, output, self._special_set(allowed),
                                           self._special_set(disallowed))
        except TypeError as exc:       # the native encoder names the first text that is no str
            raise ArgumentTypeError(str(exc)) from None


class ChunkEncoder:
    """Text split into chunks here (``chunks``), each distinct chunk encoded once by
    ``encode_chunk`` (its UTF-8 in, its ids out; default: the native merges) and remembered;
    ``runs``: merge runs of one-unit chunks by the supermerges. Special tokens are found here."""

    def __init__(self, native: MergeEncoder, special_tokens: Mapping[str, int],
                 chunks: Callable[[str], Iterable[str]],
                 encode_chunk: Callable[[bytes], list[int]] | None = None, runs: bool = False):
        self.native = native
        self.decode_bytes: Callable[[Iterable[int]], bytes] = native.decode_bytes
        self.chunks = chunks
        self._special_ids = dict(special_tokens)
        self._encode_bytes = encode_chunk if encode_chunk is not None else native.encode_chunk_bytes
        self._units = frozenset(native.unit_ids()) if runs else None
        self._cache: dict[str, list[int]] = {}

    def encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is None:
            ids = self._encode_bytes(utf8(chunk))
            if len(self._cache) < CACHED_CHUNKS:
                self._cache[chunk] = ids
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of text without special tokens."""
        if self._units is not None:
            return self._encode_runs(text, self._units)
        out: list[int] = []
        for chunk in self.chunks(text):
            out.extend(self.encode_chunk(chunk))
        return out

    def _encode_runs(self, text: str, units: frozenset[int]) -> list[int]:
        """The chunks as always, then each maximal run of chunks that are one unit each merged
        by the supermerges (as the native encoder does)."""
        out: list[int] = []
        run: list[int] = []
        for chunk in self.chunks(text):
            ids = self.encode_chunk(chunk)
            if len(ids) == 1 and ids[0] in units:
                run.append(ids[0])
                continue
            if run:
                out.extend(self.native.merge_run_list(run))
                run = []
            out.extend(ids)
        out.extend(self.native.merge_run_list(run))
        return out

    def _encode_list(self, text: str, allowed: AbstractSet[str]) -> list[int]:
        """The ids of text, the allowed special tokens as their ids."""
        if not allowed:
            return self.encode_ordinary(text)
        out: list[int] = []
        pos = 0
        for m in special_regex(frozenset(allowed)).finditer(text):
            out.extend(self.encode_ordinary(text[pos:m.start()]))
            out.append(self._special_ids[m.group()])
            pos = m.end()
        out.extend(self.encode_ordinary(text[pos:]))
        return out

    def encode(self, text: str, output: int, allowed: AbstractSet[str], disallowed: AbstractSet[str]
               ) -> tuple[Any, int]:
        if disallowed and special_regex(frozenset(disallowed)).search(text):
            return None, 1
        ids = self._encode_list(text, allowed)
        return (ids if output == OUTPUT_LIST else len(ids) if output == OUTPUT_COUNT
                else np.array(ids, np.uint32)), 0

    def encode_batch(self, texts: list[str], workers: int, output: int, allowed: AbstractSet[str],
                     disallowed: AbstractSet[str]) -> tuple[Any, int]:
        """Each text on ``workers`` threads (the chunks' Python holds the GIL: they gain little), then packed."""
        texts = [as_str(text, f"texts[{i}]") for i, text in enumerate(texts)]
        if disallowed:                  # the first text at fault, in order, as the native encoder finds it
            finder = special_regex(frozenset(disallowed))
            bad = next((i for i, text in enumerate(texts) if finder.search(text)), -1)
            if bad >= 0:
                return None, bad
        if workers == 1 or len(texts) < 2:
            lists = [self._encode_list(text, allowed) for text in texts]
        else:
            with ThreadPoolExecutor(workers) as pool:
                lists = list(pool.map(functools.partial(self._encode_list, allowed=allowed), texts))
        return _packed(lists, output), -1


def _packed(lists: list[list[int]], output: int):
    """Lists of ids as a batch returns them: the lists, the counts, or flat ids and offsets."""
    if output == OUTPUT_LIST:
        return lists
    counts = np.array([len(ids) for ids in lists], np.int64)
    if output == OUTPUT_COUNT:
        return counts
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = np.fromiter((i for ids in lists for i in ids), np.uint32, count=int(offsets[-1]))
    return flat, offsets


def chunker(splitter: Splitter) -> Callable[[str], list[str]]:
    """The chunks of a text as ``splitter`` cuts them, made here: by the native scanner where the
    pattern has one, by the regex module otherwise, none for no pattern (the text is one chunk)."""
    if splitter.engine == WHOLE:
        return lambda text: [text] if text else []
    scanner = splitter.scanner
    if scanner is None:
        return functools.partial(whole_matches, splitter.regex)

    def scanned(text: str) -> list[str]:
        try:
            return scanner.chunks(text)
        except UnicodeEncodeError:       # lone surrogates become U+FFFD first, as the native encoder does
            return scanner.chunks(utf8(text).decode("utf-8"))
    return scanned


# -- building an encoder, once per tokenizer -------------------------------------------------

def encoder_for(tok) -> Encoder:
    """``tok``'s encoder, made by ``tok._make_encoder()`` the first time it is needed (training,
    loading and saving never need it, and for a large vocabulary it takes a good fraction of a
    second), and kept in ``tok._encoder``; threads that race for it wait for one build."""
    encoder = tok._encoder
    if encoder is None:
        with tok._encoder_lock:
            encoder = tok._encoder
            if encoder is None:
                encoder = tok._encoder = tok._make_encoder()
    return encoder


def build(tok) -> Encoder:
    """A plain tokenizer's encoder: native where the text is split natively (a named pattern,
    or none), else the regex fallback over the same native merges."""
    native = merge_encoder(tok)
    if tok.splitter.engine != REGEX:
        return NativeEncoder(native, tok.special_tokens)
    return ChunkEncoder(native, tok.special_tokens, chunker(tok.splitter), runs=bool(len(tok.supermerges)))


def merge_encoder(tok) -> MergeEncoder:
    """The native encoder of ``tok``'s merges (and supermerges), set to split as its splitter does."""
    vocab = tok._vocab
    if len(tok.supermerges):                    # superwords are never a chunk's tokens
        vocab = list(vocab)
        for i in tok.supermerge_ids.tolist():
            vocab[i] = None
    encoder = _with_reachable_tables(tok, vocab)
    if len(tok.supermerges):
        encoder.set_supermerges(tok.supermerges, tok.supermerge_ids,
                                [tok._vocab[i] for i in tok.supermerge_ids.tolist()])
    native_id = tok.splitter.native_id         # None unless the engine is NATIVE
    if native_id is not None:
        encoder.set_scanner(native_id, *char_classes())
    elif tok.splitter.engine == WHOLE:
        encoder.set_no_split()
    return encoder


def _with_reachable_tables(tok, vocab: list) -> MergeEncoder:
    """The encoder of these merges; a large vocabulary read from a file has its reachable tokens
    and their trie read back from prebuilt.py's cache when an earlier process saved them (they
    are most of the time of building it), else built and saved. A tokenizer made in memory
    (trained, extended) is not saved: no other process would read it."""
    specials = {s.encode("utf-8"): i for s, i in tok.special_tokens.items()}
    if len(tok.merges) < prebuilt.WORTH_CACHING or not getattr(tok, "_keep_tables", False):
        return MergeEncoder(tok.merges, tok.merge_ids, tok.byte_ids, vocab, specials)
    key = prebuilt.key_of("reachable", tok.merges, tok.merge_ids, tok.byte_ids)
    saved = prebuilt.read(key, expect={**{f"t{i}": None for i in range(5)}, "bits": (1,)})
    if saved is not None:
        try:
            return MergeEncoder(tok.merges, tok.merge_ids, tok.byte_ids, vocab, specials,
                                tuple(saved[f"t{i}"] for i in range(5)) + (int(saved["bits"][0]),))
        except ValueError:                  # tables the encoder refuses (it checks every index): built afresh
            pass
    encoder = MergeEncoder(tok.merges, tok.merge_ids, tok.byte_ids, vocab, specials)
    *tables, bits = encoder.reachable_tables()
    prebuilt.write(key, {f"t{i}": table for i, table in enumerate(tables)} | {"bits": np.array([bits])})
    return encoder
