"""The pipeline: ``count`` (inputs -> word table), ``train_from_table`` (word table -> kernel ->
Tokenizer), and ``train``/``train_from_iterator``, which do both."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from . import _kernel
from .progress import Bar, ProgressOption, summary
from .progress import check as check_progress
from .counting import DEFAULT_BATCH_CHARS, DEFAULT_BLOCK_SIZE, count_tasks, default_workers, make_config
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
          special_tokens: Sequence[str] = (), workers: int | None = None, progress: ProgressOption = "auto",
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
    start = time.perf_counter()
    with Bar(check_progress(progress), "counting", total, unit="B", unit_scale=True) as bar:
        table = count_tasks(tasks, config, workers, bar.callback())
    summary("counting", time.perf_counter() - start, bytes=table.input_bytes, chunks=table.total_chunks,
            distinct=len(table))
    return table


def count_from_iterator(docs: Iterable[str | bytes], *, pattern: str | None = "cl100k",
                        special_tokens: Sequence[str] = (), workers: int | None = None,
                        progress: ProgressOption = "auto", errors: str = "strict", lines: bool = False,
                        batch_chars: int = DEFAULT_BATCH_CHARS, memory_budget: int | None = None) -> WordTable:
    """Count the chunks of documents from an iterator (each item one document, str or UTF-8
    bytes) into a word table. Items are consumed lazily and sent to the workers in batches, so
    the iterator may be far larger than memory."""
    if isinstance(docs, (str, bytes)):
        raise ArgumentTypeError("docs must be an iterable of documents, not a single str/bytes "
                                "(wrap it in a list: [text])")
    config = make_config(pattern, special_tokens, errors, lines, memory_budget)
    start = time.perf_counter()
    with Bar(check_progress(progress), "counting", None, unit="char", unit_scale=True) as bar:
        table = count_tasks(docs_tasks(docs, batch_chars), config, workers, bar.callback())
    summary("counting", time.perf_counter() - start, characters=table.input_bytes, chunks=table.total_chunks,
            distinct=len(table))
    return table


def train_from_table(table: WordTable, vocab_size: int | Sequence[int], *, pattern=..., special_tokens=...,
                     min_frequency: int = 0, progress: ProgressOption = "auto",
                     report: TrainReport | None = None, tie_break: str = "bytes", base: Tokenizer | None = None,
                     max_token_length: int | None = None) -> Tokenizer | list[Tokenizer]:
    """Learn merges from a word table (the kernel stage alone): count once, train many times.

    The tokenizer splits text with the pattern and special tokens the table was counted with,
    unless ``pattern=`` or ``special_tokens=`` say otherwise (for tables made by hand).
    Ties between pairs of equal count go to the smallest (left id, right id) with bytes as ids
    0..255 (``tie_break="bytes"``, as rustbpe and bpeasy), or with Hugging Face's ids for the
    bytes (``"huggingface"``, as tokenizers' BpeTrainer with the ByteLevel pre-tokenizer)."""
    if not isinstance(table, WordTable):
        raise ArgumentTypeError(f"train_from_table takes a WordTable (bpe_fast.count, WordTable.load), "
                                f"not {type(table).__name__}")
    return _learn_sizes([table], vocab_size, pattern=pattern, special_tokens=special_tokens,
                        min_frequency=min_frequency, progress=progress, report=report,
                        tie_break=tie_break, base=base, max_token_length=max_token_length)


def _learn_sizes(held: list, vocab_size, **options) -> Tokenizer | list[Tokenizer]:
    """One training for one size, or for a list of sizes: one run to the largest, cut to each
    (merges are a prefix of each other), so the list costs the largest alone."""
    if not isinstance(vocab_size, (list, tuple)):
        return _learn(held, vocab_size, **options)
    if not vocab_size:
        raise ArgumentError("vocab_size is an empty list")
    largest = _learn(held, max(vocab_size), **options)
    return [largest if v == max(vocab_size) else _cut(largest, v, options.get("base")) for v in vocab_size]


def _cut(tok: Tokenizer, vocab_size: int, base: Tokenizer | None) -> Tokenizer:
    if base is None:
        return tok.truncated(vocab_size)
    # Continued training: keep the base whole, and as many new merges as the size allows.
    new_specials = sorted((s for s in tok.special_tokens if s not in base.special_tokens), key=tok.special_tokens.get)
    n_new = vocab_size - base.vocab_size - len(new_specials)
    keep = len(base.merges) + n_new
    if n_new < 0 or keep > len(tok.merges):
        raise ArgumentError(f"vocab_size {vocab_size} is out of range for this continued training")
    specials = dict(base.special_tokens) | {s: base.vocab_size + n_new + k for k, s in enumerate(new_specials)}
    return Tokenizer(tok.merges[:keep], tok.pattern, specials, merge_ids=tok.merge_ids[:keep], byte_ids=tok.byte_ids)


def _learn(held: list, vocab_size: int, *, pattern, special_tokens, min_frequency: int,
           progress: ProgressOption, report: TrainReport | None, tie_break: str, base: Tokenizer | None = None,
           max_token_length: int | None = None) -> Tokenizer:
    """train_from_table's work. The table comes in a list, which this empties: when the caller
    keeps no other reference (as train() does), the table's memory is given back as soon as the
    kernel has laid the words out, before the merging, which needs the most memory."""
    table = held.pop()
    special_tokens = table.special_tokens if special_tokens is ... else special_tokens
    specials = _check_args(vocab_size if base is None else 256 + len(special_tokens), special_tokens,
                           min_frequency, tie_break)
    _check_continuation(base, vocab_size, tie_break, max_token_length)
    pattern = resolve(table.pattern if pattern is ... else pattern)
    byte_order = _tie_break_order(tie_break)
    report = report or TrainReport()
    if len(table) == 0:
        raise EmptyCorpusError("the corpus is empty: no text to learn merges from")
    new_specials = [s for s in specials if base is None or s not in base.special_tokens]
    first_id = 256 if base is None else base.vocab_size
    n_merges = vocab_size - first_id - len(new_specials)
    t0 = time.perf_counter()
    byte_ranks = None if byte_order is None else np.argsort(byte_order)
    start, lengths = (None, None) if base is None else _tokenized_by(base, table)
    report.unique_chunks, report.total_chunks, report.table_symbols = len(table), table.total_chunks, table.n_symbols
    check_progress(progress)
    with Bar(progress, "pairs", 3 * table.n_symbols, unit="B", unit_scale=True) as bar:
        kernel = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges,
                                 min(max(1, min_frequency), INT64_MAX), byte_ranks,
                                 max_token_length=max_token_length or 0, start=start, token_lengths=lengths,
                                 first_id=first_id, setup_progress=bar.callback(reach=True))
    del table, start
    with Bar(progress, "merging", n_merges, unit="merge") as bar:
        merges = kernel.learn(bar.callback(reach=True))
    if byte_order is not None:   # back from the tie-break ids to byte ids (merge ids are the same)
        merges = np.where(merges < 256, byte_order[np.minimum(merges, 255)], merges).astype(np.int32)
    report.seconds["merging"] = time.perf_counter() - t0
    summary("merging", report.seconds["merging"], merges=len(merges))
    tok = _tokenizer(base, merges, first_id, pattern, new_specials)
    report.merges, report.merges_requested, report.vocab_size = len(merges), n_merges, tok.vocab_size
    if len(merges) < n_merges:
        why = (f"no pair occurs {max(1, min_frequency)} or more times" if min_frequency > 1
               else "every chunk is a single token")
        warnings.warn(f"stopped after {len(merges)} of {n_merges} merges ({why}): vocab size "
                      f"{tok.vocab_size} instead of {vocab_size}", VocabSizeWarning, stacklevel=3)
    tok.training_report = report
    return tok


