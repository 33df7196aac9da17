"""The pipeline: ``count`` (inputs -> word table), ``train_from_table`` (word table -> kernel ->
Tokenizer), and ``train``/``train_from_iterator``, which do both through one path (``_train``):
they differ only in how the text is counted. ``TrainOptions`` holds every other setting,
checked before any text is read; continued training (``base=``) is continued.py."""
from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Union, overload
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import _kernel, _picky, arguments, boundless, continued
from .arguments import INT64_MAX
from .bytelevel import huggingface_byte_order
from .continued import base_special_tokens, check_base
from .counting import (DEFAULT_BATCH_CHARS, DEFAULT_BLOCK_SIZE, MAX_BLOCK_SIZE, CountConfig, count_tasks,
                       default_workers, make_config)
from .distributed import count_on_cluster
from .errors import ArgumentError, ArgumentTypeError, EmptyCorpusError, VocabSizeWarning, terminating_raises
from .inputs import DocsTask, docs_tasks, sources, total_size
from .patterns import DEFAULT_PATTERN, name_of, resolve
from .picky import REMOVED, check_tau
from .pretokenize import check_normal_specials, normalization, special_token_list
from .progress import Bar, Deferred, ProgressOption, summary, with_alias
from .progress import check as check_progress
from .tokenizer import PickyTokenizer, Tokenizer
from .wordtable import WordTable

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType
    from typing import TypeGuard

# What train() and count() read: a file, folder or "-", or several.
Inputs = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]
# Special tokens: a list (ids follow the learned ones, in order) or tiktoken's {token: id}.
SpecialTokens = Union[Sequence[str], Mapping[str, int]]

@dataclass
class TrainReport:
    """What a training run read, learned and how long each stage took."""
    input_size: int = 0                     # bytes of files (characters for iterators)
    input_unit: str = "bytes"
    total_chunks: int = 0
    unique_chunks: int = 0
    table_symbols: int = 0
    merges: int = 0
    merges_requested: int = 0
    vocab_size: int = 0
    runs: int = 0                           # BoundlessBPE: runs of units, distinct runs, supermerges
    unique_runs: int = 0
    supermerges: int = 0
    # each merge's count when chosen (superword_at="auto" needs them)
    merge_counts: Any = field(default=None, compare=False, repr=False)
    seconds: dict = field(default_factory=dict)   # stage -> seconds
    removals: int = 0                       # Picky BPE: tokens removed (merges then counts merge events)

    def summary(self) -> str:
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())
        removed = f", {self.removals:,} removed" if self.removals else ""
        runs = (f"; {self.runs:,} runs, {self.unique_runs:,} unique; {self.supermerges:,} supermerges"
                if self.runs else "")
        return (f"read {self.input_size:,} {self.input_unit}; {self.total_chunks:,} chunks, "
                f"{self.unique_chunks:,} unique; {self.merges:,} merges{removed}{runs} -> vocab size "
                f"{self.vocab_size:,}; {stages}")


def _is_int(value) -> TypeGuard[int | np.integer]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


# Token ids are int32 in the kernel and the encoder: ids 0 .. 2**31 - 2, special tokens included.
MAX_VOCAB_SIZE = 2**31 - 1


# What superword_at= trains, by the name ``superword=`` and ``--superword`` take.
SUPERWORDS = {
    "superbpe": "SuperBPE (Liu et al. 2025): stage two continues BPE with superword_pattern, whose chunks span words",
    "boundless": "BoundlessBPE (Schmidt et al. 2025, two-phase): stage two learns supermerges of whole adjacent "
                 "pretokens that are one token each (boundless.py)",
}


# The tie-break rules, by the name ``tie_break=`` and ``--tie-break`` take, with what each means.
TIE_BREAKS = {
    "bytes": "equal counts go to the smallest (left id, right id) with bytes as ids 0..255 (rustbpe, bpeasy); "
             "with a base, by the base's ids",
    "huggingface": "equal counts go to the smallest pair by Hugging Face's ids for the bytes (tokenizers' "
                   "BpeTrainer with ByteLevel); with a base, by the ids BpeTrainer gives its tokens (bytes in "
                   "its order, then merges in rank order: a tokenizer.json's own)",
}


def _kernel_ids(tie_break: str, base: Tokenizer | None) -> np.ndarray | None:
    """How the kernel numbers the tokens it starts from, whose ids break its ties: for each id
    (a byte from bytes; a base's id), the kernel's; None: the ids themselves (bytes 0..255, or
    the base's). New tokens are numbered from ``first_new_id`` either way, after all of these.

    Hugging Face's BpeTrainer numbers its alphabet by GPT-2's bytes-to-unicode characters in
    code point order, and breaks ties between equal counts by those ids; continuing a base, by
    the ids it would give the base's tokens (continued.huggingface_order)."""
    if tie_break == "bytes":
        return None
    if base is not None:
        return continued.huggingface_order(base)
    return np.argsort(np.array(huggingface_byte_order(), dtype=np.int32)).astype(np.int32)


def _ids_of_kernel(kernel_ids: np.ndarray) -> np.ndarray:
    """The inverse of ``_kernel_ids``: for each kernel id, the token id (-1 for none)."""
    used = np.flatnonzero(kernel_ids >= 0)
    inverse = np.full(int(kernel_ids.max(initial=-1)) + 1, -1, dtype=np.int32)
    inverse[kernel_ids[used]] = used
    return inverse


