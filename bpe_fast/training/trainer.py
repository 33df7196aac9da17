"""The plain pipeline: ``train_from_table`` (word table -> kernel -> Tokenizer), and
``train``/``train_from_iterator``, which count the text (counting/corpus.py, the counting stage)
and learn from it through one path (``_train``): they differ only in how the text is counted.
Each builds its options once, TrainOptions (options.py) and CountOptions (counting/workers.py), from
its keywords, and hands them down; continued training (``base=``) is continued.py. The variants
(bpe_fast/variants/) are stages over this plain pipeline: ``_train`` and ``_learn`` ask their
table which one the options select, and hand it the pipeline (``PLAIN``)."""
from __future__ import annotations

import inspect
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Union, overload
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from . import _kernel, continued, variants
from .. import budget
from ..arguments import INT64_MAX
from ..bytelevel import huggingface_byte_order
from ..counting.corpus import Inputs, check_docs, count_docs, count_inputs
from ..counting.workers import CountOptions, default_workers
from ..errors import ArgumentError, ArgumentTypeError, EmptyCorpusError, VocabSizeWarning
from ..pretokenize.patterns import name_of, resolve
from ..pretokenize.splitter import Splitter
from .options import TrainOptions
from ..progress import Bar, ProgressOption, summary, with_alias
from ..tokenizer import Tokenizer
from .variants import TableVariantOptions, VariantOptions
from .variants._variant import CountText
from ..counting.wordtable import WordTable
# defined here before counting/corpus.py, options.py and variants/ were, and imported from here still
from ..counting.corpus import count, count_from_iterator  # noqa: F401
from .options import MAX_VOCAB_SIZE, TIE_BREAKS  # noqa: F401
from .variants import SUPERWORDS  # noqa: F401
from .variants.superbpe import CountAhead as _CountAhead  # noqa: F401

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType

    from typing_extensions import Unpack

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
    runs: int = 0                           # runs of units, distinct runs, supermerges (variants/boundless.py)
    unique_runs: int = 0
    supermerges: int = 0
    # each merge's count when chosen (a variant may interleave them with its own)
    merge_counts: Any = field(default=None, compare=False, repr=False)
    seconds: dict = field(default_factory=dict)   # stage -> seconds
    removals: int = 0                       # tokens removed (variants/picky.py; merges then counts merge events)
    # with a memory budget: the merging's plan, made before the kernel started (budget.MergingPlan)
    memory_plan: Any = field(default=None, compare=False, repr=False)

    def summary(self) -> str:
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())
        removed = f", {self.removals:,} removed" if self.removals else ""
        runs = (f"; {self.runs:,} runs, {self.unique_runs:,} unique; {self.supermerges:,} supermerges"
                if self.runs else "")
        return (f"read {self.input_size:,} {self.input_unit}; {self.total_chunks:,} chunks, "
                f"{self.unique_chunks:,} unique; {self.merges:,} merges{removed}{runs} -> vocab size "
                f"{self.vocab_size:,}; {stages}")


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


# The keywords of train, train_from_iterator and train_from_table, for type checkers: each is a
# field of TrainOptions (options.py) or CountOptions (counting/workers.py), where its default and its
# checks are; the functions build those once, from these, and hand them down. (A variant's
# keywords: variants.VariantOptions.) A new option is one field there and one line here.
class TrainTableKeywords(TableVariantOptions, total=False):
    pattern: str | None | EllipsisType          # default: the table's (another is refused)
    special_tokens: SpecialTokens | EllipsisType    # default: the table's
    min_frequency: int
    progress: ProgressOption
    report: TrainReport | None                  # filled in
    tie_break: str
    base: Tokenizer | None
    max_token_length: int | None
    memory_budget: int | None                   # the merging's peak, planned before it starts (budget.py)
    show_progress: bool | None                  # deprecated alias of progress


class _TextKeywords(VariantOptions, total=False):
    pattern: str | None | EllipsisType
    special_tokens: SpecialTokens
    min_frequency: int
    workers: int | None                         # the counting's processes and the kernel's threads
    progress: ProgressOption
    errors: str
    tie_break: str
    lines: bool
    field: str
    memory_budget: int | None
    base: Tokenizer | None
    max_token_length: int | None
    normalize: str | None | EllipsisType
    show_progress: bool | None                  # deprecated alias of progress


class TrainKeywords(_TextKeywords, total=False):
    block_size: int
    column: str
    client: Any


class TrainIteratorKeywords(_TextKeywords, total=False):
    batch_chars: int
    length: int | None


