"""Counting a corpus, the stage's entry points: ``count`` (files, folders, stdin, on worker
processes or a Dask cluster) and ``count_from_iterator`` (documents from an iterator) build
their settings once (counting.CountOptions, checked there) and the Splitter (what a chunk is),
and hand them to ``count_inputs`` / ``count_docs``, which build the tasks (inputs.py) and have
counting/workers.py count them into a word table. The trainer comes in at those two, with the options
and the Splitter it resolved itself. Nothing here knows of training: trainer.py imports this
module, never the reverse."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Union


from .. import arguments
from .workers import DEFAULT_BATCH_CHARS, DEFAULT_BLOCK_SIZE, CountConfig, CountOptions, count_tasks
from .distributed import count_on_cluster
from ..errors import ArgumentError, ArgumentTypeError, EmptyCorpusError
from .inputs import DocsTask, docs_tasks, sources, total_size
from ..progress import Bar, ProgressOption, summary, with_alias
from .wordtable import WordTable

# What train() and count() read: a file, folder or "-", or several.
Inputs = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]


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
    ``workers``, ``block_size`` and ``memory_budget`` (the peak bytes of the whole count, every
    process: fewer workers, unless ``workers`` is given, and smaller tables, each written out to a
    temporary file past its share, budget.counting_share; default: each worker's table 64 MiB, see
    counting.default_memory_budget). ``lines``
    makes every line a document. ``client``, a dask.distributed Client, counts on its cluster.
    ``normalize`` ("nfc" or "nfkc") puts the text in that Unicode normal form before special
    tokens are found and it is split; the table records it, and a tokenizer trained from it
    normalizes what it encodes the same way.
    ``show_progress`` is a deprecated alias of ``progress`` (True: "bar", False: "none").
    """
    options = CountOptions.for_files(errors=errors, lines=lines, memory_budget=memory_budget, workers=workers,
                                     progress=with_alias(progress, show_progress), field=field, column=column,
                                     block_size=block_size, client=client)
    return count_inputs(inputs, options.config(options.splitter(pattern, special_tokens, normalize)), options)


def count_inputs(inputs: Inputs, config: CountConfig, options: CountOptions) -> WordTable:
    """``count`` with its settings made and checked: chunks, or what a variant counts
    (``config.counting``)."""
    paths = arguments.paths(inputs, "inputs")
    if not paths:
        raise EmptyCorpusError("no input files given")
    found = sources(paths, options.field, options.column)   # every input checked before any is read
    if options.client is not None:
        return count_on_cluster(options.client, found, config, options.block_size)
    cut, block_size = config.cut, options.block_size
    tasks = (t for source in found for t in source.tasks(cut, block_size))
    total = total_size(found)                               # streams have no size to show progress against
    stage = "counting" if config.counting is None else config.what
    start, progress = time.perf_counter(), options.progress
    with Bar(progress, stage, total, unit="B", unit_scale=True) as bar:
        table = count_tasks(tasks, config, options.workers, bar.callback(), poll=bar.poll)
    summary(stage, time.perf_counter() - start, progress, bytes=table.input_bytes,
            **{config.what: table.total_chunks}, distinct=len(table))
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
    check_docs(docs, length)
    options = CountOptions.for_docs(errors=errors, lines=lines, memory_budget=memory_budget, workers=workers,
                                    progress=with_alias(progress, show_progress), field=field,
                                    batch_chars=batch_chars, length=length)
    return count_docs(docs, options.config(options.splitter(pattern, special_tokens, normalize)), options)


def check_docs(docs, length) -> None:
    if isinstance(docs, (str, bytes)):
        raise ArgumentTypeError("docs must be an iterable of documents, not a single str/bytes "
                                "(wrap it in a list: [text])")
    if not isinstance(docs, Iterable):
        raise ArgumentTypeError(f"docs must be an iterable of documents (str or bytes), got {type(docs).__name__}")
    if length is not None and (not arguments.is_int(length) or length < 0):
        raise ArgumentError(f"length must be the number of documents (an integer >= 0), got {length!r}")


def count_docs(docs: Iterable, config: CountConfig, options: CountOptions) -> WordTable:
    """``count_from_iterator`` with its settings made and checked: chunks, or runs (as
    ``count_inputs``)."""
    stage = "counting" if config.counting is None else config.what
    start, progress, workers, length = time.perf_counter(), options.progress, options.workers, options.length
    tasks = docs_tasks(docs, options.batch_chars, options.field)
    unit = ("doc", False) if length is not None else ("char", True)
    total = None if length is None else int(length)
    with Bar(progress, stage, total, unit=unit[0], unit_scale=unit[1]) as bar:
        if length is None:
            table = count_tasks(tasks, config, workers, bar.callback(), poll=bar.poll)
        else:                       # documents sent, as bytes sent are for files
            table = count_tasks(_counting_documents(tasks, bar.callback()), config, workers, poll=bar.poll)
    summary(stage, time.perf_counter() - start, progress, characters=table.input_bytes,
            **{config.what: table.total_chunks}, distinct=len(table))
    return table


def _counting_documents(tasks: Iterable[DocsTask], advance: Callable[[int], None] | None) -> Iterator[DocsTask]:
    for task in tasks:
        yield task
        if advance is not None:
            advance(task.count)