@dataclass(frozen=True)
class TrainOptions:
    """Every setting of a training run but its input, checked once, before any text is read
    (``TrainOptions.checked``). ``vocab_size`` is one size or a tuple of them (one training, to
    the largest, cut to each); ``pattern`` is ``...`` until resolved: the base's, or cl100k;
    ``normalize`` likewise: the base's, or None."""
    vocab_size: int | tuple[int, ...]
    pattern: Any = ...
    normalize: Any = ...
    special_tokens: tuple[str, ...] = ()
    min_frequency: int = 0
    tie_break: str = "bytes"
    base: Tokenizer | None = None
    max_token_length: int | None = None
    superword_at: int | str | None = None     # a vocab size, or "auto" (BoundlessBPE)
    superword_pattern: str | None = "superword"
    superword: str = "superbpe"       # what superword_at does: SUPERWORDS
    boundless_eligible: str | None = None   # BoundlessBPE's eligibility regex (None: patterns.BOUNDLESS_ELIGIBLE)
    progress: ProgressOption = "auto"
    special_ids: Mapping[str, int] | None = None   # ids given with the special tokens (a dict), to honour
    threads: int | None = None     # the kernel's threads (train's workers, at most one per CPU available)
    picky: float | None = None     # Picky BPE's threshold tau (None: plain BPE); see _learn_picky

    @classmethod
    def checked(cls, vocab_size, **settings) -> TrainOptions:
        if isinstance(vocab_size, list):
            vocab_size = tuple(vocab_size)
        specials = settings.get("special_tokens")
        if isinstance(specials, Mapping):               # tiktoken's style: {token: id}
            settings.update(special_tokens=tuple(specials), special_ids=dict(specials))
        options = cls(vocab_size, **settings)
        options.check()
        return options

    @property
    def sizes(self) -> tuple[int, ...]:
        return self.vocab_size if isinstance(self.vocab_size, tuple) else (self.vocab_size,)

    @property
    def resolved_pattern(self):
        """The pattern the text is split with: as given, else the base's, else cl100k."""
        if self.pattern is not ...:
            return self.pattern
        return self.base.pattern if isinstance(self.base, Tokenizer) else DEFAULT_PATTERN

    @property
    def resolved_normalize(self) -> str | None:
        """The Unicode normalization the text gets before it is split: as given, else the base's."""
        if self.normalize is not ...:
            return self.normalize
        return self.base.normalize if isinstance(self.base, Tokenizer) else None

    @property
    def cut_out(self) -> list[str]:
        """Every special token cut out of the text when counting: ours and the base's."""
        return [*self.special_tokens, *base_special_tokens(self.base, self.special_tokens)]

    def check(self) -> None:
        """Every argument, for every size; raises ArgumentError naming the one at fault."""
        if not self.sizes:
            raise ArgumentError("vocab_size is an empty list")
        object.__setattr__(self, "special_tokens", special_token_list(self.special_tokens))
        if self.normalize is not ...:
            object.__setattr__(self, "normalize", normalization(self.normalize))
        check_progress(self.progress)
        if self.threads is not None:
            arguments.workers(self.threads)
        for size in self.sizes:
            self._check_size(size)
        self._check_counts()
        if not isinstance(self.tie_break, str) or self.tie_break not in TIE_BREAKS:
            raise ArgumentError(f"tie_break must be one of {tuple(TIE_BREAKS)}, got {self.tie_break!r}")
        if self.max_token_length is not None and not (_is_int(self.max_token_length)
                                                      and 1 <= self.max_token_length <= INT64_MAX):
            raise ArgumentError(f"max_token_length must be a positive number of bytes (at most 2**63 - 1), "
                                f"got {self.max_token_length!r}")
        for size in self.sizes:
            check_base(self.base, size)
        if not isinstance(self.superword, str) or self.superword not in SUPERWORDS:
            raise ArgumentError(f"superword must be one of {tuple(SUPERWORDS)}, got {self.superword!r}")
        if self.superword == "boundless":
            self._check_boundless()
        elif self.boundless_eligible is not None:
            raise ArgumentError('boundless_eligible= goes with superword="boundless"')
        if self.superword_at is not None:
            self._check_superword_at()
        if self.special_ids is not None:
            self._check_special_ids()
        if self.picky is not None:
            self._check_picky()
        check_normal_specials(self.cut_out, self.resolved_normalize, ArgumentError)

    def _check_picky(self) -> None:
        object.__setattr__(self, "picky", check_tau(self.picky, ArgumentError))
        for name, value in (("base=", self.base), ("superword_at=", self.superword_at)):
            if value is not None:
                raise ArgumentError(f"picky= cannot be combined with {name}: Picky BPE trains from bytes in one stage "
                                    f"(a base's or stage one's merges could not remove tokens)")

    def _check_size(self, size) -> None:
        if not _is_int(size):
            raise ArgumentTypeError(f"vocab_size must be an integer, got {size!r}")
        need = 256 + len(self.special_tokens)
        if self.base is None and size < need:
            raise ArgumentError(f"vocab_size={size} is too small: it must be at least {need} "
                                f"(256 byte tokens + {len(self.special_tokens)} special tokens)")
        if size > MAX_VOCAB_SIZE:
            raise ArgumentError(f"vocab_size={size} is too large: token ids are 32-bit, so a vocabulary holds at "
                                f"most {MAX_VOCAB_SIZE:,} tokens, its special tokens included")

    def _check_counts(self) -> None:
        if not _is_int(self.min_frequency):
            raise ArgumentTypeError(f"min_frequency must be an integer (a number of occurrences), "
                                    f"got {self.min_frequency!r}")
        if self.min_frequency < 0:
            raise ArgumentError(f"min_frequency must be >= 0, got {self.min_frequency}")

    def _check_special_ids(self) -> None:
        """Special tokens given with ids are honoured when the ids are the top of the vocabulary,
        right after the learned tokens (in any order); other ids would leave learned ids unused
        or clash with them, so they are refused rather than silently renumbered."""
        if len(self.sizes) > 1 or self.base is not None or self.superword_at is not None:
            raise ArgumentError("special_tokens with ids (a dict) need one vocab_size and no base= or superword_at=: "
                                "give them as a list (ids then follow the learned ones, in the order given)")
        ids = list(self.special_ids.values())           # type: ignore[union-attr]
        if not all(_is_int(i) for i in ids):
            raise ArgumentTypeError(f"special_tokens ids must be integers, got {dict(self.special_ids or {})}")
        size, k = self.sizes[0], len(ids)
        if sorted(ids) != list(range(size - k, size)):
            raise ArgumentError(f"special_tokens ids {dict(self.special_ids or {})} cannot be honoured: with "
                                f"vocab_size={size} the learned tokens take ids 0..{size - k - 1}, so the {k} special "
                                f"token(s) take ids {size - k}..{size - 1} (in any order); give those ids, or a list")

    def _check_superword_at(self) -> None:
        if isinstance(self.superword_at, str) and self.superword_at == "auto":
            if self.superword != "boundless":
                raise ArgumentError('superword_at="auto" goes with superword="boundless": SuperBPE\'s T is set by '
                                    'hand')
            return
        floor = 256 if self.base is None else self.base.vocab_size + 1
        floor = max(floor, 256 + len(self.special_tokens)) if self.superword == "boundless" else floor
        top = min(self.sizes) + (self.superword == "boundless")     # boundless: T == V is plain training
        if not _is_int(self.superword_at) or not floor <= self.superword_at < top:
            below = "at most" if self.superword == "boundless" else "below"
            raise ArgumentError(f"superword_at={self.superword_at!r} must be a vocabulary size of at least {floor} "
                                f"and {below} vocab_size: stage one learns up to it, stage two the rest")

    def _check_boundless(self) -> None:
        """BoundlessBPE's limits, before any text is read."""
        if self.superword_at is None:
            raise ArgumentError('superword="boundless" needs superword_at=T: plain BPE learns up to vocab size T, '
                                'supermerges the rest')
        if self.base is not None:
            raise ArgumentError('superword="boundless" trains from bytes: it does not continue a base= tokenizer')
        if self.tie_break != "bytes":
            raise ArgumentError('superword="boundless" breaks ties by ids (tie_break="bytes"): Hugging Face has no '
                                'supermerges to follow')
        if self.special_ids is not None:
            raise ArgumentError('superword="boundless" takes special tokens as a list (their ids follow phase 1)')
        object.__setattr__(self, "boundless_eligible", boundless.eligibility(self.boundless_eligible))

    def superword_stages(self) -> tuple[TrainOptions, Callable[[Tokenizer], TrainOptions]] | None:
        """SuperBPE's two stages: up to ``superword_at`` with the pattern, then on to
        ``vocab_size`` with the superword pattern, continuing from stage one's tokenizer. None
        without ``superword_at``: one stage."""
        if self.superword_at is None or self.superword == "boundless":
            return None
        one = replace(self, vocab_size=int(self.superword_at), superword_at=None)
        return one, lambda stage_one: replace(self, pattern=self.superword_pattern, base=stage_one, superword_at=None)