_TRAINING = {f.name for f in fields(TrainOptions)} - {"vocab_size", "special_ids", "threads", "progress"}
_COUNTING = {f.name for f in fields(CountOptions)} - {"progress"}


def _settings(function: str, keywords: Mapping[str, Any], known: type) -> tuple[dict, dict]:
    """The keywords given to ``function`` (unknown ones a TypeError, as Python makes it), as the
    settings of its TrainOptions and of its CountOptions (progress= and show_progress= aside:
    ``with_alias`` takes them, called by the function itself, whose caller its warning names)."""
    for name in keywords:
        if name not in known.__annotations__:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
    return ({k: v for k, v in keywords.items() if k in _TRAINING},
            {k: v for k, v in keywords.items() if k in _COUNTING})


def _signature(function: Callable, head: str, known: type, defaults: Mapping[str, Any]) -> None:
    """``function``'s signature as help() and inspect show it: ``head``'s parameters, then the
    keywords of ``known``, each with its default (the options' own)."""
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=note)
              for name, note in function.__annotations__.items() if name in head.split()]
    option_defaults = {f.name: f.default for f in (*fields(TrainOptions), *fields(CountOptions))}
    option_defaults.update(progress="auto", show_progress=None, workers=None, **defaults)
    notes = {name: getattr(note, "__forward_arg__", note) for name, note in known.__annotations__.items()}
    ordered = sorted(notes, key=lambda name: name in VariantOptions.__annotations__)     # the variants' last
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option_defaults.get(name),
                                 annotation=notes[name]) for name in ordered]
    function.__signature__ = inspect.Signature(params,            # type: ignore[attr-defined]
                                               return_annotation=function.__annotations__.get("return"))


# train_from_table, train and train_from_iterator give one tokenizer for one vocab_size, a list
# for a list of sizes: their overloads tell type checkers which.
@overload
def train_from_table(table: WordTable, vocab_size: int, **keywords: Unpack[TrainTableKeywords]) -> Tokenizer: ...
@overload
def train_from_table(table: WordTable, vocab_size: Sequence[int],
                     **keywords: Unpack[TrainTableKeywords]) -> list[Tokenizer]: ...
def train_from_table(table: WordTable, vocab_size: int | Sequence[int],
                     **keywords: Unpack[TrainTableKeywords]) -> Tokenizer | list[Tokenizer]:
    """Learn merges from a word table (the kernel stage alone): count once, train many times.

    The tokenizer splits text with the pattern the table was counted with (a different
    ``pattern=`` is refused: the merges were learned from that split), normalizes it as the
    table's text was (``table.normalize``), and has its special tokens unless
    ``special_tokens=`` says otherwise (for tables made by hand).
    Ties between pairs of equal count go to the smallest (left id, right id) with bytes as ids
    0..255 (``tie_break="bytes"``, as rustbpe and bpeasy), or with Hugging Face's ids for the
    bytes (``"huggingface"``, as tokenizers' BpeTrainer with the ByteLevel pre-tokenizer).
    The kernel shares the merges that touch many words among one thread per CPU available; any
    number of threads learns the same merges. A variant's keyword (variants.TableVariantOptions)
    trains it, as in ``train``."""
    settings, _ = _settings("train_from_table", keywords, TrainTableKeywords)
    report, pattern = keywords.get("report"), keywords.get("pattern", ...)
    special_tokens = keywords.get("special_tokens", ...)
    if not isinstance(table, WordTable):
        raise ArgumentTypeError(f"train_from_table takes a WordTable (bpe_fast.count, WordTable.load), "
                                f"not {type(table).__name__}")
    if report is not None and not isinstance(report, TrainReport):
        raise ArgumentTypeError(f"report must be a TrainReport (it is filled in), got {type(report).__name__}")
    table.check_consistent("train_from_table's table")
    if pattern is not ... and resolve(pattern) != table.pattern:
        raise ArgumentError(f"pattern={pattern!r}: this word table was counted with {name_of(table.pattern)}, and a "
                            f"tokenizer must split text as its table did; count the text again with this pattern "
                            f"(bpe_fast.count(..., pattern=...)), or leave pattern= out")
    settings.update(pattern=table.pattern, normalize=table.normalize,
                    special_tokens=table.special_tokens if special_tokens is ... else special_tokens)
    progress = with_alias(keywords.get("progress", "auto"), keywords.get("show_progress"))
    options = TrainOptions.checked(vocab_size, progress=progress, **settings)
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
    counted = held.pop()
    sole = sys.getrefcount(counted) <= 2    # no caller holds the table (train()): it goes after the layout
    table = replace(counted, hashes=None)
    base, progress = options.base, options.progress
    if len(table) == 0:
        raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
    variant = variants.selected(options)
    planned = options.memory_budget is not None and variant is None
    kept = counted if planned else None     # with its hashes, to be saved if the merging cannot fit
    del counted
    tok = None if variant is None else variant.learn(PLAIN, table, vocab_size, options, report)
    if tok is not None:
        return tok
    new_specials = [s for s in options.special_tokens if base is None or s not in base.special_tokens]
    first_id = continued.first_new_id(base)
    n_merges = vocab_size - first_id - len(new_specials)
    if kept is not None:            # before the kernel allocates anything (budget.py)
        report.memory_plan = _planned(kept, table, n_merges, first_id, options, sole)
    del kept                        # (its hashes go now, in train(): it was their last holder)
    t0 = time.perf_counter()
    kernel_ids = _kernel_ids(options.tie_break, base)
    byte_ranks = kernel_ids if base is None else None      # from bytes, the kernel numbers them itself
    start, lengths = (None, None) if base is None else continued.tokenized_by(base, table, kernel_ids,
                                                                              kernel_order=True,
                                                                              slots=options.layout_memory)
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


