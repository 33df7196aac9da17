"""Picky BPE's events (Chizhov et al., "BPE Gets Picky", arXiv 2409.04599): what they mean, their
check, and the ids they give. Training is ``_picky.train_picky`` (its oracle
``picky_reference.train_picky_reference``); the tokenizer that replays them is ``PickyTokenizer``.

Events are the rows of an int32 array of shape (n, 2), in the order training made them:

* ``(a, b)`` with b >= 0: the merge of the pair (a, b), which makes the event id
  256 + (the number of merges before it);
* ``(x, REMOVED)`` (REMOVED = -1): the removal of token x: every occurrence of x becomes its
  expansion, its two parents, each expanded again while it is itself removed at that point.

*Event ids* are bytes 0..255, then one per merge in event order. A merge always makes a new id,
so a token removed and made again later (from the same or another pair) comes back under the
new id. *Token ids*, what a ``PickyTokenizer`` encodes to: bytes 0..255, then the learned tokens
present after the last event (made and not removed), numbered 256, 257, ... contiguously in the
order of the merges that made them; special tokens follow.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, NoReturn

import numpy as np

from . import _picky
from ... import arguments
from ...encoding._encode import MergeEncoder
from ...encoding.encoder import ChunkEncoder, chunker
from ._picky import PickyEncoder
from ...errors import (ArgumentError, EmptyCorpusError, TokenizerFileError, VocabSizeWarning, VocabularyError,
                       warn)
from ...formats._common import expect
from ...progress import Bar, summary
from ...tokenizer import Tokenizer
from ...counting.wordtable import WordTable
from .. import pipeline
from ..pipeline import TrainReport
from ._variant import Variant

KEYWORDS_HELP = """
    ``picky=tau`` (0 < tau <= 1) trains Picky BPE (Chizhov et al. 2024, arXiv 2409.04599): after
    each merge of (a, b) done m times, a parent x (not a byte) whose IoS = m / (x's frequency just
    before the merge) is >= tau is removed, each occurrence split back into its parents; removed
    tokens do not count towards ``vocab_size``, so more merges fill their place. The result is a
    ``PickyTokenizer`` (ids: bytes, then the tokens present at the end in the order of the merges
    that made them, then special tokens), which only bpe_fast's JSON can hold. Not with ``base``
    or ``superword_at``.
"""

PICKY_VERSION = 3           # bpe_fast's JSON with "events": older readers must refuse it

REMOVED = -1


def check_events(events) -> np.ndarray:
    """events as a contiguous (n, 2) int32 array, checked: each merge joins two present tokens and
    each removal removes a present learned token (not a byte). Else a VocabularyError naming the
    first event at fault."""
    try:
        rows = np.asarray(events)
    except (ValueError, TypeError) as exc:
        raise VocabularyError(f"events must be rows of two integer ids: {exc}") from None
    if rows.size == 0:
        return np.empty((0, 2), np.int32)
    if rows.dtype.kind not in "iu" or rows.ndim != 2 or rows.shape[1] != 2:
        raise VocabularyError(f"events must be rows (a, b) or (x, {REMOVED}) of integer ids, got an array of "
                              f"shape {rows.shape} and type {rows.dtype}")
    if rows.max() >= 2**31 - 1 or rows.min() < REMOVED:
        raise VocabularyError(f"events hold the id {int(rows.max()) if rows.max() > 0 else int(rows.min())}, "
                              f"which is out of range")
    present = np.zeros(256 + len(rows), bool)
    present[:256] = True
    made = 256
    for k, (a, b) in enumerate(rows.tolist()):
        if b == REMOVED:
            if not (256 <= a < made and present[a]):
                raise VocabularyError(f"event {k} removes {a}, which is no present learned token (ids 256..{made - 1} "
                                      f"not removed yet)")
            present[a] = False
            continue
        if not (0 <= a < made and 0 <= b < made and present[a] and present[b]):
            raise VocabularyError(f"event {k} merges ({a}, {b}): both must be present tokens (bytes, or ids made "
                                  f"by earlier merges and not removed)")
        present[made] = True
        made += 1
    return np.ascontiguousarray(rows, dtype=np.int32)


def token_ids(events: np.ndarray) -> np.ndarray:
    """For each event id, its token id (-1 for a token removed by the end)."""
    merged = events[:, 1] != REMOVED
    gone = np.zeros(256 + int(merged.sum()), bool)
    gone[events[~merged, 0]] = True
    ids = np.full(len(gone), -1, np.int32)
    kept = np.flatnonzero(~gone)
    ids[kept] = np.arange(len(kept), dtype=np.int32)
    return ids


def token_bytes(events: np.ndarray) -> list[bytes]:
    """The bytes of every event id."""
    spelled = [bytes([b]) for b in range(256)]
    for a, b in events[events[:, 1] != REMOVED].tolist():
        spelled.append(spelled[a] + spelled[b])
    return spelled


def removals(events: np.ndarray) -> int:
    return int(np.count_nonzero(events[:, 1] == REMOVED))


def learned_after(events: np.ndarray) -> np.ndarray:
    """For each prefix events[:k] (k = 0..n), the number of learned tokens present after it."""
    steps = np.where(events[:, 1] == REMOVED, -1, 1)
    return np.concatenate([[0], np.cumsum(steps)])


def events_for(events: np.ndarray, n_learned: int) -> np.ndarray:
    """The events a training to ``n_learned`` present learned tokens keeps: it stops at the end
    of the first step (a merge and the removals it causes) that reaches n_learned. A step
    changes the count by +1, 0 or -1, so a longer training passes through that very state."""
    present = learned_after(events)
    step_ends = np.append(np.flatnonzero(events[:, 1] != REMOVED)[1:], len(events))   # before each next merge
    reached = step_ends[present[step_ends] >= n_learned]
    if n_learned <= 0:
        return events[:0]
    if not len(reached):
        raise VocabularyError(f"these events never hold {n_learned} learned tokens (at most {int(present.max())})")
    return events[:reached[0]]


def check_tau(tau, error: type[Exception]) -> float:
    """Picky BPE's threshold: a number with 0 < tau <= 1 (a token goes when its IoS >= tau)."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.integer, np.floating)) or not 0 < tau <= 1:
        raise error(f"picky={tau!r} must be a threshold tau with 0 < tau <= 1 (a token is removed when its IoS, "
                    f"the share of its occurrences a merge takes, is >= tau); None trains plain BPE")
    return float(tau)