def count(inputs: Inputs, *, pattern: str | None = "cl100k",
          special_tokens: Sequence[str] = (), workers: int | None = None, progress: ProgressOption = "auto",
          errors: str = "strict", lines: bool = False, field: str = "text", column: str = "text",
          block_size: int = DEFAULT_BLOCK_SIZE, memory_budget: int | None = None, client=None,
          normalize: str | None = None, show_progress: bool | None = None) -> WordTable:
    """Count the chunks of every input into a word table: count once, then train as often as
    you like with ``train_from_table``, or save it (``table.save``) and add it to others.

    An input is a text file, "-" (standard input), a pipe, a compressed file (.gz .bz2 .xz
    .zst), JSON lines (each record's ``field`` a document), Parquet (each value of ``column`` a
    document) or a directory of such files (see inputs.py). The table is the same for any
    ``workers``, ``block_size`` and ``memory_budget`` (bytes a worker's table may hold before it
    writes it out to a temporary file; default 64 MiB, see counting.default_memory_budget). ``lines``
    makes every line a document. ``client``, a dask.distributed Client, counts on its cluster.
    ``normalize`` ("nfc" or "nfkc") puts the text in that Unicode normal form before special
    tokens are found and it is split; the table records it, and a tokenizer trained from it
    normalizes what it encodes the same way.
    ``show_progress`` is a deprecated alias of ``progress`` (True: "bar", False: "none").
    """
    progress = with_alias(progress, show_progress)
    config = make_config(pattern, special_tokens, errors, lines, memory_budget, normalize)
    return _count(inputs, config, workers, progress, field, column, block_size, client)


def _count(inputs: Inputs, config: CountConfig, workers: int | None, progress: ProgressOption, field: str,
           column: str, block_size: int, client) -> WordTable:
    """``count`` with its settings made (``make_config``): chunks, or BoundlessBPE's runs when
    the config has units (boundless.py)."""
    paths = arguments.paths(inputs, "inputs")
    if not paths:
        raise EmptyCorpusError("no input files given")
    block_size = arguments.integer(block_size, "block_size", 1, MAX_BLOCK_SIZE)
    for name, value in (("field", field), ("column", column)):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{name} must be a str (the name holding the text), got {value!r}")
    workers = None if workers is None else arguments.workers(workers)
    if client is not None and not callable(getattr(client, "map", None)):
        raise ArgumentTypeError(f"client must be a dask.distributed Client, got {type(client).__name__}")
    found = sources(paths, field, column)                   # every input checked before any is read
    if client is not None:
        return count_on_cluster(client, found, config, block_size)
    cut = config.cut
    tasks = (t for source in found for t in source.tasks(cut, block_size))
    total = total_size(found)                               # streams have no size to show progress against
    stage = "counting" if config.units is None else "runs"
    start = time.perf_counter()
    with Bar(check_progress(progress), stage, total, unit="B", unit_scale=True) as bar:
        table = count_tasks(tasks, config, workers, bar.callback(), poll=bar.poll)
    summary(stage, time.perf_counter() - start, progress, bytes=table.input_bytes,
            **{"chunks" if config.units is None else "runs": table.total_chunks}, distinct=len(table))
    return table


def count_from_iterator(docs: Iterable, *, pattern: str | None = "cl100k",
                        special_tokens: Sequence[str] = (), workers: int | None = None,
                        progress: ProgressOption = "auto", errors: str = "strict", lines: bool = False,
                        batch_chars: int = DEFAULT_BATCH_CHARS, memory_budget: int | None = None,
                        field: str = "text", length: int | None = None, normalize: str | None = None,
                        show_progress: bool | None = None) -> WordTable:
    """Count the chunks of documents from an iterator into a word table. Each item is a document
    (str or UTF-8 bytes), a batch of documents (a list: Hugging Face ``datasets`` batches), or a
    record (a dict) whose ``field`` holds one or a batch. Items are consumed lazily and sent to
    the workers in batches, so the iterator may be far larger than memory. ``length``, the
    number of documents if known, makes the progress count documents against it (with an ETA).
    ``normalize`` as in ``count``."""
    _check_docs(docs, length)
    progress = with_alias(progress, show_progress)
    config = make_config(pattern, special_tokens, errors, lines, memory_budget, normalize)
    return _count_iterator(docs, config, workers, progress, batch_chars, field, length)


