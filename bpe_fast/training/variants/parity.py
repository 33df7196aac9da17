"""Parity-aware BPE (Foroutan et al. 2025, arXiv 2508.04796): ``train_parity(corpora, vocab_size)``
trains on one corpus per language and, at each step, merges the best pair of the language that
is least compressed so far, so that no language is left with long encodings. Its tokenizers are
plain ones (a merge list): every format holds them.

Which language a step serves is Hugging Face's ``ParityBpeTrainer``'s choice (tokenizers 0.23,
ported in parity_reference.py, which says how): by the dev set's length in tokens (``dev=``),
by the compression ``ratio=`` asks for, or by the training text's length; ``variant="window"``
keeps any language from taking more than ``alpha / languages`` of the last ``window_size``
steps; the first ``global_merges`` steps are plain BPE over all the languages together. With
``pattern="gpt2", tie_break="huggingface"`` the merges are ParityBpeTrainer's (ties: the
largest pair by its byte-level strings, as its Python original); with ``tie_break="bytes"``,
ties go to the smallest (left id, right id), as plain BPE's do (one language, or every merge
global, is then plain BPE exactly).

The corpus of each language is counted into a word table as plain training counts one
(counting/corpus.py); the tables become one corpus (``_parity.ParityCorpus``) whose words carry
their language, with each language's pair counts and heap kept incrementally, so a step costs
what a plain step costs plus the choice among the languages.

Deliberate differences from ParityBpeTrainer: ``dev=`` and ``ratio=`` together are refused (it
lets the dev set win silently); ``max_token_length`` leaves out every pair whose token would be
longer (it counts them in the first count, and tests ``<``); a token made twice (the same bytes
from two different merges, rare) gets a second id here, where it reuses the first; in the
window variant, when the languages not passed over are all exhausted, ParityBpeTrainer never
returns (it keeps picking language 0), where this takes the first of them (an exhausted one: the
step is skipped and the window moves on).
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ... import arguments, budget
from ...arguments import INT64_MAX
from ...bytelevel import huggingface_byte_order
from ...counting.corpus import check_docs, count_docs, count_inputs
from ...counting.inputs import names_files
from ...counting.wordtable import WordTable
from ...counting.workers import CountOptions
from ...errors import ArgumentError, ArgumentTypeError
from ...progress import Bar, summary
from ...tokenizer import Tokenizer
from .. import continued, pipeline
from ..options import TrainOptions
from ..pipeline import TrainReport
from . import _parity
from ._variant import Variant


PARITY_VARIANTS = ("base", "window")
# The keywords of train_parity that are training's (TrainOptions) and counting's (CountOptions);
# memory_budget is both: the counting's share of it, and the merging's plan (budget.py).
TRAINING_KEYWORDS = ("pattern", "special_tokens", "min_frequency", "tie_break", "base", "max_token_length", "normalize",
                     "memory_budget")
COUNTING_KEYWORDS = ("workers", "errors", "lines", "field", "memory_budget")


class Parity(Variant):
    name = "parity"
    title = "parity-aware BPE"
    summary = "parity-aware BPE (Foroutan et al. 2025): each merge serves the least-compressed language"
    keywords_help = ""              # (train_parity's own keywords: not train's)
    held_by = ()                    # (its tokenizers are plain: owns() none)


VARIANT = Parity()


def languages(corpora: Any, what: str) -> tuple[list[str], list[Any]]:
    """The languages' names and corpora: a dict name -> corpus, or a list (names "0", "1", ...)."""
    if isinstance(corpora, Mapping):
        names, items = [str(k) for k in corpora], list(corpora.values())
    elif isinstance(corpora, (str, bytes, os.PathLike)) or not isinstance(corpora, Iterable):
        raise ArgumentTypeError(f"{what} must be one corpus per language (a list, or a dict name -> corpus), "
                                f"got {type(corpora).__name__}")
    else:
        items = list(corpora)
        names = [str(i) for i in range(len(items))]
    if not items:
        raise ArgumentError(f"{what} is empty: give one corpus per language")
    return names, items


def _is_files(corpus: Any) -> bool:
    """A corpus of files: a path, or a list of items that each look like one (as everywhere:
    inputs.names_files); else documents."""
    return names_files(corpus)