class PickyTokenizer(Tokenizer):
    """A Picky BPE tokenizer (Chizhov et al., arXiv 2409.04599; ``train(..., picky=tau)``): its
    vocabulary is the list of events training made, merges and removals (this module says
    what they mean), and it encodes each chunk by replaying them in order: a merge joins its pair
    left to right, a removal splits its token. That is the training's own segmentation of every
    chunk it trained on.

    ``PickyTokenizer(events, pattern, special_tokens, normalize=, picky=tau)``. Token ids: bytes
    0..255, then the learned tokens present after the last event, numbered 256, 257, ... in the
    order of the merges that made them, then the special tokens (a list: after those; or a dict).
    ``events`` are in event ids (a merge makes 256 + the merges before it); ``event_ids`` maps
    each event id to its token id (-1: removed). ``merges`` are the merge events' pairs, in event
    ids, and ``merge_ids`` the token id each made (-1: removed later); ``removals`` counts the
    removal events; ``picky`` is the tau it was trained with (None if not known).

    Text is split as a plain tokenizer splits it; each distinct chunk is replayed once
    (``_picky.PickyEncoder``, O(n log n) in its bytes) and cached. The replay holds the GIL, so
    batches gain little from ``workers``. Only bpe_fast's JSON holds the events: the other formats
    hold merges between tokens of the vocabulary, which cannot build a token whose parent was
    removed, and they are refused, as are ``to_tiktoken``, ``to_transformers`` and continued
    training from one (``base=``).
    """
    events: np.ndarray

    def __init__(self, events, pattern: str | None = None,
                 special_tokens: Mapping[str, int] | Iterable[str] | None = None, *,
                 normalize: str | None = None, picky: float | None = None):
        self.events = check_events(events)
        self.picky = None if picky is None else check_tau(picky, VocabularyError)
        self.event_ids = token_ids(self.events)
        spelled = token_bytes(self.events)
        self._vocab = [None] * (int(self.event_ids.max()) + 1)
        for event_id, token_id in enumerate(self.event_ids.tolist()):
            if token_id >= 0:
                self._vocab[token_id] = spelled[event_id]
        self.merges = self.events[self.events[:, 1] != REMOVED]
        self.merge_ids = self.event_ids[256:]
        self.byte_ids = np.arange(256, dtype=np.int32)
        self._set_up(pattern, special_tokens, normalize)

    @property
    def removals(self) -> int:
        return removals(self.events)

    def _make_encoder(self) -> ChunkEncoder:
        """Its encoder (encoding/encoder.py): the chunks as a plain tokenizer cuts them, each chunk
        replayed (``PickyEncoder``); a native encoder without merges decodes."""
        decoder = MergeEncoder(np.empty((0, 2), np.int32), np.empty(0, np.int32), self.byte_ids, self._vocab,
                               {s.encode("utf-8"): i for s, i in self.special_tokens.items()})
        return ChunkEncoder(decoder, self.special_tokens, chunker(self.splitter),
                            PickyEncoder(self.events, self.event_ids).encode)

    def truncated(self, vocab_size: int) -> PickyTokenizer:
        """The tokenizer a shorter training would have given: the events up to the end of the first
        step at which that many tokens (special tokens included) were present."""
        vocab_size = arguments.integer(vocab_size, "vocab_size")
        specials = sorted(self.special_tokens, key=self.special_tokens.__getitem__)
        n = vocab_size - 256 - len(specials)
        if not 0 <= n <= self.n_base - 256:
            raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                                  f"{256 + len(specials)}..{self.vocab_size} tokens")
        return PickyTokenizer(events_for(self.events, n), self.pattern, specials, normalize=self.normalize,
                              picky=self.picky)

    def _not_here(self, what: str) -> VocabularyError:
        return VocabularyError(f"{what}: a Picky BPE tokenizer removes tokens during training, and its "
                               f"vocabulary is a list of events (merges and removals) that only bpe_fast's JSON "
                               f"holds; save it with tok.save('tok.json')")

    def _extended(self, merges, merge_ids, special_tokens) -> Tokenizer:
        raise self._not_here("continued training (base=) cannot start from it")

    def with_huggingface_ids(self) -> NoReturn:
        raise self._not_here("Hugging Face's numbering has no place for it")

    def to_tiktoken(self, name: str = "bpe_fast"):
        raise self._not_here("a tiktoken.Encoding cannot replay it (tiktoken applies merges by rank)")

    def to_transformers(self, **kwargs):
        raise self._not_here("a tokenizer.json cannot hold it (Hugging Face applies merges by rank)")

    def __eq__(self, other) -> bool:
        return (isinstance(other, PickyTokenizer) and np.array_equal(self.events, other.events)
                and self.pattern == other.pattern and self.special_tokens == other.special_tokens
                and self.normalize == other.normalize)

    def __repr__(self) -> str:
        normalize = f", normalize={self.normalize}" if self.normalize else ""
        return (f"PickyTokenizer(vocab_size={self.vocab_size}, events={len(self.events)}, removals={self.removals}, "
                f"picky={self.picky}, pattern={self.pattern_name}, special_tokens={len(self.special_tokens)}"
                f"{normalize})")