def _check_docs(docs, length) -> None:
    if isinstance(docs, (str, bytes)):
        raise ArgumentTypeError("docs must be an iterable of documents, not a single str/bytes "
                                "(wrap it in a list: [text])")
    if not isinstance(docs, Iterable):
        raise ArgumentTypeError(f"docs must be an iterable of documents (str or bytes), got {type(docs).__name__}")
    if length is not None and (not _is_int(length) or length < 0):
        raise ArgumentError(f"length must be the number of documents (an integer >= 0), got {length!r}")


def _count_iterator(docs: Iterable, config: CountConfig, workers: int | None, progress: ProgressOption,
                    batch_chars: int, field: str, length: int | None) -> WordTable:
    """``count_from_iterator`` with its settings made: chunks, or runs (as ``_count``)."""
    batch_chars = arguments.integer(batch_chars, "batch_chars", 1)
    workers = None if workers is None else arguments.workers(workers)
    stage = "counting" if config.units is None else "runs"
    start = time.perf_counter()
    tasks = docs_tasks(docs, batch_chars, field)
    unit = ("doc", False) if length is not None else ("char", True)
    total = None if length is None else int(length)
    with Bar(check_progress(progress), stage, total, unit=unit[0], unit_scale=unit[1]) as bar:
        if length is None:
            table = count_tasks(tasks, config, workers, bar.callback(), poll=bar.poll)
        else:                       # documents sent, as bytes sent are for files
            table = count_tasks(_counting_documents(tasks, bar.callback()), config, workers, poll=bar.poll)
    summary(stage, time.perf_counter() - start, progress, characters=table.input_bytes,
            **{"chunks" if config.units is None else "runs": table.total_chunks}, distinct=len(table))
    return table


def _counting_documents(tasks: Iterable[DocsTask], advance: Callable[[int], None] | None) -> Iterator[DocsTask]:
    for task in tasks:
        yield task
        if advance is not None:
            advance(task.count)


# train_from_table, train and train_from_iterator give one tokenizer for one vocab_size, a list
# for a list of sizes: their overloads tell type checkers which.
@overload
def train_from_table(table: WordTable, vocab_size: int, *, pattern: str | None | EllipsisType = ...,
                     special_tokens: SpecialTokens | EllipsisType = ..., min_frequency: int = ...,
                     progress: ProgressOption = ..., report: TrainReport | None = ..., tie_break: str = ...,
                     base: Tokenizer | None = ..., max_token_length: int | None = ...,
                     picky: float | None = ..., show_progress: bool | None = ...) -> Tokenizer: ...
@overload
def train_from_table(table: WordTable, vocab_size: Sequence[int], *, pattern: str | None | EllipsisType = ...,
                     special_tokens: SpecialTokens | EllipsisType = ..., min_frequency: int = ...,
                     progress: ProgressOption = ..., report: TrainReport | None = ..., tie_break: str = ...,
                     base: Tokenizer | None = ..., max_token_length: int | None = ...,
                     picky: float | None = ..., show_progress: bool | None = ...) -> list[Tokenizer]: ...
def train_from_table(table: WordTable, vocab_size: int | Sequence[int], *, pattern: str | None | EllipsisType = ...,
                     special_tokens: SpecialTokens | EllipsisType = ..., min_frequency: int = 0,
                     progress: ProgressOption = "auto", report: TrainReport | None = None, tie_break: str = "bytes",
                     base: Tokenizer | None = None, max_token_length: int | None = None,
                     picky: float | None = None, show_progress: bool | None = None) -> Tokenizer | list[Tokenizer]:
    """Learn merges from a word table (the kernel stage alone): count once, train many times.

    The tokenizer splits text with the pattern the table was counted with (a different
    ``pattern=`` is refused: the merges were learned from that split), normalizes it as the
    table's text was (``table.normalize``), and has its special tokens unless
    ``special_tokens=`` says otherwise (for tables made by hand).
    Ties between pairs of equal count go to the smallest (left id, right id) with bytes as ids
    0..255 (``tie_break="bytes"``, as rustbpe and bpeasy), or with Hugging Face's ids for the
    bytes (``"huggingface"``, as tokenizers' BpeTrainer with the ByteLevel pre-tokenizer).
    The kernel shares the merges that touch many words among one thread per CPU available; any
    number of threads learns the same merges. ``picky=tau`` trains Picky BPE, as in ``train``."""
    if not isinstance(table, WordTable):
        raise ArgumentTypeError(f"train_from_table takes a WordTable (bpe_fast.count, WordTable.load), "
                                f"not {type(table).__name__}")
    if report is not None and not isinstance(report, TrainReport):
        raise ArgumentTypeError(f"report must be a TrainReport (it is filled in), got {type(report).__name__}")
    if pattern is not ... and resolve(pattern) != table.pattern:
        raise ArgumentError(f"pattern={pattern!r}: this word table was counted with {name_of(table.pattern)}, and a "
                            f"tokenizer must split text as its table did; count the text again with this pattern "
                            f"(bpe_fast.count(..., pattern=...)), or leave pattern= out")
    options = TrainOptions.checked(
        vocab_size, pattern=table.pattern, normalize=table.normalize,
        special_tokens=table.special_tokens if special_tokens is ... else special_tokens,
        min_frequency=min_frequency, tie_break=tie_break, base=base, max_token_length=max_token_length,
        progress=with_alias(progress, show_progress), picky=picky)
    return _as_asked(_learn_sizes([table], options, report or TrainReport()), options)


def _as_asked(tokenizers: list[Tokenizer], options: TrainOptions) -> Tokenizer | list[Tokenizer]:
    """The one tokenizer for one vocab_size, the list (one per size) for a list of sizes."""
    return tokenizers if isinstance(options.vocab_size, tuple) else tokenizers[0]


def _learn_sizes(held: list, options: TrainOptions, report: TrainReport) -> list[Tokenizer]:
    """A tokenizer for each size: one run to the largest, cut to each (merges are a prefix of
    each other), so a list of sizes costs the largest alone."""
    largest = _learn(held, max(options.sizes), options, report)
    return [largest if v == max(options.sizes) else _cut(largest, v, options.base) for v in options.sizes]


def _cut(tok: Tokenizer, vocab_size: int, base: Tokenizer | None) -> Tokenizer:
    return tok.truncated(vocab_size) if base is None else continued.truncated(tok, vocab_size, base)


