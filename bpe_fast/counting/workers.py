"""Stage 2, counting: stream files or documents and count their unique chunks.

The corpus is never held whole: regular files are read in blocks by the workers themselves (cut
only where ``pretokenize.find_cut`` allows), streams (standard input, FIFOs, ``<(...)``) are
read here and sent on in blocks cut the same way, documents from an iterator go in packed batches
(through slots of shared memory to forked workers, ``_Arena``), and each worker process keeps
only its own counts of chunks (a C++ hash map fed by the native scanner for the named patterns,
a ``Counter`` of the pattern's matches for others). The result
is a ``WordTable`` (NumPy arrays, sorted by hash) that does not depend on the number of workers
or the block size. Each worker counts into a compact native hash table (_table.pyx); when it
outgrows the worker's memory budget, the worker writes it out sorted to a temporary file and
starts afresh, and the parent adds all the sorted parts in native code: the number of distinct
chunks is bounded by disk, not memory, and counts stay exact.

Workers never outlive the call: they die with their parent (a death signal on Linux, and a
check of the parent while idle), ignore Ctrl-C (the parent stops them), and are stopped and
their queues closed without waiting whenever the call ends early. Every wait is short and
checks the workers, so a failure surfaces at once, never as a hang.
"""
from __future__ import annotations

import ctypes
import mmap
import multiprocessing as mp
import shutil
import tempfile
import os
import queue
import signal
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from .. import arguments
from ._table import ChunkTable
from ..budget import checked_budget, counting_share
from ..errors import (TERMINATING, ArgumentError, ArgumentTypeError, InputError, Terminated, WorkerError,
                      terminating_raises)
from .inputs import DocsTask, decode_utf8
from ..pretokenize.patterns import match_batches
from ..pretokenize.splitter import NATIVE, REGEX, Splitter, char_classes
from ..progress import ProgressOption
from ..progress import check as check_progress
from .wordtable import WordTable

DEFAULT_BLOCK_SIZE = 1 << 20      # bytes of a file per task
MAX_BLOCK_SIZE = 1 << 30          # a block is read whole into memory, by each worker
DEFAULT_BATCH_CHARS = 1 << 20     # characters of iterator documents per task


@dataclass(frozen=True)
class CountConfig:
    """What every worker needs: how text becomes chunks (the splitter), what to do with invalid
    UTF-8, and its memory budget. Picklable."""
    splitter: Splitter
    errors: str = "strict"
    memory_budget: int | None = None     # bytes a worker's table may hold before it spills; None: any
    spill_dir: str | None = None         # where spilled and finished tables go (set by count_tasks)
    # What is counted: None, the chunks; else a variant's own counting (a picklable object, see
    # ``Counting``), as BoundlessBPE's second pass counts runs of units.
    counting: Any = None

    @property
    def cut(self):
        """Where text may be cut into blocks (``Splitter.cut``, or the variant's counting's)."""
        return self.splitter.cut if self.counting is None else self.counting.cut(self.splitter)

    @property
    def what(self) -> str:
        """What the table's entries are, in messages and progress: "chunks", or the variant's ("runs")."""
        return "chunks" if self.counting is None else self.counting.what


class Counting:
    """What a variant counts instead of chunks (``CountConfig.counting``): it makes the counter
    each worker runs, and says where text may be cut. Subclasses are picklable dataclasses (they
    travel to worker processes and Dask workers); training/variants/boundless.py has one."""
    what = "chunks"

    def counter(self, config: CountConfig) -> ChunkCounter:
        raise NotImplementedError

    def cut(self, splitter: Splitter):
        return splitter.cut


