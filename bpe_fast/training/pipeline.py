"""The plain pipeline, which knows no variant: count a corpus into a word table (``count``),
learn merges from the table with the kernel (``learn_bpe``), one tokenizer per size
(``learn_sizes``). trainer.py picks the variant once and hands it these stages; a variant
(training/variants/) composes them into its own (SuperBPE: two trainings; BoundlessBPE: a
training, then its runs counted and supermerged) or replaces the kernel stage alone (Picky BPE).

A corpus is a function that counts it (``CountText``: the Splitter, what to count instead of
chunks, and progress= -> a WordTable), so that one pipeline serves files, iterators and the
variants' second passes alike. A table travels in a one-element list that the stage empties:
when no caller keeps another reference, its memory goes back before the kernel's peak.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import budget
from ..arguments import INT64_MAX
from ..bytelevel import huggingface_byte_order
from ..counting.wordtable import WordTable
from ..counting.workers import default_workers
from ..errors import ArgumentError, EmptyCorpusError, VocabSizeWarning, warn
from ..progress import Bar, summary
from ..tokenizer import Tokenizer
from . import _kernel, continued
from .options import TrainOptions

# (Splitter, what to count instead of chunks or None, progress=) -> the corpus's table
CountText = Callable[..., WordTable]
# (held table, vocab_size, options, report) -> a tokenizer: the kernel stage, plain BPE's or a variant's
Learn = Callable[[list, int, TrainOptions, "TrainReport"], Tokenizer]


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


# -- counting -------------------------------------------------------------------------------------

def count(count_text: CountText, options: TrainOptions, report: TrainReport) -> tuple[list, TrainOptions]:
    """The corpus counted with the options' Splitter: the table in a list (see the module's
    docstring), and the options with the table's pattern and normalization."""
    t0 = time.perf_counter()
    return held(count_text(options.splitter()), options, report, time.perf_counter() - t0)


def held(table: WordTable, options: TrainOptions, report: TrainReport, seconds: float) -> tuple[list, TrainOptions]:
    """A table counted elsewhere (a thread ahead, a variant's pass), as ``count`` gives one; the
    report takes the counting's time and size."""
    report.seconds["counting"] = seconds
    report.input_size = table.input_bytes
    return [table], replace(options, pattern=table.pattern, normalize=table.normalize)


# -- learning -------------------------------------------------------------------------------------

def train(count_text: CountText, options: TrainOptions, input_unit: str, learn: Learn | None = None) -> list[Tokenizer]:
    """Count, then learn a tokenizer per size (``learn``: the kernel stage, plain BPE's by default)."""
    report = TrainReport(input_unit=input_unit)
    table, options = count(count_text, options, report)
    return learn_sizes(table, options, report, learn)


def learn_sizes(held: list, options: TrainOptions, report: TrainReport, learn: Learn | None = None) -> list[Tokenizer]:
    """A tokenizer for each size: one run to the largest, cut to each (merges are a prefix of
    each other), so a list of sizes costs the largest alone."""
    largest = (learn or learn_bpe)(held, max(options.sizes), options, report)
    return [largest if v == max(options.sizes) else cut(largest, v, options.base) for v in options.sizes]


def cut(tok: Tokenizer, vocab_size: int, base: Tokenizer | None) -> Tokenizer:
    """The first ``vocab_size`` tokens of a trained tokenizer (a base's tokens all stay)."""
    return tok.truncated(vocab_size) if base is None else continued.truncated(tok, vocab_size, base)


def learn_bpe(held: list, vocab_size: int, options: TrainOptions, report: TrainReport) -> Tokenizer:
    """Plain BPE's kernel stage, for checked options whose pattern and special tokens are the
    table's: plan the memory (with a budget), lay the table out in the kernel, learn, and make
    the tokenizer. The table's hashes (8 bytes a chunk, which serve adding tables) are dropped
    before the layout when no caller holds the table (as train() holds none)."""
    counted = held.pop()
    sole = sys.getrefcount(counted) <= 2      # this name and getrefcount's argument: no caller holds it
    if len(counted) == 0:
        raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
    new_specials = new_special_tokens(options)
    first_id = continued.first_new_id(options.base)
    n_merges = vocab_size - first_id - len(new_specials)
    table = replace(counted, hashes=None)
    if options.memory_budget is not None:     # before the kernel allocates anything (budget.py)
        report.memory_plan = _planned(counted, table, n_merges, first_id, options, sole)
    del counted                               # (its hashes go now, in train(): it was their last holder)
    box = [table]
    del table
    t0 = time.perf_counter()
    merges = _merged(box, n_merges, first_id, options, report)
    report.seconds["merging"] = time.perf_counter() - t0
    summary("merging", report.seconds["merging"], options.progress, merges=len(merges))
    tok = tokenizer_of(merges, options, new_specials)
    why = (f"no pair occurs {max(1, options.min_frequency)} or more times" if options.min_frequency > 1
           else "every chunk is a single token")
    return finished(tok, report, len(merges), n_merges, vocab_size, why)