def _check_pair_counts(table: WordTable, block: int = 1 << 20) -> None:
    """The kernel counts pairs in int64: refuse a table whose pairs could pass it (a wrapped count
    would silently give wrong merges). No pair occurs more often than all pairs together."""
    if table.n_symbols * int(table.counts.max()) <= INT64_MAX:      # the quick bound: nearly always
        return
    pairs = np.diff(table.offsets) - 1
    total = sum(float(np.multiply(table.counts[i:i + block], pairs[i:i + block], dtype=np.float64).sum())
                for i in range(0, len(pairs), block))      # (not np.dot: BLAS threads would spin after it)
    if total >= 2.0**62 and sum(int(n) * int(p) for n, p in zip(table.counts, pairs)) > INT64_MAX:
        raise ArgumentError(f"the word table's counts are too large to train on: its chunks hold {total:.3g} pairs, "
                            f"past the 64-bit count limit ({INT64_MAX:,}) of the pair counts")


def _learn(held: list, vocab_size: int, options: TrainOptions, report: TrainReport) -> Tokenizer:
    """train_from_table's work, for checked options whose pattern and special tokens are the
    table's. The table comes in a list, which this empties: when the caller keeps no other
    reference (as train() does), the table's memory is given back as soon as the kernel has laid
    the words out, before the merging, which needs the most memory."""
    # Training reads the chunks' bytes, offsets and counts; the hashes (8 bytes a chunk) serve
    # adding tables. A table only this call holds gives their memory back before the layout.
    table = replace(held.pop(), hashes=None)
    base, progress = options.base, options.progress
    if len(table) == 0:
        raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
    if options.picky is not None:
        return _learn_picky(table, vocab_size, options.picky, options, report)
    new_specials = [s for s in options.special_tokens if base is None or s not in base.special_tokens]
    first_id = continued.first_new_id(base)
    n_merges = vocab_size - first_id - len(new_specials)
    t0 = time.perf_counter()
    kernel_ids = _kernel_ids(options.tie_break, base)
    byte_ranks = kernel_ids if base is None else None      # from bytes, the kernel numbers them itself
    start, lengths = (None, None) if base is None else continued.tokenized_by(base, table, kernel_ids,
                                                                              kernel_order=True)
    report.unique_chunks, report.total_chunks, report.table_symbols = len(table), table.total_chunks, table.n_symbols
    _check_pair_counts(table)
    with Bar(progress, "pairs", 3 * table.n_symbols, unit="B", unit_scale=True) as bar:
        kernel = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges,
                                 min(max(1, options.min_frequency), INT64_MAX), byte_ranks,
                                 max_token_length=options.max_token_length or 0, start=start, token_lengths=lengths,
                                 first_id=first_id, setup_progress=bar.callback(reach=True),
                                 threads=min(options.threads or default_workers(), default_workers()),
                                 kernel_order=start is not None)      # (start becomes the kernel's corpus)
        del table, start        # laid out: the table's memory is free before the pair lists take theirs
        kernel.count_pairs()
    with Bar(progress, "merging", n_merges, unit="merge", decaying=True) as bar:
        merges = kernel.learn(bar.callback(reach=True))
    report.merge_counts = kernel.counts
    if kernel_ids is not None:   # back from the kernel's ids to the tokens' (new tokens' ids are the same)
        token_id = _ids_of_kernel(kernel_ids)
        merges = np.where(merges < first_id, token_id[np.minimum(merges, len(token_id) - 1)], merges).astype(np.int32)
    report.seconds["merging"] = time.perf_counter() - t0
    summary("merging", report.seconds["merging"], progress, merges=len(merges))
    pattern, normalize = options.resolved_pattern, options.resolved_normalize
    specials = dict(options.special_ids) if options.special_ids is not None else new_specials
    tok = (Tokenizer(merges, pattern=pattern, special_tokens=specials, normalize=normalize) if base is None
           else continued.extended(base, merges, pattern, new_specials, normalize))
    report.merges, report.merges_requested, report.vocab_size = len(merges), n_merges, tok.vocab_size
    if len(merges) < n_merges:
        why = (f"no pair occurs {max(1, options.min_frequency)} or more times" if options.min_frequency > 1
               else "every chunk is a single token")
        warnings.warn(f"stopped after {len(merges)} of {n_merges} merges ({why}): vocab size "
                      f"{tok.vocab_size} instead of {vocab_size}", VocabSizeWarning, stacklevel=4)
    tok.training_report = report
    return tok


def _learn_picky(table: WordTable, vocab_size: int, tau: float, options: TrainOptions,
                 report: TrainReport) -> PickyTokenizer:
    """_learn with ``picky=tau``: Picky BPE's events (_picky.train_picky, single-threaded) until
    256 + the learned tokens present + the special tokens make ``vocab_size``: removed tokens
    make room for more merges. Ties break as ``tie_break`` says, by the bytes' ids as the
    kernel numbers them; learned tokens' event ids are the same either way."""
    specials = dict(options.special_ids) if options.special_ids is not None else list(options.special_tokens)
    n_learned = vocab_size - 256 - len(options.special_tokens)
    kernel_ids = _kernel_ids(options.tie_break, None)
    symbols = table.symbols if kernel_ids is None else kernel_ids.astype(np.uint8)[table.symbols]
    report.unique_chunks, report.total_chunks, report.table_symbols = len(table), table.total_chunks, table.n_symbols
    _check_pair_counts(table)
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
        warnings.warn(f"stopped with {tok.n_base - 256} of {n_learned} learned tokens present ({why}): vocab size "
                      f"{tok.vocab_size} instead of {vocab_size}", VocabSizeWarning, stacklevel=5)
    tok.training_report = report
    return tok


# (pattern, special tokens, normalization, BoundlessBPE's units or None, progress=) -> the
# corpus's table: of chunks, or of runs of units (boundless.py); progress= defaults to the call's
CountText = Callable[..., WordTable]