def to_utf8(text: str, errors: str, where: str) -> bytes:
    """UTF-8 bytes of text; a lone surrogate is an error, or U+FFFD with errors='replace'."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        if errors == "replace":      # U+FFFD, as the encoder (and tiktoken) make it; str.encode would give "?"
            return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
        raise InputError(f"{where}: lone surrogate {text[exc.start]!r} at character {exc.start} "
                         f"cannot be UTF-8 encoded; pass errors='replace' to replace it") from None


class ChunkCounter:
    """Counts the chunks of tasks; one lives in each worker (or in the caller for small input).

    The splitter's engine decides the route: the native scanner straight into the native table
    (no Python object per chunk); a custom regex's whole matches counted in a Counter per piece,
    then each distinct one added; with no pattern a piece is one chunk. A table over the memory
    budget is written out sorted to a part file (a *spill*) and counting starts afresh."""

    def __init__(self, config: CountConfig):
        self.config = config
        self.splitter = config.splitter
        self.engine = config.splitter.engine
        # No special tokens and no lines: a text is one document (the common case, kept quick
        # for many small documents).
        self.whole_texts = not config.splitter.special_tokens and not config.splitter.lines
        self.table = ChunkTable()
        # What the native scanner's text goes to: the table's own counting of chunks, or a
        # variant's native counting into the same table (BoundlessBPE's runs).
        self.scan_text = self.table.add_text
        self.scan_documents = self.table.add_documents
        self.spills: list[str] = []
        self.input_size = 0

    def run(self, task) -> None:
        """Count one task (inputs.py): every piece of text it reads."""
        if isinstance(task, DocsTask) and task.docs is None:
            self.add_packed(task)
        else:
            for where, data, offset, _ in task.pieces():
                self.add_piece(where, data, offset)
        self.input_size += task.size
        if self.config.memory_budget is not None and self.table.nbytes > self.config.memory_budget:
            self.spills.append(self._spill())

    def add_piece(self, where: str, data: bytes | str, offset: int = 0) -> None:
        """One piece of a task (inputs.Piece): UTF-8 bytes, or text. A cluster task (distributed.py)
        counts piece by piece, to stop where its table reaches its budget."""
        if data.__class__ is bytes:
            self.add_utf8(data, where, offset)
        else:
            self.add_text(data, where)                  # type: ignore[arg-type]

    def add_text(self, text: str, where: str) -> None:
        if self.whole_texts:
            if text:
                self._add_document(text, where)
            return
        for document in self.splitter.documents(text):
            self._add_document(document, where)

    def _add_document(self, document: str, where: str) -> None:
        engine, scanner = self.engine, self.splitter.scanner        # a scanner: the NATIVE engine
        if engine == REGEX:
            counts: Counter[str] = Counter()
            for batch in match_batches(self.splitter.regex, document):
                counts.update(batch)
            for chunk, n in counts.items():
                self.table.add(to_utf8(chunk, self.config.errors, where), n)
        elif scanner is not None:
            self.scan_text(scanner, to_utf8(document, self.config.errors, where))
        else:
            self.table.add(to_utf8(document, self.config.errors, where))

    def add_utf8(self, data: bytes, where: str, base_offset: int = 0) -> None:
        """UTF-8 text: straight to the native scanner when it holds no special token (the
        common case: no str is made), else decoded and split as text."""
        splitter, scanner = self.splitter, self.splitter.scanner     # a scanner: the NATIVE engine
        if scanner is not None and not any(token in data for token in splitter.special_bytes):
            try:
                data.decode("utf-8")                    # only to validate
            except UnicodeDecodeError:
                pass                                    # strict: raise below, naming the offset
            else:
                self.scan_text(scanner, data, splitter.lines)
                return
        self.add_text(decode_utf8(data, self.config.errors, where, base_offset), where)

    def reads_in_place(self, utf8_valid: bool) -> bool:
        """Does ``add_packed`` give a batch with these documents to the native scanner whole,
        reading its bytes through any buffer (a view of shared memory, counting._Arena)? The
        other routes search and slice the bytes, and get a bytes copy."""
        splitter = self.splitter
        return splitter.scanner is not None and not splitter.special_bytes and utf8_valid

    def add_packed(self, task: DocsTask) -> None:
        """A packed batch of documents: the whole buffer to the native scanner in one call when
        it may go there (a named pattern, no special token in it, every document valid UTF-8),
        else document by document as ``add_utf8`` counts them (which names one at fault)."""
        scanner = self.splitter.scanner
        if (scanner is not None and not any(token in task.data for token in self.splitter.special_bytes)
                and (task.utf8_valid or documents_are_utf8(task.data, task.offsets))):
            self.scan_documents(scanner, task.data, task.offsets, self.splitter.lines)
            return
        for i, document in enumerate(task.packed_documents(), task.first_index):
            self.add_utf8(document, f"document {i}")

    def _spill(self) -> str:
        """Write the table out sorted (a part file) and start afresh."""
        try:
            fd, path = tempfile.mkstemp(dir=self.config.spill_dir, suffix=".part")
            os.close(fd)
            self.table.write_sorted(path)
        except OSError as exc:        # most often a full disk: say where, and what chooses the place
            raise WorkerError(f"{self.config.spill_dir}: cannot write the counts spilled past the memory budget "
                              f"({exc.strerror or exc}); the TMPDIR environment variable chooses the folder "
                              f"they go to: point it at a disk with room") from None
        self.table.clear()
        return path

    def result(self) -> WordTable:
        """Everything counted here, spills included, as one table (in this process)."""
        if not self.spills:
            splitter = self.splitter
            return WordTable.from_native(self.table, splitter.pattern, splitter.special_tokens, self.input_size,
                                         normalize=splitter.normalize)
        return merge_parts(self.result_files(), self.config, self.input_size)

    def result_files(self) -> list[str]:
        """Everything counted here as sorted part files, for the parent to add up."""
        return [*self.spills, self._spill()]


class NormalizingChunkCounter(ChunkCounter):
    """A ChunkCounter that puts the text in the splitter's normal form (NFC, NFKC) before
    anything else: special tokens are found and chunks split in the normalized text. UTF-8 is
    decoded, normalized and encoded again; the counting is then the plain one. A class of its
    own, so that counting without normalization does not pay even a test for it."""

    def add_text(self, text: str, where: str) -> None:
        super().add_text(self.splitter.normalized(text), where)

    def add_utf8(self, data: bytes, where: str, base_offset: int = 0) -> None:
        text = self.splitter.normalized(decode_utf8(data, self.config.errors, where, base_offset))
        scanner = self.splitter.scanner                                # a scanner: the NATIVE engine
        if scanner is not None and not any(token in text for token in self.splitter.special_tokens):
            self.scan_text(scanner, text.encode("utf-8"), self.splitter.lines)   # decoded UTF-8: no surrogate
        else:
            super().add_text(text, where)

    def reads_in_place(self, utf8_valid: bool) -> bool:
        return False                # add_packed goes document by document

    def add_packed(self, task: DocsTask) -> None:
        """Packed documents one by one: each is normalized on its own, as a str document is."""
        for i, document in enumerate(task.packed_documents(), task.first_index):
            self.add_utf8(document, f"document {i}")


def chunk_counter(config: CountConfig) -> ChunkCounter:
    """The counter for a count's settings: the variant's (``config.counting``), else one that
    normalizes the text first when asked, else the plain one."""
    if config.counting is not None:
        return config.counting.counter(config)
    return NormalizingChunkCounter(config) if config.splitter.normalize is not None else ChunkCounter(config)


def documents_are_utf8(data: bytes | memoryview, offsets: np.ndarray) -> bool:
    """Is every document of a packed batch valid UTF-8 on its own? The whole buffer must be, and
    every document must start on a character: one starting with a continuation byte would be
    valid only together with the end of the document before."""
    try:
        str(data, "utf-8")                  # only to validate
    except UnicodeDecodeError:
        return False
    starts = offsets[:-1][offsets[:-1] < offsets[1:]]           # of the documents that are not empty
    return not np.any((np.frombuffer(data, np.uint8)[starts] & 0xC0) == 0x80)


def merge_parts(paths: list[str], config: CountConfig, input_size: int) -> WordTable:
    splitter = config.splitter
    return WordTable.from_parts(paths, splitter.pattern, splitter.special_tokens, input_size,
                                normalize=splitter.normalize)


# ---------------------------------------------------------------------------------------------
# Running: in this process, or spread over worker processes


@dataclass(frozen=True)
class CountOptions:
    """Every setting of a count but its input and its Splitter (what a chunk is), checked once
    (``for_files``, ``for_docs``) by the function the user called, and handed down: one new
    setting is one field. ``config`` makes the count's CountConfig with a Splitter resolved
    above (by ``count``, or by the trainer from its options)."""
    errors: str = "strict"
    lines: bool = False
    memory_budget: int | None = None
    workers: int | None = None
    progress: ProgressOption = "auto"
    field: str = "text"
    column: str = "text"                        # files: Parquet's column
    block_size: int = DEFAULT_BLOCK_SIZE        # files: the blocks workers take
    client: Any = None                          # files: a dask.distributed Client
    batch_chars: int = DEFAULT_BATCH_CHARS      # documents: the batches workers take
    length: int | None = None                   # documents: how many, if known

    @classmethod
    def for_files(cls, **settings) -> CountOptions:
        """The settings of ``count``, checked in the order its arguments always were."""
        options = cls.checked(**settings)
        block_size = arguments.integer(options.block_size, "block_size", 1, MAX_BLOCK_SIZE)
        for name, value in (("field", options.field), ("column", options.column)):
            if not isinstance(value, str):
                raise ArgumentTypeError(f"{name} must be a str (the name holding the text), got {value!r}")
        workers = None if options.workers is None else arguments.workers(options.workers)
        client = options.client
        if client is not None and not callable(getattr(client, "map", None)):
            raise ArgumentTypeError(f"client must be a dask.distributed Client, got {type(client).__name__}")
        return replace(options, block_size=block_size, workers=workers)

    @classmethod
    def for_docs(cls, **settings) -> CountOptions:
        """The settings of ``count_from_iterator``, checked likewise."""
        options = cls.checked(**settings)
        batch_chars = arguments.integer(options.batch_chars, "batch_chars", 1)
        workers = None if options.workers is None else arguments.workers(options.workers)
        return replace(options, batch_chars=batch_chars, workers=workers)

    @classmethod
    def checked(cls, **settings) -> CountOptions:
        """The settings every count has (errors, memory_budget, lines, progress), checked."""
        options = cls(**settings)
        check_progress(options.progress)
        errors, memory_budget = options.errors, options.memory_budget
        if not isinstance(errors, str) or errors not in ("strict", "replace"):
            raise ArgumentError(f"errors must be 'strict' or 'replace', got {errors!r}")
        return replace(options, memory_budget=checked_budget(memory_budget),
                       lines=arguments.flag(options.lines, "lines"))

    def splitter(self, pattern, special_tokens: Sequence[str], normalize: str | None) -> Splitter:
        """The user's pattern, special tokens and normalization, resolved (``Splitter.of``)."""
        return Splitter.of(pattern, special_tokens, self.lines, normalize)

    def config(self, splitter: Splitter, counting: Counting | None = None) -> CountConfig:
        """The count's settings with ``splitter`` (resolved above; these ``lines``): chunks, or
        what a variant's ``counting`` counts."""
        return CountConfig(replace(splitter, lines=self.lines), self.errors, self.memory_budget, counting=counting)


