"""Stage 2, counting: stream files or documents and count their unique chunks.

The corpus is never held whole: files are read in blocks (cut only where ``pretokenize.find_cut``
allows), documents from an iterator are sent on in batches, and each worker process keeps only
its own counts of chunks (a C++ hash map fed by the native scanner for the named patterns, a
``Counter`` of ``regex.findall`` for others). The result is a dict ``{chunk UTF-8 bytes: count}`` that does not
depend on the number of workers or the block size.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from .errors import ArgumentError, InputError, WorkerError
from .patterns import BLOCK_SAFE, compile_pattern
from ._pretok import ChunkCounts
from .pretokenize import char_classes, find_cut, native_scanner, special_pieces, special_splitter

DEFAULT_BLOCK_SIZE = 1 << 20      # bytes of a file per task
DEFAULT_BATCH_CHARS = 1 << 20     # characters of iterator documents per task
_CUT_WINDOW = 1 << 16             # bytes read at a time while looking for a cut


@dataclass(frozen=True)
class CountConfig:
    """What every worker needs to turn text into chunks. Picklable."""
    pattern: str | None
    special_tokens: tuple[str, ...] = ()
    errors: str = "strict"


@dataclass
class FileTask:
    path: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class DocsTask:
    docs: list = field(default_factory=list)   # str or bytes items
    first_index: int = 0                       # index of docs[0] in the iterator, for messages
    size: int = 0                              # characters (or bytes), for progress


def decode(data: bytes, errors: str, where: str, base_offset: int = 0) -> str:
    """UTF-8 decode; on failure name the file/document and the absolute byte offset."""
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        bad = data[exc.start:exc.end]
        raise InputError(
            f"{where}: invalid UTF-8 at byte offset {base_offset + exc.start} (bytes {bad!r}: "
            f"{exc.reason}); pass errors='replace' (CLI: --errors replace) to replace such bytes"
        ) from None


def to_utf8(text: str, errors: str, where: str) -> bytes:
    """UTF-8 bytes of text; a lone surrogate is an error, or U+FFFD with errors='replace'."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        if errors == "replace":
            return text.encode("utf-8", errors="replace")
        raise InputError(f"{where}: lone surrogate {text[exc.start]!r} at character {exc.start} "
                         f"cannot be UTF-8 encoded; pass errors='replace' to replace it") from None


class ChunkCounter:
    """Counts the chunks of tasks; one lives in each worker (or in the caller for small input).

    Named patterns use the native scanner and a C++ hash map (no Python object per chunk);
    custom patterns use ``regex.findall`` and a Counter; with no pattern a piece is one chunk.
    """

    def __init__(self, config: CountConfig):
        self.config = config
        self.scanner = native_scanner(config.pattern)
        self.regex = compile_pattern(config.pattern) if config.pattern is not None and self.scanner is None else None
        self.specials = special_splitter(config.special_tokens)
        self.native = ChunkCounts()
        self.by_regex: Counter[str] = Counter()

    def add_text(self, text: str, where: str) -> None:
        for piece in special_pieces(text, self.specials):
            if self.regex is not None:
                self.by_regex.update(self.regex.findall(piece))
            elif self.scanner is not None:
                self.native.add_text(self.scanner, to_utf8(piece, self.config.errors, where))
            else:
                self.native.add(to_utf8(piece, self.config.errors, where))

    def add_utf8(self, data: bytes, where: str, base_offset: int = 0) -> None:
        if self.scanner is not None and self.specials is None:
            try:
                data.decode("utf-8")                    # only to validate
            except UnicodeDecodeError:
                pass                                    # strict: raise below, naming the offset
            else:
                self.native.add_text(self.scanner, data)
                return
        self.add_text(decode(data, self.config.errors, where, base_offset), where)

    def run(self, task: FileTask | DocsTask) -> None:
        if isinstance(task, FileTask):
            with open(task.path, "rb") as fh:
                fh.seek(task.start)
                data = fh.read(task.size)
            self.add_utf8(data, task.path, task.start)
            return
        for i, doc in enumerate(task.docs):
            where = f"document {task.first_index + i}"
            if isinstance(doc, bytes):
                self.add_utf8(doc, where)
            else:
                self.add_text(doc, where)

    def result(self) -> dict[bytes, int]:
        """The counts keyed by UTF-8 bytes (encoded once per unique chunk, here in the worker)."""
        counts = self.native.to_dict()
        for chunk, n in self.by_regex.items():
            key = to_utf8(chunk, self.config.errors, "chunk")
            counts[key] = counts.get(key, 0) + n
        return counts


# ---------------------------------------------------------------------------------------------
# Planning: which tasks make up the input