def _train(count_text: CountText, options: TrainOptions, input_unit: str, ahead: bool = False) -> list[Tokenizer]:
    """What train and train_from_iterator share: count the text (with the pattern and every
    special token to cut out), then learn a tokenizer per size; superword training runs this
    twice (stage one to a single size), with ``ahead`` counting stage two's text while stage
    one learns."""
    if options.superword == "boundless" and options.superword_at is not None:
        return _train_boundless(count_text, options, input_unit)
    stages = options.superword_stages()
    if stages is not None:
        return _train_superword(count_text, options, stages, input_unit, ahead)
    report = TrainReport(input_unit=input_unit)
    held, options = _counted(count_text, options, report)
    return _learn_sizes(held, options, report)


def _counts_ahead(workers: int | None, client=None) -> bool:
    """Does superword training count stage two while stage one learns? When it counts in
    worker processes here (not workers=1, not on a Dask cluster) and there is a core to spare."""
    return client is None and workers != 1 and default_workers() > 1


def _count_args(options: TrainOptions) -> tuple:
    """What count_text takes to count the text for ``options``."""
    return options.resolved_pattern, options.cut_out, options.resolved_normalize, None


def _counted(count_text: CountText, options: TrainOptions, report: TrainReport) -> tuple[list, TrainOptions]:
    t0 = time.perf_counter()
    return _held(count_text(*_count_args(options)), options, report, time.perf_counter() - t0)


def _held(table: WordTable, options: TrainOptions, report: TrainReport, seconds: float) -> tuple[list, TrainOptions]:
    """The table, in a list (see _learn), and the options with the table's pattern and
    normalization; the report takes the counting's time and size."""
    report.seconds["counting"] = seconds
    report.input_size = table.input_bytes
    return [table], replace(options, pattern=table.pattern, normalize=table.normalize)


def _train_superword(count_text: CountText, options: TrainOptions,
                     stages: tuple[TrainOptions, Callable[[Tokenizer], TrainOptions]], input_unit: str,
                     ahead: bool) -> list[Tokenizer]:
    """SuperBPE: stage one to ``superword_at``, then stage two continues from it with the
    superword pattern. Stage two's table does not depend on stage one (only its layout in the
    kernel does), so with ``ahead`` it is counted on a thread (its worker processes) while stage
    one learns: they take the cores that stage one's merging, on one thread, leaves idle."""
    first, second = stages
    if not ahead:
        [stage_one] = _train(count_text, first, input_unit)
        return _train(count_text, second(stage_one), input_unit)
    report = TrainReport(input_unit=input_unit)
    held, first = _counted(count_text, first, report)
    # stage two's count as second() will ask for it: its options differ from these in the
    # pattern and the base, stage one, whose special tokens and normalization are these
    wanted = _count_args(replace(options, pattern=options.superword_pattern, superword_at=None))
    counting = _CountAhead(count_text, wanted, options.progress)
    with terminating_raises():          # SIGTERM: the count ahead stops and cleans up first
        try:
            counting.start()
            [stage_one] = _learn_sizes(held, first, report)
            table, seconds = counting.result()
        except BaseException:
            counting.stop()
            raise
    two = second(stage_one)
    if _count_args(two) != wanted:      # (never, as the options are made; were it so: counted again)
        del table
        return _train(count_text, two, input_unit)
    report = TrainReport(input_unit=input_unit)
    held, two = _held(table, two, report, seconds)
    del table                           # (held alone: see _learn)
    return _learn_sizes(held, two, report)


class _CountAhead:
    """A count on a thread, while the caller's thread goes on (SuperBPE's stage two counted
    during stage one's learning). Its progress is Deferred: shown when ``result`` takes it.
    ``stop`` ends it at its next report (a block counted, or a wait for the workers) and waits
    for it to end: its workers stopped, its spill files removed. Where no thread can be
    started, ``result`` counts then, on the caller's thread."""

    def __init__(self, count_text: CountText, args: tuple, progress: ProgressOption):
        self.count_text, self.args, self.shown = count_text, args, progress
        self.progress = Deferred(progress)
        self.outcome: tuple[WordTable, float] | BaseException | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="bpe_fast count ahead", daemon=True)
        try:
            self.thread.start()
        except RuntimeError:        # "can't start new thread": counted after stage one instead
            self.thread = None

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self.outcome = (self.count_text(*self.args, progress=self.progress), time.perf_counter() - t0)
        except BaseException as error:       # (raised again by result)
            self.outcome = error

    def result(self) -> tuple[WordTable, float]:
        """The table and the seconds it took to count (much of them beside the caller's work)."""
        if self.thread is None:
            t0 = time.perf_counter()
            return self.count_text(*self.args, progress=self.shown), time.perf_counter() - t0
        self.thread.join()
        outcome, self.outcome = self.outcome, None      # (the table held by the caller alone)
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        self.progress.show()
        return outcome

    def stop(self) -> None:
        """Stop the count and wait for it; another Ctrl-C meanwhile waits too (the count's
        clean-up is short, and would otherwise leave its spill folder behind). A table counted
        already is let go: the traceback on its way to the user (a notebook keeps the last one)
        holds this object."""
        self.progress.stop()
        while self.thread is not None and self.thread.is_alive():
            try:
                self.thread.join()
            except KeyboardInterrupt:
                continue
        self.outcome = None


def _train_boundless(count_text: CountText, options: TrainOptions, input_unit: str) -> list[Tokenizer]:
    """BoundlessBPE (boundless.py): phase 1 is ``_train`` to ``superword_at``; then the text is
    read again to count the runs of its units, and the kernel learns the supermerges from them,
    up to the largest size; each size is that tokenizer cut (supermerges are a prefix too).
    ``superword_at="auto"``: phase 1 to the largest size, as many supermerges as tokens, then
    each size takes its prefix of the two interleaved by count (``boundless.interleaved``)."""
    auto, largest = options.superword_at == "auto", max(options.sizes)
    at = largest if auto else int(options.superword_at)          # type: ignore[arg-type]
    phase = replace(options, vocab_size=at, superword_at=None, superword="superbpe", boundless_eligible=None)
    [phase_one] = _train(count_text, phase, input_unit)
    report: TrainReport = phase_one.training_report
    eligible = options.boundless_eligible or boundless.eligibility(None)
    tok, counts = phase_one, np.empty(0, np.int64)
    if largest > at or auto:
        t0 = time.perf_counter()
        runs = count_text(phase_one.pattern, options.cut_out, phase_one.normalize, boundless.units(phase_one, eligible))
        report.seconds["runs"] = time.perf_counter() - t0
        report.runs, report.unique_runs = runs.total_chunks, len(runs)
        wanted = largest - 256 - len(options.special_tokens) if auto else largest - at
        tok, counts = boundless.learn(phase_one, runs, wanted, eligible, min_frequency=options.min_frequency,
                                      max_token_length=options.max_token_length, threads=options.threads,
                                      progress=options.progress, seconds=report.seconds, warn=not auto)
        report.supermerges = len(tok.supermerges)
        report.vocab_size = tok.vocab_size
        tok.training_report = report
    if auto:
        toks = [boundless.interleaved(tok, report.merge_counts, counts, v) for v in options.sizes]
        for t in toks:
            t.training_report = replace(report, supermerges=len(t.supermerges), merges=len(t.merges),
                                        vocab_size=t.vocab_size)
        return toks
    return [tok if v == largest else tok.truncated(v) for v in options.sizes]