def _planned(counted: WordTable, table: WordTable, n_merges: int, first_id: int, options: TrainOptions,
             sole: bool) -> budget.MergingPlan:
    """The merging's plan (budget.py) within ``options.memory_budget``, else MemoryBudgetError
    before the kernel starts. A table counted here (``sole``: no caller holds it) is first saved
    to disk, so that the counting is not lost: the error names the file, for ``--counts``."""
    limit = options.memory_budget
    assert limit is not None
    threads = min(options.threads or default_workers(), default_workers())
    plan = budget.plan_merging(table, n_merges, threads, first_id, table_freed=sole)
    if counted.hashes is not None and sole:   # they go before the layout: not part of the peak
        plan = replace(plan, process=plan.process - counted.hashes.nbytes)
    if plan.peak > limit:
        kept = None
        if sole and options.counts_reusable:
            kept = os.path.join(tempfile.mkdtemp(prefix="bpe_fast-kept-"), "counts.npz")
            counted.save(kept)
        budget.check_fits(plan, limit, kept)
    return plan


def _train(count_text: CountText, options: TrainOptions, input_unit: str, ahead: bool = False) -> list[Tokenizer]:
    """What train and train_from_iterator share: count the text (with the pattern and every
    special token to cut out), then learn a tokenizer per size. A variant the options select
    may run its own stages instead, over these (``ahead``: it may count a later stage's text
    while an earlier one learns)."""
    variant = variants.selected(options)
    if variant is not None:
        tokenizers = variant.train(PLAIN, count_text, replace(options, counts_reusable=False), input_unit, ahead)
        if tokenizers is not None:
            return tokenizers
    report = TrainReport(input_unit=input_unit)
    held, options = _counted(count_text, options, report)
    return _learn_sizes(held, options, report)


def _counts_ahead(workers: int | None, client=None, memory_budget: int | None = None) -> bool:
    """May a variant count a later stage while an earlier one learns? When it counts in worker
    processes here (not workers=1, not on a Dask cluster) and there is a core to spare, and no
    memory budget holds the job: the budget plans each stage's peak on its own (budget.py), and
    a count beside stage one's kernel would add its workers and table to that peak unplanned."""
    return client is None and workers != 1 and default_workers() > 1 and memory_budget is None


def _count_args(options: TrainOptions) -> tuple:
    """What count_text takes to count the text for ``options``: their Splitter (and no units)."""
    return options.splitter(), None


def _counted(count_text: CountText, options: TrainOptions, report: TrainReport) -> tuple[list, TrainOptions]:
    t0 = time.perf_counter()
    return _held(count_text(*_count_args(options)), options, report, time.perf_counter() - t0)


def _held(table: WordTable, options: TrainOptions, report: TrainReport, seconds: float) -> tuple[list, TrainOptions]:
    """The table, in a list (see _learn), and the options with the table's pattern and
    normalization; the report takes the counting's time and size."""
    report.seconds["counting"] = seconds
    report.input_size = table.input_bytes
    return [table], replace(options, pattern=table.pattern, normalize=table.normalize)


class _Plain:
    """The plain pipeline's stages, as the variants build theirs from them (variants.Pipeline)."""
    train = staticmethod(_train)
    counted = staticmethod(_counted)
    held = staticmethod(_held)
    learn_sizes = staticmethod(_learn_sizes)
    count_args = staticmethod(_count_args)
    kernel_ids = staticmethod(_kernel_ids)
    check_pair_counts = staticmethod(_check_pair_counts)

    @staticmethod
    def report(input_unit: str) -> TrainReport:
        return TrainReport(input_unit=input_unit)


