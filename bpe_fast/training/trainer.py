"""The entry points of training: ``train`` (files), ``train_from_iterator`` (documents),
``train_from_table`` (a word table counted before) and ``train_parity`` (one corpus per
language). Each builds its options once from its keywords (TrainOptions, options.py; counting's
CountOptions, counting/workers.py), picks the variant once (``variants.chosen``: plain BPE when
the options select none) and hands it the corpus as a function that counts it; the variant runs
the plain pipeline's stages (pipeline.py) or its own over them."""
from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, Union, overload

from ..counting.corpus import Inputs, check_docs, count_docs, count_inputs
from ..counting.wordtable import WordTable
from ..counting.workers import CountOptions, default_workers
from ..errors import ArgumentError, ArgumentTypeError, EmptyCorpusError
from ..pretokenize.patterns import name_of, resolve
from ..pretokenize.splitter import Splitter
from ..progress import ProgressOption, with_alias
from ..tokenizer import Tokenizer
from . import pipeline, variants
from .options import TrainOptions
from .pipeline import TrainReport
from .variants import TableVariantOptions, VariantOptions, parity
# names imported from here before the pipeline, counting and options had modules of their own
from ..counting.corpus import count, count_from_iterator  # noqa: F401
from .options import MAX_VOCAB_SIZE, TIE_BREAKS  # noqa: F401
from .variants import SUPERWORDS  # noqa: F401

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType

    from typing_extensions import Unpack

# Special tokens: a list (ids follow the learned ones, in order) or tiktoken's {token: id}.
SpecialTokens = Union[Sequence[str], Mapping[str, int]]


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
    trains it, as in ``train``.

    >>> import bpe_fast
    >>> table = bpe_fast.count_from_iterator(["hello hello hello"], pattern="gpt2", workers=1, progress="none")
    >>> for size in (258, 260):          # one count, two trainings
    ...     print(size, bpe_fast.train_from_table(table, size, progress="none").merges.tolist())
    258 [[101, 108], [104, 256]]
    260 [[101, 108], [104, 256], [108, 111], [257, 258]]
    """
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
    variant = variants.chosen(options)
    return _as_asked(pipeline.learn_sizes([table], options, report or TrainReport(), variant.learn), options)


def _trained(variant: variants.Variant, count_text: pipeline.CountText, options: TrainOptions, input_unit: str,
             ahead: bool) -> list[Tokenizer]:
    """The variant's training (plain BPE's: count, learn). A variant's stage counts its own
    table, which is not the one --counts could train again."""
    if variant is not variants.PLAIN:
        options = replace(options, counts_reusable=False)
    return variant.train(count_text, options, input_unit, ahead)


def _as_asked(tokenizers: list[Tokenizer], options: TrainOptions) -> Tokenizer | list[Tokenizer]:
    """The one tokenizer for one vocab_size, the list (one per size) for a list of sizes."""
    return tokenizers if isinstance(options.vocab_size, tuple) else tokenizers[0]


def _counts_ahead(workers: int | None, client=None, memory_budget: int | None = None) -> bool:
    """May a variant count a later stage while an earlier one learns? When it counts in worker
    processes here (not workers=1, not on a Dask cluster) and there is a core to spare, and no
    memory budget holds the job: the budget plans each stage's peak on its own (budget.py), and
    a count beside stage one's kernel would add its workers and table to that peak unplanned."""
    return client is None and workers != 1 and default_workers() > 1 and memory_budget is None


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

    >>> import bpe_fast, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "hello.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("hello hello hello")
    >>> tok = bpe_fast.train([path], 260, pattern="gpt2", workers=1, progress="none")
    >>> [tok.decode([i]) for i in range(256, 260)]       # 3 x (h,e), (e,l), (l,l), (l,o): ties to the smallest ids
    ['el', 'hel', 'lo', 'hello']
    """
    settings, count_settings = _settings("train", keywords, TrainKeywords)
    progress = with_alias(keywords.get("progress", "auto"), keywords.get("show_progress"))
    workers = count_settings.get("workers")
    options = TrainOptions.checked(vocab_size, progress=progress, threads=workers, **settings)
    variant = variants.chosen(options)
    counting = CountOptions.for_files(progress=progress, **count_settings)

    def count_files(splitter: Splitter, what=None, progress: ProgressOption = progress) -> WordTable:
        table = count_inputs(files, counting.config(splitter, what), replace(counting, progress=progress))
        if what is None and len(table) == 0:      # (a variant's runs of units may be none)
            names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
            raise EmptyCorpusError(f"the corpus is empty: {', '.join(map(str, names))} hold no text")
        return table

    ahead = _counts_ahead(workers, counting.client, options.memory_budget)
    return _as_asked(_trained(variant, count_files, options, "bytes", ahead), options)


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

    >>> import bpe_fast
    >>> tok = bpe_fast.train_from_iterator(["hello hello hello"], 260, pattern="gpt2", special_tokens=["<|end|>"],
    ...                                    workers=1, progress="none")
    >>> [tok.decode([i]) for i in range(256, 259)], tok.vocab_size, tok.encode("hello<|end|>", allowed_special="all")
    (['el', 'hel', 'lo'], 260, [257, 258, 259])
    """
    settings, count_settings = _settings("train_from_iterator", keywords, TrainIteratorKeywords)
    progress = with_alias(keywords.get("progress", "auto"), keywords.get("show_progress"))
    variants.check_docs_read_twice(docs, settings)
    workers = count_settings.get("workers")
    options = TrainOptions.checked(vocab_size, progress=progress, threads=workers, **settings)
    variant = variants.chosen(options)
    check_docs(docs, count_settings.get("length"))
    counting = CountOptions.for_docs(progress=progress, **count_settings)

    def count_iterated(splitter: Splitter, what=None, progress: ProgressOption = progress) -> WordTable:
        return count_docs(docs, counting.config(splitter, what), replace(counting, progress=progress))

    ahead = _counts_ahead(workers, None, options.memory_budget)
    return _as_asked(_trained(variant, count_iterated, options, "chars", ahead), options)