def count_language(corpus: Any, options: TrainOptions, counting: dict, progress: Any) -> WordTable:
    """One language's corpus counted as ``train`` (files) or ``train_from_iterator`` counts one."""
    splitter = options.splitter()
    if _is_files(corpus):
        count_options = CountOptions.for_files(progress=progress, **counting)
        table = count_inputs(corpus, count_options.config(splitter), count_options)
    else:
        check_docs(corpus, None)
        count_options = CountOptions.for_docs(progress=progress, **counting)
        table = count_docs(corpus, count_options.config(splitter), count_options)
    return table


def count_languages(corpora: list[Any], options: TrainOptions, counting: dict, progress: Any,
                    held: Sequence[WordTable] = ()) -> list[WordTable]:
    """Each language's corpus counted in turn (``count_language``). Under a memory budget, each
    count's share (budget.counting_share) is what the tables counted before it leave of the
    budget: they are held meanwhile, in this process, with the tables ``held`` (dev's count
    comes after the training tables')."""
    tables: list[WordTable] = []
    for corpus in corpora:
        share = counting
        if counting.get("memory_budget") is not None:
            held_bytes = sum(t.nbytes for t in [*held, *tables])
            share = {**counting, "memory_budget": max(budget.MiB, counting["memory_budget"] - held_bytes)}
        tables.append(count_language(corpus, options, share, progress))
    return tables


def check_settings(n: int, ratio: Any, dev: Any, variant: Any, global_merges: Any, window_size: Any,
                    alpha: Any) -> list[float] | None:
    if variant not in PARITY_VARIANTS:
        raise ArgumentError(f"variant must be one of {PARITY_VARIANTS}, got {variant!r}")
    arguments.integer(global_merges, "global_merges", 0, INT64_MAX)      # (the kernel counts steps in int64)
    arguments.integer(window_size, "window_size", 1, INT64_MAX)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (0 < float(alpha) < float("inf")):
        raise ArgumentError(f"alpha must be a positive finite number, got {alpha!r}")
    if ratio is not None and dev is not None:
        raise ArgumentError("give ratio= or dev=, not both: each decides which language a merge serves")
    if ratio is None:
        return None
    if isinstance(ratio, Mapping):
        raise ArgumentTypeError("ratio must be a list of numbers, one per language, in the corpora's order")
    values = list(ratio)
    if len(values) != n:
        raise ArgumentError(f"ratio has {len(values)} values for {n} languages: give one per language")
    for k, r in enumerate(values):
        if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)) or not 0 < r < float("inf"):
            raise ArgumentError(f"ratio[{k}] must be a positive finite number, got {r!r}")
    return [float(r) for r in values]


def learn(tables: list[WordTable], dev_tables: list[WordTable] | None, vocab_size: int, options: TrainOptions,
          settings: dict, report: TrainReport) -> Tokenizer:
    """The kernel stage of ``train_parity``: each language's table (and dev table) to a tokenizer."""
    base = options.base
    new_specials = pipeline.new_special_tokens(options)
    first_id = continued.first_new_id(base)
    n_merges = vocab_size - first_id - len(new_specials)
    if options.memory_budget is not None:     # before the kernel allocates anything (budget.py)
        report.memory_plan = planned(tables, dev_tables, n_merges, first_id, options, settings["global_merges"])
    t0 = time.perf_counter()
    merges, counts = learn_parity(tables, n_merges, dev=dev_tables, base=base, min_count=max(1, options.min_frequency),
                                  tie_break=options.tie_break, max_token_length=options.max_token_length,
                                  progress=options.progress, **settings)
    report.seconds["merging"] = time.perf_counter() - t0
    summary("merging", report.seconds["merging"], options.progress, merges=len(merges))
    report.merge_counts = counts
    report.unique_chunks = sum(len(t) for t in tables)
    report.total_chunks = sum(t.total_chunks for t in tables)
    tok = pipeline.tokenizer_of(merges, options, new_specials)
    why = f"no language has a pair left that occurs {max(1, options.min_frequency)} or more times"
    return pipeline.finished(tok, report, len(merges), n_merges, vocab_size, why)