def _merged(box: list, n_merges: int, first_id: int, options: TrainOptions, report: TrainReport) -> np.ndarray:
    """The kernel's merges, in token ids: the table (taken from ``box``) laid out, its pairs
    counted, then merged; the table's memory is free before the pair lists take theirs."""
    table, base = box.pop(), options.base
    ids = kernel_ids(options.tie_break, base)
    byte_ranks = ids if base is None else None      # from bytes, the kernel numbers them itself
    start, lengths = (None, None) if base is None else continued.tokenized_by(base, table, ids, kernel_order=True,
                                                                              slots=options.layout_memory)
    report.unique_chunks, report.total_chunks, report.table_symbols = len(table), table.total_chunks, table.n_symbols
    check_pair_counts(table)
    with Bar(options.progress, "pairs", 3 * table.n_symbols, unit="B", unit_scale=True) as bar:
        kernel = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges,
                                 min(max(1, options.min_frequency), INT64_MAX), byte_ranks,
                                 max_token_length=options.max_token_length or 0, start=start, token_lengths=lengths,
                                 first_id=first_id, setup_progress=bar.callback(reach=True),
                                 threads=kernel_threads(options.threads), kernel_order=start is not None)
        del table, start        # laid out (start became the kernel's corpus)
        kernel.count_pairs()
    with Bar(options.progress, "merging", n_merges, unit="merge", decaying=True) as bar:
        merges = kernel.learn(bar.callback(reach=True))
    report.merge_counts = kernel.counts
    if ids is None:
        return merges
    token_id = ids_of_kernel(ids)     # back from the kernel's ids to the tokens' (new tokens' ids are the same)
    return np.where(merges < first_id, token_id[np.minimum(merges, len(token_id) - 1)], merges).astype(np.int32)


def new_special_tokens(options: TrainOptions) -> list[str]:
    """The special tokens this training adds (a base's own keep their ids)."""
    base = options.base
    return [s for s in options.special_tokens if base is None or s not in base.special_tokens]


def tokenizer_of(merges: np.ndarray, options: TrainOptions, new_specials: list[str]) -> Tokenizer:
    """The tokenizer of learned merges: from bytes, or the base extended with them."""
    pattern, normalize = options.resolved_pattern, options.resolved_normalize
    if options.base is not None:
        return continued.extended(options.base, merges, pattern, new_specials, normalize)
    specials = dict(options.special_ids) if options.special_ids is not None else new_specials
    return Tokenizer(merges, pattern=pattern, special_tokens=specials, normalize=normalize)


def finished(tok: Tokenizer, report: TrainReport, n_learned: int, n_wanted: int, vocab_size: int,
             why: str) -> Tokenizer:
    """The report's totals, kept by the tokenizer; a VocabSizeWarning (saying ``why``) when the
    training stopped early."""
    report.merges, report.merges_requested, report.vocab_size = n_learned, n_wanted, tok.vocab_size
    if n_learned < n_wanted:
        warn(f"stopped after {n_learned} of {n_wanted} merges ({why}): vocab size {tok.vocab_size} instead of "
             f"{vocab_size}", VocabSizeWarning)
    tok.training_report = report
    return tok


def kernel_threads(threads: int | None) -> int:
    """The kernel's threads: as asked, at most one per CPU available (default: one per CPU)."""
    return min(threads or default_workers(), default_workers())


def kernel_ids(tie_break: str, base: Tokenizer | None) -> np.ndarray | None:
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


def ids_of_kernel(ids: np.ndarray) -> np.ndarray:
    """The inverse of ``kernel_ids``: for each kernel id, the token id (-1 for none)."""
    used = np.flatnonzero(ids >= 0)
    inverse = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int32)
    inverse[ids[used]] = used
    return inverse


def check_pair_counts(table: WordTable, block: int = 1 << 20) -> None:
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


def _planned(counted: WordTable, table: WordTable, n_merges: int, first_id: int, options: TrainOptions,
             sole: bool) -> budget.MergingPlan:
    """The merging's plan (budget.py) within ``options.memory_budget``, else MemoryBudgetError
    before the kernel starts. A table counted here (``sole``: no caller holds it) is first saved
    to disk, so that the counting is not lost: the error names the file, for ``--counts``."""
    limit = options.memory_budget
    assert limit is not None
    plan = budget.plan_merging(table, n_merges, kernel_threads(options.threads), first_id, table_freed=sole)
    if counted.hashes is not None and sole:   # they go before the layout: not part of the peak
        plan = replace(plan, process=plan.process - counted.hashes.nbytes)
    if plan.peak > limit:
        kept = None
        if sole and options.counts_reusable:
            kept = os.path.join(tempfile.mkdtemp(prefix="bpe_fast-kept-"), "counts.npz")
            counted.save(kept)
        budget.check_fits(plan, limit, kept)
    return plan