def make_config(pattern, special_tokens, errors: str = "strict", lines: bool = False,
                memory_budget: int | None = None, normalize: str | None = None,
                counting: Counting | None = None) -> CountConfig:
    """The checked settings of a count: any bad argument fails here, before anything is read."""
    options = CountOptions.checked(errors=errors, lines=lines, memory_budget=memory_budget)
    return options.config(options.splitter(pattern, special_tokens, normalize), counting)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def count_tasks(tasks: Iterable, config: CountConfig, workers: int | None = None,
                on_progress: Callable[[int], None] | None = None,
                parallel_threshold: int = 2, poll: Callable[[], None] | None = None) -> WordTable:
    """Count the chunks of all tasks with up to ``workers`` processes (never more than tasks).

    Tasks are pulled lazily. If fewer than ``parallel_threshold`` tasks come, or workers == 1,
    they are counted here, without starting processes. ``poll`` is called while the last tasks
    are awaited, so that what it raises (a count stopped from another thread) ends the wait.
    """
    chosen = workers is not None                # workers= given: the budget shrinks tables, not workers
    workers = default_workers() if workers is None else arguments.workers(workers)
    tasks = iter(tasks)
    head = []
    for task in tasks:
        head.append(task)
        if len(head) >= parallel_threshold:
            break
    if config.memory_budget is None:
        config = replace(config, memory_budget=default_memory_budget(workers))
    else:                   # the budget is the whole tree's: fewer workers, smaller tables (budget.py)
        share = counting_share(config.memory_budget, workers, default_memory_budget(workers), fixed=chosen)
        workers, table_budget = share
        config = replace(config, memory_budget=table_budget)
    with terminating_raises():                 # SIGTERM/SIGHUP: the spill folder and workers go first
        # named first, made inside the try: a Ctrl-C just after mkdtemp made it, before the try,
        # left it behind (os.mkdir is mkdtemp's own step; a uuid4 does not collide)
        spill_dir = os.path.join(tempfile.gettempdir(), f"bpe_fast-counts-{uuid.uuid4().hex}")
        try:
            os.mkdir(spill_dir, 0o700)
            return _count_here_or_in_workers(head, tasks, replace(config, spill_dir=spill_dir), workers,
                                             on_progress, parallel_threshold, poll)
        finally:
            uninterrupted(lambda: shutil.rmtree(spill_dir, ignore_errors=True))