PLAIN = _Plain()


@overload
def train(files: Inputs, vocab_size: int, **keywords: Unpack[TrainKeywords]) -> Tokenizer: ...
@overload
def train(files: Inputs, vocab_size: Sequence[int], **keywords: Unpack[TrainKeywords]) -> list[Tokenizer]: ...
def train(files: Inputs, vocab_size: int | Sequence[int],
          **keywords: Unpack[TrainKeywords]) -> Tokenizer | list[Tokenizer]:
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

    ``special_tokens`` is a list (ids follow the learned ones, in its order) or, as tiktoken
    gives them, a dict of ids, honoured when they are the top of the vocabulary (any order).

    ``normalize`` ("nfc" or "nfkc"; default: the base's, else none) puts the text in that Unicode
    normal form before special tokens are found and it is split, and the tokenizer normalizes
    what it encodes the same way (its decode gives the normalized text).

    The variants (bpe_fast/variants/) train with their keywords (variants.VariantOptions), below.
    ``show_progress`` is a deprecated alias of ``progress`` (True: "bar", False: "none").
    """
    settings, count_settings = _settings("train", keywords, TrainKeywords)
    progress = with_alias(keywords.get("progress", "auto"), keywords.get("show_progress"))
    workers = count_settings.get("workers")
    options = TrainOptions.checked(vocab_size, progress=progress, threads=workers, **settings)
    counting = CountOptions.for_files(progress=progress, **count_settings)

    def count_files(splitter: Splitter, what=None, progress: ProgressOption = progress) -> WordTable:
        table = count_inputs(files, counting.config(splitter, what), replace(counting, progress=progress))
        if what is None and len(table) == 0:      # (a variant's runs of units may be none)
            names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
            raise EmptyCorpusError(f"the corpus is empty: {', '.join(map(str, names))} hold no text")
        return table

    ahead = _counts_ahead(workers, counting.client, options.memory_budget)
    return _as_asked(_train(count_files, options, "bytes", ahead), options)


@overload
def train_from_iterator(docs: Iterable, vocab_size: int, **keywords: Unpack[TrainIteratorKeywords]) -> Tokenizer:
    ...
@overload
def train_from_iterator(docs: Iterable, vocab_size: Sequence[int],
                        **keywords: Unpack[TrainIteratorKeywords]) -> list[Tokenizer]: ...
def train_from_iterator(docs: Iterable, vocab_size: int | Sequence[int],
                        **keywords: Unpack[TrainIteratorKeywords]) -> Tokenizer | list[Tokenizer]:
    """Train on documents from an iterator: each item is a document (str or bytes), a batch of
    them (a list, as Hugging Face ``datasets`` batches come), or a record (a dict) whose
    ``field`` holds one or a batch; ``length``, the number of documents if known, gives the
    progress a total (Hugging Face's ``length=``).

    Items are consumed lazily and sent to worker processes in batches, so the iterator may be
    far larger than memory. ``base``, a list of sizes, ``max_token_length``, ``special_tokens``,
    ``normalize`` and the variants' keywords as in ``train`` (a variant that reads the documents
    twice needs a list). ``show_progress`` is a deprecated alias of ``progress``.
    """
    settings, count_settings = _settings("train_from_iterator", keywords, TrainIteratorKeywords)
    progress = with_alias(keywords.get("progress", "auto"), keywords.get("show_progress"))
    variants.check_docs_read_twice(docs, settings)
    workers = count_settings.get("workers")
    options = TrainOptions.checked(vocab_size, progress=progress, threads=workers, **settings)
    check_docs(docs, count_settings.get("length"))
    counting = CountOptions.for_docs(progress=progress, **count_settings)

    def count_iterated(splitter: Splitter, what=None, progress: ProgressOption = progress) -> WordTable:
        return count_docs(docs, counting.config(splitter, what), replace(counting, progress=progress))

    ahead = _counts_ahead(workers, None, options.memory_budget)
    return _as_asked(_train(count_iterated, options, "chars", ahead), options)


# The variants' keywords, as each variant's module tells them (variants/).
train.__doc__ = (train.__doc__ or "").rstrip() + "\n" + variants.keywords_help()
_signature(train, "files vocab_size", TrainKeywords, {})
_signature(train_from_iterator, "docs vocab_size", TrainIteratorKeywords, {})
_signature(train_from_table, "table vocab_size", TrainTableKeywords, {"pattern": ..., "special_tokens": ...})
