"""The pipeline: ``count`` (inputs -> word table), ``train_from_table`` (word table -> kernel ->
Tokenizer), and ``train``/``train_from_iterator``, which do both."""
from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from . import _kernel
from . import progress
from .counting import DEFAULT_BATCH_CHARS, DEFAULT_BLOCK_SIZE, count_tasks, make_config
from .distributed import count_on_cluster
from .inputs import docs_tasks, sources, tasks_of
from .bytelevel import huggingface_byte_order
from .errors import ArgumentError, ArgumentTypeError, EmptyCorpusError, VocabSizeWarning
from .patterns import resolve
from .pretokenize import special_token_list
from .tokenizer import Tokenizer
from .wordtable import WordTable


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
    seconds: dict = field(default_factory=dict)   # stage -> seconds

    def summary(self) -> str:
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items())
        return (f"read {self.input_size:,} {self.input_unit}; {self.total_chunks:,} chunks, "
                f"{self.unique_chunks:,} unique; {self.merges:,} merges -> vocab size "
                f"{self.vocab_size:,}; {stages}")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_args(vocab_size, special_tokens, min_frequency, tie_break) -> tuple[str, ...]:
    specials = special_token_list(special_tokens)
    if not _is_int(vocab_size):
        raise ArgumentTypeError(f"vocab_size must be an integer, got {vocab_size!r}")
    need = 256 + len(specials)
    if vocab_size < need:
        raise ArgumentError(f"vocab_size={vocab_size} is too small: it must be at least {need} "
                            f"(256 byte tokens + {len(specials)} special tokens)")
    if not _is_int(min_frequency):
        raise ArgumentTypeError(f"min_frequency must be an integer (a number of occurrences), got {min_frequency!r}")
    if min_frequency < 0:
        raise ArgumentError(f"min_frequency must be >= 0, got {min_frequency}")
    if tie_break not in TIE_BREAKS:
        raise ArgumentError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    return specials


TIE_BREAKS = ("bytes", "huggingface")
INT64_MAX = 2**63 - 1          # counts are int64: a larger min_frequency means the same as this


def _tie_break_order(tie_break: str) -> np.ndarray | None:
    """Bytes in the order whose ids break ties, or None for byte order (rustbpe, bpeasy).

    Hugging Face's BpeTrainer numbers its alphabet by GPT-2's bytes-to-unicode characters in
    code point order, and breaks ties between equal counts by those ids."""
    return None if tie_break == "bytes" else np.array(huggingface_byte_order(), dtype=np.int32)


def count(inputs: str | os.PathLike | Iterable[str | os.PathLike], *, pattern: str | None = "cl100k",
          special_tokens: Sequence[str] = (), workers: int | None = None, show_progress: bool | None = None,
          errors: str = "strict", lines: bool = False, field: str = "text", column: str = "text",
          block_size: int = DEFAULT_BLOCK_SIZE, memory_budget: int | None = None, client=None) -> WordTable:
    """Count the chunks of every input into a word table: count once, then train as often as
    you like with ``train_from_table``, or save it (``table.save``) and add it to others.

    An input is a text file, "-" (standard input), a pipe, a compressed file (.gz .bz2 .xz
    .zst), JSON lines (each record's ``field`` a document), Parquet (each value of ``column`` a
    document) or a directory of such files (see inputs.py). The table is the same for any
    ``workers``, ``block_size`` and ``memory_budget`` (bytes a worker's table may hold before it
    writes it out to a temporary file; default: a third of the free memory, shared). ``lines``
    makes every line a document. ``client``, a dask.distributed Client, counts on its cluster.
    """
    config = make_config(pattern, special_tokens, errors, lines, memory_budget)
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not paths:
        raise EmptyCorpusError("no input files given")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ArgumentError(f"block_size must be a positive integer, got {block_size!r}")
    found = sources(paths)                                  # every input checked before any is read
    cut = config.cut
    if client is not None:
        return count_on_cluster(client, found, config, cut, block_size, field, column)
    tasks = (t for source in found for t in tasks_of(source, cut, block_size, field, column))
    sizes = [source.size for source in found]
    total = None if None in sizes else sum(sizes)           # streams have no size to show progress against
    with progress.Bar(progress.enabled(show_progress), total=total, unit="B", unit_scale=True, desc="counting") as bar:
        return count_tasks(tasks, config, workers, bar.callback())