def uninterrupted(clean_up: Callable[[], None]) -> None:
    """Run ``clean_up`` to its end, even through Ctrl-C: a KeyboardInterrupt (or Terminated)
    raised while it runs is raised once it has run again, whole. Why: a Ctrl-C that came as a
    count ended, in its ``finally``, cut shutil.rmtree short (parts unlinked, the folder left),
    or cut _Workers.stop short (workers left running, writing parts into the folder as it was
    removed). ``clean_up`` must do no harm run twice."""
    interrupted: BaseException | None = None
    while True:
        try:
            clean_up()
            break
        except (KeyboardInterrupt, Terminated) as exc:
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted


def _count_here_or_in_workers(head: list, tasks: Iterator, config: CountConfig, workers: int,
                              on_progress: Callable[[int], None] | None, parallel_threshold: int,
                              poll: Callable[[], None] | None) -> WordTable:
    if workers == 1 or len(head) < parallel_threshold:
        counter = chunk_counter(config)
        try:
            for task in _chain(head, tasks):
                counter.run(task)
                if on_progress:
                    on_progress(task.size)
            return counter.result()
        except MemoryError:
            raise _out_of_memory(config, in_workers=False) from None
    documents = any(isinstance(task, DocsTask) for task in head)
    return _count_in_workers(_chain(head, tasks), config, workers, on_progress, documents, poll)