def planned(tables: list[WordTable], dev_tables: list[WordTable] | None, n_merges: int, first_id: int,
            options: TrainOptions, global_merges: int) -> budget.MergingPlan:
    """The merging's plan (budget.plan_parity_merging) within ``options.memory_budget``, else
    MemoryBudgetError, in one line that says what it needs, before the corpus is laid out. (No
    table is kept to train from: train_parity counts its languages again.)"""
    limit = options.memory_budget
    assert limit is not None
    plan = budget.plan_parity_merging(tables, dev_tables, n_merges, first_id, global_merges,
                                      from_bytes=options.base is None)
    budget.check_fits(plan, limit, None)
    return plan


def table_tokens(table: WordTable, base: Tokenizer | None) -> tuple[np.ndarray, np.ndarray]:
    """The table's words as token ids (int32) and their offsets: its bytes, or the base's
    encoding of each chunk whole (continued.tokenized_by's layout: a token's id at its first
    byte, -1 or a tail mark after)."""
    if base is None:
        return table.symbols.astype(np.int32), table.offsets
    slots, _ = continued.tokenized_by(base, table)
    starts = slots >= 0
    per_word = np.add.reduceat(starts.astype(np.int64), table.offsets[:-1]) if len(table) else np.zeros(0, np.int64)
    offsets = np.zeros(len(table) + 1, dtype=np.int64)
    np.cumsum(per_word, out=offsets[1:])
    return slots[starts].astype(np.int32), offsets


def _corpus(tables: list[WordTable], base: Tokenizer | None, token_bytes: list, heaps: bool, hf: bool,
            max_token_length: int | None, track_global: bool) -> _parity.ParityCorpus:
    """One corpus of every language's words, each word with its language. From bytes, the
    tables' bytes are cast once, into the corpus's array (not each table's copy, then all of
    them: budget.py's plan counts what is held while the corpus is laid out)."""
    if base is None:
        tokens = np.concatenate([t.symbols for t in tables], dtype=np.int32)
        word_offsets = [t.offsets for t in tables]
    else:
        parts = [table_tokens(t, base) for t in tables]
        tokens = np.concatenate([p[0] for p in parts])
        word_offsets = [p[1] for p in parts]
        del parts
    sizes = [len(t) for t in tables]
    offsets = np.zeros(sum(sizes) + 1, dtype=np.int64)
    at, shift = 0, 0
    for offs, n in zip(word_offsets, sizes):
        offsets[at:at + n + 1] = offs + shift
        at, shift = at + n, shift + int(offs[-1])
    del word_offsets
    counts = np.concatenate([t.counts for t in tables], dtype=np.int64)
    langs = np.repeat(np.arange(len(tables), dtype=np.int32), sizes)
    rank = np.argsort(np.array(huggingface_byte_order())).astype(np.uint8)
    return _parity.ParityCorpus(tokens, offsets, counts, langs, len(tables), token_bytes, heaps=heaps, hf_ties=hf,
                                max_token_length=max_token_length or 0, track_global=track_global, byte_rank=rank)


def _lengths(tables: list[WordTable], base: Tokenizer | None) -> list[int]:
    """Each language's text in tokens (bytes, or the base's tokens), each chunk times its count."""
    out = []
    for t in tables:
        offsets = t.offsets if base is None else table_tokens(t, base)[1]     # (bytes: no copy of them)
        out.append(int(np.dot(np.diff(offsets), t.counts)) if len(t) else 0)
    return out


def _check_capacity(tables: list[WordTable], n_ids: int, n: int) -> None:
    """The corpus numbers slots and words with int32 and keys a pair by (left id x languages +
    language, right id) in 32 bits each: refuse what would not fit, before it is laid out."""
    if sum(t.n_symbols for t in tables) >= 2**31 - 1 or sum(len(t) for t in tables) >= 2**31 - 1:
        raise ArgumentError("the corpora hold 2**31 or more bytes of distinct chunks: parity-aware training "
                            "numbers them with int32; train on less text")
    if n_ids * (n + 1) >= 2**32:
        raise ArgumentError(f"{n} languages at {n_ids:,} token ids pass the pair keys' 32 bits: fewer languages "
                            f"or a smaller vocab_size")