def count_from_iterator(docs: Iterable[str | bytes], *, pattern: str | None = "cl100k",
                        special_tokens: Sequence[str] = (), workers: int | None = None,
                        show_progress: bool | None = None, errors: str = "strict", lines: bool = False,
                        batch_chars: int = DEFAULT_BATCH_CHARS, memory_budget: int | None = None) -> WordTable:
    """Count the chunks of documents from an iterator (each item one document, str or UTF-8
    bytes) into a word table. Items are consumed lazily and sent to the workers in batches, so
    the iterator may be far larger than memory."""
    if isinstance(docs, (str, bytes)):
        raise ArgumentTypeError("docs must be an iterable of documents, not a single str/bytes "
                                "(wrap it in a list: [text])")
    config = make_config(pattern, special_tokens, errors, lines, memory_budget)
    with progress.Bar(progress.enabled(show_progress), total=None, unit="char", unit_scale=True, desc="counting") as bar:
        return count_tasks(docs_tasks(docs, batch_chars), config, workers, bar.callback())


def train_from_table(table: WordTable, vocab_size: int, *, pattern=..., special_tokens=...,
                     min_frequency: int = 0, show_progress: bool | None = None,
                     report: TrainReport | None = None, tie_break: str = "bytes") -> Tokenizer:
    """Learn merges from a word table (the kernel stage alone): count once, train many times.

    The tokenizer splits text with the pattern and special tokens the table was counted with,
    unless ``pattern=`` or ``special_tokens=`` say otherwise (for tables made by hand).
    Ties between pairs of equal count go to the smallest (left id, right id) with bytes as ids
    0..255 (``tie_break="bytes"``, as rustbpe and bpeasy), or with Hugging Face's ids for the
    bytes (``"huggingface"``, as tokenizers' BpeTrainer with the ByteLevel pre-tokenizer)."""
    if not isinstance(table, WordTable):
        raise ArgumentTypeError(f"train_from_table takes a WordTable (bpe_fast.count, WordTable.load), "
                                f"not {type(table).__name__}")
    return _learn([table], vocab_size, pattern=pattern, special_tokens=special_tokens, min_frequency=min_frequency,
                  show_progress=show_progress, report=report, tie_break=tie_break)


def _learn(held: list, vocab_size: int, *, pattern, special_tokens, min_frequency: int,
           show_progress: bool | None, report: TrainReport | None, tie_break: str) -> Tokenizer:
    """train_from_table's work. The table comes in a list, which this empties: when the caller
    keeps no other reference (as train() does), the table's memory is given back as soon as the
    kernel has laid the words out, before the merging, which needs the most memory."""
    table = held.pop()
    special_tokens = table.special_tokens if special_tokens is ... else special_tokens
    specials = _check_args(vocab_size, special_tokens, min_frequency, tie_break)
    pattern = resolve(table.pattern if pattern is ... else pattern)
    byte_order = _tie_break_order(tie_break)
    report = report or TrainReport()
    if len(table) == 0:
        raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
    n_merges = vocab_size - 256 - len(specials)
    t0 = time.perf_counter()
    byte_ranks = None if byte_order is None else np.argsort(byte_order)
    report.unique_chunks, report.total_chunks, report.table_symbols = len(table), table.total_chunks, table.n_symbols
    with progress.Bar(progress.enabled(show_progress), total=n_merges, unit="merge", desc="merging") as bar:
        kernel = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges,
                                 min(max(1, min_frequency), INT64_MAX), byte_ranks)
        del table
        merges = kernel.learn(bar.callback(reach=True))
    if byte_order is not None:   # back from the tie-break ids to byte ids (merge ids are the same)
        merges = np.where(merges < 256, byte_order[np.minimum(merges, 255)], merges).astype(np.int32)
    report.seconds["merging"] = time.perf_counter() - t0
    tok = Tokenizer(merges, pattern=pattern, special_tokens=list(specials))
    report.merges, report.merges_requested, report.vocab_size = len(merges), n_merges, tok.vocab_size
    if len(merges) < n_merges:
        why = (f"no pair occurs {max(1, min_frequency)} or more times" if min_frequency > 1
               else "every chunk is a single token")
        warnings.warn(f"stopped after {len(merges)} of {n_merges} merges ({why}): vocab size "
                      f"{tok.vocab_size} instead of {vocab_size}", VocabSizeWarning, stacklevel=3)
    tok.training_report = report
    return tok