def _out_of_memory(config: CountConfig, in_workers: bool) -> WorkerError:
    who = "a counting worker" if in_workers else "counting"
    fewer = "fewer workers (workers=, CLI --workers) or " if in_workers else ""
    return WorkerError(f"{who} ran out of memory (MemoryError): try {fewer}a memory budget below "
                       f"{(config.memory_budget or 0) / (1 << 20):,.0f} MiB (memory_budget=, CLI --memory-budget): "
                       f"past it, counts are written to disk")


def default_memory_budget(workers: int) -> int:
    """Bytes each worker's table may hold before it spills: 64 MiB, or less when a third of the
    memory available now, shared by the workers, is less (16 MiB at least).

    Why so little: a spilled table is a sorted part file, and the parts add up in one linear
    pass (WordTable.from_parts), so spilling costs about nothing (counting 1 GB of long-tailed
    text: the same CPU time within 10%), while a big table in each worker made the workers the
    peak of the whole training (their tables doubling, then sorted: 640 MB against 380 MB for
    the process tree on benchmarks/make_corpus.py's 1 GB, RESULTS.md)."""
    try:
        with open("/proc/meminfo") as fh:
            available = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        available = 4 << 30
    return int(min(max(available // 3 // max(workers, 1), 16 << 20), 64 << 20))


def _chain(head: list, rest: Iterator) -> Iterator:
    yield from head
    yield from rest


def _count_in_workers(tasks: Iterator, config: CountConfig, workers: int,
                      on_progress: Callable[[int], None] | None, documents: bool = False,
                      poll: Callable[[], None] | None = None) -> WordTable:
    """The count on ``workers`` processes; ``documents``: the tasks are batches of iterator
    documents, which go to forked workers through shared memory (_Arena)."""
    if config.splitter.engine == NATIVE:
        char_classes()            # build the tables once, here; forked workers inherit them
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    pool = _Workers(ctx, config, workers, arena=documents and ctx.get_start_method() == "fork")
    size = 0
    try:
        for task in tasks:
            pool.send(task)
            size += task.size
            if on_progress:
                on_progress(task.size)
        files = [path for part in pool.finish(poll) for path in part]
    finally:
        uninterrupted(pool.stop)       # every worker gone before count_tasks removes their folder
    return merge_parts(files, config, size)


# -- the worker side ---------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_IDLE_CHECK = 1.0          # seconds a worker waits for a task before checking on its parent
_PUT_WAIT = 0.1            # seconds the parent waits on a full queue before checking the workers again


def _die_with_parent(parent: int) -> None:
    """Make sure this worker does not outlive the parent, even one killed by SIGKILL or SIGTERM
    before it could stop its workers: Linux kills us when the parent dies; elsewhere the idle
    loop notices a new parent process id."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's to handle
    for signum in TERMINATING:      # not the parent's handler (terminating_raises): terminate() ends us
        signal.signal(signum, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:                        # it died before the line above
        os._exit(1)


def _worker(config: CountConfig, tasks: mp.Queue, results: mp.Queue, parent: int, arena: _Arena | None) -> None:
    _die_with_parent(parent)
    counter = chunk_counter(config)
    seq = -1
    try:
        while True:
            try:
                item = tasks.get(timeout=_IDLE_CHECK)
            except queue.Empty:
                if os.getppid() != parent:
                    os._exit(1)
                continue
            if item is None:
                break
            seq, task = item
            if isinstance(task, _InArena):
                assert arena is not None
                task = arena.task(task, copy=not counter.reads_in_place(task.utf8_valid))
            counter.run(task)
            results.put(("done", seq, None))
        files = counter.result_files()
    except Exception as exc:   # reported at once with the task's number; the parent stops feeding
        results.put(("error", seq, _out_of_memory(config, in_workers=True) if isinstance(exc, MemoryError) else exc))
        return
    results.put(("counts", seq, files))


@dataclass(frozen=True)
class _InArena:
    """A DocsTask whose bytes and offsets wait in the arena's ``slot`` (what goes through the queue)."""
    slot: int
    nbytes: int
    count: int
    first_index: int
    size: int
    utf8_valid: bool


class _Arena:
    """Shared memory for batches of iterator documents, when the workers are forked (they
    inherit the mapping): the parent copies a packed batch's offsets and bytes into a free slot
    and sends only the slot's number, and the worker scans the slot in place. Through the queue
    a batch is pickled, written to a pipe, read, and unpickled: 0.4 CPU s per 300 MB on two
    cores, taken from the workers, since the parent shares their cores. A slot is free again
    when its worker reports the task done (or failed); a batch too big for a slot (a huge
    document) goes through the queue, as before."""

    SLOT_BYTES = 8 << 20          # a default batch (1M characters) of any script, with its offsets

    def __init__(self, slots: int):
        self.memory = mmap.mmap(-1, slots * self.SLOT_BYTES)        # anonymous, shared with children
        self.free = list(range(slots))
        self.held: dict[int, int] = {}                              # task number -> its slot

    @classmethod
    def made(cls, slots: int) -> _Arena | None:
        """The arena, or None where the system will not map it (a limit on address space, strict
        overcommit): the batches then go through the queue."""
        try:
            return cls(slots)
        except OSError:
            return None

    def fits(self, task) -> bool:
        return (isinstance(task, DocsTask) and task.docs is None
                and 8 * len(task.offsets) + len(task.data) <= self.SLOT_BYTES)

    def store(self, seq: int, task: DocsTask) -> _InArena:
        """Copy the batch into a free slot (there must be one) for task number ``seq``."""
        slot = self.free.pop()
        self.held[seq] = slot
        start = slot * self.SLOT_BYTES
        offsets = np.ascontiguousarray(task.offsets, dtype=np.int64)
        data_at = start + offsets.nbytes
        np.frombuffer(self.memory, np.int64, len(offsets), start)[:] = offsets
        self.memory[data_at:data_at + len(task.data)] = task.data
        return _InArena(slot, len(task.data), task.count, task.first_index, task.size, task.utf8_valid)

    def release(self, seq: int) -> None:
        slot = self.held.pop(seq, None)
        if slot is not None:
            self.free.append(slot)

    def task(self, item: _InArena, copy: bool) -> DocsTask:
        """The worker's DocsTask for ``item``: its bytes a view of the slot, or a copy when
        ``copy`` (the document-by-document routes search and slice them as bytes)."""
        start = item.slot * self.SLOT_BYTES
        offsets = np.frombuffer(self.memory, np.int64, item.count + 1, start)
        data_at = start + offsets.nbytes
        view = memoryview(self.memory)[data_at:data_at + item.nbytes]
        data = bytes(view) if copy else view
        return DocsTask(data, offsets.copy() if copy else offsets, item.count, item.first_index, item.size,
                        utf8_valid=item.utf8_valid)


# -- the parent side ---------------------------------------------------------------------------

class _Workers:
    """Worker processes fed through a bounded queue, started as tasks come (never more
    processes than tasks). Every wait is short and checks that the workers are alive and have
    reported no error, so a failure surfaces at once: never a hang, never the rest of the corpus
    read first. When several workers fail, the error of the earliest task is the one raised (the
    first invalid byte of a file, not the first one found)."""

    def __init__(self, ctx, config: CountConfig, n: int, arena: bool = False):
        self.ctx, self.config, self.n = ctx, config, n
        self.tasks = ctx.Queue(maxsize=2 * n)   # bounded: at most a few blocks in flight
        # a slot for each task being counted (n), and n + 1 more queued behind them: the workers
        # find the next batch ready, and few slots keep small the shared memory that each process
        # maps (and each one's resident size counts)
        self.arena = _Arena.made(2 * n + 1) if arena else None
        self.results = ctx.Queue()
        self.procs: list = []
        self.parts: list[list[str]] = []         # each worker's table files
        self.errors: list[tuple[int, Exception]] = []
        self.finished: set[int] = set()        # tasks done or failed, by number
        self.sent = 0

    def send(self, task) -> None:
        if len(self.procs) < min(self.n, self.sent + 1):
            self._start_one()
        if self.arena is not None and self.arena.fits(task):
            while not self.arena.free:
                self._check(wait=_PUT_WAIT)
            task = self.arena.store(self.sent, task)
        self._put((self.sent, task))
        self.sent += 1

    def _start_one(self) -> None:
        p = self.ctx.Process(target=_worker, args=(self.config, self.tasks, self.results, os.getpid(), self.arena),
                             daemon=True)
        p.start()
        self.procs.append(p)

    def _put(self, item) -> None:
        while True:
            self._check()
            try:
                self.tasks.put(item, timeout=_PUT_WAIT)
                return
            except queue.Full:
                continue

    def finish(self, poll: Callable[[], None] | None = None) -> list[list[str]]:
        for _ in self.procs:
            self._put(None)
        while len(self.parts) < len(self.procs):
            self._check(wait=0.5)
            if poll is not None:
                poll()
        return self.parts

    def _take(self, wait: float) -> bool:
        """Take in every message the workers have sent, waiting up to ``wait`` seconds for the
        first. All of them: thousands of "done" may wait ahead of an error, and one a call made
        the error surface a minute late."""
        took = False
        while True:
            try:
                message = self.results.get(timeout=wait) if wait and not took else self.results.get_nowait()
            except queue.Empty:
                return took
            took = True
            self._record(*message)

    def _record(self, kind: str, seq: int, payload) -> None:
        if kind == "counts":
            self.parts.append(payload)
        else:
            self.finished.add(seq)
            if self.arena is not None:
                self.arena.release(seq)
            if kind == "error":
                self.errors.append((seq, payload))

    def _check(self, wait: float = 0.0) -> None:
        """Take in the messages there are; raise a worker's error, or if a worker is gone."""
        if not self._take(wait):
            self._check_alive()
        if self.errors:
            self._raise_earliest()

    def _silently_gone(self) -> list:
        """Workers that exited without a last word (counts or an error): killed, most often."""
        gone = [p for p in self.procs if p.exitcode is not None]
        return gone if len(gone) > len(self.parts) + len(self.errors) else []

    def _check_alive(self) -> None:
        gone = self._silently_gone()
        if gone and self.results.empty():
            time.sleep(0.2)            # a result sent just before exiting may be in the pipe
            if self.results.empty():
                raise WorkerError(_death_message(gone[0]))

    def _raise_earliest(self) -> None:
        """A task failed. The queue is first in, first out, so every earlier task is finished
        or in another worker's hands: wait for those (a few at most), then raise the error of
        the earliest task. No wait once no worker can report one: all have exited, or one died
        silently (with the task it held)."""
        first = min(seq for seq, _ in self.errors)
        missing = [s for s in range(first) if s not in self.finished]
        deadline = time.monotonic() + 30
        while any(s not in self.finished for s in missing) and time.monotonic() < deadline:
            if not self._take(0.05) and (all(p.exitcode is not None for p in self.procs) or self._silently_gone()):
                break
        raise min(self.errors, key=lambda e: e[0])[1]

    def stop(self) -> None:
        """Stop every worker and close the queues without waiting for them: a queue's feeder
        thread blocked on a full pipe (its reader gone) must not keep the process from exiting."""
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(timeout=5)
        for q in (self.tasks, self.results):
            q.cancel_join_thread()
            q.close()
        if self.arena is not None:
            try:
                self.arena.memory.close()
            except BufferError:     # a view still held by a traceback: the mapping goes with it
                pass


def _death_message(proc) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        cause = (" -- most likely by the system's out-of-memory killer" if -code == signal.SIGKILL else "")
        return (f"a counting worker (process {proc.pid}) was killed by {name}{cause}; try fewer workers "
                f"(--workers) or free some memory")
    return f"a counting worker (process {proc.pid}) exited (code {code}) without sending its counts"