@overload
def train(files: Inputs, vocab_size: int, *, pattern: str | None | EllipsisType = ...,
          special_tokens: SpecialTokens = ..., min_frequency: int = ..., workers: int | None = ...,
          progress: ProgressOption = ..., errors: str = ..., block_size: int = ..., tie_break: str = ...,
          lines: bool = ..., field: str = ..., column: str = ..., memory_budget: int | None = ..., client=...,
          base: Tokenizer | None = ..., max_token_length: int | None = ..., superword_at: int | str | None = ...,
          superword_pattern: str | None = ..., superword: str = ..., boundless_eligible: str | None = ...,
          normalize: str | None | EllipsisType = ..., picky: float | None = ...,
          show_progress: bool | None = ...) -> Tokenizer: ...
@overload
def train(files: Inputs, vocab_size: Sequence[int], *, pattern: str | None | EllipsisType = ...,
          special_tokens: SpecialTokens = ..., min_frequency: int = ..., workers: int | None = ...,
          progress: ProgressOption = ..., errors: str = ..., block_size: int = ..., tie_break: str = ...,
          lines: bool = ..., field: str = ..., column: str = ..., memory_budget: int | None = ..., client=...,
          base: Tokenizer | None = ..., max_token_length: int | None = ..., superword_at: int | str | None = ...,
          superword_pattern: str | None = ..., superword: str = ..., boundless_eligible: str | None = ...,
          normalize: str | None | EllipsisType = ..., picky: float | None = ...,
          show_progress: bool | None = ...) -> list[Tokenizer]: ...
def train(files: Inputs, vocab_size: int | Sequence[int], *,
          pattern: str | None | EllipsisType = ..., special_tokens: SpecialTokens = (), min_frequency: int = 0,
          workers: int | None = None, progress: ProgressOption = "auto", errors: str = "strict",
          block_size: int = DEFAULT_BLOCK_SIZE, tie_break: str = "bytes", lines: bool = False,
          field: str = "text", column: str = "text", memory_budget: int | None = None, client=None,
          base: Tokenizer | None = None, max_token_length: int | None = None, superword_at: int | str | None = None,
          superword_pattern: str | None = "superword", superword: str = "superbpe",
          boundless_eligible: str | None = None, normalize: str | None | EllipsisType = ...,
          picky: float | None = None, show_progress: bool | None = None) -> Tokenizer | list[Tokenizer]:
    """Train on files: ``count`` (any input: text, stdin, compressed, JSON lines, Parquet,
    directories; ``workers`` processes, default one per CPU), then ``train_from_table`` (whose
    kernel then runs on ``workers`` threads, at most one per CPU).

    The result is the same as treating each whole text file as one document, for any block
    size, number of workers and memory budget. ``lines=True`` makes every line (up to "\n") a
    document of its own, as Hugging Face's ``train(files)`` and gigabpe read files: with
    ``tie_break="huggingface"`` and the GPT-2 pattern, the merges are then theirs.

    ``base`` continues training from any tokenizer (ours, or loaded from tiktoken, GPT-2, Hugging
    Face or minbpe files): its tokens keep their ids and merges their ranks, new tokens come after
    every id it uses, and ``vocab_size`` is the size of the result. A list of sizes trains once,
    to the largest, and gives one tokenizer per size. ``max_token_length`` (bytes) leaves out any
    token longer than that. ``pattern`` defaults to the base's, or cl100k.

    ``superword_at=T`` trains superword tokens, as SuperBPE does: first with ``pattern`` up to
    vocab size T, then on, to ``vocab_size``, with ``superword_pattern`` (default "superword",
    SuperBPE's stage-two rule, patterns.SUPERWORD), whose chunks span words: continued training
    with another pattern. The tokenizer splits text with the superword pattern.

    ``superword="boundless"`` makes ``superword_at=T`` train BoundlessBPE instead (Schmidt et
    al., arXiv 2504.00178, in the two-phase form of arXiv 2604.05192; boundless.py): plain BPE up
    to T (``train(..., T)``), then ``vocab_size - T`` supermerges, each joining two adjacent
    whole pretokens (or superwords) of a run of pretokens that are one token each and eligible
    (``boundless_eligible``, a regex searched in each pretoken; default paper 1's
    ``patterns.BOUNDLESS_ELIGIBLE``, or ``patterns.BOUNDLESS_ELIGIBLE_V2``, ``\\p{L}``, paper 2's).
    The text is read twice. The tokenizer keeps the pattern; only bpe_fast's JSON holds it.
    ``superword_at="auto"`` (boundless only) finds T as paper 2 does: phase 1 to ``vocab_size``,
    supermerges from its runs, and the two interleaved by count (a supermerge when its count is
    above the next merge's), to ``vocab_size`` tokens in all.

    ``special_tokens`` is a list (ids follow the learned ones, in its order) or, as tiktoken
    gives them, a dict of ids, honoured when they are the top of the vocabulary (any order).

    ``normalize`` ("nfc" or "nfkc"; default: the base's, else none) puts the text in that Unicode
    normal form before special tokens are found and it is split, and the tokenizer normalizes
    what it encodes the same way (its decode gives the normalized text).

    ``picky=tau`` (0 < tau <= 1) trains Picky BPE (Chizhov et al. 2024, arXiv 2409.04599): after
    each merge of (a, b) done m times, a parent x (not a byte) whose IoS = m / (x's frequency just
    before the merge) is >= tau is removed, each occurrence split back into its parents; removed
    tokens do not count towards ``vocab_size``, so more merges fill their place. The result is a
    ``PickyTokenizer`` (ids: bytes, then the tokens present at the end in the order of the merges
    that made them, then special tokens), which only bpe_fast's JSON can hold. Not with ``base``
    or ``superword_at``.
    ``show_progress`` is a deprecated alias of ``progress`` (True: "bar", False: "none").
    """
    progress = with_alias(progress, show_progress)
    options = TrainOptions.checked(vocab_size, pattern=pattern, special_tokens=special_tokens,
                                   min_frequency=min_frequency, tie_break=tie_break, base=base,
                                   max_token_length=max_token_length, superword_at=superword_at,
                                   superword_pattern=superword_pattern, superword=superword,
                                   boundless_eligible=boundless_eligible, progress=progress, normalize=normalize,
                                   threads=workers, picky=picky)

    def count_files(pattern, specials: Sequence[str], normalize: str | None, units,
                    progress: ProgressOption = progress) -> WordTable:
        if units is not None:          # BoundlessBPE's runs
            config = make_config(pattern, specials, errors, lines, memory_budget, normalize, units)
            return _count(files, config, workers, progress, field, column, block_size, client)
        table = count(files, pattern=pattern, special_tokens=specials, workers=workers, progress=progress,
                      errors=errors, lines=lines, field=field, column=column, block_size=block_size,
                      memory_budget=memory_budget, client=client, normalize=normalize)
        if len(table) == 0:
            names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
            raise EmptyCorpusError(f"the corpus is empty: {', '.join(map(str, names))} hold no text")
        return table

    return _as_asked(_train(count_files, options, "bytes", _counts_ahead(workers, client)), options)