class _base_chooser:
    """choose_language's choice for the base variant, on arrays (the same floats: each
    language's initial / current length, over its ratio; or the longest): the first best
    language not exhausted."""

    def __init__(self, initial: list[int], ratio: Sequence[float] | None, n: int):
        self.initial = np.array(initial, dtype=np.float64)
        self.ratio = None if ratio is None else np.array(ratio, dtype=np.float64)
        self.exhausted = np.zeros(n, dtype=bool)

    def __call__(self, lengths: np.ndarray) -> int:
        # (in the kernel: numpy's half dozen calls a step cost more than the step's choice)
        return int(_parity.least_compressed(self.initial, self.ratio, lengths, self.exhausted.view(np.uint8)))


class _window_chooser:
    """choose_language's choice for the window variant (select_window's), on arrays, with each
    language's number of steps in the window kept as the window moves."""

    def __init__(self, initial: list[int], ratio: Sequence[float] | None, n: int, window_size: int, alpha: float):
        self.initial = np.array(initial, dtype=np.float64)
        self.ratio = None if ratio is None else np.array(ratio, dtype=np.float64)
        self.exhausted = np.zeros(n, dtype=bool)
        self.window: deque = deque()
        self.in_window = np.zeros(n, dtype=np.int64)
        self.window_size, self.threshold = window_size, alpha / n

    def __call__(self, lengths: np.ndarray) -> int:
        # select_window passes over the best, then the next best, ...: the languages by falling
        # value (the first on ties, as its strict > keeps; the exhausted, -inf, last by index),
        # until one has room in the window; none has: the last (in the kernel, one pass)
        best = int(_parity.least_compressed_with_room(self.initial, self.ratio, lengths, self.exhausted.view(np.uint8),
                                                      self.in_window, self.window_size, self.threshold))
        self.window.append(best)
        self.in_window[best] += 1
        if len(self.window) > self.window_size:
            self.in_window[self.window.popleft()] -= 1
        return best


def learn_parity(tables: list[WordTable], n_merges: int, *, dev: list[WordTable] | None = None,
                 ratio: Sequence[float] | None = None, variant: str = "base", global_merges: int = 0,
                 window_size: int = 100, alpha: float = 2.0, min_count: int = 1, tie_break: str = "bytes",
                 max_token_length: int | None = None, base: Tokenizer | None = None,
                 progress: Any = "none") -> tuple[np.ndarray, np.ndarray]:
    """The merges (int32, (n, 2)) and each one's count in its language, learned from each
    language's table (and ``dev``'s): the kernel stage of ``train_parity``. New tokens are
    numbered from the base's first free id (256 without one)."""
    hf = tie_break == "huggingface"
    token_bytes = [bytes([b]) for b in range(256)] if base is None else list(base._vocab)
    n = len(tables)
    _check_capacity(tables + (dev or []), len(token_bytes) + max(n_merges, 0), n)
    corpus = _corpus(tables, base, token_bytes, True, hf, max_token_length, global_merges > 0)
    dev_corpus = None if dev is None else _corpus(dev, base, token_bytes, False, hf, max_token_length, False)
    initial = _lengths(tables, base)
    lengths = np.array(initial if dev is None else _lengths(dev, base), dtype=np.int64)
    choose: _base_chooser | _window_chooser = (_base_chooser(initial, ratio, n) if variant == "base" else
                                               _window_chooser(initial, ratio, n, window_size, alpha))
    exhausted: set[int] = set()
    merges: list[tuple[int, int]] = []          # (lists, not arrays, per step: cheaper, as the falls go
    counts: list[int] = []                      # straight into lengths)
    step = 0
    with Bar(progress, "merging", n_merges, unit="merge", decaying=True) as bar:
        advance = bar.callback(reach=True)
        while step < n_merges and len(exhausted) < n:
            if global_merges and step == global_merges:
                corpus.stop_global()
            if step < global_merges:
                lang = -1
            else:
                lang = choose(lengths)
            best = corpus.best(n if lang == -1 else lang)
            if best is None or best[2] < min_count:
                if lang == -1:
                    break
                exhausted.add(lang)
                choose.exhausted[lang] = True
                continue
            x, y, c = best
            corpus.merge(x, y, lengths if dev_corpus is None else None)
            if dev_corpus is not None:
                dev_corpus.merge(x, y, lengths)
            merges.append((x, y))
            counts.append(c)
            step += 1
            if advance is not None and step % 256 == 0:
                advance(step)
    return np.array(merges, dtype=np.int32).reshape(-1, 2), np.array(counts, dtype=np.int64)