def _read_tau(data: dict, where: str) -> float | None:
    tau = data.get("picky")
    if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau <= 1):
        raise TokenizerFileError(f"{where}: picky must be null or a threshold tau with 0 < tau <= 1, "
                                 f"not {json.dumps(tau)[:40]}")
    return tau



# _picky.pyx keeps a chunk's length and the places in it as int32 (the table's offsets are int64):
# as PickyEncoder, it takes chunks shorter than 2**31 - 1 bytes.
PICKY_LONGEST = 2**31 - 2


def check_chunk_lengths(table: WordTable) -> None:
    """ArgumentError unless every chunk is short enough for _picky (before it allocates anything)."""
    if table.n_symbols <= PICKY_LONGEST:        # (a shorter table cannot hold a longer chunk)
        return
    lengths = np.diff(table.offsets)
    at = int(lengths.argmax())
    if lengths[at] > PICKY_LONGEST:
        raise ArgumentError(f"picky=: chunk {at} of the word table is {int(lengths[at]):,} bytes; Picky BPE trains on "
                            f"chunks of at most {PICKY_LONGEST:,} bytes (it numbers a chunk's places with int32): "
                            f"split the text with a pattern")


class PickyBPE(Variant):
    name = "picky"
    title = "Picky BPE"
    summary = "Picky BPE (Chizhov et al. 2024): merges, and removals of tokens a merge has all but used up"
    keywords_help = KEYWORDS_HELP
    held_by = ("bpe_fast",)
    json_version = PICKY_VERSION
    rows = "events"                 # bpe_fast's JSON holds its events where others hold merges
    json_keys = ("events", "picky")

    def selects(self, options: Any) -> bool:
        return options.picky is not None

    def check(self, options: Any) -> None:
        if options.picky is None:
            return
        object.__setattr__(options, "picky", check_tau(options.picky, ArgumentError))
        for name, value in (("base=", options.base), ("superword_at=", options.superword_at)):
            if value is not None:
                raise ArgumentError(f"picky= cannot be combined with {name}: Picky BPE trains from bytes in one stage "
                                    f"(a base's or stage one's merges could not remove tokens)")

    def learn(self, held: list, vocab_size: int, options: Any, report: TrainReport) -> PickyTokenizer:
        """The kernel stage with ``picky=tau``: Picky BPE's events (_picky.train_picky,
        single-threaded) until 256 + the learned tokens present + the special tokens make
        ``vocab_size``: removed tokens make room for more merges. Ties break as ``tie_break``
        says, by the bytes' ids as the kernel numbers them; learned tokens' event ids are the
        same either way."""
        table = replace(held.pop(), hashes=None)      # (the hashes go now, when no caller holds the table)
        if len(table) == 0:
            raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
        check_chunk_lengths(table)
        tau = options.picky
        specials = dict(options.special_ids) if options.special_ids is not None else list(options.special_tokens)
        n_learned = vocab_size - 256 - len(options.special_tokens)
        kernel_ids = pipeline.kernel_ids(options.tie_break, None)
        symbols = table.symbols if kernel_ids is None else kernel_ids.astype(np.uint8)[table.symbols]
        report.unique_chunks, report.total_chunks = len(table), table.total_chunks
        report.table_symbols = table.n_symbols
        pipeline.check_pair_counts(table)
        t0 = time.perf_counter()
        stats: dict = {}
        with Bar(options.progress, "merging", n_learned, unit="token", decaying=True) as bar:
            events = _picky.train_picky(symbols, table.offsets, table.counts, n_learned, tau,
                                        max(1, options.min_frequency), options.max_token_length or 0,
                                        bar.callback(reach=True), stats=stats)
        if kernel_ids is not None:       # back from the kernel's byte ids to the bytes (-1 and learned ids stay)
            byte_of = np.argsort(kernel_ids).astype(np.int32)
            events = np.where((events >= 0) & (events < 256), byte_of[np.clip(events, 0, 255)], events).astype(np.int32)
        report.seconds["merging"] = time.perf_counter() - t0
        summary("merging", report.seconds["merging"], options.progress, merges=int(np.sum(events[:, 1] != REMOVED)),
                removed=int(stats["removals"]))
        tok = PickyTokenizer(events, options.resolved_pattern, specials, normalize=options.resolved_normalize,
                             picky=tau)
        report.merges, report.removals = len(tok.merges), tok.removals
        report.merges_requested, report.vocab_size = n_learned, tok.vocab_size
        if tok.n_base - 256 < n_learned:
            why = (f"no pair occurs {max(1, options.min_frequency)} or more times" if options.min_frequency > 1
                   else "every chunk is a single token")
            if stats["steps"] >= 4 * n_learned + 1024:
                why = f"{stats['steps']:,} merge steps, the bound, with removals undoing merges"
            warn(f"stopped with {tok.n_base - 256} of {n_learned} learned tokens present ({why}): vocab size "
                 f"{tok.vocab_size} instead of {vocab_size}", VocabSizeWarning)
        tok.training_report = report
        return tok

    def owns(self, tok: Any) -> bool:
        return isinstance(tok, PickyTokenizer)

    def refusal(self, fmt_title: str) -> str:
        """A format that lists merges between tokens of the vocabulary cannot hold a Picky BPE tokenizer."""
        return (f"{fmt_title} cannot hold a Picky BPE tokenizer: the format lists merges between tokens "
                f"of the vocabulary, but Picky BPE removes tokens during training, so some of its "
                f"tokens are made from tokens no longer in the vocabulary, and only its events "
                f"(merges and removals, replayed in order) encode as it does; save it as bpe_fast's "
                f"JSON (tok.json)")

    def json_fields(self, tok: Any) -> dict:
        """Version 3: ``"events"`` instead of ``"merges"``, one event per line in training order,
        ``[a, b]`` for a merge of the pair (a, b) and ``[x, -1]`` for the removal of x, in event
        ids (bytes 0..255, then 256 + k for the k-th merge), and ``"picky"``, the tau it was
        trained with (null if not known). Its token ids follow from the events. An older bpe_fast
        refuses the file rather than read merges that are not there."""
        return dict(version=PICKY_VERSION, picky=tok.picky, events=tok.events.tolist())

    def from_json(self, data: dict, where: str) -> dict:
        return dict(events=expect(data["events"], list, where, "events"), picky=_read_tau(data, where))

    def tokenizer(self, vocab: Any) -> PickyTokenizer:
        return PickyTokenizer(vocab.extra["events"], vocab.pattern, vocab.special_tokens, normalize=vocab.normalize,
                              picky=vocab.extra["picky"])


VARIANT = PickyBPE()