def check_file(path: str) -> int:
    """The file's size; a clear InputError if it is missing, a directory or unreadable."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a text file (pass the files inside it)")
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    return os.path.getsize(path)


def _next_cut(fh, pos: int, size: int) -> int:
    """The first safe cut at or after byte ``pos`` of an open file, or ``size`` if none."""
    while pos < size:
        fh.seek(max(pos - 2, 0))
        data = fh.read(_CUT_WINDOW + 2)
        lead = pos - max(pos - 2, 0)
        cut = find_cut(data, lead)
        if cut is not None and cut < len(data):
            return pos - lead + cut
        pos += _CUT_WINDOW
    return size


def file_tasks(path: str, size: int, config: CountConfig, block_size: int) -> Iterator[FileTask]:
    """Blocks of about ``block_size`` bytes, cut only where the pattern allows it."""
    path = os.fspath(path)
    splittable = config.pattern in BLOCK_SAFE and not any("\n" in s for s in config.special_tokens)
    if not splittable or size <= block_size:
        if size:
            yield FileTask(path, 0, size)
        return
    with open(path, "rb") as fh:
        start = 0
        while start < size:
            end = _next_cut(fh, start + block_size, size) if start + block_size < size else size
            yield FileTask(path, start, end)
            start = end


def docs_tasks(docs: Iterable, batch_chars: int) -> Iterator[DocsTask]:
    """Documents grouped into batches of about ``batch_chars`` characters."""
    task = DocsTask()
    for index, doc in enumerate(docs):
        if not isinstance(doc, (str, bytes)):
            raise InputError(f"document {index}: expected str or bytes, got {type(doc).__name__}")
        if not task.docs:
            task.first_index = index
        task.docs.append(doc)
        task.size += len(doc)
        if task.size >= batch_chars:
            yield task
            task = DocsTask()
    if task.docs:
        yield task


# ---------------------------------------------------------------------------------------------
# Running: in this process, or spread over worker processes


def _worker(config: CountConfig, tasks: "mp.Queue", results: "mp.Queue") -> None:
    counter = ChunkCounter(config)
    try:
        while (task := tasks.get()) is not None:
            counter.run(task)
    except Exception as exc:   # reported at once; the parent stops feeding and raises it
        results.put(("error", exc))
        return
    results.put(("ok", counter.result()))


def _merge(parts: list[dict[bytes, int]]) -> dict[bytes, int]:
    parts.sort(key=len, reverse=True)
    total = parts[0] if parts else {}
    for part in parts[1:]:
        for chunk, n in part.items():
            total[chunk] = total.get(chunk, 0) + n
    return total


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def count_tasks(tasks: Iterable, config: CountConfig, workers: int | None = None,
                on_progress: Callable[[int], None] | None = None,
                parallel_threshold: int = 2) -> dict[bytes, int]:
    """Count the chunks of all tasks with ``workers`` processes.

    Tasks are pulled lazily. If fewer than ``parallel_threshold`` tasks come, or workers == 1,
    they are counted here, without starting processes.
    """
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ArgumentError(f"workers must be at least 1, got {workers}")
    tasks = iter(tasks)
    head = []
    for task in tasks:
        head.append(task)
        if len(head) >= parallel_threshold:
            break
    if workers == 1 or len(head) < parallel_threshold:
        counter = ChunkCounter(config)
        for task in _chain(head, tasks):
            counter.run(task)
            if on_progress:
                on_progress(task.size)
        return counter.result()
    return _count_in_workers(_chain(head, tasks), config, workers, on_progress)


def _chain(head: list, rest: Iterator) -> Iterator:
    yield from head
    yield from rest


def _count_in_workers(tasks: Iterator, config: CountConfig, workers: int,
                      on_progress: Callable[[int], None] | None) -> dict[bytes, int]:
    if native_scanner(config.pattern) is not None:
        char_classes()            # build the tables once, here; forked workers inherit them
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    pool = _Workers(ctx, config, workers)
    try:
        for task in tasks:
            pool.send(task)
            if on_progress:
                on_progress(task.size)
        return _merge(pool.finish())
    finally:
        pool.stop()


class _Workers:
    """Worker processes fed through a bounded queue. Every wait is short and checks that the
    workers are alive and have reported no error, so a failure surfaces at once: never a hang,
    never the rest of the corpus read first."""

    def __init__(self, ctx, config: CountConfig, n: int):
        self.tasks = ctx.Queue(maxsize=2 * n)   # bounded: at most a few blocks in flight
        self.results = ctx.Queue()
        self.procs = [ctx.Process(target=_worker, args=(config, self.tasks, self.results), daemon=True)
                      for _ in range(n)]
        self.parts: list[dict[bytes, int]] = []
        for p in self.procs:
            p.start()

    def send(self, item) -> None:
        while True:
            self._check()
            try:
                self.tasks.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def finish(self) -> list[dict[bytes, int]]:
        for _ in self.procs:
            self.send(None)
        while len(self.parts) < len(self.procs):
            self._check(wait=0.5)
        return self.parts

    def _check(self, wait: float = 0.0) -> None:
        """Take in a result if one is there; raise a worker's error, or if a worker is gone."""
        try:
            status, payload = self.results.get(timeout=wait) if wait else self.results.get_nowait()
        except queue.Empty:
            gone = [p for p in self.procs if p.exitcode is not None]
            if len(gone) > len(self.parts) and self.results.empty():
                time.sleep(0.2)            # a result sent just before exiting may be in the pipe
                if self.results.empty():
                    raise WorkerError(f"a counting worker exited (code {gone[0].exitcode}) "
                                       f"without sending its counts") from None
            return
        if status == "error":
            raise payload
        self.parts.append(payload)

    def stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(timeout=5)