def train(files: str | os.PathLike | Iterable[str | os.PathLike], vocab_size: int, *,
          pattern: str | None = "cl100k", special_tokens: Sequence[str] = (), min_frequency: int = 0,
          workers: int | None = None, show_progress: bool | None = None, errors: str = "strict",
          block_size: int = DEFAULT_BLOCK_SIZE, tie_break: str = "bytes", lines: bool = False,
          field: str = "text", column: str = "text", memory_budget: int | None = None, client=None) -> Tokenizer:
    """Train on files: ``count`` (any input: text, stdin, compressed, JSON lines, Parquet,
    directories; ``workers`` processes, default one per CPU), then ``train_from_table``.

    The result is the same as treating each whole text file as one document, for any block
    size, number of workers and memory budget. ``lines=True`` makes every line (up to "\n") a
    document of its own, as Hugging Face's ``train(files)`` and gigabpe read files: with
    ``tie_break="huggingface"`` and the GPT-2 pattern, the merges are then theirs.
    """
    specials = _check_args(vocab_size, special_tokens, min_frequency, tie_break)
    report = TrainReport()
    t0 = time.perf_counter()
    held = [count(files, pattern=pattern, special_tokens=specials, workers=workers, show_progress=show_progress,
                  errors=errors, lines=lines, field=field, column=column, block_size=block_size,
                  memory_budget=memory_budget, client=client)]
    report.seconds["counting"] = time.perf_counter() - t0
    report.input_size = held[0].input_bytes
    if len(held[0]) == 0:
        names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        raise EmptyCorpusError(f"the corpus is empty: {', '.join(map(str, names))} hold no text")
    return _learn(held, vocab_size, pattern=held[0].pattern, special_tokens=specials, min_frequency=min_frequency,
                  show_progress=show_progress, report=report, tie_break=tie_break)


def train_from_iterator(docs: Iterable[str | bytes], vocab_size: int, *, pattern: str | None = "cl100k",
                        special_tokens: Sequence[str] = (), min_frequency: int = 0,
                        workers: int | None = None, show_progress: bool | None = None,
                        errors: str = "strict", batch_chars: int = DEFAULT_BATCH_CHARS,
                        tie_break: str = "bytes", lines: bool = False, memory_budget: int | None = None) -> Tokenizer:
    """Train on documents from an iterator; each item is a separate document.

    Items are consumed lazily and sent to worker processes in batches, so the iterator may be
    far larger than memory.
    """
    specials = _check_args(vocab_size, special_tokens, min_frequency, tie_break)
    report = TrainReport(input_unit="chars")
    t0 = time.perf_counter()
    held = [count_from_iterator(docs, pattern=pattern, special_tokens=specials, workers=workers,
                                show_progress=show_progress, errors=errors, lines=lines, batch_chars=batch_chars,
                                memory_budget=memory_budget)]
    report.seconds["counting"] = time.perf_counter() - t0
    report.input_size = held[0].input_bytes
    return _learn(held, vocab_size, pattern=held[0].pattern, special_tokens=specials, min_frequency=min_frequency,
                  show_progress=show_progress, report=report, tie_break=tie_break)