def _check_continuation(base, vocab_size: int, tie_break: str, max_token_length) -> None:
    if max_token_length is not None and (not _is_int(max_token_length) or max_token_length < 1):
        raise ArgumentError(f"max_token_length must be a positive number of bytes, got {max_token_length!r}")
    if base is None:
        return
    if not isinstance(base, Tokenizer):
        raise ArgumentTypeError(f"base must be a Tokenizer (bpe_fast.load(...) opens any), not {type(base).__name__}")
    if tie_break != "bytes":
        raise ArgumentError("tie_break applies to training from bytes; continuing from a base, ties go to the "
                            "smallest pair of the base's ids")
    if vocab_size <= base.vocab_size:
        raise ArgumentError(f"vocab_size={vocab_size} is no larger than the base's {base.vocab_size}: "
                            f"continued training needs room for new tokens")


def _tokenized_by(base: Tokenizer, table: WordTable) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as the base tokenizer leaves it, in the kernel's layout: each token's id at
    its first byte, a tail mark -(id + 2) at its last, -1 between; and each id's length in
    bytes. Each chunk is encoded whole by the base's merges, as the trained tokenizer will
    encode it, also when the chunks come from another pattern (superword training)."""
    ids = _encode_chunks(base, table)
    lengths = np.array([len(t) if t is not None else 0 for t in base._vocab], dtype=np.int32)
    size = lengths[ids]
    starts = np.cumsum(size) - size            # the words lie one after another, as in the table
    slots = np.full(table.n_symbols, -1, dtype=np.int32)
    slots[starts] = ids
    long = size > 1
    slots[starts[long] + size[long] - 1] = -ids[long] - 2
    return slots, lengths


def _encode_chunks(base: Tokenizer, table: WordTable) -> np.ndarray:
    """Every chunk of the table encoded whole by the base, on as many threads as there are CPUs
    (the native encoder runs without the GIL), in table order."""
    n, threads = len(table), min(default_workers(), max(1, len(table) // 50_000))
    bounds = [n * k // threads for k in range(threads + 1)]
    with ThreadPoolExecutor(threads) as pool:
        parts = pool.map(lambda k: base._native.encode_chunks(table.symbols, table.offsets[bounds[k]:bounds[k + 1] + 1]),
                         range(threads))
        return np.concatenate(list(parts))


def _tokenizer(base: Tokenizer | None, merges: np.ndarray, first_id: int, pattern, new_specials) -> Tokenizer:
    """The trained tokenizer: the base's merges and ids, then the new merges; special tokens
    (the base's with their ids, new ones after the new tokens)."""
    if base is None:
        return Tokenizer(merges, pattern=pattern, special_tokens=list(new_specials))
    new_ids = np.arange(first_id, first_id + len(merges))
    specials = dict(base.special_tokens) | {s: first_id + len(merges) + k for k, s in enumerate(new_specials)}
    if resolve(pattern) != base.pattern:       # superword training: another pattern
        return Tokenizer(np.concatenate([base.merges, merges.reshape(-1, 2)]), pattern=pattern,
                         special_tokens=specials, merge_ids=np.concatenate([base.merge_ids, new_ids]),
                         byte_ids=base.byte_ids)
    return base._extended(merges, new_ids, specials)


def train(files: str | os.PathLike | Iterable[str | os.PathLike], vocab_size: int | Sequence[int], *,
          pattern: str | None = ..., special_tokens: Sequence[str] = (), min_frequency: int = 0,
          workers: int | None = None, progress: ProgressOption = "auto", errors: str = "strict",
          block_size: int = DEFAULT_BLOCK_SIZE, tie_break: str = "bytes", lines: bool = False,
          field: str = "text", column: str = "text", memory_budget: int | None = None, client=None,
          base: Tokenizer | None = None, max_token_length: int | None = None, superword_at: int | None = None,
          superword_pattern: str | None = "superword") -> Tokenizer | list[Tokenizer]:
    """Train on files: ``count`` (any input: text, stdin, compressed, JSON lines, Parquet,
    directories; ``workers`` processes, default one per CPU), then ``train_from_table``.

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
    """
    if superword_at is not None:
        options = dict(special_tokens=special_tokens, min_frequency=min_frequency, workers=workers,
                       progress=progress, errors=errors, block_size=block_size, lines=lines,
                       field=field, column=column, memory_budget=memory_budget, client=client,
                       max_token_length=max_token_length)
        first = _superword_stage_one(vocab_size, superword_at, base)
        stage_one = train(files, first, pattern=pattern, tie_break=tie_break, base=base, **options)
        return train(files, vocab_size, pattern=superword_pattern, base=stage_one, **options)
    pattern = _default_pattern(pattern, base)
    specials = _check_sizes(vocab_size, special_tokens, min_frequency, tie_break, base, max_token_length)
    report = TrainReport()
    t0 = time.perf_counter()
    held = [count(files, pattern=pattern, special_tokens=[*specials, *_base_specials(base, specials)], workers=workers, progress=progress,
                  errors=errors, lines=lines, field=field, column=column, block_size=block_size,
                  memory_budget=memory_budget, client=client)]
    report.seconds["counting"] = time.perf_counter() - t0
    report.input_size = held[0].input_bytes
    if len(held[0]) == 0:
        names = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        raise EmptyCorpusError(f"the corpus is empty: {', '.join(map(str, names))} hold no text")
    return _learn_sizes(held, vocab_size, pattern=held[0].pattern, special_tokens=specials,
                        min_frequency=min_frequency, progress=progress, report=report,
                        tie_break=tie_break, base=base, max_token_length=max_token_length)


def _superword_stage_one(vocab_size, superword_at, base) -> int:
    """The size stage one trains to; checked before anything is read."""
    sizes = list(vocab_size) if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    floor = 256 if base is None else base.vocab_size + 1
    if not _is_int(superword_at) or not floor <= superword_at < min(sizes, key=lambda v: v if _is_int(v) else 0):
        raise ArgumentError(f"superword_at={superword_at!r} must be a vocabulary size of at least {floor} and "
                            f"below vocab_size: stage one learns up to it, stage two the rest")
    return superword_at


def _default_pattern(pattern, base: Tokenizer | None):
    if pattern is not ...:
        return pattern
    return base.pattern if isinstance(base, Tokenizer) else "cl100k"     # (a wrong base is refused later)


def _base_specials(base: Tokenizer | None, specials) -> list[str]:
    """A base's special tokens are cut out of the text too, never learned."""
    return [s for s in (base.special_tokens if base is not None else ()) if s not in specials]


def _check_sizes(vocab_size, special_tokens, min_frequency, tie_break, base, max_token_length) -> tuple[str, ...]:
    """Every training argument checked before any text is read; the special tokens as a tuple."""
    sizes = list(vocab_size) if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    if not sizes:
        raise ArgumentError("vocab_size is an empty list")
    specials = special_token_list(special_tokens)
    for size in sizes:
        if base is None:
            _check_args(size, specials, min_frequency, tie_break)
        else:
            _check_args(256 + len(specials), specials, min_frequency, tie_break)
            if not _is_int(size):
                raise ArgumentTypeError(f"vocab_size must be an integer, got {size!r}")
    for size in sizes:
        _check_continuation(base, size, tie_break, max_token_length)
    return specials


def train_from_iterator(docs: Iterable[str | bytes], vocab_size: int | Sequence[int], *, pattern: str | None = ...,
                        special_tokens: Sequence[str] = (), min_frequency: int = 0,
                        workers: int | None = None, progress: ProgressOption = "auto",
                        errors: str = "strict", batch_chars: int = DEFAULT_BATCH_CHARS,
                        tie_break: str = "bytes", lines: bool = False, memory_budget: int | None = None,
                        base: Tokenizer | None = None, max_token_length: int | None = None,
                        superword_at: int | None = None,
                        superword_pattern: str | None = "superword") -> Tokenizer | list[Tokenizer]:
    """Train on documents from an iterator; each item is a separate document.

    Items are consumed lazily and sent to worker processes in batches, so the iterator may be
    far larger than memory. ``base``, a list of sizes, ``max_token_length`` and
    ``superword_at`` as in ``train`` (superword training reads the documents twice: give a list).
    """
    if superword_at is not None:
        if not isinstance(docs, Sequence) or isinstance(docs, (str, bytes)):
            raise ArgumentTypeError("superword training reads the documents twice (once per stage): give a "
                                    "list of documents, not an iterator")
        options = dict(special_tokens=special_tokens, min_frequency=min_frequency, workers=workers,
                       progress=progress, errors=errors, batch_chars=batch_chars, lines=lines,
                       memory_budget=memory_budget, max_token_length=max_token_length)
        first = _superword_stage_one(vocab_size, superword_at, base)
        stage_one = train_from_iterator(docs, first, pattern=pattern, tie_break=tie_break, base=base, **options)
        return train_from_iterator(docs, vocab_size, pattern=superword_pattern, base=stage_one, **options)
    pattern = _default_pattern(pattern, base)
    specials = _check_sizes(vocab_size, special_tokens, min_frequency, tie_break, base, max_token_length)
    report = TrainReport(input_unit="chars")
    t0 = time.perf_counter()
    held = [count_from_iterator(docs, pattern=pattern, special_tokens=[*specials, *_base_specials(base, specials)],
                                workers=workers,
                                progress=progress, errors=errors, lines=lines, batch_chars=batch_chars,
                                memory_budget=memory_budget)]
    report.seconds["counting"] = time.perf_counter() - t0
    report.input_size = held[0].input_bytes
    return _learn_sizes(held, vocab_size, pattern=held[0].pattern, special_tokens=specials,
                        min_frequency=min_frequency, progress=progress, report=report,
                        tie_break=tie_break, base=base, max_token_length=max_token_length)