def train_parity(corpora: Any, vocab_size: int | Sequence[int], *, ratio: Sequence[float] | None = None,
                 dev: Any = None, variant: str = "base", global_merges: int = 0, window_size: int = 100,
                 alpha: float = 2.0, progress: Any = "auto", report: Any = None, **keywords: Any) -> Any:
    """Parity-aware BPE (variants/parity.py): one corpus per language (``corpora``, a list, or a
    dict name -> corpus);
    each merge is the best pair of the language least compressed so far.

    A corpus is a path (a file or a folder, as ``train`` reads them) or a list of them (each a
    ``Path``, or one word that names a file or looks like a file name, such as "en/part-1.txt"),
    or else an iterable of documents. ``dev`` (the same
    shape: ideally the same text in every language) makes the choice: the language whose dev
    text is the most tokens; ``ratio`` (one number per language) instead: the language with the
    least compression (bytes at the start over tokens now) divided by its ratio; neither: the
    language whose training text is the most tokens. ``variant="window"`` passes over a language
    chosen more than ``alpha / languages`` of the last ``window_size`` merges; the first
    ``global_merges`` merges are plain BPE over all languages together.

    The training keywords are ``train``'s: ``pattern``, ``special_tokens``, ``min_frequency``,
    ``tie_break`` ("huggingface" with ``pattern="gpt2"``: the merges of tokenizers'
    ParityBpeTrainer), ``base`` (continued training), ``max_token_length``, ``normalize``,
    ``workers``, ``errors``, ``lines``, ``field``, ``memory_budget``, ``progress``; a list of
    sizes gives a tokenizer per size. ``report`` (a TrainReport) is filled in. Under a
    ``memory_budget``, each language is counted within what the tables counted before it leave,
    and the merging is planned before it starts (``report.memory_plan``): MemoryBudgetError,
    saying what it needs, if it cannot fit.

    >>> import bpe_fast
    >>> tok = bpe_fast.train_parity([["hello hello hello"], ["ciao ciao"]], 260, pattern="gpt2", workers=1,
    ...                             progress="none")
    >>> [tok.decode([i]) for i in range(256, 260)]       # three for the longer text, then one for the other
    ['el', 'hel', 'lo', 'ao']
    """
    for key in keywords:
        if key not in parity.TRAINING_KEYWORDS and key not in parity.COUNTING_KEYWORDS:
            raise TypeError(f"train_parity() got an unexpected keyword argument {key!r}")
    progress = with_alias(progress, None)
    workers = keywords.get("workers")
    options = TrainOptions.checked(vocab_size, progress=progress, threads=workers,
                                   **{k: v for k, v in keywords.items() if k in parity.TRAINING_KEYWORDS})
    counting = {k: v for k, v in keywords.items() if k in parity.COUNTING_KEYWORDS}
    names, items = parity.languages(corpora, "corpora")
    dev_items = None
    if dev is not None:
        dev_names, dev_items = parity.languages(dev, "dev")
        if len(dev_items) != len(items) or (isinstance(dev, Mapping) and isinstance(corpora, Mapping)
                                            and dev_names != names):
            raise ArgumentError(f"dev must name the same {len(items)} languages as corpora, in the same order")
    ratios = parity.check_settings(len(items), ratio, dev, variant, global_merges, window_size, alpha)
    report = report if report is not None else TrainReport(input_unit="bytes")
    t0 = time.perf_counter()
    tables = parity.count_languages(items, options, counting, progress)
    dev_tables = None if dev_items is None else parity.count_languages(dev_items, options, counting, progress,
                                                                       held=tables)
    report.seconds["counting"] = time.perf_counter() - t0
    report.input_size = sum(t.input_bytes for t in tables)
    needs = {"corpora": "text to learn merges from", "dev": "dev text to measure its compression on"}
    for what, counted in (("corpora", tables), ("dev", dev_tables or [])):
        for name, table in zip(names, counted):
            if len(table) == 0:   # (its compression, 0 / 0, would be no number: it could never be served)
                raise EmptyCorpusError(f"{what}[{name!r}] is empty: every language needs {needs[what]}")
    options = replace(options, pattern=tables[0].pattern, normalize=tables[0].normalize)
    settings = dict(ratio=ratios, variant=variant, global_merges=int(global_merges), window_size=int(window_size),
                    alpha=float(alpha))
    largest = parity.learn(tables, dev_tables, max(options.sizes), options, settings, report)
    toks = [largest if v == max(options.sizes) else pipeline.cut(largest, v, options.base) for v in options.sizes]
    return _as_asked(toks, options)


# The variants' keywords, as each variant's module tells them (variants/).
train.__doc__ = (train.__doc__ or "").rstrip() + "\n" + variants.keywords_help()
_signature(train, "files vocab_size", TrainKeywords, {})
_signature(train_from_iterator, "docs vocab_size", TrainIteratorKeywords, {})
_signature(train_from_table, "table vocab_size", TrainTableKeywords, {"pattern": ..., "special_tokens": ...})