@overload
def train_from_iterator(docs: Iterable, vocab_size: int, *, pattern: str | None | EllipsisType = ...,
                        special_tokens: SpecialTokens = ..., min_frequency: int = ..., workers: int | None = ...,
                        progress: ProgressOption = ..., errors: str = ..., batch_chars: int = ...,
                        tie_break: str = ..., lines: bool = ..., memory_budget: int | None = ...,
                        base: Tokenizer | None = ..., max_token_length: int | None = ...,
                        superword_at: int | str | None = ..., superword_pattern: str | None = ...,
                        superword: str = ..., boundless_eligible: str | None = ...,
                        field: str = ..., length: int | None = ..., normalize: str | None | EllipsisType = ...,
                        picky: float | None = ..., show_progress: bool | None = ...) -> Tokenizer: ...
@overload
def train_from_iterator(docs: Iterable, vocab_size: Sequence[int], *,
                        pattern: str | None | EllipsisType = ..., special_tokens: SpecialTokens = ...,
                        min_frequency: int = ..., workers: int | None = ..., progress: ProgressOption = ...,
                        errors: str = ..., batch_chars: int = ..., tie_break: str = ..., lines: bool = ...,
                        memory_budget: int | None = ..., base: Tokenizer | None = ...,
                        max_token_length: int | None = ..., superword_at: int | str | None = ...,
                        superword_pattern: str | None = ..., superword: str = ...,
                        boundless_eligible: str | None = ..., field: str = ..., length: int | None = ...,
                        normalize: str | None | EllipsisType = ..., picky: float | None = ...,
                        show_progress: bool | None = ...) -> list[Tokenizer]: ...
def train_from_iterator(docs: Iterable, vocab_size: int | Sequence[int], *,
                        pattern: str | None | EllipsisType = ..., special_tokens: SpecialTokens = (),
                        min_frequency: int = 0,
                        workers: int | None = None, progress: ProgressOption = "auto",
                        errors: str = "strict", batch_chars: int = DEFAULT_BATCH_CHARS,
                        tie_break: str = "bytes", lines: bool = False, memory_budget: int | None = None,
                        base: Tokenizer | None = None, max_token_length: int | None = None,
                        superword_at: int | str | None = None, superword_pattern: str | None = "superword",
                        superword: str = "superbpe", boundless_eligible: str | None = None,
                        field: str = "text", length: int | None = None,
                        normalize: str | None | EllipsisType = ..., picky: float | None = None,
                        show_progress: bool | None = None) -> Tokenizer | list[Tokenizer]:
    """Train on documents from an iterator: each item is a document (str or bytes), a batch of
    them (a list, as Hugging Face ``datasets`` batches come), or a record (a dict) whose
    ``field`` holds one or a batch; ``length``, the number of documents if known, gives the
    progress a total (Hugging Face's ``length=``).

    Items are consumed lazily and sent to worker processes in batches, so the iterator may be
    far larger than memory. ``base``, a list of sizes, ``max_token_length``, ``special_tokens``,
    ``normalize``, ``picky``, ``superword_at``, ``superword`` and ``boundless_eligible`` as in
    ``train`` (superword training reads the documents twice: give a list). ``show_progress`` is a
    deprecated alias of ``progress``.
    """
    progress = with_alias(progress, show_progress)
    if superword_at is not None and (not isinstance(docs, Sequence) or isinstance(docs, (str, bytes))):
        raise ArgumentTypeError("superword training reads the documents twice (once per stage): give a "
                                "list of documents, not an iterator")
    options = TrainOptions.checked(vocab_size, pattern=pattern, special_tokens=special_tokens,
                                   min_frequency=min_frequency, tie_break=tie_break, base=base,
                                   max_token_length=max_token_length, superword_at=superword_at,
                                   superword_pattern=superword_pattern, superword=superword,
                                   boundless_eligible=boundless_eligible, progress=progress, normalize=normalize,
                                   threads=workers, picky=picky)

    def count_docs(pattern, specials: Sequence[str], normalize: str | None, units,
                   progress: ProgressOption = progress) -> WordTable:
        if units is not None:          # BoundlessBPE's runs
            _check_docs(docs, length)
            config = make_config(pattern, specials, errors, lines, memory_budget, normalize, units)
            return _count_iterator(docs, config, workers, progress, batch_chars, field, length)
        return count_from_iterator(docs, pattern=pattern, special_tokens=specials, workers=workers,
                                   progress=progress, errors=errors, lines=lines, batch_chars=batch_chars,
                                   memory_budget=memory_budget, field=field, length=length, normalize=normalize)

    return _as_asked(_train(count_docs, options, "chars", _counts_ahead(workers)), options)
